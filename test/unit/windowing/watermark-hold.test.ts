// The watermark hold rule: a held message caps the watermark at its publish time − the out-of-orderness bound, the
// watermark never goes backwards, a hold lapses with its lease, and a hold past the cap stops holding (stuck).
import assert from 'node:assert/strict';
import fc from 'fast-check';

import {
  advanceWatermarkByProcessingTime,
  applyWatermarkHold,
  heartbeatHoldAt,
  holdCapMs,
  INITIAL_WATERMARK_STATE,
  observeEventTime,
  watermarkHoldAt,
  type HeldMessage,
  type WatermarkState,
} from '../../../shared/windowing';
import { labWatermarkPolicy } from './lab-config';

const POLICY = labWatermarkPolicy();
const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const HOUR = 3_600_000;

function held(messageId: string, publishTimeMs: number, expiresAtMs: number): HeldMessage {
  return { messageId, publishTimeMs, lastFailedAtMs: publishTimeMs, expiresAtMs };
}

describe('watermark hold', () => {
  it('caps the idle rule at the oldest held publish time − the out-of-orderness bound', () => {
    // Events until T0, then 5 minutes of failing deliveries: the idle rule alone would close T0's windows.
    const seen = observeEventTime(POLICY, INITIAL_WATERMARK_STATE, T0, T0).state;
    const nowMs = T0 + 5 * 60_000;
    const idle = advanceWatermarkByProcessingTime(POLICY, seen, nowMs);
    assert.ok(idle.watermarkMs > T0, 'the idle rule would pass the backlog');
    const hold = watermarkHoldAt(POLICY, [held('m1', T0 + 1_000, nowMs + 60_000)], nowMs, HOUR);
    assert.equal(hold.oldestPublishTimeMs, T0 + 1_000);
    assert.equal(hold.capMs, T0 + 1_000 - 10_000);
    const capped = applyWatermarkHold(seen, idle, hold.capMs);
    assert.equal(capped.watermarkMs, T0 - 9_000);
    assert.equal(capped.maxEventTimeMs, idle.maxEventTimeMs);
  });

  it('never moves the watermark backwards, whatever the hold (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 * HOUR }),
        fc.integer({ min: 0, max: 10 * HOUR }),
        fc.option(fc.integer({ min: 0, max: 10 * HOUR }), { nil: null }),
        (previousMs, proposedExtraMs, capMs) => {
          const previous: WatermarkState = {
            watermarkMs: T0 + previousMs,
            maxEventTimeMs: T0 + previousMs + 10_000,
            maxEventTimeSeenAtMs: T0,
          };
          const next = { ...previous, watermarkMs: previous.watermarkMs + proposedExtraMs };
          const out = applyWatermarkHold(previous, next, capMs === null ? null : T0 + capMs);
          assert.ok(out.watermarkMs >= previous.watermarkMs, 'went backwards');
          assert.ok(out.watermarkMs <= next.watermarkMs, 'went past the rule');
          if (capMs !== null) {
            assert.ok(
              out.watermarkMs <= Math.max(previous.watermarkMs, T0 + capMs),
              'went past the hold',
            );
          }
        },
      ),
    );
  });

  it('a hold older than the watermark already written stops it where it is', () => {
    const previous: WatermarkState = {
      watermarkMs: T0,
      maxEventTimeMs: T0 + 10_000,
      maxEventTimeSeenAtMs: T0,
    };
    const next = { ...previous, watermarkMs: T0 + 60_000 };
    assert.equal(applyWatermarkHold(previous, next, T0 - 30_000).watermarkMs, T0);
  });

  it('never outlives its message: it lapses with its lease unless a failed delivery renews it', () => {
    const m = held('m1', T0, T0 + 11 * 60_000);
    assert.equal(watermarkHoldAt(POLICY, [m], T0 + 11 * 60_000 - 1, HOUR).capMs, T0 - 10_000);
    const lapsed = watermarkHoldAt(POLICY, [m], T0 + 11 * 60_000, HOUR);
    assert.equal(lapsed.capMs, null);
    assert.equal(lapsed.active, 0);
    assert.deepEqual(
      lapsed.lapsed.map((x) => x.messageId),
      ['m1'],
    );
  });

  it('stops holding past the cap and reports the hold as stuck; younger holds still hold', () => {
    const old = held('poison', T0, T0 + 3 * HOUR);
    const young = held('m2', T0 + 50 * 60_000, T0 + 3 * HOUR);
    const nowMs = T0 + HOUR + 1;
    const hold = watermarkHoldAt(POLICY, [old, young], nowMs, HOUR);
    assert.deepEqual(
      hold.stuck.map((x) => x.messageId),
      ['poison'],
    );
    assert.equal(hold.active, 2);
    assert.equal(hold.oldestPublishTimeMs, young.publishTimeMs);
    assert.equal(hold.capMs, holdCapMs(POLICY, young.publishTimeMs));
  });

  it('holds nothing without held messages', () => {
    const hold = watermarkHoldAt(POLICY, [], T0, HOUR);
    assert.equal(hold.capMs, null);
    const state = { watermarkMs: T0, maxEventTimeMs: T0, maxEventTimeSeenAtMs: T0 };
    const next = { ...state, watermarkMs: T0 + 1 };
    assert.equal(applyWatermarkHold(state, next, hold.capMs), next);
  });
});

