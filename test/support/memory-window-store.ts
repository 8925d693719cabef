// An in-memory key-groups WindowStore with the same contract as GroupedFirestoreWindowStore (serializable
// transactions, dedup ids kept in the state of the event's shard, watermark floors, key-group timers, watermark
// compare-and-set, named leases): fast unit and property tests run through it.
import {
  windowId,
  type IntervalWindow,
  type JsonValue,
  type WatermarkState,
} from '../../shared/windowing';
import {
  LeaseLostError,
  type DroppedCounter,
  type DroppedIncrement,
  type Lease,
  type OutboxPane,
  type ShardAddress,
  type StoredShard,
  type StoredWatermark,
  type StoredWindow,
  type WindowAddress,
  type WindowStore,
  type WindowTransaction,
} from '../../shared/state/window-store';
import { newStoreMetrics, type StoreMetrics } from '../../shared/state/firestore-window-store';
import { keyGroupOf } from '../../shared/state/ids';

function windowKey(a: WindowAddress): string {
  return `${a.key}|${windowId(a.window)}`;
}

function shardKey(a: ShardAddress): string {
  return `${windowKey(a)}|${a.shard}`;
}

type Write = () => void;

/** The lease every run of an unpartitioned firing would share (partition leases have their own names). */
const DEFAULT_LEASE = 'fireWindowsLease';

/** Everything the store holds; tests may inspect it. */
export interface MemoryState<Acc extends JsonValue> {
  /** Pane bookkeeping per (key, window) (the key-group document's `w` entries). */
  windows: Map<string, StoredWindow>;
  /** Contributions per (key, window, shard) (the shard documents' `c` entries). */
  shards: Map<string, StoredShard<Acc>>;
  /** Dedup ids per key-group shard document (`g{group}|{window id}|{shard}`), kept after garbage collection. */
  seen: Map<string, Set<string>>;
  /** The watermark floor of each key group's bookkeeping (`g{group}|{window id}`), epoch ms. */
  floors: Map<string, number>;
  dropped: Map<number, DroppedCounter>;
  outbox: Map<string, OutboxPane>;
  watermark: StoredWatermark | null;
  /** Leases by name (`fireWindowsLease~p{n}` for fireWindows' partitions). */
  leases: Map<string, Lease>;
}

/** Options of the in-memory store: key groups and the trigger delays its processing-time timers use (ms). */
export interface MemoryWindowStoreOptions {
  readonly keyGroups?: number;
  readonly earlyDelayMs?: number | null;
  readonly lateDelayMs?: number | null;
}

/**
 * Transactions run one at a time (a promise-chain mutex), which is trivially serializable; writes apply at commit.
 * Like the key-groups store on Firestore, an event's dedup id goes to its shard's document of its key's group in
 * each of its windows (`addSeen`) and is found there by a `seen` probe.
 */
export class MemoryWindowStore<Acc extends JsonValue> implements WindowStore<Acc> {
  readonly keyGroups: number;
  readonly state: MemoryState<Acc> = {
    windows: new Map(),
    shards: new Map(),
    seen: new Map(),
    floors: new Map(),
    dropped: new Map(),
    outbox: new Map(),
    watermark: null,
    leases: new Map(),
  };
  readonly metrics: StoreMetrics = newStoreMetrics();
  private chain: Promise<unknown> = Promise.resolve();
  private version = 0;

  constructor(private readonly options: MemoryWindowStoreOptions = {}) {
    this.keyGroups = options.keyGroups ?? 4;
  }

  private groupWindow(key: string, window: IntervalWindow): string {
    return `g${keyGroupOf(key, this.keyGroups)}|${windowId(window)}`;
  }

  /** Event ids whose dedup id the state keeps (in any window). */
  dedupIds(): Set<string> {
    return new Set([...this.state.seen.values()].flatMap((ids) => [...ids]));
  }

  /** The lease named `name` (default: the unpartitioned one), as stored. */
  lease(name?: string): Lease | undefined {
    return this.state.leases.get(name ?? DEFAULT_LEASE);
  }

