// WindowStore on Firestore in the key-groups layout: the keys of a window hashed into key-group documents (one per
// group and shard), each holding its keys' pane bookkeeping, contributions and the dedup ids of the events counted.
import { randomUUID } from 'node:crypto';
import {
  Timestamp,
  type BulkWriter,
  type DocumentReference,
  type DocumentSnapshot,
  type Firestore,
  type Transaction,
} from '@google-cloud/firestore';
import * as v from 'valibot';
import { TransientError, errorText } from '../errors';
import type { IntervalWindow, JsonValue } from '../windowing';
import {
  FirestoreTransaction,
  FirestoreWindowStore,
  type FirestoreWindowStoreOptions,
} from './firestore-window-store';
import {
  DEDUP_ID_LENGTH,
  dedupIdOf,
  dedupIdsIn,
  eventShardOf,
  HEAD_SHARD,
  keyGroupDocId,
  keyGroupOf,
  keyIdPart,
} from './ids';
import type {
  DroppedIncrement,
  OutboxPane,
  SeenEntry,
  ShardAddress,
  StoredShard,
  StoredWindow,
  WindowAddress,
  WindowReadRequest,
  WindowReadResult,
  WindowStore,
  WindowTransaction,
} from './window-store';

/** Collections of the key-groups layout under `{root}/{pipeline}` (beside `droppedLate`, `paneOutbox`, `meta`). */
export const GROUP_COLLECTIONS = {
  /** `g<group>~<start>_<end>~s<shard>`: a key group's state in one window (TTL field `expireAt`). */
  groups: 'keyGroups',
  /** `<group doc id>~<n>`: dedup ids spilled from a full key-group document (TTL field `expireAt`). */
  spills: 'dedupSpills',
  /** Random ids: the panes one transaction fired, until they are in gold. */
  paneBatches: 'paneBatches',
} as const;

/** Dedup ids a key-group document keeps before it spills them to a `dedupSpills` document (16 B each). */
export const DEFAULT_MAX_SEEN_PER_DOCUMENT = 20_000;
/** Panes per `paneBatches` document (a gold row is well under 2 KiB: ≤ 400 KiB per document, Firestore's 1 MiB). */
const PANES_PER_BATCH = 200;

/** Options of the key-groups adapter. */
export interface GroupedWindowStoreOptions<
  Acc extends JsonValue,
> extends FirestoreWindowStoreOptions<Acc> {
  /** Key groups per window (`OFFVIA_WINDOW_KEY_GROUPS`). */
  readonly keyGroups: number;
  /**
   * Shards per key group (`OFFVIA_WINDOW_GROUP_SHARDS`). With 1, a group's bookkeeping and contributions share one
   * document (a bundle reads and writes one document); with more, the bookkeeping has its own document (`~h`),
   * written only when a key's pane state changes, so bundles on different shards do not contend on it.
   */
  readonly shards: number;
  /** Processing-time delays of the early and late firings, ms (`null`: none); they place the processing timer. */
  readonly earlyDelayMs: number | null;
  readonly lateDelayMs: number | null;
  /** How long a key-group document (and its dedup ids) outlives its last write, ms (`OFFVIA_WINDOW_LEDGER_TTL_MS`). */
  readonly dedupTtlMs: number;
  /** Dedup ids per document before spilling (default 20,000, ~320 KiB). */
  readonly maxSeenPerDocument?: number;
  /** Wall clock for TTL stamps, epoch ms (default `Date.now`). */
  readonly now?: () => number;
}

/**
 * Another key-groups store's part of `tx` (a transaction of a key-groups store on the same database): what the
 * returned transaction writes commits with `tx`. Used to apply one bundle to all aggregations of a pipeline at once.
 * @throws Error when `tx` or `store` is not of the key-groups layout
 */
export function joinTransaction<Acc extends JsonValue>(
  tx: WindowTransaction<Acc>,
  store: WindowStore<Acc>,
): WindowTransaction<Acc> {
  if (!(tx instanceof GroupTransaction) || !(store instanceof GroupedFirestoreWindowStore)) {
    throw new Error('a joint transaction needs key-groups stores');
  }
  return (tx as GroupTransaction<Acc>).join(store as GroupedFirestoreWindowStore<Acc>);
}

/** A due key group: one window's group, and the timer that made it due. */
export interface DueGroup {
  readonly window: IntervalWindow;
  readonly group: number;
}

/** The earliest timers of the pipeline's open key groups, epoch ms (`null`: none). */
export interface NextTimers {
  /** Earliest event-time timer (end of window while on-time is pending, else garbage collection): fires once the
   * watermark is past it. */
  readonly eventTimeMs: number | null;
  /** Earliest processing-time timer (a pane's first element + the early/late firing delay): fires at that time. */
  readonly processingTimeMs: number | null;
}

