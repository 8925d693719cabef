// The telemetry contract (the study guide's NovaTrack scenario): a JSON reading in three versions to its Silver row.
import * as crypto from 'node:crypto';
import { isLosslessNumber, parse, stringify } from 'lossless-json';

import type { TelemetryConfig } from './config';
import { formatEpochMs, formatScaled, parseNumeric } from '../../contract';
import { checkEventTimeWindow, parseEventTime } from '../../contract/event-time';
import type {
  ContractMessage,
  ContractVersion,
  PipelineContract,
  VersionRejected,
} from '../../pipeline/definition';
import type { DeviceDirectory } from './device-directory';

/**
 * The stages a reading is dead-lettered at, in the order they run:
 * - `PARSE_JSON`: the data is not UTF-8 JSON;
 * - `SCHEMA_VALIDATION`: a missing or malformed `deviceId`, a payload that is not an object with the version's
 *   fields and types, an unknown or retired contract version;
 * - `RANGE_VALIDATION`: a temperature outside the plausible range, a humidity outside 0-100 %, more than three
 *   fraction digits;
 * - `EVENT_TIME_VALIDATION`: an `eventTs` that is not RFC 3339 with an offset, or too far from the receive time.
 */
export const TELEMETRY_STAGES = [
  'PARSE_JSON',
  'SCHEMA_VALIDATION',
  'RANGE_VALIDATION',
  'EVENT_TIME_VALIDATION',
] as const;

/** One of {@link TELEMETRY_STAGES}. */
export type TelemetryStage = (typeof TELEMETRY_STAGES)[number];

/** The message attributes the contract reads (study guide: publishers set deviceId and eventTs). */
export const TELEMETRY_ATTRIBUTES = {
  /** The device: ordering key and grouping key. */
  deviceId: 'deviceId',
  /** When the reading was taken, RFC 3339 with an offset; the event time. */
  eventTs: 'eventTs',
  /** The contract version, `"1"` when absent. */
  contractVersion: 'contractVersion',
} as const;

/**
 * Device ids: 1-64 of letters, digits, `_ . -`, starting with a letter or digit. The alphabet keeps them verbatim in
 * Firestore document ids and insertIds (shared/state/ids.ts `keyIdPart`) and free of the `~` and `#` separators.
 */
export const DEVICE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Fraction digits a reading may carry: milli-degree resolution, so sums stay exact integers (team decision). */
export const READING_FRACTION_DIGITS = 3;

/** What the telemetry contract reads: the configured ranges and skews, and the device directory (side input). */
export interface TelemetrySettings {
  readonly limits: Pick<
    TelemetryConfig,
    'minTemperatureC' | 'maxTemperatureC' | 'maxFutureSkewMs' | 'maxEventAgeMs'
  >;
  readonly devices: DeviceDirectory;
}

/**
 * Whether the device directory knew the device at decode. `UNKNOWN_DEVICE` is not an error (docs/pipelines.md): the
 * reading reaches Silver and its device's panes with `region` and `site` NULL, and ranks in no region.
 */
export type ReferenceStatus = 'KNOWN' | 'UNKNOWN_DEVICE';

/** A row of `offvia_telemetry_silver.readings` (sql/pipelines/telemetry/020), TIMESTAMPs RFC 3339 UTC. */
export interface TelemetrySilverRow {
  /** The insertId: `tm1-` + 32 hex of SHA-256 over `[device_id, event_timestamp]` (study guide: deviceId + eventTs). */
  event_id: string;
  device_id: string;
  /** The event time, six fraction digits and `Z`. */
  event_timestamp: string;
  /** `ATTRIBUTE` (from `eventTs`) or `PUBLISH_TIME` (the fallback when `eventTs` is absent). */
  event_time_source: 'ATTRIBUTE' | 'PUBLISH_TIME';
  /** NUMERIC text, at most three fraction digits. */
  temperature_c: string;
  /** NUMERIC text, or null (version 1 has none; optional in version 2). */
  humidity_pct: string | null;
  /** From the device directory; null for an unknown device. */
  region: string | null;
  site: string | null;
  reference_status: ReferenceStatus;
  /** The contract version the message was decoded as. */
  contract_version: string;
  /** Payload fields the version does not know, as JSON text (numbers exact); null when there are none. */
  extra_fields: string | null;
  /** Pub/Sub publish time; null when the envelope had none. */
  publish_time: string | null;
  /** When the message was received. */
  ingestion_timestamp: string;
  source_message_id: string;
}

