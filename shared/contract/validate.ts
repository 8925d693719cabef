// validateBooking: one Pub/Sub payload through the four stages, to a Silver row or a quarantine verdict.
import { checkBusinessRules } from './business-rules';
import { deriveEventId } from './event-id';
import { checkEventTimeWindow, formatEpochMs, isTimestampMs, parseEventTime } from './event-time';
import {
  collectExtraFields,
  decodePayload,
  isPlainObject,
  parseJsonPayload,
  readContractFields,
} from './json-payload';
import { DEFAULT_CURRENCY } from './fields';
import { checkSchema, jsonTypeName } from './schema';
import { failWith, type ValidationFailure } from './stages';

/**
 * A row of `offvia_silver.fact_bookings` (lab DDL), as strings ready for the BigQuery client. Mapping (lab):
 * origin → origin_airport, destination → destination_airport, fare → fare_amount, status → booking_status,
 * event_time → event_timestamp.
 */
export interface SilverRow {
  /** The booking's id (a JSON integer arrives as its exact digits). */
  booking_id: string;
  passenger_id: string;
  /** The flight number, e.g. "OF-104". */
  flight_number: string;
  /** IATA code, three capitals, e.g. "JFK". */
  origin_airport: string;
  /** IATA code, three capitals, different from `origin_airport`. */
  destination_airport: string;
  /** NUMERIC as canonical decimal text: > 0, ≤ 29 integer and ≤ 9 fraction digits, e.g. "749.5". */
  fare_amount: string;
  /** ISO 4217 code, "USD" by default (lab). */
  currency: string;
  /** Upper-case status symbol, "CONFIRMED" by default (lab). */
  booking_status: string;
  /** TIMESTAMP: the event time in UTC, RFC 3339 with exactly six fraction digits and 'Z'. */
  event_timestamp: string;
  /** TIMESTAMP: when the message was received (`receivedAtMs`), same format. */
  ingestion_timestamp: string;
  /** The Pub/Sub message id (`messageId`). */
  source_message_id: string;
}

/** What validateBooking needs besides the payload; the clock is injected so validation stays pure. */
export interface ValidationOptions {
  /** The Pub/Sub message id, copied to `source_message_id`. */
  messageId: string;
  /** When the message was received: epoch ms, UTC, an integer within BigQuery TIMESTAMP's range. */
  receivedAtMs: number;
  /** How far after `receivedAtMs` an event time may lie (clock skew): whole ms ≥ 0, or `Infinity` for no limit. */
  maxFutureSkewMs: number;
  /** How far before `receivedAtMs` an event time may lie: whole ms ≥ 0, or `Infinity` for no limit. */
  maxEventAgeMs: number;
  /**
   * The instant the event-time window is checked against, epoch ms UTC; `receivedAtMs` when absent. A Bronze replay
   * passes the publish time, so a verdict does not change with the replay's date.
   */
  rulesAtMs?: number;
  /**
   * `currency` of a booking that has none (`OFFVIA_DEFAULT_CURRENCY`): three ASCII capitals, "USD" when not given
   * (lab); `null` for no default, so a booking without `currency` is a SCHEMA_VALIDATION error.
   */
  defaultCurrency?: string | null;
}

/** A booking that passed every stage. */
export interface ValidationSuccess {
  ok: true;
  /** Dedup id: the producer's `event_id` when present, else {@link deriveEventId}'s hash (design.md "Dedup"). */
  eventId: string;
  /** The event time, epoch ms UTC, rounded down from microseconds. */
  eventTimeMs: number;
  /** The fare × 10^9 (BigQuery NUMERIC's scale), exact. */
  fareScaled: bigint;
  row: SilverRow;
  /**
   * Top-level keys the contract does not know (schema drift); numbers in them are `LosslessNumber`s (exact source
   * text) whenever any is present, see `collectExtraFields`. Serialise with lossless-json's `stringify`.
   */
  extraFields: Record<string, unknown>;
}

/** The outcome of {@link validateBooking}: a Silver row, or the stage, reason and issues for quarantine. */
export type ValidationResult = ValidationSuccess | ValidationFailure;

