// The telemetry combines are lawful Beam CombineFns (associative, commutative, empty identity, canonical), so any
// sharding merges to the unsharded pane; per-device statistics are exact, the regional top-N exact despite its cut.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { parseScaledText } from '../../../../shared/aggregates/booking-aggregates';
import type { CombineFn, JsonValue, Pane } from '../../../../shared/windowing';
import {
  deviceStatsFn,
  parseDeviceStatsAccumulator,
  parseTopAccumulator,
  regionTopNFn,
  TelemetryAccumulatorError,
  type TopDevice,
} from '../../../../shared/pipelines/telemetry/combine';
import type { TelemetryElement } from '../../../../shared/pipelines/telemetry/contract';
import { devicePaneRow, regionTopPaneRow } from '../../../../shared/pipelines/telemetry/rows';

/** Readings in milli-°C within the default plausible range. */
const milli = fc.integer({ min: -55_000, max: 125_000 });
const reading: fc.Arbitrary<TelemetryElement> = fc.record({
  deviceId: fc.constantFrom('d-1', 'd-2', 'd-3', 'd-4', 'd-5', 'd-6', 'd-7', 'd-8'),
  temperatureMilliC: milli,
});

function fold<In, Acc extends JsonValue, Out>(
  fn: CombineFn<In, Acc, Out>,
  inputs: readonly In[],
): Acc {
  return inputs.reduce((acc, x) => fn.addInput(acc, x), fn.createAccumulator());
}

/** Splits `inputs` over `shards` by the given assignment, folds each shard, merges them in a shuffled order. */
function sharded<In, Acc extends JsonValue, Out>(
  fn: CombineFn<In, Acc, Out>,
  inputs: readonly In[],
  assignment: readonly number[],
  shards: number,
  order: readonly number[],
): Acc {
  const parts: In[][] = Array.from({ length: shards }, () => []);
  inputs.forEach((x, i) => parts[(assignment[i] ?? 0) % shards]?.push(x));
  const accs = parts.map((p) => fold(fn, p));
  const shuffled = [...accs.keys()]
    .sort((a, b) => (order[a] ?? 0) - (order[b] ?? 0))
    .map((i) => accs[i] as Acc);
  return fn.mergeAccumulators(shuffled);
}

/** The laws every combine here must keep, checked with fast-check. */
function checkLaws<In, Acc extends JsonValue, Out>(
  fn: CombineFn<In, Acc, Out>,
  input: fc.Arbitrary<In>,
): void {
  fc.assert(
    fc.property(
      fc.array(input, { maxLength: 60 }),
      fc.array(fc.nat(), { minLength: 60, maxLength: 60 }),
      fc.integer({ min: 1, max: 16 }),
      fc.array(fc.nat(), { minLength: 16, maxLength: 16 }),
      (inputs, assignment, shards, order) => {
        const whole = fold(fn, inputs);
        // Sharding and merge order never change the accumulator (canonical JSON, not just the same output).
        assert.deepEqual(sharded(fn, inputs, assignment, shards, order), whole);
        // Input order does not matter either.
        assert.deepEqual(fold(fn, [...inputs].reverse()), whole);
        // The empty accumulator is the identity of merge.
        assert.deepEqual(fn.mergeAccumulators([fn.createAccumulator(), whole]), whole);
        assert.deepEqual(fn.mergeAccumulators([]), fn.createAccumulator());
      },
    ),
  );
  fc.assert(
    fc.property(fc.array(input), fc.array(input), fc.array(input), (a, b, c) => {
      const [x, y, z] = [fold(fn, a), fold(fn, b), fold(fn, c)];
      assert.deepEqual(
        fn.mergeAccumulators([fn.mergeAccumulators([x, y]), z]),
        fn.mergeAccumulators([x, fn.mergeAccumulators([y, z])]),
      );
      assert.deepEqual(fn.mergeAccumulators([x, y]), fn.mergeAccumulators([y, x]));
    }),
  );
}

