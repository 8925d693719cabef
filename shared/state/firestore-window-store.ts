// WindowStore on Firestore: one pipeline's window state, dedup ledger, dropped-late counters, pane outbox,
// watermark and fireWindows lease, under `{root}/{pipeline}`.
import {
  FieldValue,
  Timestamp,
  type CollectionReference,
  type DocumentReference,
  type DocumentSnapshot,
  type Firestore,
  type Transaction,
} from '@google-cloud/firestore';
import * as v from 'valibot';
import { noteTransactionRetry } from '../attempt-observations';
import { TransientError, errorText } from '../errors';
import {
  windowId,
  type IntervalWindow,
  type JsonValue,
  type WatermarkState,
  type WindowContribution,
} from '../windowing';
import { keyIdPart, ledgerDocId, shardDocId, windowDocId } from './ids';
import {
  LeaseLostError,
  type DroppedCounter,
  type DroppedIncrement,
  type LedgerEntry,
  type Lease,
  type OutboxPane,
  type ShardAddress,
  type StoredShard,
  type StoredWatermark,
  type StoredWindow,
  type TransactionResult,
  type WindowAddress,
  type WindowStore,
  type WindowTimer,
  type WindowTransaction,
} from './window-store';

/** gRPC status codes the adapter tells apart (google.rpc.Code). */
const ALREADY_EXISTS = 6;
const FAILED_PRECONDITION = 9;
const NOT_FOUND = 5;

/** Collection names under `{root}/{pipeline}`. `eventLedger` and `droppedLate` carry the TTL field `expireAt`. */
export const COLLECTIONS = {
  windows: 'windows',
  shards: 'shards',
  ledger: 'eventLedger',
  dropped: 'droppedLate',
  outbox: 'paneOutbox',
  meta: 'meta',
} as const;

/** Firestore operations counted by the adapter (documents, as Firestore bills them). */
export interface StoreMetrics {
  /** Transactions run (each may take several attempts). */
  transactions: number;
  /** Transaction attempts (> transactions under contention). */
  attempts: number;
  /** Documents read, in transactions (every attempt) and outside (a query counts its results, at least 1). */
  reads: number;
  /** Document writes committed (set, create, update). */
  writes: number;
  /** Document deletes committed (Firestore bills them apart; TTL deletes are not counted here). */
  deletes: number;
  /** Transactions refused because a ledger entry existed. */
  ledgerConflicts: number;
}

/** A fresh, zeroed metrics record. */
export function newStoreMetrics(): StoreMetrics {
  return { transactions: 0, attempts: 0, reads: 0, writes: 0, deletes: 0, ledgerConflicts: 0 };
}

/** Options of the adapter. */
export interface FirestoreWindowStoreOptions<Acc extends JsonValue> {
  /** Root collection (`OFFVIA_WINDOW_FIRESTORE_ROOT`). */
  readonly root: string;
  /** Pipeline name: the document under `root` holding everything. */
  readonly pipeline: string;
  /** Checks an accumulator read back from a shard. @throws on a malformed accumulator */
  readonly parseAccumulator: (value: unknown) => Acc;
  /** Attempts per transaction before contention is reported as a TransientError (default 10). */
  readonly maxAttempts?: number;
  /** Counters to add to (benchmarks, tests). */
  readonly metrics?: StoreMetrics;
}

const int = v.pipe(v.number(), v.safeInteger());
const WindowDoc = v.object({
  key: v.string(),
  window_start_ms: int,
  window_end_ms: int,
  phase: v.picklist(['EARLY', 'LATE', 'CLOSED']),
  panes_emitted: int,
  non_early_panes_emitted: int,
  shard_count: v.pipe(int, v.minValue(1)),
  end_of_window_timer_ms: v.nullable(int),
  gc_timer_ms: int,
  pane_first_element_at_ms: v.nullable(int),
  watermark_ms: int,
  processing_time_ms: int,
});
const ShardDoc = v.object({
  key: v.string(),
  window_start_ms: int,
  window_end_ms: int,
  shard: int,
  accumulator_json: v.string(),
  elements_in_pane: int,
  first_element_in_pane_at_ms: v.nullable(int),
});
const WatermarkDoc = v.object({
  watermark_ms: int,
  max_event_time_ms: v.nullable(int),
  max_event_time_seen_at_ms: v.nullable(int),
  updated_at_ms: int,
});
const LeaseDoc = v.object({ holder: v.string(), fence: int, expires_at_ms: int });
const OutboxDoc = v.object({
  insert_id: v.string(),
  row_json: v.string(),
  key: v.string(),
  window_start_ms: int,
  window_end_ms: int,
  pane_timing: v.picklist(['EARLY', 'ON_TIME', 'LATE']),
  pane_index: int,
  is_last: v.boolean(),
  created_at_ms: int,
});
const DroppedDoc = v.object({
  window_start_ms: int,
  window_end_ms: int,
  count: int,
  expired_window: v.optional(int, 0),
  closed_window: v.optional(int, 0),
  last_dropped_at_ms: int,
  last_event_id: v.string(),
});