/**
 * Validates one booking payload against the contract, in the lab's stage order (PARSE_JSON, SCHEMA_VALIDATION,
 * BUSINESS_RULE_VALIDATION, EVENT_TIME_VALIDATION; the first failing stage is reported, with all of its issues)
 * and maps a valid one to its Silver row (lab: `ValidateAndEnrichBookingFn`). `payload`: bytes (UTF-8) or a string.
 * Bad data is always a result, never an exception (lab: no poison-pill crash loop).
 * @throws TypeError only when `options` break their documented ranges (a programming error, team decision)
 */
export function validateBooking(
  payload: Uint8Array | string,
  options: ValidationOptions,
): ValidationResult {
  assertValidOptions(options);
  const decoded = decodePayload(payload);
  if (!decoded.ok) return decoded;
  const parsed = parseJsonPayload(decoded.value);
  if (!parsed.ok) return parsed;
  const object = parsed.value;
  if (!isPlainObject(object)) return notAnObject(object);

  const { fields, duplicateKeys } = readContractFields(decoded.value, object);
  const defaultCurrency =
    options.defaultCurrency === undefined ? DEFAULT_CURRENCY : options.defaultCurrency;
  const schema = checkSchema(fields, duplicateKeys, { currencyRequired: defaultCurrency === null });
  if (!schema.ok) return schema;
  const booking = schema.value;
  const rules = checkBusinessRules(booking, defaultCurrency ?? DEFAULT_CURRENCY);
  if (!rules.ok) return rules;
  const eventTime = parseEventTime(booking.event_time);
  if (!eventTime.ok) return eventTime;
  const outOfWindow = checkEventTimeWindow(eventTime.value, {
    ...options,
    receivedAtMs: options.rulesAtMs ?? options.receivedAtMs,
  });
  if (outOfWindow !== undefined) return outOfWindow;

  const row: SilverRow = {
    booking_id: booking.booking_id,
    passenger_id: booking.passenger_id,
    flight_number: booking.flight_number,
    origin_airport: rules.value.origin,
    destination_airport: rules.value.destination,
    fare_amount: rules.value.fareAmount,
    currency: rules.value.currency,
    booking_status: rules.value.status,
    event_timestamp: eventTime.value.text,
    ingestion_timestamp: formatEpochMs(options.receivedAtMs),
    source_message_id: options.messageId,
  };
  return {
    ok: true,
    eventId: booking.event_id ?? deriveEventId(row),
    eventTimeMs: eventTime.value.epochMs,
    fareScaled: rules.value.fareScaled,
    row,
    extraFields: collectExtraFields(decoded.value, object),
  };
}

/** A payload that is JSON but not an object is a schema problem (design.md "Validation"). */
function notAnObject(value: unknown): ValidationFailure {
  const message = `payload must be a JSON object, got ${jsonTypeName(value)}`;
  return failWith('SCHEMA_VALIDATION', [{ field: null, kind: 'not_object', message }]);
}

function assertValidOptions(options: ValidationOptions): void {
  if (typeof options.messageId !== 'string') {
    throw new TypeError('validateBooking: options.messageId must be a string');
  }
  if (!isTimestampMs(options.receivedAtMs)) {
    throw new TypeError(
      `validateBooking: options.receivedAtMs must be integer epoch ms within 0001-9999, got ${options.receivedAtMs}`,
    );
  }
  const currency = options.defaultCurrency;
  if (currency !== undefined && currency !== null && !/^[A-Z]{3}$/.test(currency)) {
    throw new TypeError(
      `validateBooking: options.defaultCurrency must be three ASCII capitals or null, got ${JSON.stringify(currency)}`,
    );
  }
  for (const name of ['maxFutureSkewMs', 'maxEventAgeMs'] as const) {
    const value = options[name];
    // Whole milliseconds keep the window bounds exact; Infinity switches a bound off.
    if (!((Number.isSafeInteger(value) && value >= 0) || value === Infinity)) {
      throw new TypeError(
        `validateBooking: options.${name} must be whole ms ≥ 0 or Infinity, got ${value}`,
      );
    }
  }
}
