// The one inventory of what the system writes to Firestore: every collection (by collection id, which is what index
// settings and TTL policies apply to) with its top-level fields, and for each field why it is indexed or exempt, and
// for each collection its TTL field or why it needs none. The deploy plan's exemptions and TTL policies come from it.
import { SCHEMA_DRIFT_VARS } from '../config/schema-drift-config';
import { DRIFT_COLLECTIONS } from '../drift/firestore-store';
import { REPLAY_CHUNKS, REPLAY_COLLECTION } from '../ops/replay-store';
import { COLLECTIONS } from './firestore-window-store';
import { SESSION_COLLECTION } from './firestore-session-store';
import { GROUP_COLLECTIONS } from './grouped-window-store';
import { HOLDS_COLLECTION } from './watermark-holds';

/**
 * The index decision of one field.
 * - `query`: the automatic single-field index stays, because the named query needs it;
 * - `exempt`: single-field indexing is switched off (`gcloud firestore indexes fields update --disable-indexes`):
 *   no query uses the field and it grows monotonically (time-prefixed ids, timestamps) or sits in a document written
 *   at high rate, where every index entry costs write latency and sequential values hot-spot one index range
 *   (Firestore best practices: at most 500 writes/s on a sequentially indexed field);
 * - `kept`: the automatic index stays although no query uses it: the collection is written a few times a minute at
 *   most, so the index costs nothing worth a deploy step.
 */
export type IndexDecision =
  | { readonly index: 'query'; readonly query: string }
  | { readonly index: 'exempt'; readonly why: string }
  | { readonly index: 'kept'; readonly why: string };

/** The TTL decision of one collection: the Timestamp field of a TTL policy, or why the collection needs none. */
export type TtlDecision = { readonly field: 'expireAt' } | { readonly none: string };

/** One collection id the system writes, with every top-level field it writes. */
export interface FirestoreCollection {
  /** Collection id (a collection group: index settings and TTL policies are per collection id). */
  readonly collection: string;
  /** Where its documents live and who writes them. */
  readonly where: string;
  readonly fields: Readonly<Record<string, IndexDecision>>;
  readonly ttl: TtlDecision;
  /** Composite indexes (field paths, ascending) its queries need. */
  readonly composite?: readonly (readonly [string, string])[];
  /** A retired layout's collection no code writes any more; kept for teardown and its TTL policy. */
  readonly retired?: true;
}

const query = (q: string): IndexDecision => ({ index: 'query', query: q });
const exempt = (why: string): IndexDecision => ({ index: 'exempt', why });
const kept = (why: string): IndexDecision => ({ index: 'kept', why });
/** `names` exempt for the same reason. */
const exemptAll = (why: string, ...names: string[]): Record<string, IndexDecision> =>
  Object.fromEntries(names.map((n) => [n, exempt(why)]));
/** `names` kept for the same reason. */
const keptAll = (why: string, ...names: string[]): Record<string, IndexDecision> =>
  Object.fromEntries(names.map((n) => [n, kept(why)]));

const TTL = { field: 'expireAt' } as const;
const TIMER_QUERY =
  'fireWindows/timer loop: `group in […]` and a range on the timer, ordered by it (composite index), and the ' +
  'earliest timer (`>= MIN_SAFE_INTEGER`, order by the timer)';
const PER_BUNDLE = 'written on every bundle or firing; read by id only';
const GROWS = 'grows with time (timestamp or time-prefixed), written on every bundle';
const LOW_RATE = 'a few writes a minute per table at most';

/**
 * Every Firestore collection id the stores write, in deploy order. Window state lives under
 * `{OFFVIA_WINDOW_FIRESTORE_ROOT}/{aggregation}` (shared/pipeline/runtime/namespace.ts); the drift store under
 * `OFFVIA_SCHEMA_FIRESTORE_ROOT` (default below); replay checkpoints under `replay_runs`.
 */
