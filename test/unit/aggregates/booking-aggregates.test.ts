// The booking combiner: exact decimal money, a lawful CombineFn (associative, commutative, canonical), half-even
// means; the route key and the gold row mapping.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  AccumulatorFormatError,
  bookingAggregatesFn as fn,
  divideHalfEven,
  parseBookingAccumulator,
  parseScaledText,
  type BookingAccumulator,
} from '../../../shared/aggregates/booking-aggregates';
import { goldPaneRow } from '../../../shared/aggregates/gold-row';
import { parseRouteKey, routeKey } from '../../../shared/aggregates/route-key';
import { formatScaled, parseNumeric } from '../../../shared/contract';
import { MIN_WATERMARK_MS } from '../../../shared/windowing';

const fare = fc.bigInt({ min: 1n, max: 10n ** 20n });
const accOf = (fares: readonly bigint[]): BookingAccumulator =>
  fares.reduce((a, f) => fn.addInput(a, f), fn.createAccumulator());

describe('aggregates: booking combiner', () => {
  it('sums fares exactly, whatever their decimals (no binary floats)', () => {
    fc.assert(
      fc.property(fc.array(fare, { maxLength: 50 }), (fares) => {
        const acc = accOf(fares);
        assert.equal(
          parseScaledText(acc.total),
          fares.reduce((a, b) => a + b, 0n),
        );
        assert.equal(acc.count, fares.length);
        if (fares.length > 0) {
          assert.equal(acc.min, formatScaled(fares.reduce((a, b) => (a < b ? a : b))));
          assert.equal(acc.max, formatScaled(fares.reduce((a, b) => (a > b ? a : b))));
        }
      }),
    );
    // The classic float trap: 0.1 + 0.2.
    assert.equal(accOf([100_000_000n, 200_000_000n]).total, '0.3');
  });

  it('merges shards to exactly the unsharded accumulator, in any grouping and order', () => {
    fc.assert(
      fc.property(fc.array(fare, { maxLength: 40 }), fc.array(fc.nat(5)), (fares, cuts) => {
        const shards: bigint[][] = [[], [], [], [], [], []];
        fares.forEach((f, i) => shards[(cuts[i] ?? i) % 6]?.push(f));
        const merged = fn.mergeAccumulators(shards.map(accOf));
        assert.deepEqual(merged, accOf(fares));
        assert.deepEqual(fn.mergeAccumulators([...shards].reverse().map(accOf)), merged);
        assert.deepEqual(fn.mergeAccumulators([]), fn.createAccumulator());
      }),
    );
  });

  it('rounds the mean half-even to 9 fraction digits', () => {
    assert.equal(divideHalfEven(5n, 2n), 2n);
    assert.equal(divideHalfEven(7n, 2n), 4n);
    assert.equal(divideHalfEven(-5n, 2n), -2n);
    assert.equal(divideHalfEven(10n, 3n), 3n);
    assert.equal(divideHalfEven(11n, 3n), 4n);
    assert.throws(() => divideHalfEven(1n, 0n), RangeError);
    // 0.000000001 + 0.000000002 = 0.000000003; / 2 = 0.0000000015 → ties to even → 0.000000002
    assert.equal(fn.extractOutput(accOf([1n, 2n])).mean, '0.000000002');
    assert.equal(fn.extractOutput(accOf([1n, 4n])).mean, '0.000000002'); // 2.5 → 2
    assert.equal(fn.extractOutput(accOf([3n, 4n])).mean, '0.000000004'); // 3.5 → 4
    fc.assert(
      fc.property(fc.array(fare, { minLength: 1, maxLength: 20 }), (fares) => {
        const out = fn.extractOutput(accOf(fares));
        const mean = parseScaledText(out.mean ?? '');
        const total = fares.reduce((a, b) => a + b, 0n);
        const n = BigInt(fares.length);
        // |mean·n − total| ≤ n/2 (nearest), as a NUMERIC with scale 9.
        const diff = mean * n - total;
        assert.ok(2n * (diff < 0n ? -diff : diff) <= n);
        assert.ok(parseNumeric(out.total).ok);
      }),
    );
  });

  it('gives an empty pane count 0, total 0 and no min/max/mean', () => {
    assert.deepEqual(fn.extractOutput(fn.createAccumulator()), {
      count: 0,
      total: '0',
      min: null,
      max: null,
      mean: null,
    });
  });

  it('refuses stored accumulators it did not write', () => {
    assert.deepEqual(parseBookingAccumulator(JSON.parse(JSON.stringify(accOf([5n])))), accOf([5n]));
    for (const bad of [
      null,
      [],
      { count: 1, total: '1', min: '1' },
      { count: -1, total: '1', min: '1', max: '1' },
      { count: 1, total: 1, min: '1', max: '1' },
      { count: 1, total: '1e3', min: '1', max: '1' },
      { count: 0, total: '0', min: '1', max: null },
      { count: 1, total: '0.1234567891', min: '1', max: '1' },
    ]) {
      assert.throws(
        () => parseBookingAccumulator(bad),
        AccumulatorFormatError,
        JSON.stringify(bad),
      );
    }
  });
});

describe('aggregates: route key and gold row', () => {
  it('keys a route as ORIGIN-DESTINATION-CURRENCY and parses it back', () => {
    assert.equal(routeKey({ origin: 'JFK', destination: 'LHR', currency: 'USD' }), 'JFK-LHR-USD');
    assert.deepEqual(parseRouteKey('JFK-LHR-USD'), {
      origin: 'JFK',
      destination: 'LHR',
      currency: 'USD',
    });
    assert.throws(
      () => routeKey({ origin: 'jfk', destination: 'LHR', currency: 'USD' }),
      RangeError,
    );
    assert.throws(() => parseRouteKey('JFK/LHR'), RangeError);
  });

  it('maps a pane to a gold row: NUMERIC text, RFC 3339 times, NULL watermark before any event', () => {
    const pane = {
      key: 'JFK-LHR-USD',
      window: {
        startMs: Date.parse('2026-10-07T14:10:00Z'),
        endMs: Date.parse('2026-10-07T14:11:00Z'),
      },
      value: fn.extractOutput(accOf([749_500_000_000n])),
      timing: 'EARLY' as const,
      index: 0,
      onTimeIndex: -1,
      isFirst: true,
      isLast: false,
      firedAtProcessingTimeMs: Date.parse('2026-10-07T14:10:30Z'),
      watermarkMs: MIN_WATERMARK_MS,
    };
    assert.deepEqual(goldPaneRow('p', 'ACCUMULATING', pane, 'id-0'), {
      pipeline: 'p',
      window_start: '2026-10-07T14:10:00.000000Z',
      window_end: '2026-10-07T14:11:00.000000Z',
      route_key: 'JFK-LHR-USD',
      origin_airport: 'JFK',
      destination_airport: 'LHR',
      currency: 'USD',
      booking_count: 1,
      fare_total: '749.5',
      fare_min: '749.5',
      fare_max: '749.5',
      fare_mean: '749.5',
      pane_timing: 'EARLY',
      pane_index: 0,
      pane_on_time_index: -1,
      is_first: true,
      is_final: false,
      accumulation_mode: 'ACCUMULATING',
      watermark_at_emission: null,
      emitted_at: '2026-10-07T14:10:30.000000Z',
      insert_id: 'id-0',
    });
  });
});
