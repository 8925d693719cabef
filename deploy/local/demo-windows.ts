// The demo's gold part: run fireWindows once in-process with the processing clock moved past the idle timeout, then
// print the gold panes, the watermark and the dropped-late counters of the windows the demo's events fall into.
import { readFirestoreDatabase } from '../../shared/config/ingest-config';
import { firestoreClient } from '../../shared/drift/runtime';
import type { BigQuery } from '@google-cloud/bigquery';
import type { BookingAccumulator } from '../../shared/aggregates/booking-aggregates';
import { createAggregationFireDeps } from '../../shared/pipeline/runtime/compose';
import { BOOKING_PIPELINE } from '../../shared/pipelines/booking/definition';
import type { GroupedFirestoreWindowStore } from '../../shared/state/grouped-window-store';
import { loadWindowConfig, type WindowConfig } from '../../shared/config/window-config';
import { fireWindows, type FireWindowsSummary } from '../../shared/state/fire-windows';
import { Logger } from '../../shared/logging/logger';
import { assignWindows, type IntervalWindow } from '../../shared/windowing';
import { formatTable, pollUntil, type Row } from './layers';

/** One window of the demo's Silver rows. */
interface DemoWindow {
  routeKey: string;
  window: IntervalWindow;
}

/** What the gold part found, for the printout and the lab check. */
export interface WindowsReport {
  summary: FireWindowsSummary;
  /** Processing time the in-process fireWindows ran at, epoch ms, and how far ahead of the wall clock. */
  processingTimeMs: number;
  fastForwardMs: number;
  panes: Row[];
  dropped: Row[];
  watermark: Row[];
}

function windowsOf(silver: readonly Row[], env: NodeJS.ProcessEnv): DemoWindow[] {
  const { strategy } = loadWindowConfig(env);
  const seen = new Map<string, DemoWindow>();
  for (const r of silver) {
    const routeKey = `${String(r.origin_airport)}-${String(r.destination_airport)}-${String(r.currency)}`;
    for (const window of assignWindows(strategy.windowFn, Date.parse(String(r.event_timestamp)))) {
      seen.set(`${routeKey}|${window.startMs}`, { routeKey, window });
    }
  }
  return [...seen.values()];
}

const iso = (ms: number | null): string => (ms === null ? 'NULL' : new Date(ms).toISOString());

/** What the demo's fireWindows clock is computed from. */
export interface DemoFireClockInput {
  /** The stack was started for this run alone (with-stack.sh exports OFFVIA_STACK_THROWAWAY=1) and is stopped after. */
  readonly throwawayStack: boolean;
  /** Wall clock, epoch ms. */
  readonly nowMs: number;
  /** Largest event time of the demo's events, epoch ms. */
  readonly maxEventMs: number;
  /** The stored watermark state's max event time and when it was seen (epoch ms), if any. */
  readonly storedMaxEventTimeMs: number | null;
  readonly maxEventTimeSeenAtMs: number | null;
  readonly config: Pick<WindowConfig, 'watermarkPolicy' | 'strategy'>;
}

/**
 * The processing time the demo runs fireWindows at: on a throw-away stack far enough after the last event for the
 * idle rule to close every window of the events; on a kept stack the wall clock (its watermark never goes back).
 */
export function demoFireClockMs(input: DemoFireClockInput): number {
  if (!input.throwawayStack) return input.nowMs;
  const seenAt = input.maxEventTimeSeenAtMs ?? input.nowMs;
  const behindMs = Math.max(0, input.maxEventMs - (input.storedMaxEventTimeMs ?? input.maxEventMs));
  const policy = input.config.watermarkPolicy;
  const { windowFn } = input.config.strategy;
  const sizeMs = 'sizeMs' in windowFn ? windowFn.sizeMs : 0;
  // The idle rule: watermark = max − out-of-orderness + (pt − seenAt − idle), so this pt puts it past the end of
  // the window holding the largest event time.
  return Math.max(
    input.nowMs,
    seenAt + policy.idleTimeoutMs + policy.maxOutOfOrdernessMs + behindMs + sizeMs + 1000,
  );
}

/**
 * Runs fireWindows once, in-process, at {@link demoFireClockMs}, then reads the gold table and the Firestore counters.
 * @throws TransientError when Firestore or BigQuery fails
 */
