// The documents every Firestore window store shares, under `{root}/{pipeline}`: watermark, fireWindows leases,
// dropped-late counters, pane outbox, and the transaction runner; the key-groups and session stores build on it.
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
import type { IntervalWindow, JsonValue, WatermarkState } from '../windowing';
import { keyIdPart } from './ids';
import {
  LeaseLostError,
  type DroppedCounter,
  type DroppedIncrement,
  type Lease,
  type OutboxPane,
  type SeenEntry,
  type ShardAddress,
  type StoredShard,
  type StoredWatermark,
  type StoredWindow,
  type WindowAddress,
  type WindowReadRequest,
  type WindowReadResult,
  type WindowStore,
  type WindowTransaction,
} from './window-store';

/** gRPC status codes the adapter tells apart (google.rpc.Code). */
const ALREADY_EXISTS = 6;
const FAILED_PRECONDITION = 9;
const NOT_FOUND = 5;

/**
 * Collection names under `{root}/{pipeline}`; `droppedLate` and `eventLedger` carry the TTL field `expireAt`.
 * `windows`, `shards` and `eventLedger` are the retired per-window layout's, written by no code: kept so teardown
 * deletes them and the deploy keeps the ledger's TTL (docs/windows.md "Draining the per-window layout").
 */
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
}

/** A fresh, zeroed metrics record. */
export function newStoreMetrics(): StoreMetrics {
  return { transactions: 0, attempts: 0, reads: 0, writes: 0, deletes: 0 };
}

/** Options of the adapter. */
export interface FirestoreWindowStoreOptions<Acc extends JsonValue> {
  /** Root collection (`OFFVIA_WINDOW_FIRESTORE_ROOT`). */
  readonly root: string;
  /** Pipeline name: the document under `root` holding everything. */
  readonly pipeline: string;
  /** Key groups the layout spreads keys over (`OFFVIA_WINDOW_KEY_GROUPS`; default 1). */
  readonly keyGroups?: number;
  /** Checks an accumulator read back from a shard. @throws on a malformed accumulator */
  readonly parseAccumulator: (value: unknown) => Acc;
  /** Attempts per transaction before contention is reported as a TransientError (default 10). */
  readonly maxAttempts?: number;
  /** Counters to add to (benchmarks, tests). */
  readonly metrics?: StoreMetrics;
}

const int = v.pipe(v.number(), v.safeInteger());
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
 * The shared documents under `{root}/{pipeline}` (snake_case fields, epoch ms): `droppedLate/{start}~{key}~{shard}`
 * counters (summed per window start by `readDropped`), `paneOutbox/{insertId}`, `meta/watermark` and the leases.
 * The (key, window) operations of `WindowTransaction` are the layouts' (`GroupedFirestoreWindowStore`,
 * `FirestoreSessionStore`).
 */
export class FirestoreWindowStore<Acc extends JsonValue> implements WindowStore<Acc> {
  protected readonly base: DocumentReference;
  readonly keyGroups: number;
  private readonly maxAttempts: number;
  readonly metrics: StoreMetrics;
  /** Errors that came from Firestore calls inside a transaction callback (retryable by the client). */
  protected readonly sdkErrors = new WeakSet<object>();

  constructor(
    protected readonly db: Firestore,
    readonly options: FirestoreWindowStoreOptions<Acc>,
  ) {
    this.base = db.collection(options.root).doc(options.pipeline);
    this.keyGroups = options.keyGroups ?? 1;
    this.maxAttempts = options.maxAttempts ?? 10;
    this.metrics = options.metrics ?? newStoreMetrics();
  }

  /** `{root}/{pipeline}/{collection}`. */
  collection(name: string): CollectionReference {
    return this.base.collection(name);
  }

  private get watermarkRef(): DocumentReference {
    return this.collection(COLLECTIONS.meta).doc('watermark');
  }

  /** A lease document under `meta/` (a partition's `fireWindowsLease~p<n>`; default `fireWindowsLease`). */
  leaseRefOf(name: string | undefined): DocumentReference {
    return this.collection(COLLECTIONS.meta).doc(name ?? 'fireWindowsLease');
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

  async transact<T>(operation: string, fn: (tx: WindowTransaction<Acc>) => Promise<T>): Promise<T> {
    this.metrics.transactions++;
    let attempts = 0;
    let own: { error: unknown } | undefined;
    let failed: { error: unknown } | undefined;
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
          const attempt = this.newAttempt(tx);
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
      if (committed !== undefined) this.committed(committed);
      return value;
    } catch (err) {
      if (own !== undefined && own.error === err) throw err;
      throw new TransientError(`firestore ${operation}`, errorText(err), { cause: err });
    }
  }