const int = v.pipe(v.number(), v.safeInteger());
const BookkeepingEntry = v.object({
  k: v.string(),
  p: v.picklist(['EARLY', 'LATE', 'CLOSED']),
  n: int,
  ne: int,
  sc: v.pipe(int, v.minValue(1)),
  eow: v.nullable(int),
  gc: int,
  f: v.nullable(int),
  wm: int,
  pt: int,
});
const PartEntry = v.object({ k: v.string(), a: v.string(), e: int, f: v.nullable(int) });
const GroupDoc = v.object({
  window_start_ms: int,
  window_end_ms: int,
  group: int,
  shard: int,
  w: v.record(v.string(), BookkeepingEntry),
  c: v.record(v.string(), PartEntry),
  seen: v.string(),
  dropped: v.optional(v.string(), ''),
  spills: int,
  watermark_floor_ms: v.optional(v.nullable(int), null),
});
const SpillDoc = v.object({ seen: v.string(), dropped: v.optional(v.string(), '') });
const BatchDoc = v.object({ panes_json: v.string(), created_at_ms: int });
const BatchPane = v.object({
  insertId: v.string(),
  row: v.record(v.string(), v.unknown()),
  key: v.string(),
  start: int,
  end: int,
  timing: v.picklist(['EARLY', 'ON_TIME', 'LATE']),
  index: int,
  isLast: v.boolean(),
  createdAtMs: int,
});

type Bookkeeping = v.InferOutput<typeof BookkeepingEntry>;
type Part = v.InferOutput<typeof PartEntry>;

/** One key-group document as an attempt sees and changes it. */
interface GroupImage {
  readonly ref: DocumentReference;
  readonly window: IntervalWindow;
  readonly group: number;
  readonly shard: number;
  readonly existed: boolean;
  readonly w: Map<string, Bookkeeping>;
  readonly c: Map<string, Part>;
  seenText: string;
  /** Dedup ids of the events dropped from every window (also in `seenText`): their outcome, for operators. */
  droppedText: string;
  seenSet: Set<string> | undefined;
  spills: number;
  /** Highest watermark applied to the document's keys, garbage collection included (epoch ms). */
  floorMs: number | null;
  dirty: boolean;
}

/**
 * The key-groups layout (`GROUP_COLLECTIONS` under `{root}/{pipeline}`; the watermark, leases and dropped-late
 * counters are the inherited shared documents). A `keyGroups` document: `w` (head shard only) maps a key id to its
 * pane bookkeeping, `c` maps a key id to this shard's contribution, `seen` concatenates the 16-character dedup ids of
 * the events this shard counted or dropped, `spills` counts its `dedupSpills` documents; the head shard also carries
 * the group's timers `event_timer_ms` / `processing_timer_ms` (fireWindows' queries). Once every key of the group is
 * garbage-collected the document stays as a tombstone (its dedup ids) until its TTL, so a redelivery or replay is
 * still recognised, and an event dropped as late is counted as dropped once.
 */
export class GroupedFirestoreWindowStore<Acc extends JsonValue> extends FirestoreWindowStore<Acc> {
  /** Shards per key group (`OFFVIA_WINDOW_GROUP_SHARDS`). */
  readonly shards: number;
  /** The shard whose document holds the bookkeeping (`w`) and the timers: 0, or `HEAD_SHARD`. */
  readonly headShard: number;
  /** Most dedup ids a document keeps before spilling. */
  readonly maxSeenPerDocument: number;
  private readonly clock: () => number;
  /** Panes of committed batches not yet deleted: insertId → batch document id, and what each batch has left. */
  private readonly batchOf = new Map<string, string>();
  private readonly batchLeft = new Map<string, Set<string>>();
  /** Set while `seedWith` runs: transactions write through this BulkWriter instead of committing. */
  private seeding: SeedWriter | null = null;

  constructor(
    db: Firestore,
    private readonly groupOptions: GroupedWindowStoreOptions<Acc>,
  ) {
    super(db, groupOptions);
    this.shards = groupOptions.shards;
    this.headShard = groupOptions.shards > 1 ? HEAD_SHARD : 0;
    this.maxSeenPerDocument = groupOptions.maxSeenPerDocument ?? DEFAULT_MAX_SEEN_PER_DOCUMENT;
    this.clock = groupOptions.now ?? Date.now;
  }

  /** The key-group document of a window, group and shard. */
  groupRef(window: IntervalWindow, group: number, shard: number): DocumentReference {
    return this.base.collection(GROUP_COLLECTIONS.groups).doc(keyGroupDocId(window, group, shard));
  }

  /** The n-th dedup spill document of a key-group document. */
  spillRef(groupRef: DocumentReference, n: number): DocumentReference {
    return this.base.collection(GROUP_COLLECTIONS.spills).doc(`${groupRef.id}~${n}`);
  }