export const FIRESTORE_INVENTORY: readonly FirestoreCollection[] = [
  {
    collection: GROUP_COLLECTIONS.groups,
    where: 'key-group documents of the key-groups layout (grouped-window-store.ts)',
    fields: {
      group: query(TIMER_QUERY),
      event_timer_ms: query(TIMER_QUERY),
      processing_timer_ms: query(TIMER_QUERY),
      ...exemptAll('large map or string rewritten on every bundle', 'w', 'c', 'seen'),
      ...exemptAll(GROWS, 'expireAt', 'window_start_ms', 'window_end_ms', 'watermark_floor_ms'),
      ...exemptAll(PER_BUNDLE, 'dropped', 'spills', 'shard'),
    },
    ttl: TTL,
    composite: [
      ['group', 'event_timer_ms'],
      ['group', 'processing_timer_ms'],
    ],
  },
  {
    collection: GROUP_COLLECTIONS.spills,
    where: 'dedup ids spilled from a full key-group document (grouped-window-store.ts)',
    fields: {
      seen: exempt('large string of dedup ids'),
      expireAt: exempt(GROWS),
      dropped: exempt(PER_BUNDLE),
    },
    ttl: TTL,
  },
  {
    collection: GROUP_COLLECTIONS.paneBatches,
    where: 'panes one firing transaction emitted, until they are in gold (grouped-window-store.ts)',
    fields: {
      created_at_ms: query('pane delivery: unsent batches `created_at_ms <= t`, oldest first'),
      panes_json: exempt('large string written on every firing'),
      pane_count: exempt(PER_BUNDLE),
    },
    ttl: { none: 'each batch is deleted once its panes are in gold' },
  },
  {
    collection: COLLECTIONS.outbox,
    where: 'panes the session layout emitted, until they are in gold (firestore-window-store.ts)',
    fields: {
      created_at_ms: query('pane delivery: unsent panes `created_at_ms <= t`, oldest first'),
      ...exemptAll(
        PER_BUNDLE,
        'insert_id',
        'row_json',
        'key',
        'window_start_ms',
        'window_end_ms',
        'pane_timing',
        'pane_index',
        'is_last',
      ),
    },
    ttl: { none: 'each pane is deleted once it is in gold' },
  },
  {
    collection: COLLECTIONS.dropped,
    where: 'dropped-late counters, one per window, key and shard (firestore-window-store.ts)',
    fields: {
      ...exemptAll(
        GROWS,
        'window_start_ms',
        'window_end_ms',
        'last_dropped_at_ms',
        'last_watermark_ms',
        'expireAt',
      ),
      ...exemptAll(
        'written on every late element; read whole and summed by window',
        'key',
        'shard',
        'count',
        'expired_window',
        'closed_window',
        'last_event_id',
      ),
    },
    ttl: TTL,
  },
  {
    collection: COLLECTIONS.meta,
    where: 'the watermark document and the fireWindows leases (firestore-window-store.ts)',
    fields: exemptAll(
      'watermark and lease values grow with time and are rewritten on every pass; read by id only',
      'watermark_ms',
      'max_event_time_ms',
      'max_event_time_seen_at_ms',
      'updated_at_ms',
      'holder',
      'fence',
      'expires_at_ms',
      'acquired_at_ms',
    ),
    ttl: { none: 'a fixed set: the watermark and one lease per partition' },
  },
  {
    collection: HOLDS_COLLECTION,
    where: 'watermark holds of refused deliveries (watermark-holds.ts)',
    fields: {
      publish_time_ms: query('the oldest holds: order by `publish_time_ms`, limit n'),
      ...exemptAll(
        'written on every refused delivery; grows with time',
        'message_id',
        'last_failed_at_ms',
        'expires_at_ms',
        'expireAt',
      ),
    },
    ttl: TTL,
  },
  {
    collection: SESSION_COLLECTION,
    where: 'one document per key with its open sessions (firestore-session-store.ts)',
    fields: {
      group: query(TIMER_QUERY),
      event_timer_ms: query(TIMER_QUERY),
      processing_timer_ms: query(TIMER_QUERY),
      ...exemptAll('large string or map rewritten on every bundle', 'key', 'seen', 'state_json'),
    },
    ttl: { none: "fireWindows deletes a key's document once its last session has fired" },
  },
  {
    collection: COLLECTIONS.ledger,
    where: 'the retired per-window layout’s dedup ledger (docs/windows.md)',
    fields: {},
    ttl: TTL,
    retired: true,
  },
  {
    collection: COLLECTIONS.windows,
    where: 'the retired per-window layout (docs/windows.md)',
    fields: {},
    ttl: { none: 'retired: written by no code, drained by teardown' },
    retired: true,
  },
  {
    collection: COLLECTIONS.shards,
    where: 'the retired per-window layout (docs/windows.md)',
    fields: {},
    ttl: { none: 'retired: written by no code, drained by teardown' },
    retired: true,
  },
  {
    collection: SCHEMA_DRIFT_VARS.firestoreRoot.default,
    where:
      'one document per table: target table, sweep lease, last update (drift/firestore-store.ts)',
    fields: keptAll(
      LOW_RATE,
      'target_table',
      'lease_holder',
      'lease_fence',
      'lease_expires_ms',
      'last_update_ms',
    ),
    ttl: { none: 'one document per Silver table' },
  },
  {
    collection: DRIFT_COLLECTIONS.changes,
    where: 'pending schema changes, one per table and schema window (drift/firestore-store.ts)',
    fields: {
      window_start_ms: query('the first later window not swept: `window_start_ms >= t`, ordered'),
      status: query('pending changes: `status in [pending, applying]`'),
      ...keptAll(
        LOW_RATE,
        'window_id',
        'window_end_ms',
        'target_table',
        'proposed',
        'proposed_count',
        'created_ms',
        'updated_ms',
        'sweep_fence',
        'swept_ms',
        'plan',
        'update_id',
        'last_error',
      ),
    },
    ttl: { none: 'audit trail of schema changes, a few a day, kept on purpose' },
  },
  {
    collection: DRIFT_COLLECTIONS.rows,
    where: 'rows waiting for a schema change (drift/firestore-store.ts)',
    fields: {
      processed_timestamp: query('waiting rows, oldest first: order by `processed_timestamp`'),
      ...exemptAll(
        'written once per drifted event (up to the ingest rate); read by the sweep in order',
        'target_table',
        'insert_id',
        'source_message_id',
        'row_json',
        'extra_fields_json',
        'window_id',
        'errors',
        'error_count',
        'retry_count',
        'last_error',
        'last_attempt_ms',
      ),
    },
    ttl: { none: 'each row is deleted once the sweep has written it to Silver' },
  },
  {
    collection: DRIFT_COLLECTIONS.updates,
    where: 'one audit record per table update (drift/firestore-store.ts)',
    fields: {
      started_ms: query('the update history: order by `started_ms`'),
      ...keptAll(
        LOW_RATE,
        'update_id',
        'target_table',
        'window_ids',
        'add_columns',
        'add_column_types',
        'statements',
        'status',
        'attempts',
        'holder',
        'fence',
        'finished_ms',
        'error',
        'catalog_patched',
      ),
    },
    ttl: { none: 'audit trail of table updates, a few a day, kept on purpose' },
  },
  {
    collection: REPLAY_COLLECTION,
    where: 'one document per `offvia replay` run (ops/replay-store.ts)',
    fields: keptAll(
      'one write per run and status change, by an operator',
      'runId',
      'fromMs',
      'toMs',
      'chunkMs',
      'filters',
      'messageIds',
      'operator',
      'ratePerSecond',
      'createdAtMs',
      'status',
      'updatedAtMs',
    ),
    ttl: { none: 'audit trail of operator replays, kept on purpose' },
  },
  {
    collection: REPLAY_CHUNKS,
    where: 'chunk checkpoints of a replay run (ops/replay-store.ts)',
    fields: keptAll(
      'one write per replay chunk (below Firestore’s one write a second per document)',
      'index',
      'fromMs',
      'toMs',
      'status',
      'rows',
      'outcomes',
      'alreadyPresent',
      'failures',
      'failedCount',
      'attempt',
      'finishedAtMs',
      'elapsedMs',
    ),
    ttl: { none: 'bounded by the runs: a run has a few hundred chunks at most' },
  },
];

/** `[collection, field, why]` of every exempt field, in inventory order: one deploy step each. */
export function indexExemptions(): (readonly [string, string, string])[] {
  return FIRESTORE_INVENTORY.flatMap((c) =>
    Object.entries(c.fields).flatMap(([field, d]) =>
      d.index === 'exempt' ? [[c.collection, field, d.why] as const] : [],
    ),
  );
}

/** The collection ids with a TTL policy on `expireAt`, in inventory order. */
export function ttlCollections(): string[] {
  return FIRESTORE_INVENTORY.filter((c) => 'field' in c.ttl).map((c) => c.collection);
}
