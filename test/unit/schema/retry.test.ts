// Retry accounting with an injected clock: the derived retry count, the budget, and the schema windows.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import sinon from 'sinon';
import {
  isPastBudget,
  isWindowClosed,
  retryCount,
  schemaWindowOf,
  type SchemaWindow,
} from '../../../shared/schema';

const MIN = 60_000;
const T0 = Date.UTC(2026, 9, 7, 14, 10, 0); // 2026-10-07T14:10:00Z, the lab's event time
const safeMs = fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
const windowMinutes = fc.integer({ min: 1, max: 24 * 60 });

describe('schema/retry', () => {
  describe('retryCount', () => {
    it('follows floor((now − processed) / window) minute by minute for an injected clock', () => {
      // A 3-minute window (the design's default): attempts at 3, 6, 9 … minutes.
      const expected = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3];
      expected.forEach((want, minute) => {
        assert.equal(retryCount(T0, T0 + minute * MIN, 3), want, `after ${minute} min`);
      });
      assert.equal(
        retryCount(T0, T0 + 3 * MIN - 1, 3),
        0,
        'one ms before the first window boundary',
      );
      assert.equal(retryCount(T0, T0 + 3 * MIN, 3), 1, 'exactly at the boundary');
      assert.equal(retryCount(T0, T0 + 10 * MIN, 1), 10);
    });

    it('is 0 when the clock is behind the processed timestamp (skew)', () => {
      assert.equal(retryCount(T0, T0 - 1, 3), 0);
      assert.equal(retryCount(T0, T0 - 100 * MIN, 3), 0);
    });

    it('matches the formula in exact integer arithmetic for any safe timestamps', () => {
      fc.assert(
        fc.property(safeMs, safeMs, windowMinutes, (processed, now, w) => {
          const count = retryCount(processed, now, w);
          assert.ok(Number.isSafeInteger(count) && count >= 0);
          if (now < processed) {
            assert.equal(count, 0);
            return;
          }
          // floor(d / W) is the unique q with q·W ≤ d < (q+1)·W.
          const d = BigInt(now) - BigInt(processed);
          const W = BigInt(w) * 60_000n;
          assert.ok(BigInt(count) * W <= d, 'q·W ≤ elapsed');
          assert.ok(d < (BigInt(count) + 1n) * W, 'elapsed < (q+1)·W');
        }),
      );
    });

    it('never decreases as the clock advances', () => {
      fc.assert(
        fc.property(safeMs, fc.nat(), fc.nat(), windowMinutes, (processed, a, b, w) => {
          fc.pre(processed + a + b <= Number.MAX_SAFE_INTEGER);
          assert.ok(
            retryCount(processed, processed + a, w) <= retryCount(processed, processed + a + b, w),
          );
        }),
      );
    });

    it('reads the clock it is given, not the system clock', () => {
      const clock = sinon.useFakeTimers({ now: T0 + 1000 * MIN });
      try {
        assert.equal(retryCount(T0, T0 + 7 * MIN, 3), 2);
        clock.tick(60 * MIN);
        assert.equal(retryCount(T0, T0 + 7 * MIN, 3), 2);
      } finally {
        clock.restore();
      }
    });

    it('rejects non-integer times and windows below one minute', () => {
      assert.throws(() => retryCount(T0 + 0.5, T0, 3), RangeError);
      assert.throws(() => retryCount(T0, Number.NaN, 3), RangeError);
      assert.throws(() => retryCount(T0, T0, 0), RangeError);
      assert.throws(() => retryCount(T0, T0, 1.5), RangeError);
    });
  });

  describe('isPastBudget', () => {
    it('is true from exactly retryMinutes after the processed time', () => {
      assert.equal(isPastBudget(T0, T0 + 15 * MIN - 1, 15), false);
      assert.equal(isPastBudget(T0, T0 + 15 * MIN, 15), true);
      assert.equal(isPastBudget(T0, T0 + 60 * MIN, 15), true);
    });

    it('is false under clock skew, and a zero budget is spent at once', () => {
      assert.equal(isPastBudget(T0, T0 - MIN, 15), false);
      assert.equal(isPastBudget(T0, T0, 0), true);
    });

    it('agrees with the retry count when the budget is a whole number of windows', () => {
      fc.assert(
        fc.property(
          safeMs,
          safeMs,
          windowMinutes,
          fc.integer({ min: 0, max: 50 }),
          (p, now, w, k) => {
            assert.equal(isPastBudget(p, now, k * w), now >= p && retryCount(p, now, w) >= k);
          },
        ),
      );
    });

    it('rejects a negative or fractional budget', () => {
      assert.throws(() => isPastBudget(T0, T0, -1), RangeError);
      assert.throws(() => isPastBudget(T0, T0, 2.5), RangeError);
    });
  });

  describe('schemaWindowOf / isWindowClosed', () => {
    it('puts a row in the epoch-aligned fixed window of its processed time', () => {
      const w = schemaWindowOf(T0 + 30_000, 3); // 14:10:30 → [14:09, 14:12)
      assert.deepEqual(w, {
        startMs: Date.UTC(2026, 9, 7, 14, 9, 0),
        endMs: Date.UTC(2026, 9, 7, 14, 12, 0),
        id: '2026-10-07T14:09:00.000Z_3m',
      });
      assert.equal(
        schemaWindowOf(w.endMs, 3).startMs,
        w.endMs,
        'the end belongs to the next window',
      );
      assert.equal(schemaWindowOf(w.endMs - 1, 3).id, w.id);
    });

    it('contains its timestamp, is aligned, and gives one id per window (any time, any length)', () => {
      const ts = fc.integer({ min: -8.6e15, max: 8.6e15 });
      fc.assert(
        fc.property(ts, ts, windowMinutes, (a, b, minutes) => {
          const w = schemaWindowOf(a, minutes);
          assert.ok(w.startMs <= a && a < w.endMs);
          assert.equal(w.endMs - w.startMs, minutes * MIN);
          assert.equal(((w.startMs % (minutes * MIN)) + minutes * MIN) % (minutes * MIN), 0);
          const v = schemaWindowOf(b, minutes);
          assert.equal(v.id === w.id, v.startMs === w.startMs);
          assert.ok(!w.id.includes('/'));
        }),
      );
    });

    it('gives different ids to different window lengths', () => {
      assert.notEqual(schemaWindowOf(0, 1).id, schemaWindowOf(0, 3).id);
    });

    it('rejects timestamps outside the date range', () => {
      assert.throws(() => schemaWindowOf(Number.MAX_SAFE_INTEGER, 3), RangeError);
      assert.throws(() => schemaWindowOf(1.5, 3), RangeError);
    });

    it('closes at its end, or after the grace', () => {
      const w: SchemaWindow = schemaWindowOf(T0, 3);
      assert.equal(isWindowClosed(w, w.endMs - 1), false);
      assert.equal(isWindowClosed(w, w.endMs), true);
      assert.equal(isWindowClosed(w, w.endMs, 5000), false);
      assert.equal(isWindowClosed(w, w.endMs + 5000, 5000), true);
      assert.throws(() => isWindowClosed(w, w.endMs, -1), RangeError);
    });
  });
});
