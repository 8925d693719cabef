// Stable ids of the keyed store's documents and of the gold rows' streaming insertIds.
import { createHash } from 'node:crypto';
import { windowId, type IntervalWindow } from '../windowing';

/** Keys that can be used verbatim inside a document id (no '/', no '~' separator, not '.' or '..'). */
const PLAIN_KEY = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * A key as it appears inside document ids and insertIds: itself when short and plain (route keys `JFK-LHR-USD`),
 * else `h-` + 32 hex digits of its SHA-256. Firestore document ids must not contain '/', must not be `.`/`..`, and
 * are limited to 1,500 bytes (Firestore limit); BigQuery insertIds to 128 characters.
 */
export function keyIdPart(key: string): string {
  return PLAIN_KEY.test(key) && key !== '.' && key !== '..'
    ? key
    : `h-${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 32)}`;
}

/** Document id of a (key, window) bookkeeping record: `<key>~<start>_<end>`. */
export function windowDocId(key: string, window: IntervalWindow): string {
  return `${keyIdPart(key)}~${windowId(window)}`;
}

/** Document id of one shard of a (key, window): `<key>~<start>_<end>~<shard>`. */
export function shardDocId(key: string, window: IntervalWindow, shard: number): string {
  return `${windowDocId(key, window)}~${shard}`;
}

/**
 * Document id of an event's dedup ledger entry: SHA-256 of the event id (hex). Producer ids are arbitrary text
 * (they may contain '/'), and hashed ids also spread writes over Firestore's key range.
 */
export function ledgerDocId(eventId: string): string {
  return createHash('sha256').update(eventId, 'utf8').digest('hex');
}

/**
 * The gold row's streaming insertId (and outbox document id): pipeline, window id, key and pane index, e.g.
 * `booking_routes_1m~1791382200000_1791382260000~JFK-LHR-USD~0`. A re-run of the same firing produces the same id, so
 * BigQuery's insertId dedup and the latest-pane view absorb retries. At most 40 + 27 + 64 + 10 < 128 characters
 * (BigQuery insertId limit).
 */
export function paneInsertId(
  pipeline: string,
  key: string,
  window: IntervalWindow,
  paneIndex: number,
): string {
  return `${pipeline}~${windowId(window)}~${keyIdPart(key)}~${paneIndex}`;
}