/** Version token of a document: its update time, as `seconds.nanoseconds`. */
function versionOf(time: Timestamp): string {
  return `${time.seconds}.${String(time.nanoseconds).padStart(9, '0')}`;
}

function timestampOfVersion(version: string): Timestamp {
  const [seconds, nanos] = version.split('.');
  return new Timestamp(Number(seconds), Number(nanos));
}

function codeOf(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}

/**
 * Firestore layout (`{root}/{pipeline}/…`, snake_case fields, times in epoch ms):
 * - `windows/{key}~{start}_{end}`: pane bookkeeping (`phase`, `panes_emitted`, `non_early_panes_emitted`,
 *   `shard_count`, timers `end_of_window_timer_ms` / `gc_timer_ms`, last `watermark_ms` / `processing_time_ms`);
 * - `shards/{key}~{start}_{end}~{n}`: one shard's contribution (`accumulator_json`, `elements_in_pane`,
 *   `first_element_in_pane_at_ms`);
 * - `eventLedger/{sha256(event_id)}`: dedup ledger (`event_id`, `message_id`, `key`, `window_ids`, `outcome`,
 *   `applied_at_ms`, TTL field `expireAt`);
 * - `droppedLate/{window_start_ms}~{key}~{shard}`: too-late counters (`count`, `expired_window`, `closed_window`,
 *   TTL `expireAt`), summed per window start by `readDropped`;
 * - `paneOutbox/{insertId}`: panes committed but not yet in the gold table;
 * - `meta/watermark` and `meta/fireWindowsLease`.
 * Every query is a single-field range on one collection, so Firestore's automatic indexes serve them.
 */
export class FirestoreWindowStore<Acc extends JsonValue> implements WindowStore<Acc> {
  protected readonly base: DocumentReference;
  private readonly maxAttempts: number;
  readonly metrics: StoreMetrics;
  /** Errors that came from Firestore calls inside a transaction callback (retryable by the client). */
  protected readonly sdkErrors = new WeakSet<object>();

  constructor(
    protected readonly db: Firestore,
    protected readonly options: FirestoreWindowStoreOptions<Acc>,
  ) {
    this.base = db.collection(options.root).doc(options.pipeline);
    this.maxAttempts = options.maxAttempts ?? 10;
    this.metrics = options.metrics ?? newStoreMetrics();
  }

  /** `{root}/{pipeline}/{collection}`. */
  collection(name: string): CollectionReference {
    return this.base.collection(name);
  }

  /** The bookkeeping document of a (key, window). */
  windowRef(a: WindowAddress): DocumentReference {
    return this.collection(COLLECTIONS.windows).doc(windowDocId(a.key, a.window));
  }

  /** One shard document of a (key, window). */
  shardRef(a: ShardAddress): DocumentReference {
    return this.collection(COLLECTIONS.shards).doc(shardDocId(a.key, a.window, a.shard));
  }

  /** The dedup ledger document of an event id (hashed: producer ids may contain '/'). */
  ledgerRef(eventId: string): DocumentReference {
    return this.collection(COLLECTIONS.ledger).doc(ledgerDocId(eventId));
  }

  private get watermarkRef(): DocumentReference {
    return this.collection(COLLECTIONS.meta).doc('watermark');
  }

  private get leaseRef(): DocumentReference {
    return this.collection(COLLECTIONS.meta).doc('fireWindowsLease');
  }