describe('telemetry combines', () => {
  describe('per device: count, average, minimum, maximum', () => {
    it('is associative, commutative, with the empty accumulator as identity, under any sharding', () => {
      checkLaws(deviceStatsFn, milli);
    });

    it('is exact: integer milli-degrees, one half-even rounding of the average at 9 decimals', () => {
      fc.assert(
        fc.property(fc.array(milli, { minLength: 1, maxLength: 100 }), (values) => {
          const out = deviceStatsFn.extractOutput(fold(deviceStatsFn, values));
          assert.equal(out.count, values.length);
          assert.equal(parseScaledText(out.minC ?? ''), BigInt(Math.min(...values)) * 1_000_000n);
          assert.equal(parseScaledText(out.maxC ?? ''), BigInt(Math.max(...values)) * 1_000_000n);
          const sum = values.reduce((a, b) => a + b, 0);
          // The average is the exact quotient within half a unit of the 9th decimal: |avg·n − sum| ≤ n/2.
          const n = BigInt(values.length);
          const error = parseScaledText(out.avgC ?? '') * n - BigInt(sum) * 1_000_000n;
          assert.ok(
            (error < 0n ? -error : error) * 2n <= n,
            `${out.avgC} vs ${sum}/${values.length}`,
          );
        }),
      );
      // Decimal traps of binary floats: 0.1 + 0.2, and a repeating average.
      const out = deviceStatsFn.extractOutput(fold(deviceStatsFn, [100, 200, 0]));
      assert.deepEqual(out, { count: 3, avgC: '0.1', minC: '0', maxC: '0.2' });
      assert.equal(deviceStatsFn.extractOutput(fold(deviceStatsFn, [1, 1, 0])).avgC, '0.000666667');
      assert.equal(
        deviceStatsFn.extractOutput(fold(deviceStatsFn, [-1, -1, 0])).avgC,
        '-0.000666667',
      );
      assert.deepEqual(deviceStatsFn.extractOutput(deviceStatsFn.createAccumulator()), {
        count: 0,
        avgC: null,
        minC: null,
        maxC: null,
      });
    });

    it('reads back only accumulators it wrote', () => {
      const acc = fold(deviceStatsFn, [21_500, 22_000]);
      assert.deepEqual(parseDeviceStatsAccumulator(JSON.parse(JSON.stringify(acc))), acc);
      for (const bad of [
        null,
        [],
        { count: 1, sumMilliC: 1, minMilliC: null, maxMilliC: 1 },
        { count: -1, sumMilliC: 0, minMilliC: null, maxMilliC: null },
        { count: 1, sumMilliC: 1.5, minMilliC: 1, maxMilliC: 1 },
        { count: 0, sumMilliC: 0, minMilliC: null, maxMilliC: null, extra: 1 },
      ]) {
        assert.throws(
          () => parseDeviceStatsAccumulator(bad),
          TelemetryAccumulatorError,
          JSON.stringify(bad),
        );
      }
    });
  });

  describe('per region: the top-N hottest devices', () => {
    const top3 = regionTopNFn(3);

    it('is associative, commutative, with the empty accumulator as identity, under any sharding', () => {
      checkLaws(top3, reading);
      checkLaws(regionTopNFn(1), reading);
    });

    it('equals an independent ranking of the devices by highest reading, however the region is sharded', () => {
      fc.assert(
        fc.property(
          fc.array(reading, { maxLength: 80 }),
          fc.array(fc.nat(), { minLength: 80, maxLength: 80 }),
          fc.integer({ min: 1, max: 16 }),
          (inputs, assignment, shards) => {
            const highest = new Map<string, number>();
            for (const r of inputs) {
              highest.set(
                r.deviceId,
                Math.max(highest.get(r.deviceId) ?? -Infinity, r.temperatureMilliC),
              );
            }
            const expected = [...highest.entries()]
              .sort(([da, a], [db, b]) => b - a || (da < db ? -1 : 1))
              .slice(0, 3)
              .map(([deviceId, m], i) => ({
                rank: i + 1,
                deviceId,
                maxTemperatureC: String(m / 1000),
              }));
            const order = Array.from({ length: 16 }, (_, i) => 16 - i);
            const got = top3.extractOutput(sharded(top3, inputs, assignment, shards, order));
            assert.deepEqual(got, expected);
          },
        ),
      );
    });

    it('keeps at most N entries, one per device, ties broken by device id', () => {
      const acc = fold(top3, [
        { deviceId: 'b', temperatureMilliC: 30_000 },
        { deviceId: 'a', temperatureMilliC: 30_000 },
        { deviceId: 'b', temperatureMilliC: 10_000 },
        { deviceId: 'c', temperatureMilliC: 29_999 },
        { deviceId: 'd', temperatureMilliC: 5_000 },
      ]);
      assert.deepEqual(acc, [
        { deviceId: 'a', maxMilliC: 30_000 },
        { deviceId: 'b', maxMilliC: 30_000 },
        { deviceId: 'c', maxMilliC: 29_999 },
      ]);
      assert.deepEqual(parseTopAccumulator(JSON.parse(JSON.stringify(acc)), 3), acc);
      assert.throws(
        () => parseTopAccumulator([...acc, { deviceId: 'e', maxMilliC: 1 }], 3),
        TelemetryAccumulatorError,
      );
      assert.throws(() => parseTopAccumulator([acc[1], acc[0]], 3), /rank order/);
      assert.throws(() => parseTopAccumulator([{ deviceId: 'a' }], 3), /malformed/);
      assert.throws(() => regionTopNFn(0), RangeError);
    });
  });

  describe('gold rows', () => {
    const base = {
      window: { startMs: Date.UTC(2026, 9, 7, 14, 10), endMs: Date.UTC(2026, 9, 7, 14, 11) },
      timing: 'EARLY' as const,
      index: 0,
      onTimeIndex: -1,
      isFirst: true,
      isLast: false,
      firedAtProcessingTimeMs: Date.UTC(2026, 9, 7, 14, 10, 45),
      watermarkMs: Date.UTC(2026, 9, 7, 14, 10, 20),
    };

    it('maps a device pane and a regional pane to their gold rows', () => {
      const device: Pane<ReturnType<typeof deviceStatsFn.extractOutput>> = {
        ...base,
        key: 'dev-1',
        value: deviceStatsFn.extractOutput(fold(deviceStatsFn, [21_500, 22_000])),
      };
      const row = devicePaneRow('telemetry_device_1m', 'ACCUMULATING', device, 'id-1');
      assert.equal(row.device_id, 'dev-1');
      assert.equal(row.reading_count, 2);
      assert.equal(row.temperature_avg_c, '21.75');
      assert.equal(row.temperature_min_c, '21.5');
      assert.equal(row.temperature_max_c, '22');
      assert.equal(row.window_start, '2026-10-07T14:10:00.000000Z');
      assert.equal(row.watermark_at_emission, '2026-10-07T14:10:20.000000Z');
      assert.equal(row.pane_timing, 'EARLY');
      assert.equal(row.insert_id, 'id-1');
      const region: Pane<TopDevice[]> = {
        ...base,
        key: 'eu-west',
        value: [{ rank: 1, deviceId: 'dev-1', maxTemperatureC: '22' }],
      };
      const top = regionTopPaneRow('telemetry_region_top_1m', 'ACCUMULATING', region, 'id-2');
      assert.equal(top.region, 'eu-west');
      assert.deepEqual(top.top_devices, [{ rank: 1, device_id: 'dev-1', max_temperature_c: '22' }]);
    });
  });
});
