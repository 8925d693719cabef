// The cloud watermark-hold source: the ingest subscription's oldest unacknowledged message (Cloud Monitoring), read
// by fireWindows (cached), combined with the holds of failing deliveries, which it falls back to when unreadable.
import { GoogleAuth } from 'google-auth-library';
import { TransientError, errorText } from '../errors';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import { holdCapMs, type WatermarkHold, type WatermarkPolicy } from '../windowing';

/** Cloud Monitoring's metric for a subscription's oldest unacknowledged message (GAUGE, INT64, seconds). */
export const OLDEST_UNACKED_AGE_METRIC =
  'pubsub.googleapis.com/subscription/oldest_unacked_message_age';

/** One point of the metric: the age of the subscription's oldest unacknowledged message at the point's time. */
export interface BacklogSample {
  /** End time of the metric point, epoch ms UTC (when the age was sampled). */
  readonly sampledAtMs: number;
  /** Age of the oldest unacknowledged message at `sampledAtMs`, ms (the metric is whole seconds); 0: no backlog. */
  readonly oldestUnackedAgeMs: number;
}

/**
 * Reads the latest sample, `null` when the metric has no point in the look-back (a new or idle subscription).
 * @throws TransientError when the metric cannot be read
 */
export type BacklogSampleReader = () => Promise<BacklogSample | null>;

/** The part of an authorised HTTP client the reader uses (google-auth-library's `AuthClient.request`). */
export interface MonitoringHttp {
  request<T>(options: { url: string; params: Record<string, string> }): Promise<{ data: T }>;
}

interface TimeSeriesList {
  timeSeries?: {
    points?: { interval?: { endTime?: string }; value?: { int64Value?: string | number } }[];
  }[];
}

/**
 * Reads `OLDEST_UNACKED_AGE_METRIC` of one subscription with Cloud Monitoring's REST method
 * `projects.timeSeries.list` (v3; the caller's identity needs `roles/monitoring.viewer`), over the last
 * `lookbackMs` (default 10 min: the metric is sampled every 60 s and a point becomes visible up to a few minutes
 * later). Points come newest first; the newest is the sample.
 */
export class MonitoringBacklogReader {
  constructor(
    private readonly http: MonitoringHttp,
    private readonly target: { readonly projectId: string; readonly subscriptionId: string },
    private readonly now: () => number,
    private readonly lookbackMs = 10 * 60_000,
  ) {}

  /**
   * The latest sample, or `null` when the look-back has none.
   * @throws TransientError when the request fails or the answer is malformed
   */
  readonly read: BacklogSampleReader = async () => {
    const endMs = this.now();
    const operation = `monitoring read ${OLDEST_UNACKED_AGE_METRIC}`;
    let data: TimeSeriesList;
    try {
      ({ data } = await this.http.request<TimeSeriesList>({
        url: `https://monitoring.googleapis.com/v3/projects/${encodeURIComponent(this.target.projectId)}/timeSeries`,
        params: {
          filter:
            `metric.type = "${OLDEST_UNACKED_AGE_METRIC}" AND ` +
            `resource.labels.subscription_id = "${this.target.subscriptionId}"`,
          'interval.startTime': new Date(endMs - this.lookbackMs).toISOString(),
          'interval.endTime': new Date(endMs).toISOString(),
          view: 'FULL',
        },
      }));
    } catch (err) {
      throw new TransientError(operation, errorText(err), { cause: err });
    }
    const point = data.timeSeries?.[0]?.points?.[0];
    if (point === undefined) return null;
    const sampledAtMs = Date.parse(point.interval?.endTime ?? '');
    const ageS = Number(point.value?.int64Value);
    if (!Number.isFinite(sampledAtMs) || !Number.isSafeInteger(ageS) || ageS < 0) {
      throw new TransientError(operation, `malformed point: ${JSON.stringify(point)}`);
    }
    return { sampledAtMs, oldestUnackedAgeMs: ageS * 1000 };
  };
}

/** What a backlog sample says about the watermark at one pass. */
export interface BacklogHold {
  /** Publish time of the oldest unacknowledged message (sample time − age), epoch ms; `null`: it does not hold. */
  readonly oldestPublishTimeMs: number | null;
  /** Publish time − out-of-orderness: the highest watermark it allows, epoch ms; `null`: no cap. */
  readonly capMs: number | null;
  /** The backlog is older than the hold cap: it no longer holds (logged as stuck). */
  readonly stuck: boolean;
}

/**
 * The hold a sample gives at processing time `nowMs`: none when the oldest unacknowledged message is younger than
 * `minAgeMs` (deliveries in flight, which the out-of-orderness bound already covers; holding behind them would keep
 * the watermark a whole metric delay behind the clock), none and `stuck` when it is older than `maxHoldMs`
 * (`OFFVIA_WATERMARK_HOLD_MAX_MS`, the same cap as the delivery holds), else a cap at its publish time −
 * out-of-orderness (`holdCapMs`, the delivery holds' rule).
 */