  /** One attempt's transaction object (layouts override it with their own (key, window) operations). */
  protected newAttempt(tx: Transaction): FirestoreTransaction<Acc> {
    return new FirestoreTransaction(tx, this);
  }

  /** Counts the writes of the attempt that committed, then `afterCommit`. */
  protected committed(attempt: FirestoreTransaction<Acc>): void {
    this.metrics.writes += attempt.writes;
    this.metrics.deletes += attempt.deletes;
    this.afterCommit(attempt);
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

  async acquireLease(
    holder: string,
    nowMs: number,
    leaseMs: number,
    name?: string,
  ): Promise<Lease | null> {
    const ref = this.leaseRefOf(name);
    return this.call('acquire lease', () =>
      this.db.runTransaction(async (tx) => {
        const doc = await this.leaseIn(tx, ref);
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

  /** The lease document `ref` as read in `tx` (`null`: absent). @throws TransientError when malformed */
  private async leaseIn(
    tx: Transaction,
    ref: DocumentReference,
  ): Promise<v.InferOutput<typeof LeaseDoc> | null> {
    const snap = await this.sdk(() => tx.get(ref));
    this.metrics.reads++;
    return snap.exists ? this.parse(`meta/${ref.id}`, LeaseDoc, snap.data()) : null;
  }

  async releaseLease(lease: Lease): Promise<void> {
    const ref = this.leaseRefOf(lease.name);
    await this.call('release lease', () =>
      this.db.runTransaction(async (tx) => {
        const doc = await this.leaseIn(tx, ref);
        if (doc === null || doc.fence !== lease.fence || doc.holder !== lease.holder) return;
        tx.update(ref, { expires_at_ms: 0 });
        this.metrics.writes++;
      }),
    );
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
      // Read whole and sorted here: no query needs an index on the counters' growing fields (firestore-inventory.ts).
      const snap = await this.collection(COLLECTIONS.dropped).get();
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
      return [...byStart.values()].sort((a, b) => a.windowStartMs - b.windowStartMs);
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

  /** Parses the JSON text `field` of the document at `where`. @throws TransientError naming both when malformed */
  parseJson(where: string, field: string, text: string): unknown {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new TransientError(`firestore read ${where}`, `malformed ${field}: ${errorText(err)}`);
    }
  }

  /**
   * Reads the lease named `lease.name` (default `fireWindowsLease`) in `tx`.
   * @throws LeaseLostError unless it is still `lease` (holder and fence)
   */
  async checkLease(tx: Transaction, lease: Lease): Promise<void> {
    const ref = this.leaseRefOf(lease.name);
    const doc = await this.leaseIn(tx, ref);
    if (doc === null || doc.fence !== lease.fence || doc.holder !== lease.holder) {
      throw new LeaseLostError(
        `fireWindows lease ${ref.id} (fence ${lease.fence}) is lost: it is at fence ${String(doc?.fence)} held by ` +
          String(doc?.holder),
      );
    }
  }
}

/** The error of a (key, window) operation on a store that keeps none (the shared documents, or sessions). */
function noWindowState(operation: string): Error {
  return new Error(
    `${operation}: this store keeps no (key, window) state (a layout implements it)`,
  );
}

/**
 * One attempt of a transaction: the shared writes (dropped-late counters, outbox panes) and the lease check. A
 * layout's attempt overrides the (key, window) operations of `WindowTransaction`; here they fail.
 */
export class FirestoreTransaction<Acc extends JsonValue> implements WindowTransaction<Acc> {
  /** Writes queued by this attempt (committed only if the attempt commits), deletes excluded. */
  writes = 0;
  /** Deletes queued by this attempt (Firestore bills them apart from writes). */
  deletes = 0;

  constructor(
    protected readonly tx: Transaction,
    protected readonly store: FirestoreWindowStore<Acc>,
  ) {}

  /** Queues buffered writes before the commit (layouts that write at once have nothing to do). */
  finish(): void {}

  read(_request: WindowReadRequest): Promise<WindowReadResult<Acc>> {
    return Promise.reject(noWindowState('read'));
  }
  groupKeys(_window: IntervalWindow, _group: number): Promise<WindowAddress[]> {
    return Promise.reject(noWindowState('groupKeys'));
  }
  putWindow(_record: StoredWindow): void {
    throw noWindowState('putWindow');
  }
  deleteWindow(_address: WindowAddress, _watermarkMs?: number): void {
    throw noWindowState('deleteWindow');
  }
  putShard(_shard: StoredShard<Acc>): void {
    throw noWindowState('putShard');
  }
  deleteShard(_address: ShardAddress): void {
    throw noWindowState('deleteShard');
  }
  addSeen(_entry: SeenEntry): void {
    throw noWindowState('addSeen');
  }

  checkLease(lease: Lease): Promise<void> {
    return this.store.checkLease(this.tx, lease);
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