  /** A lease document under `meta/` (`fireWindowsLease`, or a partition's `fireWindowsLease~p<n>`). */
  private leaseRefOf(name: string | undefined): DocumentReference {
    return name === undefined ? this.leaseRef : this.collection(COLLECTIONS.meta).doc(name);
  }

  /** Tags errors of Firestore calls made inside a transaction callback, so `transact` can tell them from ours. */
  async sdk<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err !== null && typeof err === 'object') this.sdkErrors.add(err);
      throw err;
    }
  }

  protected async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof TransientError) throw err;
      throw new TransientError(`firestore ${operation}`, errorText(err), { cause: err });
    }
  }

  async transact<T>(
    operation: string,
    fn: (tx: WindowTransaction<Acc>) => Promise<T>,
  ): Promise<TransactionResult<T>> {
    this.metrics.transactions++;
    let attempts = 0;
    let own: { error: unknown } | undefined;
    let failed: { error: unknown } | undefined;
    let attempt: FirestoreTransaction<Acc> | undefined;
    let committed: FirestoreTransaction<Acc> | undefined;
    try {
      const value = await this.db.runTransaction(
        async (tx) => {
          this.metrics.attempts++;
          attempts++;
          // The client runs the callback again after a failed commit, or after the callback itself failed with a
          // retryable error (e.g. UNAVAILABLE): say which to the delivery's deadline.
          if (attempts > 1) {
            noteTransactionRetry(
              `firestore ${operation}`,
              failed === undefined ? undefined : errorText(failed.error),
            );
          }
          own = undefined;
          failed = undefined;
          attempt = this.newAttempt(tx);
          try {
            const result = await fn(attempt);
            // Layouts that buffer their writes queue them now, inside the attempt (reads are all done).
            attempt.finish();
            committed = attempt;
            return result;
          } catch (err) {
            failed = { error: err };
            if (!(err !== null && typeof err === 'object' && this.sdkErrors.has(err))) {
              own = { error: err };
            }
            throw err;
          }
        },
        { maxAttempts: this.maxAttempts },
      );
      this.metrics.writes += attempt?.writes ?? 0;
      this.metrics.deletes += attempt?.deletes ?? 0;
      if (committed !== undefined) this.afterCommit(committed);
      return { kind: 'committed', value, attempts };
    } catch (err) {
      if (own !== undefined && own.error === err) throw err;
      if (codeOf(err) === ALREADY_EXISTS && attempt?.createsLedger) {
        this.metrics.ledgerConflicts++;
        return { kind: 'ledger_conflict', attempts };
      }
      throw new TransientError(`firestore ${operation}`, errorText(err), { cause: err });
    }
  }

  /** One attempt's transaction object (layouts override it). */
  protected newAttempt(tx: Transaction): FirestoreTransaction<Acc> {
    return new FirestoreTransaction(tx, this);
  }

  /** Called once with the attempt that committed (layouts that keep bookkeeping of what they wrote override it). */
  protected afterCommit(_attempt: FirestoreTransaction<Acc>): void {}

  async readWatermark(): Promise<StoredWatermark | null> {
    return this.call('read watermark', async () => {
      this.metrics.reads++;
      return this.parseWatermark(await this.watermarkRef.get());
    });
  }

  private parseWatermark(snap: DocumentSnapshot): StoredWatermark | null {
    if (!snap.exists || snap.updateTime === undefined) return null;
    const doc = this.parse('meta/watermark', WatermarkDoc, snap.data());
    return {
      state: {
        watermarkMs: doc.watermark_ms,
        maxEventTimeMs: doc.max_event_time_ms,
        maxEventTimeSeenAtMs: doc.max_event_time_seen_at_ms,
      },
      updatedAtMs: doc.updated_at_ms,
      version: versionOf(snap.updateTime),
    };
  }

  async writeWatermark(
    state: WatermarkState,
    updatedAtMs: number,
    expected: StoredWatermark | null,
  ): Promise<StoredWatermark | null> {
    const data = {
      watermark_ms: state.watermarkMs,
      max_event_time_ms: state.maxEventTimeMs,
      max_event_time_seen_at_ms: state.maxEventTimeSeenAtMs,
      updated_at_ms: updatedAtMs,
    };
    return this.call('write watermark', async () => {
      try {
        const result =
          expected === null
            ? await this.watermarkRef.create(data)
            : await this.watermarkRef.update(data, {
                lastUpdateTime: timestampOfVersion(expected.version),
              });
        this.metrics.writes++;
        return { state, updatedAtMs, version: versionOf(result.writeTime) };
      } catch (err) {
        const code = codeOf(err);
        if (code === ALREADY_EXISTS || code === FAILED_PRECONDITION || code === NOT_FOUND)
          return null;
        throw err;
      }
    });
  }

  /**
   * @param name lease document under `meta/` (default `fireWindowsLease`, the pipeline's; fireWindows' partitions
   * use `fireWindowsLease~p<n>`)
   */
  async acquireLease(
    holder: string,
    nowMs: number,
    leaseMs: number,
    name?: string,
  ): Promise<Lease | null> {
    const ref = this.leaseRefOf(name);
    return this.call('acquire lease', () =>
      this.db.runTransaction(async (tx) => {
        this.metrics.reads++;
        const snap = await tx.get(ref);
        const doc = snap.exists ? this.parse(`meta/${ref.id}`, LeaseDoc, snap.data()) : null;
        if (doc !== null && doc.expires_at_ms > nowMs && doc.holder !== holder) return null;
        const lease: Lease = {
          holder,
          fence: (doc?.fence ?? 0) + 1,
          expiresAtMs: nowMs + leaseMs,
          ...(name !== undefined && { name }),
        };
        tx.set(ref, {
          holder,
          fence: lease.fence,
          expires_at_ms: lease.expiresAtMs,
          acquired_at_ms: nowMs,
        });
        this.metrics.writes++;
        return lease;
      }),
    );
  }

  async releaseLease(lease: Lease): Promise<void> {
    const ref = this.leaseRefOf(lease.name);
    await this.call('release lease', () =>
      this.db.runTransaction(async (tx) => {
        this.metrics.reads++;
        const snap = await tx.get(ref);
        const doc = snap.exists ? this.parse(`meta/${ref.id}`, LeaseDoc, snap.data()) : null;
        if (doc === null || doc.fence !== lease.fence || doc.holder !== lease.holder) return;
        tx.update(ref, { expires_at_ms: 0 });
        this.metrics.writes++;
      }),
    );
  }

  /**
   * What the dedup state says about an event: `counted`, `dropped` (too late for all its windows) or `null` (no
   * ledger entry). The per-window layout reads the event's ledger document; `key` and `windows` (the event's) are
   * what the key-groups layout needs to find it.
   * @throws TransientError when Firestore fails
   */
  async eventOutcome(
    eventId: string,
    _key: string,
    _windows: readonly IntervalWindow[],
  ): Promise<'counted' | 'dropped' | null> {
    return this.call('read dedup ledger', async () => {
      const snap = await this.ledgerRef(eventId).get();
      this.metrics.reads++;
      if (!snap.exists) return null;
      return snap.get('outcome') === 'dropped' ? 'dropped' : 'counted';
    });
  }

  /** Whether any (key, window) record exists (one query, `limit(1)`: 1 document read). */
  async hasWindows(): Promise<boolean> {
    return this.call('query any window', async () => {
      const snap = await this.collection(COLLECTIONS.windows).limit(1).get();
      this.metrics.reads += 1;
      return !snap.empty;
    });
  }

  async findWindowsDue(
    timer: WindowTimer,
    beforeMs: number,
    limit: number,
  ): Promise<WindowAddress[]> {
    const field = timer === 'endOfWindow' ? 'end_of_window_timer_ms' : 'gc_timer_ms';
    return this.call(`query windows by ${field}`, async () => {
      const snap = await this.collection(COLLECTIONS.windows)
        .where(field, '<', beforeMs)
        .orderBy(field)
        .limit(limit)
        .get();
      this.metrics.reads += Math.max(1, snap.size);
      return snap.docs.map((d) => {
        const doc = this.parse(`windows/${d.id}`, WindowDoc, d.data());
        return { key: doc.key, window: { startMs: doc.window_start_ms, endMs: doc.window_end_ms } };
      });
    });
  }

  async findPendingSince(atOrBeforeMs: number, limit: number): Promise<WindowAddress[]> {
    return this.call('query pending shards', async () => {
      const snap = await this.collection(COLLECTIONS.shards)
        .where('first_element_in_pane_at_ms', '<=', atOrBeforeMs)
        .orderBy('first_element_in_pane_at_ms')
        .limit(limit)
        .get();
      this.metrics.reads += Math.max(1, snap.size);
      const found = new Map<string, WindowAddress>();
      for (const d of snap.docs) {
        const doc = this.parse(`shards/${d.id}`, ShardDoc, d.data());
        const window = { startMs: doc.window_start_ms, endMs: doc.window_end_ms };
        found.set(`${doc.key}|${windowId(window)}`, { key: doc.key, window });
      }
      return [...found.values()];
    });
  }

  async earliestPendingSinceMs(): Promise<number | null> {
    return this.call('query earliest pending shard', async () => {
      // The range filter keeps out shards whose pane is empty (null sorts before every number in Firestore).
      const snap = await this.collection(COLLECTIONS.shards)
        .where('first_element_in_pane_at_ms', '>=', Number.MIN_SAFE_INTEGER)
        .orderBy('first_element_in_pane_at_ms')
        .limit(1)
        .get();
      this.metrics.reads += Math.max(1, snap.size);
      const first = snap.docs[0];
      if (first === undefined) return null;
      return this.parse(`shards/${first.id}`, ShardDoc, first.data()).first_element_in_pane_at_ms;
    });
  }

  async listOutbox(createdAtOrBeforeMs: number, limit: number): Promise<OutboxPane[]> {
    return this.call('list pane outbox', async () => {
      const snap = await this.collection(COLLECTIONS.outbox)
        .where('created_at_ms', '<=', createdAtOrBeforeMs)
        .orderBy('created_at_ms')
        .limit(limit)
        .get();
      this.metrics.reads += Math.max(1, snap.size);
      return snap.docs.map((d) => {
        const doc = this.parse(`paneOutbox/${d.id}`, OutboxDoc, d.data());
        return {
          insertId: doc.insert_id,
          row: JSON.parse(doc.row_json) as Record<string, unknown>,
          key: doc.key,
          window: { startMs: doc.window_start_ms, endMs: doc.window_end_ms },
          timing: doc.pane_timing,
          index: doc.pane_index,
          isLast: doc.is_last,
          createdAtMs: doc.created_at_ms,
        };
      });
    });
  }

  async deleteOutbox(insertIds: readonly string[]): Promise<void> {
    if (insertIds.length === 0) return;
    await this.call('delete pane outbox', async () => {
      for (let i = 0; i < insertIds.length; i += 500) {
        const batch = this.db.batch();
        for (const id of insertIds.slice(i, i + 500)) {
          batch.delete(this.collection(COLLECTIONS.outbox).doc(id));
        }
        await batch.commit();
      }
      this.metrics.deletes += insertIds.length;
    });
  }

  async readDropped(): Promise<DroppedCounter[]> {
    return this.call('read dropped-late counters', async () => {
      const snap = await this.collection(COLLECTIONS.dropped).orderBy('window_start_ms').get();
      this.metrics.reads += Math.max(1, snap.size);
      const byStart = new Map<number, DroppedCounter>();
      for (const d of snap.docs) {
        const doc = this.parse(`droppedLate/${d.id}`, DroppedDoc, d.data());
        const sum = byStart.get(doc.window_start_ms);
        const latest = sum === undefined || doc.last_dropped_at_ms >= sum.lastDroppedAtMs;
        byStart.set(doc.window_start_ms, {
          windowStartMs: doc.window_start_ms,
          windowEndMs: doc.window_end_ms,
          count: (sum?.count ?? 0) + doc.count,
          expiredWindow: (sum?.expiredWindow ?? 0) + doc.expired_window,
          closedWindow: (sum?.closedWindow ?? 0) + doc.closed_window,
          lastDroppedAtMs: latest ? doc.last_dropped_at_ms : sum.lastDroppedAtMs,
          lastEventId: latest ? doc.last_event_id : sum.lastEventId,
        });
      }
      return [...byStart.values()];
    });
  }

  /**
   * Validates a stored document.
   * @throws TransientError naming the document: corrupt state must not be acked away (redelivery, then the
   * dead-letter topic, with the document left for an operator)
   */
  parse<T>(where: string, schema: v.GenericSchema<unknown, T>, data: unknown): T {
    const result = v.safeParse(schema, data);
    if (!result.success) {
      const issue = result.issues[0];
      const path = (issue.path ?? []).map((p) => String(p.key)).join('.');
      throw new TransientError(
        `firestore read ${this.options.pipeline}/${where}`,
        `malformed document: ${path ? `${path}: ` : ''}${issue.message}`,
      );
    }
    return result.output;
  }

  /** Parses a window record. */
  windowOf(where: string, data: unknown): StoredWindow {
    const doc = this.parse(where, WindowDoc, data);
    return {
      key: doc.key,
      window: { startMs: doc.window_start_ms, endMs: doc.window_end_ms },
      pane: {
        phase: doc.phase,
        panesEmitted: doc.panes_emitted,
        nonEarlyPanesEmitted: doc.non_early_panes_emitted,
      },
      shardCount: doc.shard_count,
      endOfWindowTimerMs: doc.end_of_window_timer_ms,
      gcTimerMs: doc.gc_timer_ms,
      paneFirstElementAtMs: doc.pane_first_element_at_ms,
      watermarkMs: doc.watermark_ms,
      processingTimeMs: doc.processing_time_ms,
    };
  }

  /** Parses a shard. */
  shardOf(where: string, data: unknown): StoredShard<Acc> {
    const doc = this.parse(where, ShardDoc, data);
    let accumulator: Acc;
    try {
      accumulator = this.options.parseAccumulator(JSON.parse(doc.accumulator_json));
    } catch (err) {
      throw new TransientError(
        `firestore read ${this.options.pipeline}/${where}`,
        `malformed accumulator: ${errorText(err)}`,
      );
    }
    const contribution: WindowContribution<Acc> = {
      accumulator,
      elementsInPane: doc.elements_in_pane,
      firstElementInPaneAtMs: doc.first_element_in_pane_at_ms,
    };
    return {
      key: doc.key,
      window: { startMs: doc.window_start_ms, endMs: doc.window_end_ms },
      shard: doc.shard,
      contribution,
    };
  }

  /** Reads the lease in `tx` and throws LeaseLostError unless it is still `lease`. */
  async checkLease(tx: Transaction, lease: Lease): Promise<void> {
    const snap = await this.sdk(() => tx.get(this.leaseRef));
    this.metrics.reads++;
    const doc = snap.exists ? this.parse('meta/fireWindowsLease', LeaseDoc, snap.data()) : null;
    if (doc === null || doc.fence !== lease.fence || doc.holder !== lease.holder) {
      throw new LeaseLostError(
        `fireWindows lease (fence ${lease.fence}) is lost: the lease is at fence ${String(doc?.fence)} held by ` +
          String(doc?.holder),
      );
    }
  }
}

