// ingestBooking's and fireWindows' sides of the watermark holds over an in-memory hold store: a refused delivery
// records a hold, a processed message releases it (only when it may have one), a failing store is logged and never
// turns a routed message into a redelivery, and fireWindows logs stuck holds and deletes lapsed ones.
import assert from 'node:assert/strict';
import { TransientError } from '../../../shared/errors';
import { Logger, type LogEntry } from '../../../shared/logging/logger';
import {
  DeliveryHolds,
  heartbeatWatermarkHold,
  readWatermarkHold,
  RELEASE_CHECK_AGE_MS,
  type WatermarkHoldStore,
} from '../../../shared/state/watermark-holds';
import type { HeldMessage } from '../../../shared/windowing';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const LEASE = 11 * 60_000;
const POLICY = { maxOutOfOrdernessMs: 10_000, idleTimeoutMs: 60_000, maxFutureSkewMs: 0 };

function memoryHolds() {
  const holds = new Map<string, HeldMessage>();
  const ops: string[] = [];
  let failing = false;
  const fail = () => {
    if (failing) throw new TransientError('firestore', 'UNAVAILABLE');
  };
  const store: WatermarkHoldStore = {
    recordFailure: (messageId, publishTimeMs, nowMs, leaseMs) => {
      ops.push(`record ${messageId}`);
      fail();
      holds.set(messageId, {
        messageId,
        publishTimeMs,
        lastFailedAtMs: nowMs,
        expiresAtMs: nowMs + leaseMs,
      });
      return Promise.resolve();
    },
    release: (messageId) => {
      ops.push(`release ${messageId}`);
      fail();
      holds.delete(messageId);
      return Promise.resolve();
    },
    oldest: (limit) =>
      Promise.resolve(
        [...holds.values()].sort((a, b) => a.publishTimeMs - b.publishTimeMs).slice(0, limit),
      ),
    deleteLapsed: (ids) => {
      ops.push(`delete ${ids.join(',')}`);
      for (const id of ids) holds.delete(id);
      return Promise.resolve();
    },
  };
  return {
    store,
    holds,
    ops,
    setFailing: (f: boolean) => {
      failing = f;
    },
  };
}

function logger() {
  const lines: LogEntry[] = [];
  return { lines, log: new Logger('test', (e) => lines.push(e)) };
}

describe('watermark holds of failing deliveries', () => {
  it('a refused delivery holds; processing it releases the hold', async () => {
    const m = memoryHolds();
    const { log } = logger();
    const holds = new DeliveryHolds(m.store, LEASE, log);
    await holds.failed({ messageId: 'm1', publishTimeMs: T0 }, T0 + 500);
    assert.equal(m.holds.get('m1')?.expiresAtMs, T0 + 500 + LEASE);
    // Redelivered to this instance 1 s later (the emulator's pace): young, but refused here before.
    await holds.processed({ messageId: 'm1', publishTimeMs: T0 }, T0 + 1_500);
    assert.equal(m.holds.size, 0);
  });

  it('releases a redelivery seen by another instance once it is old enough to be one', async () => {
    const m = memoryHolds();
    const { log } = logger();
    await new DeliveryHolds(m.store, LEASE, log).failed({ messageId: 'm1', publishTimeMs: T0 }, T0);
    const other = new DeliveryHolds(m.store, LEASE, log);
    await other.processed({ messageId: 'm1', publishTimeMs: T0 }, T0 + RELEASE_CHECK_AGE_MS);
    assert.equal(m.holds.size, 0);
  });

  it('costs nothing for a fresh message delivered on its first attempt', async () => {
    const m = memoryHolds();
    const { log } = logger();
    await new DeliveryHolds(m.store, LEASE, log).processed(
      { messageId: 'm2', publishTimeMs: T0 },
      T0 + RELEASE_CHECK_AGE_MS - 1,
    );
    assert.deepEqual(m.ops, []);
  });

  it('logs a hold it cannot write or delete, and never throws', async () => {
    const m = memoryHolds();
    const { log, lines } = logger();
    const holds = new DeliveryHolds(m.store, LEASE, log);
    m.setFailing(true);
    await holds.failed({ messageId: 'm1', publishTimeMs: T0 }, T0);
    await holds.processed({ messageId: 'm1', publishTimeMs: T0 }, T0 + 60_000);
    assert.deepEqual(
      lines.map((l) => l.outcome),
      ['watermark_hold_not_recorded', 'watermark_hold_not_released'],
    );
    assert.equal(lines[0]?.message_id, 'm1');
  });

  it('fireWindows: logs a stuck hold, deletes lapsed ones, caps at the oldest live one', async () => {
    const m = memoryHolds();
    const { log, lines } = logger();
    const holds = new DeliveryHolds(m.store, LEASE, log);
    await holds.failed({ messageId: 'poison', publishTimeMs: T0 }, T0 + 2 * 3_600_000);
    await holds.failed({ messageId: 'gone', publishTimeMs: T0 + 1_000 }, T0 + 1_000);
    await holds.failed({ messageId: 'live', publishTimeMs: T0 + 90 * 60_000 }, T0 + 2 * 3_600_000);
    const nowMs = T0 + 2 * 3_600_000 + 1_000;
    const hold = await readWatermarkHold(
      m.store,
      POLICY,
      { maxHoldMs: 3_600_000, pipeline: 'p' },
      log,
      nowMs,
    );
    assert.equal(hold.capMs, T0 + 90 * 60_000 - 10_000);
    assert.deepEqual(
      hold.stuck.map((s) => s.messageId),
      ['poison'],
    );
    assert.ok(m.ops.includes('delete gone'));
    assert.equal(m.holds.has('gone'), false);
    const stuck = lines.find((l) => l.outcome === 'watermark_hold_stuck');
    assert.equal(stuck?.message_id, 'poison');
    assert.equal(stuck?.severity, 'ERROR');
    assert.ok(lines.some((l) => l.outcome === 'watermark_held'));
  });
});