/** What the telemetry aggregations fold in. */
export interface TelemetryElement {
  readonly deviceId: string;
  /** The reading in milli-degrees Celsius: an exact integer. */
  readonly temperatureMilliC: number;
}

/** A version's payload, read: the temperature, the humidity if any, and the fields it does not know. */
interface ReadingPayload {
  readonly temperature: string;
  readonly temperatureField: string;
  readonly humidity: string | null;
  readonly extra: Record<string, unknown>;
}

type Reject = (stage: TelemetryStage, reason: string) => VersionRejected;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Prefix of derived telemetry event ids; a new derivation gets a new prefix. */
export const TELEMETRY_EVENT_ID_PREFIX = 'tm1-';

/**
 * The stable event id of a reading (the study guide: deviceId + eventTs): `tm1-` + the first 32 hex of SHA-256 over
 * `[deviceId, event_timestamp]` as JSON, the timestamp in UTC with six fraction digits so `+02:00` and `Z` agree.
 * Without `eventTs` the publish time stands in (a redelivery keeps it; a re-publish is a new reading).
 */
export function telemetryEventId(deviceId: string, eventTimestamp: string): string {
  const hash = crypto
    .createHash('sha256')
    .update(JSON.stringify([deviceId, eventTimestamp]), 'utf8');
  return TELEMETRY_EVENT_ID_PREFIX + hash.digest('hex').slice(0, 32);
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (isLosslessNumber(value)) return 'a number';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** The UTF-8 JSON object in `data`, or the PARSE_JSON / SCHEMA_VALIDATION rejection. */
function parseObject(
  data: Uint8Array,
  reject: Reject,
): { ok: true; value: Record<string, unknown> } | VersionRejected {
  let text: string;
  try {
    text = UTF8.decode(data);
  } catch (err) {
    return reject('PARSE_JSON', `payload is not UTF-8: ${(err as Error).message}`);
  }
  if (text.trim() === '') return reject('PARSE_JSON', 'payload is empty');
  let value: unknown;
  try {
    // lossless-json keeps numbers as their source text, so a reading is never rounded through a binary float.
    value = parse(text);
  } catch (err) {
    return reject('PARSE_JSON', `payload is not JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return reject('SCHEMA_VALIDATION', `payload must be a JSON object, got ${jsonType(value)}`);
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/** A JSON number field's source text, or the SCHEMA_VALIDATION reason. */
function numberText(object: Record<string, unknown>, field: string): string | { reason: string } {
  const value = object[field];
  if (value === undefined) return { reason: `missing field ${field}` };
  if (!isLosslessNumber(value))
    return { reason: `${field} must be a number, got ${jsonType(value)}` };
  return value.value;
}

/** A version's decoder from how it reads its payload; the rest is common to every version. */
function versionDecoder(
  version: string,
  readPayload: (object: Record<string, unknown>) => ReadingPayload | { reason: string },
): ContractVersion<TelemetrySettings, TelemetrySilverRow, TelemetryElement>['decode'] {
  return (message, { receivedAtMs, settings, rulesAtMs }) => {
    const deviceAttr = message.attributes[TELEMETRY_ATTRIBUTES.deviceId];
    const deviceContext: Record<string, string> =
      deviceAttr === undefined ? {} : { deviceId: deviceAttr.slice(0, 128) };
    const reject: Reject = (stage, reason) => ({
      ok: false,
      stage,
      reason,
      context: deviceContext,
    });

    const parsed = parseObject(message.data, reject);
    if (!parsed.ok) return parsed;
    if (deviceAttr === undefined || deviceAttr === '') {
      return reject('SCHEMA_VALIDATION', 'missing attribute deviceId');
    }
    if (!DEVICE_ID_PATTERN.test(deviceAttr)) {
      return reject(
        'SCHEMA_VALIDATION',
        `attribute deviceId ${JSON.stringify(deviceAttr.slice(0, 64))} must be 1-64 of A-Z a-z 0-9 _ . - starting with a letter or digit`,
      );
    }
    const payload = readPayload(parsed.value);
    if ('reason' in payload) return reject('SCHEMA_VALIDATION', payload.reason);

    const temperature = checkReading(
      payload.temperatureField,
      payload.temperature,
      settings.limits.minTemperatureC,
      settings.limits.maxTemperatureC,
      '°C',
    );
    if ('reason' in temperature) return reject('RANGE_VALIDATION', temperature.reason);
    let humidity: string | null = null;
    if (payload.humidity !== null) {
      const checked = checkReading('humidityPct', payload.humidity, 0, 100, '%');
      if ('reason' in checked) return reject('RANGE_VALIDATION', checked.reason);
      humidity = checked.text;
    }

    const time = eventTime(message, rulesAtMs ?? receivedAtMs, settings);
    if ('reason' in time) return reject('EVENT_TIME_VALIDATION', time.reason);

    const reference = settings.devices.lookup(deviceAttr);
    const eventId = telemetryEventId(deviceAttr, time.text);
    const row: TelemetrySilverRow = {
      event_id: eventId,
      device_id: deviceAttr,
      event_timestamp: time.text,
      event_time_source: time.source,
      temperature_c: temperature.text,
      humidity_pct: humidity,
      region: reference?.region ?? null,
      site: reference?.site ?? null,
      reference_status: reference ? 'KNOWN' : 'UNKNOWN_DEVICE',
      contract_version: version,
      extra_fields:
        Object.keys(payload.extra).length === 0 ? null : (stringify(payload.extra) ?? null),
      publish_time:
        message.publishTimeMs === undefined ? null : formatEpochMs(message.publishTimeMs),
      ingestion_timestamp: formatEpochMs(receivedAtMs),
      source_message_id: message.messageId,
    };
    return {
      ok: true,
      eventId,
      eventTimeMs: time.epochMs,
      eventTimeSource: time.source,
      keys: { device: deviceAttr, ...(reference && { region: reference.region }) },
      row,
      element: { deviceId: deviceAttr, temperatureMilliC: temperature.milli },
      extraFields: {},
    };
  };
}

/** A decimal reading checked for resolution and range: canonical text and milli-units, or the reason. */
function checkReading(
  field: string,
  text: string,
  min: number,
  max: number,
  unit: string,
): { text: string; milli: number } | { reason: string } {
  const parsed = parseNumeric(text);
  if (!parsed.ok) return { reason: `${field} ${text}: ${parsed.reason}` };
  // NUMERIC scale 9 → milli-units: the last six digits of the scaled value must be zero.
  if (parsed.scaled % 1_000_000n !== 0n) {
    return {
      reason: `${field} ${text} has more than ${READING_FRACTION_DIGITS} fraction digits (milli-${unit} resolution)`,
    };
  }
  const milli = parsed.scaled / 1_000_000n;
  if (milli < BigInt(min) * 1000n || milli > BigInt(max) * 1000n) {
    return {
      reason: `${field} ${parsed.canonical} ${unit} is outside the plausible range [${min}, ${max}] ${unit}`,
    };
  }
  return { text: formatScaled(parsed.scaled), milli: Number(milli) };
}

/** The event time, epoch ms UTC: `eventTs` (RFC 3339, within the skews at `rulesAtMs`), else the publish time. */
function eventTime(
  message: ContractMessage,
  rulesAtMs: number,
  settings: TelemetrySettings,
): { epochMs: number; text: string; source: 'ATTRIBUTE' | 'PUBLISH_TIME' } | { reason: string } {
  const attr = message.attributes[TELEMETRY_ATTRIBUTES.eventTs];
  if (attr === undefined) {
    // The study guide's fallback; a message without a publish time never comes from Pub/Sub, so it is refused.
    if (message.publishTimeMs === undefined) {
      return { reason: 'no attribute eventTs and no publish time to fall back on' };
    }
    return {
      epochMs: message.publishTimeMs,
      text: formatEpochMs(message.publishTimeMs),
      source: 'PUBLISH_TIME',
    };
  }
  // A malformed eventTs is a device bug to inspect, not a reason to fall back to another minute.
  const parsed = parseEventTime(attr);
  if (!parsed.ok) return { reason: parsed.reason.replace('Invalid event_time', 'Invalid eventTs') };
  const outOfWindow = checkEventTimeWindow(parsed.value, {
    receivedAtMs: rulesAtMs,
    ...settings.limits,
  });
  if (outOfWindow)
    return { reason: outOfWindow.reason.replace('Invalid event_time', 'Invalid eventTs') };
  return { epochMs: parsed.value.epochMs, text: parsed.value.text, source: 'ATTRIBUTE' };
}

/** The fields of `object` other than `known`. */
function others(
  object: Record<string, unknown>,
  known: readonly string[],
): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([k]) => !known.includes(k)));
}

/** Version "0": Fahrenheit readings, retired. */
const V0: ContractVersion<TelemetrySettings, TelemetrySilverRow, TelemetryElement> = {
  version: '0',
  status: 'retired',
  summary:
    '`{"tempF": number}` in °F; retired when the unit changed (a change of meaning, never safe in place)',
  decode: () => ({
    ok: false,
    stage: 'SCHEMA_VALIDATION',
    reason: 'contract version "0" is retired',
    context: {},
  }),
};

/** Version "1": still accepted while devices update their firmware. */
const V1: ContractVersion<TelemetrySettings, TelemetrySilverRow, TelemetryElement> = {
  version: '1',
  status: 'accepted',
  summary: '`{"temp": number}` in °C (at most three fraction digits)',
  decode: versionDecoder('1', (object) => {
    const temperature = numberText(object, 'temp');
    if (typeof temperature !== 'string') return temperature;
    return {
      temperature,
      temperatureField: 'temp',
      humidity: null,
      extra: others(object, ['temp']),
    };
  }),
};

/** Version "2" (current): the renamed field says its unit; humidity is an optional addition (the safe change). */
const V2: ContractVersion<TelemetrySettings, TelemetrySilverRow, TelemetryElement> = {
  version: '2',
  status: 'current',
  summary:
    '`{"temperatureC": number, "humidityPct"?: number}`: the unit in the name, humidity optional',
  decode: versionDecoder('2', (object) => {
    const temperature = numberText(object, 'temperatureC');
    if (typeof temperature !== 'string') return temperature;
    let humidity: string | null = null;
    if (object.humidityPct !== undefined && object.humidityPct !== null) {
      const text = numberText(object, 'humidityPct');
      if (typeof text !== 'string') return text;
      humidity = text;
    }
    return {
      temperature,
      temperatureField: 'temperatureC',
      humidity,
      extra: others(object, ['temperatureC', 'humidityPct']),
    };
  }),
};

/** The telemetry contract: JSON data (no topic schema, docs/pipelines.md); `contractVersion` "1" when absent. */
export const TELEMETRY_CONTRACT: PipelineContract<
  TelemetrySettings,
  TelemetrySilverRow,
  TelemetryElement
> = {
  stages: TELEMETRY_STAGES,
  versionFrom: { kind: 'attribute', name: TELEMETRY_ATTRIBUTES.contractVersion, whenAbsent: '1' },
  versions: [V0, V1, V2],
  encoding: { kind: 'json' },
  orderingKeyAttribute: TELEMETRY_ATTRIBUTES.deviceId,
};
