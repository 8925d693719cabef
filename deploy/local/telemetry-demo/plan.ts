// The telemetry simulator's stream, planned before anything is published: the device directory, then every message
// (readings of contract versions 1 and 2, malformed ones, skewed clocks, readings without eventTs) in publish order,
// each with the outcome the pipeline's contract should give it. Pure and seeded: the same options give the same run.
import type { TelemetryStage } from '../../../shared/pipelines/telemetry/contract';
import { prng } from '../../../test/support/events';

/** What a run simulates. Times are epoch ms UTC. */
export interface PlanOptions {
  /** Devices sending readings (1-50,000). */
  readonly devices: number;
  /** Minutes of readings (1-8): the M one-minute windows ending shortly before `nowMs`. */
  readonly minutes: number;
  /** Readings per device and minute (1-6). */
  readonly readingsPerMinute: number;
  /** Seed of the pseudo-random choices (a 32-bit unsigned integer). */
  readonly seed: number;
  /** The processing time the plan is made at: the readings' event times lie before it. */
  readonly nowMs: number;
}

/** A row of `offvia_telemetry_ref.devices` the simulator seeds. */
export interface DirectoryRow {
  readonly device_id: string;
  readonly region: string;
  readonly site: string;
}

/** A message the pipeline should accept: a reading of one device. */
export interface ExpectedReading {
  readonly kind: 'reading';
  readonly deviceId: string;
  /** The event time the message carries (`eventTs`), ms; `null` when it carries none (the publish time counts). */
  readonly eventTsMs: number | null;
  /** The reading in milli-degrees Celsius. */
  readonly temperatureMilliC: number;
  /** The device's region in the seeded directory; `null` for a device deliberately left out (unknown device). */
  readonly region: string | null;
}

/** A message the contract should dead-letter, at this stage. */
export interface ExpectedRejection {
  readonly kind: 'rejected';
  readonly deviceId: string;
  readonly stage: TelemetryStage;
  /** What is wrong with it, for the summary. */
  readonly fault: string;
}

/** One message to publish: data, attributes, ordering key, and what should become of it. */
export interface PlannedMessage {
  readonly data: string;
  readonly attributes: Readonly<Record<string, string>>;
  /** The Pub/Sub ordering key: the device id, as the scenario's publishers use it. */
  readonly orderingKey: string;
  readonly expect: ExpectedReading | ExpectedRejection;
}

/** The planned run. */
export type TelemetryPlan = Readonly<{
  options: PlanOptions;
  /** Start of the first simulated window, ms (a whole minute). */
  firstWindowStartMs: number;
  /** End of the last simulated window, ms (a whole minute, before `nowMs`). */
  lastWindowEndMs: number;
  /** Every device's id, `sim-00001` …, in order. */
  deviceIds: readonly string[];
  /** The directory rows to seed: every device except the unknown ones. */
  directory: readonly DirectoryRow[];
  /** Devices deliberately left out of the directory. */
  unknownDevices: readonly string[];
  /** Devices whose clock is off, with the offset in ms (positive: ahead). */
  skewedClocks: Readonly<Record<string, number>>;
  /** The messages in publish order. */
  messages: readonly PlannedMessage[];
}>;

/** Regions of the simulated fleet (the directory's `region`: `a-z 0-9 -`). */
export const SIM_REGIONS = [
  'eu-west',
  'eu-north',
  'us-east',
  'us-west',
  'ap-south',
  'ap-east',
  'sa-east',
  'af-south',
] as const;

/** Prefix of the simulated device ids; the checker reads back only these devices' panes. */
export const SIM_DEVICE_PREFIX = 'sim-';

/** How far ahead the one far-ahead device's clock runs: past the contract's 5-minute future skew, so rejected. */
export const FAR_AHEAD_SKEW_MS = 60 * 60_000;

const MINUTE_MS = 60_000;

/**
 * Publish-order jitter, ms: readings are published in event-time order with up to this much reordering, below the
 * watermark's 10 s of out-of-orderness, so reordering alone makes no reading late.
 */
export const REORDER_JITTER_MS = 8_000;

/** How much later a "delayed" reading (a device that buffered it) is published than its event time says, ms. */
export const DELAYED_DELIVERY_MS = 90_000;