  /** The group a key's state lives in. */
  groupOf(key: string): number {
    return keyGroupOf(key, this.keyGroups);
  }

  /**
   * Seeding mode (benchmarks): while `run` runs, every `transact` of this store runs its callback once against
   * documents that do not exist yet and queues the resulting writes (the layout's own document builders) on a
   * BulkWriter instead of committing a transaction, so a large state (e.g. 50,000 keys of one window) is written in
   * seconds rather than by one transaction per bundle. Only for a root no one else writes: the root must hold no
   * key-group document when it starts, and each key-group document must be written by one callback (a callback that
   * reads a document an earlier one wrote throws, since it would not see that write).
   * @throws Error when the root already holds key-group documents, on a read of a seeded document, or when a
   * BulkWriter write fails (after all writes settled: the first failure, with their count)
   */
  async seedWith<T>(run: () => Promise<T>): Promise<T> {
    if (this.seeding !== null) throw new Error('seedWith: already seeding this store');
    const existing = await this.base.collection(GROUP_COLLECTIONS.groups).limit(1).get();
    if (!existing.empty) {
      throw new Error(`seedWith: ${this.base.path} already holds key-group documents`);
    }
    const seed = new SeedWriter(this.db.bulkWriter());
    this.seeding = seed;
    let value: T;
    try {
      value = await run();
    } finally {
      this.seeding = null;
      await seed.close();
    }
    seed.throwIfFailed();
    return value;
  }

  override async transact<T>(
    operation: string,
    fn: (tx: WindowTransaction<Acc>) => Promise<T>,
  ): Promise<T> {
    const seed = this.seeding;
    if (seed === null) return super.transact(operation, fn);
    this.metrics.transactions++;
    this.metrics.attempts++;
    const attempt = new GroupTransaction(seed.asTransaction(), this);
    const value = await fn(attempt);
    attempt.finish();
    // One BulkWriter batch per callback: key-group documents run to hundreds of KiB, and the writer's default
    // batch of 20 writes would exceed a request's size limit (its retries then stall the seed for minutes).
    await seed.flush();
    this.committed(attempt);
    return value;
  }

  protected override newAttempt(tx: Transaction): FirestoreTransaction<Acc> {
    return new GroupTransaction(tx, this);
  }

  protected override afterCommit(attempt: FirestoreTransaction<Acc>): void {
    if (!(attempt instanceof GroupTransaction)) return;
    for (const [batchId, ids] of attempt.batches) this.trackBatch(batchId, ids);
    // A joined attempt (another aggregation's part of this transaction) counts in its own store.
    for (const joined of attempt.joined) joined.grouped.committed(joined);
  }

  private trackBatch(batchId: string, insertIds: readonly string[]): void {
    this.batchLeft.set(batchId, new Set(insertIds));
    for (const id of insertIds) this.batchOf.set(id, batchId);
  }

  /** Stamps for TTL: `expireAt` of a document written now. */
  expireAt(): Timestamp {
    return Timestamp.fromMillis(this.clock() + this.groupOptions.dedupTtlMs);
  }

  /** The processing-time delay that applies to a key in `phase` (`null`: no processing-time firing). */
  delayOf(phase: Bookkeeping['p']): number | null {
    if (phase === 'EARLY') return this.groupOptions.earlyDelayMs;
    if (phase === 'LATE') return this.groupOptions.lateDelayMs;
    return null;
  }

  /** Parses a key-group document (or a missing one) into an image. */
  imageOf(
    ref: DocumentReference,
    snap: DocumentSnapshot | undefined,
    window: IntervalWindow,
    group: number,
    shard: number,
  ): GroupImage {
    const existed = snap?.exists === true;
    const doc = existed
      ? this.parse(`${GROUP_COLLECTIONS.groups}/${ref.id}`, GroupDoc, snap.data())
      : undefined;
    return {
      ref,
      window,
      group,
      shard,
      existed,
      w: new Map(Object.entries(doc?.w ?? {})),
      c: new Map(Object.entries(doc?.c ?? {})),
      seenText: doc?.seen ?? '',
      droppedText: doc?.dropped ?? '',
      seenSet: undefined,
      spills: doc?.spills ?? 0,
      floorMs: doc?.watermark_floor_ms ?? null,
      dirty: false,
    };
  }

  /** The dedup ids of a spill document. */
  spillIds(ref: DocumentReference, snap: DocumentSnapshot): string {
    if (!snap.exists) return '';
    return this.parse(`${GROUP_COLLECTIONS.spills}/${ref.id}`, SpillDoc, snap.data()).seen;
  }

