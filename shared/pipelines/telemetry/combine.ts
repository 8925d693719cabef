// The telemetry combines: per-device statistics and the per-region top-N hottest devices.
import { divideHalfEven } from '../../aggregates/booking-aggregates';
import { formatScaled } from '../../contract';
import { accumulatorFields, type CombineFn } from '../../windowing';
import type { TelemetryElement } from './contract';

/** Thrown when a stored accumulator is not the shape these combines write (a corrupt or foreign document). */
export class TelemetryAccumulatorError extends Error {
  override readonly name = 'TelemetryAccumulatorError';
}

/**
 * Per-device accumulator: milli-degrees Celsius as exact integers (exact below 2^53, over 10^10 readings at 125 °C
 * per window). `min`/`max` are `null` while `count` is 0.
 */
export type DeviceStatsAccumulator = {
  readonly count: number;
  readonly sumMilliC: number;
  readonly minMilliC: number | null;
  readonly maxMilliC: number | null;
};

/**
 * A device pane's value, as NUMERIC text in °C. `count`, `minC` and `maxC` are exact; `avgC` is the exact quotient
 * sum / count rounded once, half-even, to 9 fraction digits (BigQuery NUMERIC's scale): the only rounding.
 * `null` for an empty pane.
 */
export interface DeviceStats {
  readonly count: number;
  readonly avgC: string | null;
  readonly minC: string | null;
  readonly maxC: string | null;
}

const EMPTY_STATS: DeviceStatsAccumulator = {
  count: 0,
  sumMilliC: 0,
  minMilliC: null,
  maxMilliC: null,
};

const lower = (a: number | null, b: number | null) =>
  a === null ? b : b === null ? a : Math.min(a, b);
const higher = (a: number | null, b: number | null) =>
  a === null ? b : b === null ? a : Math.max(a, b);

/** Milli-degrees → NUMERIC text in °C, exact. */
export function milliToText(milli: number): string {
  return formatScaled(BigInt(milli) * 1_000_000n);
}

/** Beam `CombineFn` per device and window; canonical like `bookingAggregatesFn`, so shards merge exactly. */
export const deviceStatsFn: CombineFn<number, DeviceStatsAccumulator, DeviceStats> = {
  createAccumulator: () => EMPTY_STATS,
  addInput: (acc, milli) => ({
    count: acc.count + 1,
    sumMilliC: acc.sumMilliC + milli,
    minMilliC: lower(acc.minMilliC, milli),
    maxMilliC: higher(acc.maxMilliC, milli),
  }),
  mergeAccumulators: (accs) =>
    accs.reduce(
      (a, b) => ({
        count: a.count + b.count,
        sumMilliC: a.sumMilliC + b.sumMilliC,
        minMilliC: lower(a.minMilliC, b.minMilliC),
        maxMilliC: higher(a.maxMilliC, b.maxMilliC),
      }),
      EMPTY_STATS,
    ),
  extractOutput: (acc) => ({
    count: acc.count,
    avgC:
      acc.count === 0
        ? null
        : formatScaled(divideHalfEven(BigInt(acc.sumMilliC) * 1_000_000n, BigInt(acc.count))),
    minC: acc.minMilliC === null ? null : milliToText(acc.minMilliC),
    maxC: acc.maxMilliC === null ? null : milliToText(acc.maxMilliC),
  }),
};

function isInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

/**
 * Checks a per-device accumulator read back from Firestore.
 * @throws TelemetryAccumulatorError describing the first problem
 */
export function parseDeviceStatsAccumulator(value: unknown): DeviceStatsAccumulator {
  const { count, sumMilliC, minMilliC, maxMilliC } = accumulatorFields(
    value,
    ['count', 'sumMilliC', 'minMilliC', 'maxMilliC'],
    (message) => new TelemetryAccumulatorError(message),
  );
  if (!isInt(count) || count < 0 || !isInt(sumMilliC)) {
    throw new TelemetryAccumulatorError(
      `accumulator count/sum are not integers: ${JSON.stringify(value)}`,
    );
  }
  const bounds =
    count === 0 ? minMilliC === null && maxMilliC === null : isInt(minMilliC) && isInt(maxMilliC);
  if (!bounds) {
    throw new TelemetryAccumulatorError(`accumulator min/max do not match count ${count}`);
  }
  return {
    count,
    sumMilliC,
    minMilliC: minMilliC as number | null,
    maxMilliC: maxMilliC as number | null,
  };
}

