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

/** FNV-1a 32-bit hash of a string's UTF-16 units: cheap, stable across processes and versions. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The key group of `key` among `groups` (hash(key) mod groups), in [0, groups). Stable: it places state. */
export function keyGroupOf(key: string, groups: number): number {
  return fnv1a(`k:${key}`) % groups;
}

/**
 * The shard of a key group an event goes to among `shards`: hash(event id) mod shards, so every delivery of an event
 * lands on the same shard document, whose dedup ids then decide alone whether it was counted.
 */
export function eventShardOf(eventId: string, shards: number): number {
  return fnv1a(`e:${eventId}`) % shards;
}

/**
 * The 16-character dedup id of an event kept in key-group documents: the first 96 bits of SHA-256(event id),
 * base64url. Two of a document's ids collide with probability n² / 2^97 (n ids), under 10^-19 at 100,000.
 */
export function dedupIdOf(eventId: string): string {
  return createHash('sha256')
    .update(eventId, 'utf8')
    .digest()
    .subarray(0, 12)
    .toString('base64url');
}

/** Characters of a dedup id (`dedupIdOf`). */
export const DEDUP_ID_LENGTH = 16;

const DEDUP_IDS = new RegExp(`[^]{1,${DEDUP_ID_LENGTH}}`, 'g');

/** The dedup ids of `text` (dedup ids concatenated, as documents keep them). */
export function dedupIdsIn(text: string): string[] {
  return text.match(DEDUP_IDS) ?? [];
}

/** The shard number that stands for a key group's separate bookkeeping document (`~h`). */
export const HEAD_SHARD = -1;

/**
 * Document id of one shard of a key group of a window, `g<group>~<start>_<end>~s<shard>`, or of its bookkeeping
 * document `g<group>~<start>_<end>~h` (`HEAD_SHARD`). It starts with the group, not the time, so consecutive windows
 * do not write one narrow, ever-growing key range (Firestore's advice against monotonically increasing ids).
 */
export function keyGroupDocId(window: IntervalWindow, group: number, shard: number): string {
  return `g${group}~${windowId(window)}~${shard === HEAD_SHARD ? 'h' : `s${shard}`}`;
}