  /**
   * What the dedup state says about an event (operators, the demo, the reliability harness): `counted`, `dropped`
   * (too late for all its windows) or `null` (never applied, or its tombstone expired). Reads the shard documents
   * of the key's group in each of its windows (the event's shard first) and their spills, outside any transaction
   * (`windows`: the event's windows).
   * @throws TransientError when Firestore fails
   */
  async eventOutcome(
    eventId: string,
    key: string,
    windows: readonly IntervalWindow[],
  ): Promise<'counted' | 'dropped' | null> {
    const id = dedupIdOf(eventId);
    const has = (text: string) => dedupIdsIn(text).includes(id);
    return this.call('read dedup ids', async () => {
      let outcome: 'counted' | 'dropped' | null = null;
      // The event's shard first (where its home aggregation keeps it), then the others (a guest of a joint bundle
      // keeps it in the shard that bundle wrote).
      const first = eventShardOf(eventId, this.shards);
      const order = [
        first,
        ...Array.from({ length: this.shards }, (_, i) => i).filter((i) => i !== first),
      ];
      for (const [window, shard] of windows.flatMap((w) => order.map((s) => [w, s] as const))) {
        const ref = this.groupRef(window, this.groupOf(key), shard);
        const snap = await ref.get();
        this.metrics.reads++;
        if (!snap.exists) continue;
        const doc = this.parse(`${GROUP_COLLECTIONS.groups}/${ref.id}`, GroupDoc, snap.data());
        const texts = [{ seen: doc.seen, dropped: doc.dropped }];
        for (let n = 0; n < doc.spills; n++) {
          const spill = await this.spillRef(ref, n).get();
          this.metrics.reads++;
          if (spill.exists)
            texts.push(
              this.parse(`${GROUP_COLLECTIONS.spills}/${spill.id}`, SpillDoc, spill.data()),
            );
        }
        if (texts.some((t) => has(t.dropped))) outcome ??= 'dropped';
        else if (texts.some((t) => has(t.seen))) outcome = 'counted';
      }
      return outcome;
    });
  }

  /**
   * Key groups of the given groups whose event-time timer is before `watermarkMs` or whose processing-time timer is
   * at or before `processingTimeMs`, earliest first (at most `limit` of each kind). One query per timer kind over
   * `group in […]` (Firestore allows 30 values in an `in` filter) and the timer: the deploy plan creates the two
   * composite indexes (group, event_timer_ms) and (group, processing_timer_ms). The queries project the three fields
   * they use: a key-group document runs to hundreds of KiB (its keys, contributions and dedup ids), and decoding
   * whole documents here took 1.6 s of the 14 s of client CPU that firing 50,000 keys took (docs/performance.md).
   * @throws TransientError when Firestore fails
   */
  async findGroupsDue(
    groups: readonly number[],
    watermarkMs: number,
    processingTimeMs: number,
    limit: number,
  ): Promise<DueGroup[]> {
    const found = new Map<string, DueGroup>();
    const collection = this.base.collection(GROUP_COLLECTIONS.groups);
    for (let i = 0; i < groups.length; i += 30) {
      const slice = [...groups.slice(i, i + 30)];
      const queries: [string, '<' | '<=', number][] = [
        ['event_timer_ms', '<', watermarkMs],
        ['processing_timer_ms', '<=', processingTimeMs],
      ];
      for (const [field, op, bound] of queries) {
        const snap = await this.call(`query key groups by ${field}`, () =>
          collection
            .where('group', 'in', slice)
            .where(field, op, bound)
            .orderBy(field)
            .limit(limit)
            .select('window_start_ms', 'window_end_ms', 'group')
            .get(),
        );
        this.metrics.reads += Math.max(1, snap.size);
        for (const d of snap.docs) {
          const window = {
            startMs: Number(d.get('window_start_ms')),
            endMs: Number(d.get('window_end_ms')),
          };
          const group = Number(d.get('group'));
          found.set(d.id, { window, group });
        }
      }
    }
    return [...found.values()];
  }

  /**
   * The earliest event-time and processing-time timers of all open key groups: two single-field queries with
   * `limit(1)` (2 document reads) projecting the timer alone, so a timer loop can sleep until the next one is due.
   * @throws TransientError when Firestore fails
   */
  async nextTimers(): Promise<NextTimers> {
    const collection = this.base.collection(GROUP_COLLECTIONS.groups);
    const first = async (field: string): Promise<number | null> => {
      const snap = await this.call(`query earliest ${field}`, () =>
        collection
          .where(field, '>=', Number.MIN_SAFE_INTEGER)
          .orderBy(field)
          .limit(1)
          .select(field)
          .get(),
      );
      this.metrics.reads += 1;
      const value: unknown = snap.docs[0]?.get(field);
      return typeof value === 'number' ? value : null;
    };
    return {
      eventTimeMs: await first('event_timer_ms'),
      processingTimeMs: await first('processing_timer_ms'),
    };
  }