/** One attempt of a transaction, mapping the port's records to documents. */
export class FirestoreTransaction<Acc extends JsonValue> implements WindowTransaction<Acc> {
  /** Writes queued by this attempt (committed only if the attempt commits), deletes excluded. */
  writes = 0;
  /** Deletes queued by this attempt (Firestore bills them apart from writes). */
  deletes = 0;
  /** The attempt creates ledger entries (an ALREADY_EXISTS at commit is then a duplicate event). */
  createsLedger = false;

  constructor(
    protected readonly tx: Transaction,
    protected readonly store: FirestoreWindowStore<Acc>,
  ) {}

  /** Queues buffered writes before the commit (this layout writes at once: nothing to do). */
  finish(): void {}

  async read(request: {
    windows?: readonly WindowAddress[];
    shards?: readonly ShardAddress[];
    ledger?: readonly string[];
  }): Promise<{
    windows: (StoredWindow | null)[];
    shards: (StoredShard<Acc> | null)[];
    ledger: boolean[];
  }> {
    const windows = request.windows ?? [];
    const shards = request.shards ?? [];
    const ledger = request.ledger ?? [];
    const refs = [
      ...windows.map((w) => this.store.windowRef(w)),
      ...shards.map((s) => this.store.shardRef(s)),
      ...ledger.map((id) => this.store.ledgerRef(id)),
    ];
    if (refs.length === 0) return { windows: [], shards: [], ledger: [] };
    const snaps = await this.store.sdk(() => this.tx.getAll(...refs));
    this.store.metrics.reads += refs.length;
    const w = snaps.slice(0, windows.length);
    const s = snaps.slice(windows.length, windows.length + shards.length);
    const l = snaps.slice(windows.length + shards.length);
    return {
      windows: w.map((snap) =>
        snap.exists ? this.store.windowOf(snap.ref.path, snap.data()) : null,
      ),
      shards: s.map((snap) =>
        snap.exists ? this.store.shardOf(snap.ref.path, snap.data()) : null,
      ),
      ledger: l.map((snap) => snap.exists),
    };
  }

