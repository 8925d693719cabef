// The telemetry simulator's independent computation of the panes (per device and minute count, exact average, min,
// max; per region and minute the top-N), written from the scenario's rules, not the pipeline's combines.
import type { PlannedMessage } from './plan';

/** One-minute fixed windows (the scenario's windowing), ms. */
export const WINDOW_MS = 60_000;

/** Scale of BigQuery NUMERIC: 9 fraction digits. Values below are integers × 10^-9 °C. */
const NUMERIC_SCALE = 1_000_000_000n;

/** Expected final pane of one device in one window; temperatures as exact NUMERIC, integers × 10^-9 °C. */
export interface ExpectedDevicePane {
  readonly deviceId: string;
  readonly windowStartMs: number;
  readonly count: number;
  /** sum / count, rounded once half-even to 9 fraction digits. */
  readonly avgNano: bigint;
  readonly minNano: bigint;
  readonly maxNano: bigint;
}

/** One entry of an expected regional ranking. */
export interface ExpectedRank {
  readonly rank: number;
  readonly deviceId: string;
  /** The device's highest reading in the window, integers × 10^-9 °C. */
  readonly maxNano: bigint;
}

/** Expected final ranking of one region in one window. */
export interface ExpectedRegionPane {
  readonly region: string;
  readonly windowStartMs: number;
  readonly top: readonly ExpectedRank[];
}

/** Everything the pipeline should produce from a run. */
export interface ExpectedOutcome {
  /** By `deviceId|windowStartMs`. */
  readonly devicePanes: ReadonlyMap<string, ExpectedDevicePane>;
  /** By `region|windowStartMs`. */
  readonly regionPanes: ReadonlyMap<string, ExpectedRegionPane>;
  /** Readings (accepted messages) that count. */
  readonly readings: number;
}

/** The map key of a (device or region, window). */
export function paneKey(key: string, windowStartMs: number): string {
  return `${key}|${windowStartMs}`;
}

/** The start of the one-minute window holding `ms` (floor, also before 1970). */
export function windowStartOf(ms: number): number {
  return Math.floor(ms / WINDOW_MS) * WINDOW_MS;
}

/** `numerator / denominator` rounded half to even (both positive or numerator negative, denominator positive). */
export function divideHalfEven(numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n) throw new RangeError('denominator must be positive');
  let q = numerator / denominator; // truncates toward zero
  let r = numerator % denominator;
  if (r < 0n) {
    q -= 1n;
    r += denominator;
  }
  const twice = 2n * r;
  if (twice > denominator || (twice === denominator && q % 2n !== 0n)) q += 1n;
  return q;
}

/**
 * The expected panes of the accepted readings; one without `eventTs` counts at `publishTimeMs(index)` (from Bronze).
 * @throws Error when a reading without `eventTs` has no publish time
 */
export function expectedOutcome(
  messages: readonly PlannedMessage[],
  publishTimeMs: (index: number) => number | undefined,
  topN: number,
): ExpectedOutcome {
  interface Acc {
    count: number;
    sum: bigint;
    min: bigint;
    max: bigint;
  }
  const perDevice = new Map<string, Acc & { deviceId: string; windowStartMs: number }>();
  // region|window → device → highest reading (milli)
  const perRegion = new Map<string, Map<string, number>>();
  let readings = 0;
  messages.forEach((m, index) => {
    const e = m.expect;
    if (e.kind !== 'reading') return;
    const eventMs = e.eventTsMs ?? publishTimeMs(index);
    if (eventMs === undefined)
      throw new Error(
        `no publish time for message ${index} (device ${e.deviceId} without eventTs)`,
      );
    readings++;
    const windowStartMs = windowStartOf(eventMs);
    const milli = BigInt(e.temperatureMilliC);
    const key = paneKey(e.deviceId, windowStartMs);
    const acc = perDevice.get(key) ?? {
      deviceId: e.deviceId,
      windowStartMs,
      count: 0,
      sum: 0n,
      min: milli,
      max: milli,
    };
    perDevice.set(key, acc);
    acc.count++;
    acc.sum += milli;
    if (milli < acc.min) acc.min = milli;
    if (milli > acc.max) acc.max = milli;
    if (e.region !== null) {
      const rKey = paneKey(e.region, windowStartMs);
      const devices = perRegion.get(rKey) ?? new Map<string, number>();
      perRegion.set(rKey, devices);
      devices.set(e.deviceId, Math.max(devices.get(e.deviceId) ?? -Infinity, e.temperatureMilliC));
    }
  });

  const toNano = 1_000_000n; // milli → 10^-9
  const devicePanes = new Map<string, ExpectedDevicePane>();
  for (const [key, a] of perDevice) {
    devicePanes.set(key, {
      deviceId: a.deviceId,
      windowStartMs: a.windowStartMs,
      count: a.count,
      avgNano: divideHalfEven(a.sum * toNano, BigInt(a.count)),
      minNano: a.min * toNano,
      maxNano: a.max * toNano,
    });
  }
  const regionPanes = new Map<string, ExpectedRegionPane>();
  for (const [key, devices] of perRegion) {
    const [region, start] = key.split('|') as [string, string];
    const ranked = [...devices.entries()]
      // Hottest first; equal highest readings by device id, ascending.
      .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, topN)
      .map(([deviceId, milli], i) => ({ rank: i + 1, deviceId, maxNano: BigInt(milli) * toNano }));
    regionPanes.set(key, { region, windowStartMs: Number(start), top: ranked });
  }
  return { devicePanes, regionPanes, readings };
}

/**
 * Exact NUMERIC text (`"21.5"`, `"-0.125000000"`, `"22"`) as an integer × 10^-9.
 * @throws RangeError for text that is not a plain decimal with at most 9 fraction digits
 */
export function numericToNano(text: string): bigint {
  const match = /^(-?)(\d+)(?:\.(\d{1,9}))?$/.exec(text.trim());
  if (match === null) throw new RangeError(`not a NUMERIC value: ${JSON.stringify(text)}`);
  const [, sign, whole, frac = ''] = match;
  const value = BigInt(whole as string) * NUMERIC_SCALE + BigInt(frac.padEnd(9, '0'));
  return sign === '-' ? -value : value;
}

/** An integer × 10^-9 as canonical decimal text (no trailing zeros), for messages. */
export function nanoToText(nano: bigint): string {
  const sign = nano < 0n ? '-' : '';
  const abs = nano < 0n ? -nano : nano;
  const whole = abs / NUMERIC_SCALE;
  const frac = (abs % NUMERIC_SCALE).toString().padStart(9, '0').replace(/0+$/, '');
  return `${sign}${whole}${frac ? `.${frac}` : ''}`;
}