  override async listOutbox(createdAtOrBeforeMs: number, limit: number): Promise<OutboxPane[]> {
    const legacy = await super.listOutbox(createdAtOrBeforeMs, limit);
    const snap = await this.call('list pane batches', () =>
      this.base
        .collection(GROUP_COLLECTIONS.paneBatches)
        .where('created_at_ms', '<=', createdAtOrBeforeMs)
        .orderBy('created_at_ms')
        .limit(Math.max(1, Math.ceil(limit / PANES_PER_BATCH)))
        .get(),
    );
    this.metrics.reads += Math.max(1, snap.size);
    const panes: OutboxPane[] = [...legacy];
    for (const d of snap.docs) {
      const where = `${GROUP_COLLECTIONS.paneBatches}/${d.id}`;
      const doc = this.parse(where, BatchDoc, d.data());
      const list = this.parseJson(where, 'panes_json', doc.panes_json);
      const batch = this.parse(where, v.array(BatchPane), list).map((p): OutboxPane => ({
        insertId: p.insertId,
        row: p.row,
        key: p.key,
        window: { startMs: p.start, endMs: p.end },
        timing: p.timing,
        index: p.index,
        isLast: p.isLast,
        createdAtMs: p.createdAtMs,
      }));
      this.trackBatch(
        d.id,
        batch.map((p) => p.insertId),
      );
      panes.push(...batch);
    }
    return panes;
  }

  /**
   * Deletes what holds these panes: a batch document once all its panes are deleted, and per-pane outbox documents
   * (the per-window layout's) for ids of no known batch.
   */
  override async deleteOutbox(insertIds: readonly string[]): Promise<void> {
    const legacy: string[] = [];
    const emptied: string[] = [];
    for (const id of insertIds) {
      const batchId = this.batchOf.get(id);
      if (batchId === undefined) {
        legacy.push(id);
        continue;
      }
      this.batchOf.delete(id);
      const left = this.batchLeft.get(batchId);
      left?.delete(id);
      if (left !== undefined && left.size === 0) {
        this.batchLeft.delete(batchId);
        emptied.push(batchId);
      }
    }
    await super.deleteOutbox(legacy);
    if (emptied.length === 0) return;
    await this.call('delete pane batches', async () => {
      const batch = this.db.batch();
      for (const id of emptied)
        batch.delete(this.base.collection(GROUP_COLLECTIONS.paneBatches).doc(id));
      await batch.commit();
      this.metrics.deletes += emptied.length;
    });
  }

  /** A new pane-batch document reference (random id: batches spread over the key range). */
  newBatchRef(): DocumentReference {
    return this.base.collection(GROUP_COLLECTIONS.paneBatches).doc(randomUUID());
  }
}

/** BulkWriter batches a seed keeps unanswered at once. */
const SEED_BATCHES_IN_FLIGHT = 4;

/**
 * The write side of a transaction, queued on a BulkWriter (`seedWith`): reads find no document (the seeded root
 * starts empty), and a read of a document this seed already wrote throws rather than return a stale image.
 */
class SeedWriter {
  private readonly written = new Set<string>();
  private readonly failures: unknown[] = [];
  private readonly pending: Promise<void>[] = [];

  constructor(private readonly writer: BulkWriter) {}

  private track(ref: DocumentReference, write: Promise<unknown>): void {
    this.written.add(ref.path);
    this.pending.push(
      write.then(
        () => undefined,
        (err: unknown) => {
          this.failures.push(err);
        },
      ),
    );
  }

  /** A Transaction whose writes go to the BulkWriter (only what the key-groups attempt uses: getAll, set, create, delete). */
  asTransaction(): Transaction {
    const refuse = (name: string) => () => {
      throw new Error(`seedWith: Transaction.${name} is not available while seeding`);
    };
    const tx = {
      getAll: (...refs: DocumentReference[]) => {
        const again = refs.find((r) => this.written.has(r.path));
        if (again !== undefined) {
          throw new Error(
            `seedWith: ${again.path} was written earlier in this seed; write each key-group document in one call`,
          );
        }
        return Promise.resolve([]);
      },
      get: refuse('get'),
      set: (ref: DocumentReference, data: Record<string, unknown>) => {
        this.track(ref, this.writer.set(ref, data));
        return tx;
      },
      create: (ref: DocumentReference, data: Record<string, unknown>) => {
        this.track(ref, this.writer.create(ref, data));
        return tx;
      },
      delete: (ref: DocumentReference) => {
        this.track(ref, this.writer.delete(ref));
        return tx;
      },
      update: refuse('update'),
    };
    return tx as unknown as Transaction;
  }

  /** Batches sent by `flush` and not settled yet. */
  private readonly inFlight = new Set<Promise<void>>();

