// The stable event id of a booking without a producer id: a hash of what identifies the booking change.
import * as crypto from 'node:crypto';

/** Version prefix of derived ids; a new derivation gets a new prefix so old and new ids never collide. */
export const DERIVED_EVENT_ID_PREFIX = 'bk1-';

/** Hex characters of the SHA-256 kept: 128 bits, far beyond any collision risk at booking volumes. */
const HASH_HEX_LENGTH = 32;

/** What identifies one booking change, in the normalized form the Silver row carries. */
export interface EventIdSource {
  /** Silver `booking_id` (identifier text). */
  booking_id: string;
  /** Silver `booking_status` (after the "CONFIRMED" default). */
  booking_status: string;
  /** Silver `event_timestamp`: UTC, six fraction digits, 'Z' (so "+02:00" and its 'Z' equivalent agree). */
  event_timestamp: string;
}

/**
 * Derives a booking's event id (design.md "Dedup"): `"bk1-"` + the first 32 hex characters of SHA-256 over the
 * JSON array `[booking_id, booking_status, event_timestamp]` (JSON keeps the parts unambiguous), so a re-published
 * event keeps its id (team decision). Used as the Silver insertId and the dedup key. Never throws.
 */
export function deriveEventId(source: EventIdSource): string {
  const canonical = JSON.stringify([
    source.booking_id,
    source.booking_status,
    source.event_timestamp,
  ]);
  return DERIVED_EVENT_ID_PREFIX + sha256Hex(canonical).slice(0, HASH_HEX_LENGTH);
}

/**
 * SHA-256 of UTF-8 text, as hex. The one-shot `crypto.hash` (Node ≥ 20.12) is about twice as fast as a Hash
 * object, which matters once per valid event; older Node 20 releases fall back to `createHash`.
 */
const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text, 'utf8').digest('hex');