/** `sim-00042` for index 41 (five digits up to 99,999 devices). */
export function simDeviceId(index: number): string {
  return `${SIM_DEVICE_PREFIX}${String(index + 1).padStart(5, '0')}`;
}

/** Milli-degrees as JSON number text with `fractionDigits` digits (exact: built from the integer). */
export function milliText(milli: number, fractionDigits: 1 | 3): string {
  const sign = milli < 0 ? '-' : '';
  const abs = Math.abs(milli);
  const whole = Math.floor(abs / 1000);
  const frac = String(abs % 1000).padStart(3, '0');
  return `${sign}${whole}.${fractionDigits === 3 ? frac : frac.slice(0, 1)}`;
}

/** RFC 3339 text of `ms` at a fixed UTC offset of `offsetMinutes` (0 gives `Z`), millisecond precision. */
export function rfc3339At(ms: number, offsetMinutes: number): string {
  if (offsetMinutes === 0) return new Date(ms).toISOString();
  const local = new Date(ms + offsetMinutes * MINUTE_MS).toISOString().slice(0, -1);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/**
 * The simulated windows: the `minutes` whole minutes ending at the last minute boundary at least 20 s before
 * `nowMs`, so every event time is past when published (docs/pipelines.md, the simulator).
 */
export function windowRange(nowMs: number, minutes: number): { startMs: number; endMs: number } {
  const endMs = Math.floor((nowMs - 20_000) / MINUTE_MS) * MINUTE_MS;
  return { startMs: endMs - minutes * MINUTE_MS, endMs };
}

/** A device's character: its typical temperature, its firmware (contract version) and its clock. */
interface DeviceProfile {
  readonly id: string;
  readonly baseMilliC: number;
  /** `1`: `{"temp"}` with 1 fraction digit; `1-implicit`: the same without a contractVersion attribute; `2`. */
  readonly firmware: '1' | '1-implicit' | '2';
  readonly clockSkewMs: number;
  /** The UTC offset its eventTs is written with, minutes. */
  readonly offsetMinutes: number;
  readonly region: string | null;
}

/**
 * Plans a run (see {@link TelemetryPlan}), every choice from the seed: unknown devices, firmware versions, skewed
 * clocks, readings without `eventTs`, delayed and malformed messages, in the shares docs/pipelines.md ("The
 * telemetry simulator") lists.
 * @throws RangeError for options outside their bounds
 */
export function planTelemetryRun(options: PlanOptions): TelemetryPlan {
  const { devices, minutes, readingsPerMinute, seed, nowMs } = options;
  if (!Number.isSafeInteger(devices) || devices < 1 || devices > 50_000)
    throw new RangeError(`devices must be an integer from 1 to 50000, got ${devices}`);
  if (!Number.isSafeInteger(minutes) || minutes < 1 || minutes > 8)
    throw new RangeError(`minutes must be an integer from 1 to 8, got ${minutes}`);
  if (!Number.isSafeInteger(readingsPerMinute) || readingsPerMinute < 1 || readingsPerMinute > 6)
    throw new RangeError(
      `readingsPerMinute must be an integer from 1 to 6, got ${readingsPerMinute}`,
    );
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const { startMs, endMs } = windowRange(nowMs, minutes);

  const deviceIds = Array.from({ length: devices }, (_, i) => simDeviceId(i));
  const unknownCount = Math.max(1, Math.round(devices * 0.005));
  const unknown = new Set<string>();
  while (unknown.size < Math.min(unknownCount, devices)) unknown.add(pick(deviceIds));

  // Skewed clocks on devices that are known (so the skew shows in the rankings too); with one device all of these
  // roles fall on it, and the far-ahead role wins.
  const known = deviceIds.filter((id) => !unknown.has(id));
  const skewedClocks: Record<string, number> = {};
  for (const skew of [-40_000, 25_000, -7_000, FAR_AHEAD_SKEW_MS]) {
    if (known.length > 0) skewedClocks[pick(known)] = skew;
  }
  const farAhead = Object.keys(skewedClocks).find((id) => skewedClocks[id] === FAR_AHEAD_SKEW_MS);

  const profiles: DeviceProfile[] = deviceIds.map((id, i) => {
    const r = random();
    const firmware: DeviceProfile['firmware'] = r < 0.55 ? '2' : r < 0.85 ? '1' : '1-implicit';
    const o = random();
    return {
      id,
      // 15-35 °C typical, a few hot devices (boilers, server rooms) up to 70 °C, in whole milli-degrees.
      baseMilliC:
        random() < 0.02
          ? 50_000 + Math.floor(random() * 20_000)
          : 15_000 + Math.floor(random() * 20_000),
      firmware,
      clockSkewMs: skewedClocks[id] ?? 0,
      offsetMinutes: o < 0.03 ? 120 : o < 0.05 ? -300 : 0,
      region: unknown.has(id) ? null : (SIM_REGIONS[i % SIM_REGIONS.length] as string),
    };
  });
  const directory: DirectoryRow[] = profiles
    .filter((p) => p.region !== null)
    .map((p) => ({
      device_id: p.id,
      region: p.region as string,
      site: `${p.region as string}-site-${(Number(p.id.slice(SIM_DEVICE_PREFIX.length)) % 4) + 1}`,
    }));

  // Readings: readingsPerMinute per device and minute at distinct offsets (so deviceId + eventTs stays unique).
  interface Slot {
    readonly publishAtMs: number;
    readonly message: PlannedMessage;
  }
  const slots: Slot[] = [];
  const withoutEventTs = new Set<string>();
  const noTsCount = Math.max(1, Math.round(devices * 0.01));
  const candidates = profiles.filter((p) => p.id !== farAhead);
  while (withoutEventTs.size < Math.min(noTsCount, candidates.length))
    withoutEventTs.add(pick(candidates).id);
  const sliceMs = Math.floor(MINUTE_MS / readingsPerMinute);

  for (const p of profiles) {
    for (let m = 0; m < minutes; m++) {
      for (let k = 0; k < readingsPerMinute; k++) {
        const trueMs = startMs + m * MINUTE_MS + k * sliceMs + Math.floor(random() * (sliceMs - 1));
        const temperatureMilliC = readingMilli(p, random);
        const eventTsMs = trueMs + p.clockSkewMs;
        const attributes: Record<string, string> = {
          deviceId: p.id,
          eventTs: rfc3339At(eventTsMs, p.offsetMinutes),
        };
        const data = readingData(p, temperatureMilliC, attributes, random);
        const delayed = random() < 0.005;
        slots.push({
          publishAtMs:
            trueMs + Math.floor(random() * REORDER_JITTER_MS) + (delayed ? DELAYED_DELIVERY_MS : 0),
          message: {
            data,
            attributes,
            orderingKey: p.id,
            expect:
              p.id === farAhead
                ? {
                    kind: 'rejected',
                    deviceId: p.id,
                    stage: 'EVENT_TIME_VALIDATION',
                    fault: 'clock an hour ahead',
                  }
                : {
                    kind: 'reading',
                    deviceId: p.id,
                    eventTsMs,
                    temperatureMilliC,
                    region: p.region,
                  },
          },
        });
      }
    }
  }
  slots.sort((a, b) => a.publishAtMs - b.publishAtMs);
  const messages: PlannedMessage[] = slots.map((s) => s.message);

  // Malformed messages, at random places in the stream.
  const malformedCount = Math.max(6, Math.round(devices * minutes * readingsPerMinute * 0.003));
  for (let i = 0; i < malformedCount; i++) {
    const p = pick(profiles);
    const eventTs = rfc3339At(startMs + Math.floor(random() * minutes * MINUTE_MS), 0);
    const message = malformed(i, p.id, eventTs);
    messages.splice(Math.floor(random() * (messages.length + 1)), 0, message);
  }

  // Readings without eventTs last: their event time is the publish time, after every other reading's.
  for (const id of [...withoutEventTs].sort()) {
    const p = profiles.find((q) => q.id === id) as DeviceProfile;
    const temperatureMilliC = readingMilli(p, random);
    const attributes: Record<string, string> = { deviceId: p.id };
    messages.push({
      data: readingData(p, temperatureMilliC, attributes, random),
      attributes,
      orderingKey: p.id,
      expect: {
        kind: 'reading',
        deviceId: p.id,
        eventTsMs: null,
        temperatureMilliC,
        region: p.region,
      },
    });
  }

  return {
    options,
    firstWindowStartMs: startMs,
    lastWindowEndMs: endMs,
    deviceIds,
    directory,
    unknownDevices: [...unknown].sort(),
    skewedClocks,
    messages,
  };
}

/** One reading around the device's base temperature, ±1.5 °C, at the resolution of its firmware. */
function readingMilli(p: DeviceProfile, random: () => number): number {
  const milli = p.baseMilliC + Math.floor(random() * 3001) - 1500;
  return p.firmware === '2' ? milli : Math.round(milli / 100) * 100;
}

/** The reading's JSON data in its firmware's contract version; sets `contractVersion` in `attributes`. */
function readingData(
  p: DeviceProfile,
  milli: number,
  attributes: Record<string, string>,
  random: () => number,
): string {
  if (p.firmware === '2') {
    attributes.contractVersion = '2';
    const humidity = random() < 0.8 ? `,"humidityPct":${20 + Math.floor(random() * 60)}` : '';
    return `{"temperatureC":${milliText(milli, 3)}${humidity}}`;
  }
  if (p.firmware === '1') attributes.contractVersion = '1';
  return `{"temp":${milliText(milli, 1)}}`;
}

/**
 * The malformed messages the contract must dead-letter: data, contract version, stage, fault, and the `eventTs`
 * attribute when it is itself the fault.
 */
const MALFORMED: readonly [string, string, TelemetryStage, string, string?][] = [
  ['{"temperatureC": 21.', '2', 'PARSE_JSON', 'truncated JSON'],
  ['{"temperatureC":180.25}', '2', 'RANGE_VALIDATION', 'reading out of range'],
  ['{"tempF":70.1}', '0', 'SCHEMA_VALIDATION', 'retired version 0'],
  ['{"temperatureC":21.5}', '7', 'SCHEMA_VALIDATION', 'unknown version 7'],
  ['{"temperatureC":21.1234}', '2', 'RANGE_VALIDATION', 'four fraction digits'],
  ['{"temperatureC":21.5}', '2', 'EVENT_TIME_VALIDATION', 'malformed eventTs', 'yesterday at noon'],
];

/** The i-th malformed message (cycling through MALFORMED). */
function malformed(i: number, deviceId: string, eventTs: string): PlannedMessage {
  const [data, contractVersion, stage, fault, badEventTs] = MALFORMED[
    i % MALFORMED.length
  ] as (typeof MALFORMED)[number];
  return {
    orderingKey: deviceId,
    data,
    attributes: { deviceId, eventTs: badEventTs ?? eventTs, contractVersion },
    expect: { kind: 'rejected', deviceId, stage, fault },
  };
}

/**
 * Cuts the publish order into phases, each published once the ones before it are routed: Pub/Sub delivers an
 * ordered subscription's keys in any order among each other, so a run published at once would let the watermark jump
 * past every window. A phase ends where ⌊(largest event time so far − `maxOutOfOrdernessMs`) ÷ 1 min⌋ grows
 * (rejected messages move no watermark); the readings without `eventTs` form the last phase.
 * @returns the end index (exclusive) of each phase in `messages`, ascending; the last is `messages.length` (none
 *   for no messages)
 */
export function publishPhases(
  messages: readonly PlannedMessage[],
  maxOutOfOrdernessMs: number,
): number[] {
  const ends: number[] = [];
  let largestMs = Number.NEGATIVE_INFINITY;
  let phaseBucket: number | undefined;
  for (const [i, m] of messages.entries()) {
    const e = m.expect;
    if (e.kind === 'reading') {
      largestMs =
        e.eventTsMs === null ? Number.POSITIVE_INFINITY : Math.max(largestMs, e.eventTsMs);
    }
    const bucket =
      largestMs === Number.NEGATIVE_INFINITY
        ? undefined
        : Math.floor((largestMs - maxOutOfOrdernessMs) / MINUTE_MS);
    if (bucket === undefined) continue;
    if (phaseBucket !== undefined && bucket > phaseBucket && i > 0) ends.push(i);
    phaseBucket = bucket;
  }
  if (messages.length > 0) ends.push(messages.length);
  return ends;
}