describe('heartbeatWatermarkHold', () => {
  const POLICY = { maxOutOfOrdernessMs: 10_000, idleTimeoutMs: 60_000, maxFutureSkewMs: 0 };
  const NOW = Date.UTC(2026, 11, 6, 4, 0, 0);
  const HOUR = 3_600_000;
  const inner = (capMs: number | null) => () =>
    Promise.resolve({
      oldestPublishTimeMs: capMs,
      capMs,
      active: capMs === null ? 0 : 1,
      stuck: [],
      lapsed: [],
    });
  const store = (newest: number | null) => ({
    recordHeartbeat: () => Promise.resolve(),
    newestHeartbeat: () => Promise.resolve(newest),
  });

  it('caps at the earlier of the heartbeat and the inner hold', async () => {
    const { log } = logger();
    const options = { policy: POLICY, maxHoldMs: HOUR, pipeline: 'p', logger: log };
    const hb = NOW - 5 * 60_000;
    const older = await heartbeatWatermarkHold(store(hb), inner(hb - 60_000), options)(NOW);
    assert.equal(older.capMs, hb - 60_000);
    const newer = await heartbeatWatermarkHold(store(hb), inner(hb + 60_000), options)(NOW);
    assert.equal(newer.capMs, hb - 10_000);
    assert.equal(newer.heartbeat?.publishTimeMs, hb);
    const none = await heartbeatWatermarkHold(store(hb), inner(null), options)(NOW);
    assert.equal(none.capMs, hb - 10_000);
  });

  it('logs a heartbeat past the cap at ERROR (watermark_hold_stuck) and stops holding', async () => {
    const { lines, log } = logger();
    const options = { policy: POLICY, maxHoldMs: HOUR, pipeline: 'p', logger: log };
    const hold = await heartbeatWatermarkHold(store(NOW - HOUR - 1), inner(null), options)(NOW);
    assert.equal(hold.capMs, null);
    assert.equal(hold.heartbeat?.stale, true);
    const line = lines.find((l) => l.outcome === 'watermark_hold_stuck');
    assert.equal(line?.severity, 'ERROR');
    assert.equal(line?.source, 'heartbeat');
    assert.equal(line?.hold_age_ms, HOUR + 1);
    // A fresh heartbeat logs nothing.
    const quiet = logger();
    await heartbeatWatermarkHold(store(NOW - 1_000), inner(null), {
      ...options,
      logger: quiet.log,
    })(NOW);
    assert.deepEqual(quiet.lines, []);
  });

  it('fails the pass when the heartbeat cannot be read', async () => {
    const { log } = logger();
    const failing = {
      recordHeartbeat: () => Promise.resolve(),
      newestHeartbeat: () => Promise.reject(new TransientError('firestore read heartbeat', 'x')),
    };
    await assert.rejects(
      heartbeatWatermarkHold(failing, inner(null), {
        policy: POLICY,
        maxHoldMs: HOUR,
        pipeline: 'p',
        logger: log,
      })(NOW),
      TransientError,
    );
  });
});