  /**
   * Sends the writes queued so far as their own batch (outcomes are awaited by `close`); waits while
   * `SEED_BATCHES_IN_FLIGHT` batches are unanswered, so a loaded emulator is not sent every batch at once (it then
   * misses the client's 60 s deadline).
   */
  async flush(): Promise<void> {
    const sent: Promise<void> = this.writer
      .flush()
      .catch((err: unknown) => {
        this.failures.push(err);
      })
      .finally(() => this.inFlight.delete(sent));
    this.inFlight.add(sent);
    this.pending.push(sent);
    while (this.inFlight.size >= SEED_BATCHES_IN_FLIGHT) await Promise.race(this.inFlight);
  }

  /** Flushes and closes the BulkWriter, and waits for every write's outcome. */
  async close(): Promise<void> {
    await this.writer.close();
    await Promise.all(this.pending);
  }

  /** @throws Error with the first failed write, when any failed */
  throwIfFailed(): void {
    if (this.failures.length === 0) return;
    throw new Error(
      `seedWith: ${this.failures.length} BulkWriter writes failed, first: ${errorText(this.failures[0])}`,
      { cause: this.failures[0] },
    );
  }
}

/**
 * One attempt of a transaction in the key-groups layout: documents are read once (cached), the port's record
 * writes change in-memory images, and `finish` writes each changed document once, before the commit.
 */
class GroupTransaction<Acc extends JsonValue> extends FirestoreTransaction<Acc> {
  private readonly images = new Map<string, GroupImage>();
  private readonly spillTexts = new Map<string, string>();
  private readonly panes: OutboxPane[] = [];
  /** Batch documents written by this attempt: id → insertIds (registered with the store once committed). */
  readonly batches = new Map<string, string[]>();
  readonly grouped: GroupedFirestoreWindowStore<Acc>;
  /** Other stores' attempts sharing this transaction (`join`): written by this attempt's `finish`. */
  readonly joined: GroupTransaction<Acc>[] = [];
  /** Dropped-late increments, written at `finish` (a write before a joined attempt's read would be refused). */
  private readonly droppedIncrements: DroppedIncrement[] = [];

  /** @param tagger the store whose `transact` runs the transaction (it tells Firestore's errors from ours) */
  constructor(
    tx: Transaction,
    store: GroupedFirestoreWindowStore<Acc>,
    private readonly tagger: GroupedFirestoreWindowStore<Acc> = store,
  ) {
    super(tx, store);
    this.grouped = store;
  }

  /**
   * `store`'s part of this transaction: its documents are read and written in the same Firestore transaction and
   * committed together with this attempt's (another aggregation of the same pipeline, on the same database).
   */
  join(store: GroupedFirestoreWindowStore<Acc>): GroupTransaction<Acc> {
    const attempt = new GroupTransaction(this.tx, store, this.tagger);
    this.joined.push(attempt);
    return attempt;
  }

  override addDropped(increment: DroppedIncrement): void {
    this.droppedIncrements.push(increment);
  }

  /** Loads the images of these (window, group, shard)s that are not cached yet, in one round trip. */
  private async load(
    wanted: readonly { window: IntervalWindow; group: number; shard: number }[],
  ): Promise<void> {
    const missing = new Map<string, { window: IntervalWindow; group: number; shard: number }>();
    for (const w of wanted) {
      const id = keyGroupDocId(w.window, w.group, w.shard);
      if (!this.images.has(id)) missing.set(id, w);
    }
    if (missing.size === 0) return;
    const list = [...missing.values()];
    const refs = list.map((w) => this.grouped.groupRef(w.window, w.group, w.shard));
    const snaps = await this.tagger.sdk(() => this.tx.getAll(...refs));
    this.grouped.metrics.reads += refs.length;
    list.forEach((w, i) => {
      const ref = refs[i] as DocumentReference;
      this.images.set(
        keyGroupDocId(w.window, w.group, w.shard),
        this.grouped.imageOf(ref, snaps[i], w.window, w.group, w.shard),
      );
    });
  }

  private image(window: IntervalWindow, group: number, shard: number): GroupImage {
    const found = this.images.get(keyGroupDocId(window, group, shard));
    if (found === undefined) {
      throw new Error(
        `key group ${keyGroupDocId(window, group, shard)} written before it was read`,
      );
    }
    return found;
  }

  private seenSet(image: GroupImage): Set<string> {
    if (image.seenSet === undefined) {
      const set = new Set(dedupIdsIn(image.seenText));
      for (let n = 0; n < image.spills; n++) {
        const text = this.spillTexts.get(this.grouped.spillRef(image.ref, n).id) ?? '';
        for (const id of dedupIdsIn(text)) set.add(id);
      }
      image.seenSet = set;
    }
    return image.seenSet;
  }