  checkLease(lease: Lease): Promise<void> {
    return this.store.checkLease(this.tx, lease);
  }

  putWindow(record: StoredWindow): void {
    this.writes++;
    this.tx.set(this.store.windowRef(record), {
      key: record.key,
      window_start_ms: record.window.startMs,
      window_end_ms: record.window.endMs,
      phase: record.pane.phase,
      panes_emitted: record.pane.panesEmitted,
      non_early_panes_emitted: record.pane.nonEarlyPanesEmitted,
      shard_count: record.shardCount,
      end_of_window_timer_ms: record.endOfWindowTimerMs,
      gc_timer_ms: record.gcTimerMs,
      pane_first_element_at_ms: record.paneFirstElementAtMs,
      watermark_ms: record.watermarkMs,
      processing_time_ms: record.processingTimeMs,
    });
  }

  deleteWindow(address: WindowAddress): void {
    this.deletes++;
    this.tx.delete(this.store.windowRef(address));
  }

  putShard(shard: StoredShard<Acc>): void {
    this.writes++;
    this.tx.set(this.store.shardRef(shard), {
      key: shard.key,
      window_start_ms: shard.window.startMs,
      window_end_ms: shard.window.endMs,
      shard: shard.shard,
      accumulator_json: JSON.stringify(shard.contribution.accumulator),
      elements_in_pane: shard.contribution.elementsInPane,
      first_element_in_pane_at_ms: shard.contribution.firstElementInPaneAtMs,
    });
  }