/** One device in a top-N accumulator: its highest reading in the window so far, milli-°C. */
export type TopEntry = { readonly deviceId: string; readonly maxMilliC: number };

/** A top-N accumulator: at most N entries, one per device, hottest first (ties: device id ascending). */
export type TopAccumulator = readonly TopEntry[];

/** One row of a regional top-N pane. */
export interface TopDevice {
  /** 1 = hottest. */
  readonly rank: number;
  readonly deviceId: string;
  /** The device's highest reading in the window, NUMERIC text in °C. */
  readonly maxTemperatureC: string;
}

function hotterFirst(a: TopEntry, b: TopEntry): number {
  if (a.maxMilliC !== b.maxMilliC) return b.maxMilliC - a.maxMilliC;
  return a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : 0;
}

/** Entries → one per device (its highest reading), hottest first, cut to `n`. */
function topOf(entries: Iterable<TopEntry>, n: number): TopAccumulator {
  const best = new Map<string, number>();
  for (const { deviceId, maxMilliC } of entries) {
    const seen = best.get(deviceId);
    if (seen === undefined || maxMilliC > seen) best.set(deviceId, maxMilliC);
  }
  return [...best.entries()]
    .map(([deviceId, maxMilliC]) => ({ deviceId, maxMilliC }))
    .sort(hotterFirst)
    .slice(0, n);
}

/**
 * The `n` hottest devices (highest reading) of a region and window. The accumulator holds at most `n` entries and
 * stays exact under sharding: a device in the true top `n` is in the top `n` of the shard holding its highest
 * reading. (A top-N by average would not survive truncation.)
 * @throws RangeError when `n` is not an integer in 1-100
 */
export function regionTopNFn(n: number): CombineFn<TelemetryElement, TopAccumulator, TopDevice[]> {
  if (!Number.isSafeInteger(n) || n < 1 || n > 100) {
    throw new RangeError(`top-N size ${n} is not an integer in 1-100`);
  }
  return {
    createAccumulator: () => [],
    addInput: (acc, input) =>
      topOf([...acc, { deviceId: input.deviceId, maxMilliC: input.temperatureMilliC }], n),
    mergeAccumulators: (accs) => topOf(accs.flat(), n),
    extractOutput: (acc) =>
      acc.map((e, i) => ({
        rank: i + 1,
        deviceId: e.deviceId,
        maxTemperatureC: milliToText(e.maxMilliC),
      })),
  };
}

/**
 * Checks a top-N accumulator read back from Firestore: at most `n` `{deviceId, maxMilliC}`, one per device, ranked.
 * @throws TelemetryAccumulatorError describing the first problem
 */
export function parseTopAccumulator(value: unknown, n: number): TopAccumulator {
  if (!Array.isArray(value) || value.length > n) {
    throw new TelemetryAccumulatorError(`top-${n} accumulator is not a list of at most ${n}`);
  }
  const entries = value.map((e: unknown) => {
    const entry = e as Record<string, unknown> | null;
    if (
      entry === null ||
      typeof entry !== 'object' ||
      typeof entry.deviceId !== 'string' ||
      !isInt(entry.maxMilliC) ||
      Object.keys(entry).length !== 2
    ) {
      throw new TelemetryAccumulatorError(`top-${n} entry is malformed: ${JSON.stringify(e)}`);
    }
    return { deviceId: entry.deviceId, maxMilliC: entry.maxMilliC };
  });
  const canonical = topOf(entries, n);
  if (JSON.stringify(canonical) !== JSON.stringify(entries)) {
    throw new TelemetryAccumulatorError(
      `top-${n} accumulator is not in rank order with one entry per device`,
    );
  }
  return entries;
}
