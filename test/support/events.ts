// Seeded generator of booking-event payloads (valid and every kind of invalid) for tests and benchmarks.
import type { ErrorStage } from '../../shared/contract';

/** One generated payload and where it must end. */
export interface GeneratedEvent {
  payload: string;
  expected: 'silver' | ErrorStage;
}

/** Mulberry32: a tiny seeded PRNG, so every run publishes the same stream. Returns floats in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const AIRPORTS = ['JFK', 'LHR', 'SFO', 'HND', 'CDG', 'FCO', 'MXP', 'BCN'];

/**
 * `count` payloads, about `invalidShare` of them invalid (spread over all four stages), event times within the
 * hour before `baseMs` (epoch ms UTC).
 */
export function mixedEvents(
  count: number,
  seed: number,
  baseMs: number,
  invalidShare = 0.3,
): GeneratedEvent[] {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const out: GeneratedEvent[] = [];
  for (let i = 0; i < count; i++) {
    const origin = pick(AIRPORTS);
    let destination = pick(AIRPORTS);
    if (destination === origin) destination = origin === 'JFK' ? 'LHR' : 'JFK';
    const event: Record<string, unknown> = {
      booking_id: `BK-${seed}-${i}`,
      passenger_id: `PAX-${Math.floor(rnd() * 10_000)}`,
      flight_number: `OF-${100 + Math.floor(rnd() * 900)}`,
      origin,
      destination,
      fare: (10 + rnd() * 990).toFixed(2),
      currency: pick(['USD', 'EUR', 'GBP']),
      status: pick(['CONFIRMED', 'CANCELLED', 'PENDING']),
      event_time: new Date(baseMs - Math.floor(rnd() * 3_600_000)).toISOString(),
    };
    if (rnd() >= invalidShare) {
      out.push({ payload: JSON.stringify(event), expected: 'silver' });
      continue;
    }
    const kind = Math.floor(rnd() * 4);
    if (kind === 0) {
      out.push({ payload: JSON.stringify(event).slice(0, 30), expected: 'PARSE_JSON' });
    } else if (kind === 1) {
      delete event.passenger_id;
      out.push({ payload: JSON.stringify(event), expected: 'SCHEMA_VALIDATION' });
    } else if (kind === 2) {
      event.fare = pick(['-50.00', '0', 'abc', '1e-10']);
      out.push({ payload: JSON.stringify(event), expected: 'BUSINESS_RULE_VALIDATION' });
    } else {
      event.event_time = pick(['2026-10-07T14:10:00', '2026-02-30T10:00:00Z', 'yesterday']);
      out.push({ payload: JSON.stringify(event), expected: 'EVENT_TIME_VALIDATION' });
    }
  }
  return out;
}