  override async read(request: WindowReadRequest): Promise<WindowReadResult<Acc>> {
    const windows = request.windows ?? [];
    const shards = request.shards ?? [];
    const seen = request.seen ?? [];
    const g = (key: string) => this.grouped.groupOf(key);
    await this.load([
      ...windows.map((a) => ({ window: a.window, group: g(a.key), shard: this.grouped.headShard })),
      ...shards.map((a) => ({ window: a.window, group: g(a.key), shard: a.shard })),
      ...seen.map((a) => ({ window: a.window, group: g(a.key), shard: a.shard })),
    ]);
    // Spilled dedup ids of probed documents: one more round trip, only for documents that spilled.
    const spillRefs: DocumentReference[] = [];
    for (const probe of seen) {
      const image = this.imageOf(probe, probe.shard);
      if (image.seenSet !== undefined) continue;
      for (let n = 0; n < image.spills; n++) {
        const ref = this.grouped.spillRef(image.ref, n);
        if (!this.spillTexts.has(ref.id) && !spillRefs.some((r) => r.id === ref.id))
          spillRefs.push(ref);
      }
    }
    if (spillRefs.length > 0) {
      const snaps = await this.tagger.sdk(() => this.tx.getAll(...spillRefs));
      this.grouped.metrics.reads += spillRefs.length;
      snaps.forEach((snap, i) => {
        const ref = spillRefs[i] as DocumentReference;
        this.spillTexts.set(ref.id, this.grouped.spillIds(ref, snap));
      });
    }
    return {
      windows: windows.map((a) => {
        const entry = this.imageOf(a).w.get(keyIdPart(a.key));
        return entry === undefined || entry.k !== a.key ? null : this.windowOfEntry(a, entry);
      }),
      shards: shards.map((a) => {
        const part = this.imageOf(a, a.shard).c.get(keyIdPart(a.key));
        if (part === undefined || part.k !== a.key) return null;
        return this.shardOfPart(a, part);
      }),
      floors: windows.map((a) => {
        const head = this.imageOf(a);
        return head.existed ? head.floorMs : null;
      }),
      seen: seen.map((p) => this.seenSet(this.imageOf(p, p.shard)).has(dedupIdOf(p.eventId))),
    };
  }

  override async groupKeys(window: IntervalWindow, group: number): Promise<WindowAddress[]> {
    const head = this.grouped.headShard;
    await this.load([{ window, group, shard: head }]);
    return [...this.image(window, group, head).w.values()].map((e) => ({ key: e.k, window }));
  }

  private windowOfEntry(a: WindowAddress, e: Bookkeeping): StoredWindow {
    return {
      key: a.key,
      window: a.window,
      pane: { phase: e.p, panesEmitted: e.n, nonEarlyPanesEmitted: e.ne },
      shardCount: e.sc,
      endOfWindowTimerMs: e.eow,
      gcTimerMs: e.gc,
      paneFirstElementAtMs: e.f,
      watermarkMs: e.wm,
      processingTimeMs: e.pt,
    };
  }

  private shardOfPart(a: ShardAddress, part: Part): StoredShard<Acc> {
    let accumulator: Acc;
    try {
      accumulator = this.grouped.options.parseAccumulator(JSON.parse(part.a));
    } catch (err) {
      throw new TransientError(
        `firestore read ${GROUP_COLLECTIONS.groups}/${keyGroupDocId(a.window, this.grouped.groupOf(a.key), a.shard)}`,
        `malformed accumulator of ${a.key}: ${errorText(err)}`,
      );
    }
    return {
      key: a.key,
      window: a.window,
      shard: a.shard,
      contribution: {
        accumulator,
        elementsInPane: part.e,
        firstElementInPaneAtMs: part.f,
      },
    };
  }

  /** The image of `address`'s key group on `shard` (default: the head shard, which keeps the bookkeeping). */
  private imageOf(address: WindowAddress, shard = this.grouped.headShard): GroupImage {
    return this.image(address.window, this.grouped.groupOf(address.key), shard);
  }

  override putWindow(record: StoredWindow): void {
    const image = this.imageOf(record);
    image.w.set(keyIdPart(record.key), {
      k: record.key,
      p: record.pane.phase,
      n: record.pane.panesEmitted,
      ne: record.pane.nonEarlyPanesEmitted,
      sc: record.shardCount,
      eow: record.endOfWindowTimerMs,
      gc: record.gcTimerMs,
      f: record.paneFirstElementAtMs,
      wm: record.watermarkMs,
      pt: record.processingTimeMs,
    });
    image.floorMs = Math.max(image.floorMs ?? record.watermarkMs, record.watermarkMs);
    image.dirty = true;
  }

