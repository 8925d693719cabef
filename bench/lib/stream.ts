// The benchmark's generated booking stream: seeded, with invalid, late and duplicate events and a few hot routes,
// each event labelled with where the booking contract (shared/contract, docs/validation.md) says it must end.
import { prng } from '../../test/support/events';

/** Why a generated event is what it is; the label the disagreement report groups by. */
export type EventKind =
  | 'valid'
  | 'late'
  | 'duplicate'
  | 'broken_json'
  | 'missing_field'
  | 'negative_fare'
  | 'fare_too_precise'
  | 'fare_not_a_number'
  | 'same_airports'
  | 'lowercase_airport'
  | 'no_offset'
  | 'impossible_date';

/** One message of the stream. */
export interface StreamEvent {
  /** Position in the stream (0-based); also the Pub/Sub ordering of publication. */
  readonly seq: number;
  /** The message's data, UTF-8 text. */
  readonly payload: string;
  readonly kind: EventKind;
  /** Where the booking contract routes it: `silver`, or the quarantine stage. */
  readonly expected:
    | 'silver'
    | 'PARSE_JSON'
    | 'SCHEMA_VALIDATION'
    | 'BUSINESS_RULE_VALIDATION'
    | 'EVENT_TIME_VALIDATION';
  /** The booking this event is about (for duplicates, the copied event's). */
  readonly bookingId: string;
}

/** Shape of the stream; shares are fractions of all events. */
export interface StreamSpec {
  readonly events: number;
  readonly seed: number;
  /** Event times are laid out from here (epoch ms UTC), one `spacingMs` apart, so windows fill and close. */
  readonly startMs: number;
  /** Event-time distance between consecutive on-time events, ms. */
  readonly spacingMs: number;
  readonly invalidShare: number;
  readonly lateShare: number;
  readonly duplicateShare: number;
}

/** The default: 10,000 events, ~5 % invalid, ~5 % late, ~3 % duplicates. */
export function defaultSpec(startMs: number, events = 10_000): StreamSpec {
  return {
    events,
    seed: 20261007,
    startMs,
    spacingMs: 20,
    invalidShare: 0.05,
    lateShare: 0.05,
    duplicateShare: 0.03,
  };
}

/** A few hot routes take most of the traffic (80 % on the first four), as real booking streams do. */
const HOT_ROUTES: readonly [string, string][] = [
  ['JFK', 'LHR'],
  ['LHR', 'JFK'],
  ['CDG', 'FCO'],
  ['SFO', 'HND'],
];
const AIRPORTS = ['JFK', 'LHR', 'SFO', 'HND', 'CDG', 'FCO', 'MXP', 'BCN', 'AMS', 'MAD'];

/**
 * Generates the stream. Late events are stamped 10 minutes behind the stream's event-time front, i.e. past the lab's
 * window (1 min) plus allowed lateness (5 min) once the watermark (front − 10 s) has moved: they are valid (Silver)
 * and dropped from the aggregates. Duplicates re-send an earlier valid payload byte for byte (same `event_id`, new
 * message id). Invalid events cover each quarantine stage, including cases where the lab's Python and our contract
 * differ (airports, fares beyond NUMERIC's scale).
 */
export function generateStream(spec: StreamSpec): StreamEvent[] {
  const rnd = prng(spec.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const out: StreamEvent[] = [];
  const validSoFar: StreamEvent[] = [];
  for (let seq = 0; seq < spec.events; seq++) {
    const frontMs = spec.startMs + seq * spec.spacingMs;
    const r = rnd();
    if (r < spec.duplicateShare && validSoFar.length > 0) {
      const original = pick(validSoFar.slice(-200));
      out.push({ ...original, seq, kind: 'duplicate' });
      continue;
    }
    const [origin, destination] =
      rnd() < 0.8 ? pick(HOT_ROUTES) : twoAirports(() => pick(AIRPORTS));
    const late = r < spec.duplicateShare + spec.lateShare && seq > 50;
    const eventTimeMs = late ? frontMs - 600_000 - Math.floor(rnd() * 60_000) : frontMs;
    const bookingId = `BK-${spec.seed}-${seq}`;
    const event: Record<string, unknown> = {
      booking_id: bookingId,
      passenger_id: `PAX-${Math.floor(rnd() * 100_000)}`,
      flight_number: `OF${100 + Math.floor(rnd() * 900)}`,
      origin,
      destination,
      fare: (20 + rnd() * 980).toFixed(2),
      currency: pick(['USD', 'USD', 'EUR', 'GBP']),
      status: pick(['CONFIRMED', 'CONFIRMED', 'CANCELLED']),
      event_time: new Date(eventTimeMs).toISOString(),
    };
    const invalid = r >= 1 - spec.invalidShare;
    if (!invalid) {
      const e: StreamEvent = {
        seq,
        payload: JSON.stringify(event),
        kind: late ? 'late' : 'valid',
        expected: 'silver',
        bookingId,
      };
      out.push(e);
      validSoFar.push(e);
      continue;
    }
    out.push({ seq, bookingId, ...invalidVariant(event, Math.floor(rnd() * 9)) });
  }
  return out;
}

function twoAirports(pick: () => string): [string, string] {
  const origin = pick();
  let destination = pick();
  if (destination === origin) destination = origin === 'JFK' ? 'LHR' : 'JFK';
  return [origin, destination];
}

function invalidVariant(
  event: Record<string, unknown>,
  variant: number,
): Pick<StreamEvent, 'payload' | 'kind' | 'expected'> {
  const json = () => JSON.stringify(event);
  switch (variant) {
    case 0:
      return { payload: json().slice(0, 40), kind: 'broken_json', expected: 'PARSE_JSON' };
    case 1:
      delete event.passenger_id;
      return { payload: json(), kind: 'missing_field', expected: 'SCHEMA_VALIDATION' };
    case 2:
      event.fare = '-50.00';
      return { payload: json(), kind: 'negative_fare', expected: 'BUSINESS_RULE_VALIDATION' };
    case 3:
      // NUMERIC holds 9 fraction digits: BigQuery cannot store this fare exactly (docs/validation.md).
      event.fare = '1e-10';
      return { payload: json(), kind: 'fare_too_precise', expected: 'BUSINESS_RULE_VALIDATION' };
    case 4:
      event.fare = 'abc';
      return { payload: json(), kind: 'fare_not_a_number', expected: 'BUSINESS_RULE_VALIDATION' };
    case 5:
      event.destination = event.origin;
      return { payload: json(), kind: 'same_airports', expected: 'BUSINESS_RULE_VALIDATION' };
    case 6:
      event.origin = String(event.origin).toLowerCase();
      return { payload: json(), kind: 'lowercase_airport', expected: 'BUSINESS_RULE_VALIDATION' };
    case 7:
      event.event_time = String(event.event_time).replace('Z', '');
      return { payload: json(), kind: 'no_offset', expected: 'EVENT_TIME_VALIDATION' };
    default:
      event.event_time = '2026-02-30T10:00:00Z';
      return { payload: json(), kind: 'impossible_date', expected: 'EVENT_TIME_VALIDATION' };
  }
}