export async function fireAndReadWindows(
  bq: BigQuery,
  projectId: string,
  silver: readonly Row[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<WindowsReport> {
  const config = loadWindowConfig(env);
  const firestore = firestoreClient(projectId, readFirestoreDatabase(env));
  try {
    const logger = new Logger('demo', () => undefined);
    const probe = createAggregationFireDeps(BOOKING_PIPELINE, env, logger, { firestore });
    // Silver is written before the window state: wait for the events' dedup ids, then for the watermark.
    const store = probe.store as GroupedFirestoreWindowStore<BookingAccumulator>;
    const maxEventMs = Math.max(...silver.map((r) => Date.parse(String(r.event_timestamp))));
    const routeOf = (r: Row) =>
      `${String(r.origin_airport)}-${String(r.destination_airport)}-${String(r.currency)}`;
    await pollUntil(Date.now() + 20_000, 200, async () => {
      const outcomes = await Promise.all(
        silver.map((r) =>
          store.eventOutcome(
            String(r.event_id),
            routeOf(r),
            probe.keyed.assign(Date.parse(String(r.event_timestamp))),
          ),
        ),
      );
      return outcomes.every((o) => o !== null);
    });
    await pollUntil(
      Date.now() + 5_000,
      200,
      async () => ((await store.readWatermark())?.state.maxEventTimeMs ?? -Infinity) >= maxEventMs,
    );
    const stored = (await store.readWatermark())?.state;
    const processingTimeMs = demoFireClockMs({
      throwawayStack: env.OFFVIA_STACK_THROWAWAY === '1',
      nowMs: Date.now(),
      maxEventMs,
      storedMaxEventTimeMs: stored?.maxEventTimeMs ?? null,
      maxEventTimeSeenAtMs: stored?.maxEventTimeSeenAtMs ?? null,
      config,
    });
    const deps = createAggregationFireDeps(BOOKING_PIPELINE, env, logger, {
      firestore,
      now: () => processingTimeMs,
    });
    const summary = await fireWindows(deps);
    const windows = windowsOf(silver, env);
    const routes = [...new Set(windows.map((w) => w.routeKey))];
    const starts = new Set(windows.map((w) => `${w.routeKey}|${w.window.startMs}`));
    const [rows] = await bq.query({
      query: `SELECT UNIX_MILLIS(window_start) AS start_ms, route_key, pane_timing, pane_index, pane_on_time_index,
                booking_count, fare_total, fare_min, fare_max, fare_mean, is_final,
                UNIX_MILLIS(watermark_at_emission) AS watermark_ms, UNIX_MILLIS(emitted_at) AS emitted_ms
              FROM \`${projectId}.offvia_gold.route_panes\`
              WHERE pipeline = @pipeline AND route_key IN UNNEST(@routes)
              ORDER BY route_key, start_ms, pane_index`,
      params: { pipeline: config.pipeline, routes },
      types: { pipeline: 'STRING', routes: ['STRING'] },
    });
    const text = (v: unknown): unknown =>
      v !== null && typeof v === 'object' && 'toFixed' in v
        ? (v as { toFixed(): string }).toFixed()
        : v;
    const panes = (rows as Row[])
      .filter((r) => starts.has(`${String(r.route_key)}|${Number(r.start_ms)}`))
      .map((r) => ({
        window_start: iso(Number(r.start_ms)),
        route_key: r.route_key,
        pane_timing: r.pane_timing,
        pane_index: r.pane_index,
        on_time_index: r.pane_on_time_index,
        bookings: r.booking_count,
        fare_total: text(r.fare_total),
        fare_min: text(r.fare_min),
        fare_max: text(r.fare_max),
        fare_mean: text(r.fare_mean),
        is_final: r.is_final,
        watermark: r.watermark_ms === null ? 'NULL' : iso(Number(r.watermark_ms)),
        emitted_at: iso(Number(r.emitted_ms)),
      }));
    const windowStarts = new Set(windows.map((w) => w.window.startMs));
    const dropped = (await deps.store.readDropped())
      .filter((d) => windowStarts.has(d.windowStartMs))
      .map((d) => ({
        window_start: iso(d.windowStartMs),
        dropped: d.count,
        expired_window: d.expiredWindow,
        closed_window: d.closedWindow,
        last_event_id: d.lastEventId,
      }));
    const w = (await deps.store.readWatermark())?.state;
    const watermark = w
      ? [
          {
            watermark: iso(w.watermarkMs),
            max_event_time: iso(w.maxEventTimeMs),
            max_seen_at: iso(w.maxEventTimeSeenAtMs),
          },
        ]
      : [];
    return {
      summary,
      processingTimeMs,
      fastForwardMs: processingTimeMs - Date.now(),
      panes,
      dropped,
      watermark,
    };
  } finally {
    await firestore.terminate();
  }
}

/** The report as text tables. */
export function formatWindowsReport(report: WindowsReport): string {
  const s = report.summary;
  return (
    `fireWindows, in-process, at processing time ${iso(report.processingTimeMs)} ` +
    (report.fastForwardMs > 0
      ? `(${Math.round(report.fastForwardMs / 1000)} s ahead of the wall clock, as Scheduler would run it once the ` +
        `idle rule has moved the watermark past these events; a throw-away stack only): `
      : '(the wall clock: this stack is kept, so its shared watermark must not jump ahead): ') +
    `${s.status}, ${s.windowsFired} windows fired, ` +
    `${s.panesEmitted} panes emitted, ${s.windowsClosed} closed\n\n` +
    formatTable('Gold  offvia_gold.route_panes (windows of the events above)', report.panes, 30) +
    '\n' +
    formatTable('Watermark  (Firestore meta/watermark)', report.watermark) +
    '\n' +
    formatTable(
      'Dropped as too late  (Firestore droppedLate, windows of the events above)',
      report.dropped,
    ) +
    '\n'
  );
}

/**
 * The lab's check for the gold layer: BK-90210 (JFK-LHR-USD, 2026-10-07T14:10:00Z) is either in a pane of window
 * [14:10, 14:11) or counted as dropped for it, depending on where the pipeline's watermark stood (docs/windows.md, "The demo's gold panes").
 */
export function checkLabWindows(report: WindowsReport): string[] {
  const start = iso(Date.parse('2026-10-07T14:10:00Z'));
  const inPane = report.panes.some(
    (p) => p.route_key === 'JFK-LHR-USD' && p.window_start === start && Number(p.bookings) >= 1,
  );
  const dropped = report.dropped.some((d) => d.window_start === start && Number(d.dropped) >= 1);
  return inPane || dropped
    ? []
    : [
        'BK-90210 is neither in a gold pane of JFK-LHR-USD [14:10, 14:11) nor counted as dropped for it',
      ];
}