  override deleteWindow(address: WindowAddress, watermarkMs?: number): void {
    const image = this.imageOf(address);
    image.w.delete(keyIdPart(address.key));
    if (watermarkMs !== undefined) {
      image.floorMs = Math.max(image.floorMs ?? watermarkMs, watermarkMs);
    }
    image.dirty = true;
  }

  override putShard(shard: StoredShard<Acc>): void {
    const image = this.imageOf(shard, shard.shard);
    image.c.set(keyIdPart(shard.key), {
      k: shard.key,
      a: JSON.stringify(shard.contribution.accumulator),
      e: shard.contribution.elementsInPane,
      f: shard.contribution.firstElementInPaneAtMs,
    });
    image.dirty = true;
  }

  override deleteShard(address: ShardAddress): void {
    const image = this.imageOf(address, address.shard);
    image.c.delete(keyIdPart(address.key));
    image.dirty = true;
  }

  /** Adds the event's dedup id to the shard document of each of its windows. */
  override addSeen(entry: SeenEntry): void {
    const { windows, shards } = entry;
    if (shards.length !== windows.length) {
      throw new Error(
        `dedup id of ${entry.eventId}: ${windows.length} windows, ${shards.length} shards`,
      );
    }
    const id = dedupIdOf(entry.eventId);
    windows.forEach((window, i) => {
      const image = this.image(window, this.grouped.groupOf(entry.key), shards[i] ?? 0);
      const set = this.seenSet(image);
      if (set.has(id)) return;
      set.add(id);
      image.seenText += id;
      if (entry.outcome === 'dropped') image.droppedText += id;
      image.dirty = true;
    });
  }

  override putOutboxPane(pane: OutboxPane): void {
    this.panes.push(pane);
  }

  /** Writes every changed key-group document once, spills full dedup sets, and the fired panes in batches. */
  override finish(): void {
    for (const increment of this.droppedIncrements) super.addDropped(increment);
    for (const attempt of this.joined) attempt.finish();
    const expireAt = this.grouped.expireAt();
    for (const image of this.images.values()) {
      if (!image.dirty) continue;
      if (image.seenText.length / DEDUP_ID_LENGTH > this.grouped.maxSeenPerDocument) {
        this.tx.create(this.grouped.spillRef(image.ref, image.spills), {
          seen: image.seenText,
          dropped: image.droppedText,
          expireAt,
        });
        this.writes++;
        image.spills++;
        image.seenText = '';
        image.droppedText = '';
      }
      const empty = image.w.size === 0 && image.c.size === 0;
      // A bookkeeping document whose keys are all collected is deleted only when it holds no dedup ids either:
      // with one shard it stays as the tombstone (ids and watermark floor).
      if (empty && image.seenText === '' && image.spills === 0) {
        if (image.existed) {
          this.tx.delete(image.ref);
          this.deletes++;
        }
        continue;
      }
      this.tx.set(image.ref, {
        window_start_ms: image.window.startMs,
        window_end_ms: image.window.endMs,
        group: image.group,
        shard: image.shard,
        w: Object.fromEntries(image.w),
        c: Object.fromEntries(image.c),
        seen: image.seenText,
        dropped: image.droppedText,
        spills: image.spills,
        watermark_floor_ms: image.floorMs,
        ...this.timersOf(image),
        expireAt,
      });
      this.writes++;
    }
    for (let i = 0; i < this.panes.length; i += PANES_PER_BATCH) {
      const chunk = this.panes.slice(i, i + PANES_PER_BATCH);
      const ref = this.grouped.newBatchRef();
      this.tx.create(ref, {
        panes_json: JSON.stringify(
          chunk.map((p) => ({
            insertId: p.insertId,
            row: p.row,
            key: p.key,
            start: p.window.startMs,
            end: p.window.endMs,
            timing: p.timing,
            index: p.index,
            isLast: p.isLast,
            createdAtMs: p.createdAtMs,
          })),
        ),
        pane_count: chunk.length,
        created_at_ms: Math.min(...chunk.map((p) => p.createdAtMs)),
      });
      this.writes++;
      this.batches.set(
        ref.id,
        chunk.map((p) => p.insertId),
      );
    }
  }

  /** The group's timers (shard 0 with keys), `null` otherwise so fireWindows' range queries skip it. */
  private timersOf(image: GroupImage): {
    event_timer_ms: number | null;
    processing_timer_ms: number | null;
  } {
    let event: number | null = null;
    let processing: number | null = null;
    for (const e of image.w.values()) {
      const timer = e.eow ?? e.gc;
      if (event === null || timer < event) event = timer;
      const delay = this.grouped.delayOf(e.p);
      if (e.f !== null && delay !== null) {
        const due = e.f + delay;
        if (processing === null || due < processing) processing = due;
      }
    }
    return { event_timer_ms: event, processing_timer_ms: processing };
  }
}