export function backlogHoldAt(
  policy: WatermarkPolicy,
  sample: BacklogSample | null,
  nowMs: number,
  options: { readonly maxHoldMs: number; readonly minAgeMs: number },
): BacklogHold {
  if (sample === null || sample.oldestUnackedAgeMs < options.minAgeMs) {
    return { oldestPublishTimeMs: null, capMs: null, stuck: false };
  }
  const publishMs = sample.sampledAtMs - sample.oldestUnackedAgeMs;
  if (nowMs - publishMs > options.maxHoldMs) {
    return { oldestPublishTimeMs: null, capMs: null, stuck: true };
  }
  return { oldestPublishTimeMs: publishMs, capMs: holdCapMs(policy, publishMs), stuck: false };
}

/** Wiring of `backlogWatermarkHold`. */
export interface BacklogHoldOptions {
  /** Reads the metric (a `MonitoringBacklogReader`, or a stub in tests). */
  readonly read: BacklogSampleReader;
  /** The holds of failing deliveries (`readWatermarkHold` over the hold store): always applied too. */
  readonly local: (processingTimeMs: number) => Promise<WatermarkHold>;
  readonly policy: WatermarkPolicy;
  /** `OFFVIA_WATERMARK_HOLD_MAX_MS`. */
  readonly maxHoldMs: number;
  /** A backlog younger than this does not hold (see `backlogHoldAt`), ms. */
  readonly minAgeMs: number;
  /** How long a read sample is reused, ms (the metric changes once a minute). */
  readonly cacheMs: number;
  readonly logger: Logger;
  readonly pipeline: string;
}

/**
 * fireWindows' hold seam for `OFFVIA_WATERMARK_HOLD_SOURCE=monitoring`: the earlier of the backlog's cap and the
 * delivery holds' cap. The metric is read at most once per `cacheMs`; a failed read is logged at WARNING
 * (`watermark_backlog_unavailable`) and the pass uses the delivery holds alone, as with the `local` source, and
 * retries the metric next pass.
 * @throws TransientError only when the delivery holds cannot be read (as the `local` source)
 */
export function backlogWatermarkHold(
  options: BacklogHoldOptions,
): (processingTimeMs: number) => Promise<WatermarkHold> {
  let cached: { sample: BacklogSample | null; readAtMs: number } | null = null;
  return async (processingTimeMs) => {
    const local = await options.local(processingTimeMs);
    let sample: BacklogSample | null;
    if (cached !== null && processingTimeMs - cached.readAtMs < options.cacheMs) {
      sample = cached.sample;
    } else {
      try {
        sample = await options.read();
        cached = { sample, readAtMs: processingTimeMs };
      } catch (err) {
        logs.watermarkBacklogReadFailed(options.logger, options.pipeline, errorText(err));
        return local;
      }
    }
    const backlog = backlogHoldAt(options.policy, sample, processingTimeMs, options);
    if (backlog.stuck && sample !== null) {
      const publishTimeMs = sample.sampledAtMs - sample.oldestUnackedAgeMs;
      logs.watermarkBacklogStuck(options.logger, {
        pipeline: options.pipeline,
        source: 'monitoring',
        publish_time: logs.iso(publishTimeMs),
        hold_age_ms: processingTimeMs - publishTimeMs,
      });
    }
    if (backlog.oldestPublishTimeMs === null || backlog.capMs === null || sample === null) {
      return local;
    }
    logs.watermarkHeldBehindBacklog(options.logger, {
      pipeline: options.pipeline,
      oldest_unacked_publish_time: logs.iso(backlog.oldestPublishTimeMs),
      hold_cap_ms: backlog.capMs,
      sampled_at: logs.iso(sample.sampledAtMs),
      oldest_unacked_age_ms: sample.oldestUnackedAgeMs,
    });
    const useBacklog = local.capMs === null || backlog.capMs < local.capMs;
    return {
      ...local,
      oldestPublishTimeMs: useBacklog ? backlog.oldestPublishTimeMs : local.oldestPublishTimeMs,
      capMs: useBacklog ? backlog.capMs : local.capMs,
      // The backlog counts as one holding source beside the held deliveries.
      active: local.active + 1,
    };
  };
}

/** How long fireWindows reuses a backlog sample, ms: the metric is sampled once a minute. */
export const BACKLOG_CACHE_MS = 30_000;

/** No hold: what a hold source without holds answers. */
export const NO_HOLD: WatermarkHold = {
  oldestPublishTimeMs: null,
  capMs: null,
  active: 0,
  stuck: [],
  lapsed: [],
};

/**
 * Cloud Monitoring's reader of the subscription backlog, authorised with the function's service account
 * (Application Default Credentials); the project is `OFFVIA_PROJECT_ID`'s or, when unset, the credentials' own.
 */
export function monitoringBacklogReader(
  projectId: string | undefined,
  subscriptionId: string,
): BacklogSampleReader {
  const auth = new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/monitoring.read'] });
  let reader: MonitoringBacklogReader | undefined;
  return async () => {
    if (reader === undefined) {
      const client = await auth.getClient();
      const project = projectId ?? (await auth.getProjectId());
      reader = new MonitoringBacklogReader(
        client,
        { projectId: project, subscriptionId },
        Date.now,
      );
    }
    return reader.read();
  };
}