  deleteShard(address: ShardAddress): void {
    this.deletes++;
    this.tx.delete(this.store.shardRef(address));
  }

  createLedgerEntry(entry: LedgerEntry): void {
    this.writes++;
    this.createsLedger = true;
    this.tx.create(this.store.ledgerRef(entry.eventId), {
      event_id: entry.eventId,
      message_id: entry.messageId,
      key: entry.key,
      window_ids: [...entry.windowIds],
      outcome: entry.outcome,
      applied_at_ms: entry.appliedAtMs,
      expireAt: Timestamp.fromMillis(entry.expireAtMs),
    });
  }

  addDropped(increment: DroppedIncrement): void {
    this.writes++;
    const ref = this.store
      .collection(COLLECTIONS.dropped)
      .doc(`${increment.window.startMs}~${keyIdPart(increment.key)}~${increment.shard}`);
    this.tx.set(
      ref,
      {
        window_start_ms: increment.window.startMs,
        window_end_ms: increment.window.endMs,
        key: increment.key,
        shard: increment.shard,
        count: FieldValue.increment(increment.count),
        [increment.reason === 'EXPIRED_WINDOW' ? 'expired_window' : 'closed_window']:
          FieldValue.increment(increment.count),
        last_dropped_at_ms: increment.atMs,
        last_event_id: increment.sampleEventId,
        last_watermark_ms: increment.watermarkMs,
        expireAt: Timestamp.fromMillis(increment.expireAtMs),
      },
      { merge: true },
    );
  }

  putOutboxPane(pane: OutboxPane): void {
    this.writes++;
    this.tx.set(this.store.collection(COLLECTIONS.outbox).doc(pane.insertId), {
      insert_id: pane.insertId,
      row_json: JSON.stringify(pane.row),
      key: pane.key,
      window_start_ms: pane.window.startMs,
      window_end_ms: pane.window.endMs,
      pane_timing: pane.timing,
      pane_index: pane.index,
      is_last: pane.isLast,
      created_at_ms: pane.createdAtMs,
    });
  }
}
