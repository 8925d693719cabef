// The cloud watermark-hold source with a stubbed metric reader and a stubbed Monitoring HTTP client: the hold behind
// the subscription's oldest unacknowledged message, its cache, the minimum age and the 1 h cap, the fallback to the
// delivery holds on a failed read (logged, never silent), and the request and parsing of the REST method.
import assert from 'node:assert/strict';
import { TransientError } from '../../../shared/errors';
import { Logger, type LogEntry } from '../../../shared/logging/logger';
import {
  backlogHoldAt,
  backlogWatermarkHold,
  MonitoringBacklogReader,
  OLDEST_UNACKED_AGE_METRIC,
  type BacklogSample,
  type MonitoringHttp,
} from '../../../shared/state/backlog-hold';
import type { WatermarkHold } from '../../../shared/windowing';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const MIN = 60_000;
const POLICY = { maxOutOfOrdernessMs: 10_000, idleTimeoutMs: 60_000, maxFutureSkewMs: 0 };
const OPTIONS = { maxHoldMs: 60 * MIN, minAgeMs: MIN };

function localHold(capMs: number | null, active = capMs === null ? 0 : 1): WatermarkHold {
  return {
    oldestPublishTimeMs: capMs === null ? null : capMs + POLICY.maxOutOfOrdernessMs,
    capMs,
    active,
    stuck: [],
    lapsed: [],
  };
}

function rig(read: () => Promise<BacklogSample | null>, local: WatermarkHold = localHold(null)) {
  const entries: LogEntry[] = [];
  let reads = 0;
  const hold = backlogWatermarkHold({
    read: () => {
      reads++;
      return read();
    },
    local: () => Promise.resolve(local),
    policy: POLICY,
    maxHoldMs: OPTIONS.maxHoldMs,
    minAgeMs: OPTIONS.minAgeMs,
    cacheMs: 30_000,
    logger: new Logger('test', (e) => entries.push(e)),
    pipeline: 'p',
  });
  return { hold, entries, reads: () => reads };
}

const outcomes = (entries: readonly LogEntry[]): unknown[] =>
  entries.map((e) => (e as unknown as { outcome?: unknown }).outcome);

describe('watermark hold from the subscription backlog (Cloud Monitoring)', () => {
  it('holds at the oldest unacknowledged publish time − out-of-orderness (sample time − age)', () => {
    const hold = backlogHoldAt(
      POLICY,
      { sampledAtMs: T0, oldestUnackedAgeMs: 5 * MIN },
      T0 + MIN,
      OPTIONS,
    );
    assert.deepEqual(hold, {
      oldestPublishTimeMs: T0 - 5 * MIN,
      capMs: T0 - 5 * MIN - 10_000,
      stuck: false,
    });
  });

  it('does not hold for a backlog younger than the minimum age, an empty backlog or no sample', () => {
    const none = { oldestPublishTimeMs: null, capMs: null, stuck: false };
    assert.deepEqual(
      backlogHoldAt(POLICY, { sampledAtMs: T0, oldestUnackedAgeMs: MIN - 1000 }, T0, OPTIONS),
      none,
    );
    assert.deepEqual(
      backlogHoldAt(POLICY, { sampledAtMs: T0, oldestUnackedAgeMs: 0 }, T0, OPTIONS),
      none,
    );
    assert.deepEqual(backlogHoldAt(POLICY, null, T0, OPTIONS), none);
  });

  it('stops holding past the 1 h cap, and says it is stuck', () => {
    const sample = { sampledAtMs: T0, oldestUnackedAgeMs: 59 * MIN };
    assert.equal(backlogHoldAt(POLICY, sample, T0, OPTIONS).stuck, false);
    assert.deepEqual(backlogHoldAt(POLICY, sample, T0 + 2 * MIN, OPTIONS), {
      oldestPublishTimeMs: null,
      capMs: null,
      stuck: true,
    });
  });

  it('takes the earlier of the backlog and the delivery holds, and logs the backlog hold', async () => {
    const sample = { sampledAtMs: T0, oldestUnackedAgeMs: 5 * MIN };
    const earlierLocal = rig(() => Promise.resolve(sample), localHold(T0 - 20 * MIN));
    assert.equal((await earlierLocal.hold(T0)).capMs, T0 - 20 * MIN);
    const laterLocal = rig(() => Promise.resolve(sample), localHold(T0 - MIN));
    const hold = await laterLocal.hold(T0);
    assert.equal(hold.capMs, T0 - 5 * MIN - 10_000);
    assert.equal(hold.oldestPublishTimeMs, T0 - 5 * MIN);
    assert.equal(hold.active, 2);
    assert.deepEqual(outcomes(laterLocal.entries), ['watermark_held_backlog']);
  });

  it('reads the metric at most once per cache period', async () => {
    const r = rig(() => Promise.resolve({ sampledAtMs: T0, oldestUnackedAgeMs: 5 * MIN }));
    await r.hold(T0);
    await r.hold(T0 + 29_999);
    assert.equal(r.reads(), 1);
    await r.hold(T0 + 30_000);
    assert.equal(r.reads(), 2);
  });

  it('falls back to the delivery holds when the metric cannot be read, logging it at WARNING', async () => {
    const local = localHold(T0 - 3 * MIN);
    const r = rig(
      () => Promise.reject(new TransientError('monitoring read', 'PERMISSION_DENIED')),
      local,
    );
    assert.deepEqual(await r.hold(T0), local);
    assert.deepEqual(outcomes(r.entries), ['watermark_backlog_unavailable']);
    assert.equal(r.entries[0]?.severity, 'WARNING');
    assert.match(JSON.stringify(r.entries[0]), /PERMISSION_DENIED/);
    // Not cached: the next pass tries again.
    await r.hold(T0 + 1000);
    assert.equal(r.reads(), 2);
  });

  it('logs a backlog past the cap as stuck, at ERROR', async () => {
    const r = rig(() => Promise.resolve({ sampledAtMs: T0, oldestUnackedAgeMs: 61 * MIN }));
    const hold = await r.hold(T0);
    assert.equal(hold.capMs, null);
    assert.deepEqual(outcomes(r.entries), ['watermark_hold_stuck']);
    assert.equal(r.entries[0]?.severity, 'ERROR');
  });
});