describe('heartbeat rule', () => {
  it('under the idle rule the watermark never passes the newest processed heartbeat − out-of-orderness (property)', () => {
    fc.assert(
      fc.property(
        // Events until T0 + lastEvent, then the ingest path stalls: the newest processed heartbeat stays at
        // T0 + heartbeat while fireWindows keeps passing at T0 + each of `passes` (a stalled minute after minute).
        fc.integer({ min: 0, max: HOUR }),
        fc.integer({ min: 0, max: HOUR }),
        fc.array(fc.integer({ min: 0, max: 3 * HOUR }), { minLength: 1, maxLength: 20 }),
        (lastEventMs, heartbeatMs, passes) => {
          let state = observeEventTime(
            POLICY,
            INITIAL_WATERMARK_STATE,
            T0 + lastEventMs,
            T0 + lastEventMs,
          ).state;
          const before = state.watermarkMs;
          for (const pt of [...passes].sort((a, b) => a - b)) {
            const nowMs = T0 + Math.max(pt, heartbeatMs);
            const hold = heartbeatHoldAt(POLICY, T0 + heartbeatMs, nowMs, 4 * HOUR);
            assert.equal(hold.stale, false);
            state = applyWatermarkHold(
              state,
              advanceWatermarkByProcessingTime(POLICY, state, nowMs),
              hold.capMs,
            );
            assert.ok(
              state.watermarkMs <= Math.max(before, T0 + heartbeatMs - POLICY.maxOutOfOrdernessMs),
              `watermark ${state.watermarkMs - T0} passed heartbeat ${heartbeatMs}`,
            );
          }
        },
      ),
    );
  });

  it('holds the idle rule while heartbeats stall, and lets it go once one is processed', () => {
    const seen = observeEventTime(POLICY, INITIAL_WATERMARK_STATE, T0, T0).state;
    const nowMs = T0 + 15 * 60_000;
    const stalled = heartbeatHoldAt(POLICY, T0, nowMs, HOUR);
    assert.equal(stalled.capMs, T0 - POLICY.maxOutOfOrdernessMs);
    const idle = advanceWatermarkByProcessingTime(POLICY, seen, nowMs);
    assert.equal(applyWatermarkHold(seen, idle, stalled.capMs).watermarkMs, seen.watermarkMs);
    const caughtUp = heartbeatHoldAt(POLICY, nowMs - 1_000, nowMs, HOUR);
    assert.equal(applyWatermarkHold(seen, idle, caughtUp.capMs).watermarkMs, idle.watermarkMs);
  });

  it('no heartbeat yet: no cap; older than the cap: stale, no cap; exactly at the cap: still holds', () => {
    assert.deepEqual(heartbeatHoldAt(POLICY, null, T0, HOUR), {
      publishTimeMs: null,
      capMs: null,
      stale: false,
    });
    assert.deepEqual(heartbeatHoldAt(POLICY, T0, T0 + HOUR + 1, HOUR), {
      publishTimeMs: T0,
      capMs: null,
      stale: true,
    });
    assert.equal(heartbeatHoldAt(POLICY, T0, T0 + HOUR, HOUR).capMs, holdCapMs(POLICY, T0));
  });
});