  transact<T>(_operation: string, fn: (tx: WindowTransaction<Acc>) => Promise<T>): Promise<T> {
    const run = this.chain.then(() => this.runOnce(fn));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async runOnce<T>(fn: (tx: WindowTransaction<Acc>) => Promise<T>): Promise<T> {
    this.metrics.transactions++;
    this.metrics.attempts++;
    const writes: Write[] = [];
    let wrote = false;
    const s = this.state;
    const raise = (group: string, watermarkMs: number) =>
      writes.push(() =>
        s.floors.set(group, Math.max(s.floors.get(group) ?? watermarkMs, watermarkMs)),
      );
    const tx: WindowTransaction<Acc> = {
      read: (request) => {
        if (wrote) throw new Error('read after write in a transaction');
        const windows = (request.windows ?? []).map((a) =>
          structuredClone(s.windows.get(windowKey(a)) ?? null),
        );
        const shards = (request.shards ?? []).map((a) =>
          structuredClone(s.shards.get(shardKey(a)) ?? null),
        );
        const seen = (request.seen ?? []).map(
          (p) =>
            s.seen.get(`${this.groupWindow(p.key, p.window)}|${p.shard}`)?.has(p.eventId) === true,
        );
        const floors = (request.windows ?? []).map(
          (a) => s.floors.get(this.groupWindow(a.key, a.window)) ?? null,
        );
        this.metrics.reads += windows.length + shards.length;
        return Promise.resolve({ windows, shards, seen, floors });
      },
      groupKeys: (window, group) =>
        Promise.resolve(
          [...s.windows.values()]
            .filter(
              (w) =>
                windowId(w.window) === windowId(window) &&
                keyGroupOf(w.key, this.keyGroups) === group,
            )
            .map((w) => ({ key: w.key, window: { ...w.window } })),
        ),
      checkLease: (lease) => {
        this.metrics.reads++;
        const current = this.lease(lease.name);
        if (
          current === undefined ||
          current.fence !== lease.fence ||
          current.holder !== lease.holder
        ) {
          return Promise.reject(new LeaseLostError(`lease fence ${lease.fence} lost`));
        }
        return Promise.resolve();
      },
      putWindow: (record) => {
        wrote = true;
        const copy = structuredClone(record);
        writes.push(() => s.windows.set(windowKey(copy), copy));
        raise(this.groupWindow(copy.key, copy.window), copy.watermarkMs);
      },
      deleteWindow: (a, watermarkMs) => {
        wrote = true;
        writes.push(() => s.windows.delete(windowKey(a)));
        if (watermarkMs !== undefined) raise(this.groupWindow(a.key, a.window), watermarkMs);
      },
      putShard: (shard) => {
        wrote = true;
        const copy = structuredClone(shard);
        writes.push(() => s.shards.set(shardKey(copy), copy));
      },
      deleteShard: (a) => {
        wrote = true;
        writes.push(() => s.shards.delete(shardKey(a)));
      },
      addSeen: (entry) => {
        wrote = true;
        const { windows, shards } = entry;
        windows.forEach((window, i) => {
          const doc = `${this.groupWindow(entry.key, window)}|${shards[i] ?? 0}`;
          writes.push(() => s.seen.set(doc, (s.seen.get(doc) ?? new Set()).add(entry.eventId)));
        });
      },
      addDropped: (inc: DroppedIncrement) => {
        wrote = true;
        writes.push(() => {
          const c = s.dropped.get(inc.window.startMs);
          s.dropped.set(inc.window.startMs, {
            windowStartMs: inc.window.startMs,
            windowEndMs: inc.window.endMs,
            count: (c?.count ?? 0) + inc.count,
            expiredWindow:
              (c?.expiredWindow ?? 0) + (inc.reason === 'EXPIRED_WINDOW' ? inc.count : 0),
            closedWindow: (c?.closedWindow ?? 0) + (inc.reason === 'CLOSED_WINDOW' ? inc.count : 0),
            lastDroppedAtMs: inc.atMs,
            lastEventId: inc.sampleEventId,
          });
        });
      },
      putOutboxPane: (pane) => {
        wrote = true;
        const copy = structuredClone(pane);
        writes.push(() => s.outbox.set(copy.insertId, copy));
      },
    };
    const value = await fn(tx);
    for (const w of writes) w();
    this.metrics.writes += writes.length;
    return value;
  }

  /** The processing-time deadline of a key's pending pane (epoch ms), `null` when none is pending or timed. */
  private processingDeadline(w: StoredWindow): number | null {
    if (w.paneFirstElementAtMs === null || w.pane.phase === 'CLOSED') return null;
    const delay = w.pane.phase === 'EARLY' ? this.options.earlyDelayMs : this.options.lateDelayMs;
    return delay === null || delay === undefined ? null : w.paneFirstElementAtMs + delay;
  }

  /**
   * Key groups of `groups` with a key whose event-time timer is before `watermarkMs` or whose processing-time
   * deadline is at or before `processingTimeMs`, earliest window first, at most `limit`.
   */
  findGroupsDue(
    groups: readonly number[],
    watermarkMs: number,
    processingTimeMs: number,
    limit: number,
  ): Promise<{ window: IntervalWindow; group: number }[]> {
    const due = new Map<string, { window: IntervalWindow; group: number }>();
    for (const w of this.state.windows.values()) {
      const group = keyGroupOf(w.key, this.keyGroups);
      if (!groups.includes(group)) continue;
      const eventTimer = w.endOfWindowTimerMs ?? w.gcTimerMs;
      const deadline = this.processingDeadline(w);
      if (eventTimer < watermarkMs || (deadline !== null && deadline <= processingTimeMs)) {
        due.set(`${group}|${windowId(w.window)}`, { window: { ...w.window }, group });
      }
    }
    return Promise.resolve(
      [...due.values()]
        .sort((a, b) => a.window.startMs - b.window.startMs || a.group - b.group)
        .slice(0, limit),
    );
  }

  /** The earliest event-time timer and processing-time deadline over every key (epoch ms; `null` when none). */
  nextTimers(): Promise<{ eventTimeMs: number | null; processingTimeMs: number | null }> {
    const min = (values: (number | null)[]) => {
      const known = values.filter((v): v is number => v !== null);
      return known.length === 0 ? null : Math.min(...known);
    };
    const records = [...this.state.windows.values()];
    return Promise.resolve({
      eventTimeMs: min(records.map((w) => w.endOfWindowTimerMs ?? w.gcTimerMs)),
      processingTimeMs: min(records.map((w) => this.processingDeadline(w))),
    });
  }

  readWatermark(): Promise<StoredWatermark | null> {
    this.metrics.reads++;
    return Promise.resolve(structuredClone(this.state.watermark));
  }

  writeWatermark(
    state: WatermarkState,
    updatedAtMs: number,
    expected: StoredWatermark | null,
  ): Promise<StoredWatermark | null> {
    const current = this.state.watermark;
    if ((current?.version ?? null) !== (expected?.version ?? null)) return Promise.resolve(null);
    const next = { state: { ...state }, updatedAtMs, version: String(++this.version) };
    this.state.watermark = next;
    this.metrics.writes++;
    return Promise.resolve(structuredClone(next));
  }

  acquireLease(
    holder: string,
    nowMs: number,
    leaseMs: number,
    name?: string,
  ): Promise<Lease | null> {
    const current = this.lease(name);
    if (current !== undefined && current.expiresAtMs > nowMs && current.holder !== holder) {
      return Promise.resolve(null);
    }
    const lease: Lease = {
      ...(name !== undefined && { name }),
      holder,
      fence: (current?.fence ?? 0) + 1,
      expiresAtMs: nowMs + leaseMs,
    };
    this.state.leases.set(name ?? DEFAULT_LEASE, lease);
    return Promise.resolve({ ...lease });
  }

  releaseLease(lease: Lease): Promise<void> {
    const current = this.lease(lease.name);
    if (current !== undefined && current.fence === lease.fence && current.holder === lease.holder) {
      this.state.leases.set(lease.name ?? DEFAULT_LEASE, { ...current, expiresAtMs: 0 });
    }
    return Promise.resolve();
  }

  listOutbox(createdAtOrBeforeMs: number, limit: number): Promise<OutboxPane[]> {
    return Promise.resolve(
      [...this.state.outbox.values()]
        .filter((p) => p.createdAtMs <= createdAtOrBeforeMs)
        .sort((a, b) => a.createdAtMs - b.createdAtMs)
        .slice(0, limit)
        .map((p) => structuredClone(p)),
    );
  }

  deleteOutbox(insertIds: readonly string[]): Promise<void> {
    for (const id of insertIds) this.state.outbox.delete(id);
    this.metrics.writes += insertIds.length;
    return Promise.resolve();
  }

  readDropped(): Promise<DroppedCounter[]> {
    return Promise.resolve(
      [...this.state.dropped.values()].sort((a, b) => a.windowStartMs - b.windowStartMs),
    );
  }
}