describe('MonitoringBacklogReader (projects.timeSeries.list)', () => {
  function http(
    answer: unknown,
    calls: { url: string; params: Record<string, string> }[],
  ): MonitoringHttp {
    return {
      request: <T>(options: { url: string; params: Record<string, string> }) => {
        calls.push(options);
        return answer instanceof Error
          ? Promise.reject(answer)
          : Promise.resolve({ data: answer as T });
      },
    };
  }

  it('asks for the subscription’s metric over the look-back and takes the newest point', async () => {
    const calls: { url: string; params: Record<string, string> }[] = [];
    const reader = new MonitoringBacklogReader(
      http(
        {
          timeSeries: [
            {
              points: [
                { interval: { endTime: '2026-12-01T11:59:00Z' }, value: { int64Value: '300' } },
                { interval: { endTime: '2026-12-01T11:58:00Z' }, value: { int64Value: '240' } },
              ],
            },
          ],
        },
        calls,
      ),
      { projectId: 'proj', subscriptionId: 'eventarc-sub' },
      () => T0,
    );
    assert.deepEqual(await reader.read(), { sampledAtMs: T0 - MIN, oldestUnackedAgeMs: 300_000 });
    assert.equal(calls[0]?.url, 'https://monitoring.googleapis.com/v3/projects/proj/timeSeries');
    assert.equal(
      calls[0]?.params.filter,
      `metric.type = "${OLDEST_UNACKED_AGE_METRIC}" AND resource.labels.subscription_id = "eventarc-sub"`,
    );
    assert.equal(calls[0]?.params['interval.startTime'], '2026-12-01T11:50:00.000Z');
    assert.equal(calls[0]?.params['interval.endTime'], '2026-12-01T12:00:00.000Z');
  });

  it('answers null without points, and a TransientError for a failed request or a malformed point', async () => {
    const target = { projectId: 'p', subscriptionId: 's' };
    assert.equal(await new MonitoringBacklogReader(http({}, []), target, () => T0).read(), null);
    await assert.rejects(
      new MonitoringBacklogReader(http(new Error('403 Forbidden'), []), target, () => T0).read(),
      (err: unknown) => err instanceof TransientError && /403 Forbidden/.test(err.message),
    );
    await assert.rejects(
      new MonitoringBacklogReader(
        http({ timeSeries: [{ points: [{ interval: { endTime: 'x' }, value: {} }] }] }, []),
        target,
        () => T0,
      ).read(),
      (err: unknown) => err instanceof TransientError && /malformed point/.test(err.message),
    );
  });
});
