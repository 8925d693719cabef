// The watermark heuristic: bounded out-of-orderness, the idle rule, future-dated events, monotonicity.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import {
  advanceWatermarkByProcessingTime,
  INITIAL_WATERMARK_STATE,
  MIN_WATERMARK_MS,
  observeEventTime,
  validateWatermarkPolicy,
  WindowingConfigError,
  WindowingInputError,
  type WatermarkPolicy,
  type WatermarkState,
} from '../../../shared/windowing';
import { labWatermarkPolicy } from './lab-config';

const POLICY = labWatermarkPolicy({ maxFutureSkewMs: 5_000 });

function observe(
  state: WatermarkState,
  eventTimeMs: number,
  processingTimeMs: number,
): WatermarkState {
  return observeEventTime(POLICY, state, eventTimeMs, processingTimeMs).state;
}

describe('windowing: watermark policy', () => {
  it('trails the largest event time by the out-of-orderness bound', () => {
    let s = observe(INITIAL_WATERMARK_STATE, 100_000, 100_500);
    assert.deepEqual(s, {
      watermarkMs: 90_000,
      maxEventTimeMs: 100_000,
      maxEventTimeSeenAtMs: 100_500,
    });
    s = observe(s, 95_000, 101_000);
    assert.equal(s.watermarkMs, 90_000, 'an older event does not move it');
    s = observe(s, 130_000, 131_000);
    assert.equal(s.watermarkMs, 120_000);
  });

  it('ignores events stamped beyond processing time + maxFutureSkewMs', () => {
    const s = observe(INITIAL_WATERMARK_STATE, 100_000, 100_000);
    const future = observeEventTime(POLICY, s, 105_001, 100_000);
    assert.equal(future.futureDated, true);
    assert.deepEqual(future.state, s);
    const edge = observeEventTime(POLICY, s, 105_000, 100_000);
    assert.equal(edge.futureDated, false);
    assert.equal(edge.state.watermarkMs, 95_000);
  });

  it('glides with processing time after the idle timeout when events lag the clock', () => {
    // A replay: events 100 s behind the clock, then silence.
    const s = observe(INITIAL_WATERMARK_STATE, 100_000, 200_000);
    assert.equal(advanceWatermarkByProcessingTime(POLICY, s, 259_999).watermarkMs, 90_000);
    assert.equal(advanceWatermarkByProcessingTime(POLICY, s, 260_000).watermarkMs, 90_000);
    assert.equal(advanceWatermarkByProcessingTime(POLICY, s, 300_000).watermarkMs, 130_000);
  });

  it('never runs ahead of the clock when idle after events stamped ahead of it', () => {
    const s = observe(INITIAL_WATERMARK_STATE, 105_000, 100_000);
    assert.equal(s.watermarkMs, 95_000);
    assert.equal(advanceWatermarkByProcessingTime(POLICY, s, 160_000).watermarkMs, 95_000);
    assert.equal(advanceWatermarkByProcessingTime(POLICY, s, 200_000).watermarkMs, 130_000);
  });

  it('does not advance before any event, nor with only future-dated events', () => {
    assert.deepEqual(
      advanceWatermarkByProcessingTime(POLICY, INITIAL_WATERMARK_STATE, 1e12),
      INITIAL_WATERMARK_STATE,
    );
    const s = observe(INITIAL_WATERMARK_STATE, 2e12, 1e12);
    assert.equal(
      advanceWatermarkByProcessingTime(POLICY, s, 1e12 + 1e9).watermarkMs,
      MIN_WATERMARK_MS,
    );
  });

  it('validates the policy and its time arguments', () => {
    assert.deepEqual(validateWatermarkPolicy(POLICY), POLICY);
    assert.throws(
      () =>
        validateWatermarkPolicy({
          maxOutOfOrdernessMs: -1,
          idleTimeoutMs: 0,
          maxFutureSkewMs: 1.5,
        }),
      (err: unknown) =>
        err instanceof WindowingConfigError &&
        err.issues.map((i) => i.path).join() ===
          'watermarkPolicy.maxOutOfOrdernessMs,watermarkPolicy.idleTimeoutMs,watermarkPolicy.maxFutureSkewMs',
    );
    assert.throws(() => observe(INITIAL_WATERMARK_STATE, Number.NaN, 0), WindowingInputError);
  });

  type Op =
    | { kind: 'event'; eventTimeMs: number; processingTimeMs: number }
    | { kind: 'tick'; processingTimeMs: number };
  const TIME = fc.integer({ min: 0, max: 1_000_000 });
  const OPS = fc.array(
    fc.oneof(
      fc.record({ kind: fc.constant('event' as const), eventTimeMs: TIME, processingTimeMs: TIME }),
      fc.record({ kind: fc.constant('tick' as const), processingTimeMs: TIME }),
    ),
    { maxLength: 40 },
  );
  const POLICIES = fc.record({
    maxOutOfOrdernessMs: fc.integer({ min: 0, max: 50_000 }),
    idleTimeoutMs: fc.integer({ min: 1, max: 100_000 }),
    maxFutureSkewMs: fc.integer({ min: 0, max: 50_000 }),
  });

  function apply(policy: WatermarkPolicy, state: WatermarkState, op: Op): WatermarkState {
    return op.kind === 'event'
      ? observeEventTime(policy, state, op.eventTimeMs, op.processingTimeMs).state
      : advanceWatermarkByProcessingTime(policy, state, op.processingTimeMs);
  }

  it('never goes backwards, whatever the events and clock readings (property)', () => {
    fc.assert(
      fc.property(POLICIES, OPS, (policy, ops) => {
        let state = INITIAL_WATERMARK_STATE;
        for (const op of ops) {
          const next = apply(policy, state, op);
          assert.ok(next.watermarkMs >= state.watermarkMs);
          state = next;
        }
      }),
    );
  });

  it('is not moved by future-dated events anywhere in the stream (property)', () => {
    const FUTURE = fc.record({
      at: fc.nat(40),
      skewBeyond: fc.integer({ min: 1, max: 1e9 }),
      processingTimeMs: TIME,
    });
    fc.assert(
      fc.property(POLICIES, OPS, fc.array(FUTURE, { maxLength: 5 }), (policy, ops, futures) => {
        let plain = INITIAL_WATERMARK_STATE;
        let mixed = INITIAL_WATERMARK_STATE;
        ops.forEach((op, i) => {
          for (const f of futures.filter((x) => x.at === i)) {
            const ignored = observeEventTime(
              policy,
              mixed,
              f.processingTimeMs + policy.maxFutureSkewMs + f.skewBeyond,
              f.processingTimeMs,
            );
            assert.equal(ignored.futureDated, true);
            // Only the idle rule at that clock reading applies, exactly as for a tick.
            assert.deepEqual(
              ignored.state,
              advanceWatermarkByProcessingTime(policy, mixed, f.processingTimeMs),
            );
            plain = advanceWatermarkByProcessingTime(policy, plain, f.processingTimeMs);
            mixed = ignored.state;
          }
          plain = apply(policy, plain, op);
          mixed = apply(policy, mixed, op);
        });
        assert.deepEqual(mixed, plain);
      }),
    );
  });

  it('stays behind the evidence: max event time − bound, or the idle clock bound (property)', () => {
    fc.assert(
      fc.property(POLICIES, OPS, (policy, ops) => {
        let state = INITIAL_WATERMARK_STATE;
        let maxClock = -Infinity;
        for (const op of ops) {
          state = apply(policy, state, op);
          maxClock = Math.max(maxClock, op.processingTimeMs);
          const byEvents =
            state.maxEventTimeMs === null
              ? MIN_WATERMARK_MS
              : state.maxEventTimeMs - policy.maxOutOfOrdernessMs;
          const byClock = maxClock - policy.idleTimeoutMs - policy.maxOutOfOrdernessMs;
          assert.ok(state.watermarkMs <= Math.max(byEvents, byClock));
        }
      }),
    );
  });
});
