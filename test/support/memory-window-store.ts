// An in-memory WindowStore with the same contract as FirestoreWindowStore (serializable transactions, ledger
// create-if-absent, watermark compare-and-set, lease): fast property tests run through it.
import { windowId, type JsonValue, type WatermarkState } from '../../shared/windowing';
import {
  LeaseLostError,
  type DroppedCounter,
  type DroppedIncrement,
  type Lease,
  type LedgerEntry,
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
} from '../../shared/state/window-store';
import { newStoreMetrics, type StoreMetrics } from '../../shared/state/firestore-window-store';

function windowKey(a: WindowAddress): string {
  return `${a.key}|${windowId(a.window)}`;
}

function shardKey(a: ShardAddress): string {
  return `${windowKey(a)}|${a.shard}`;
}

type Write = () => void;

/** Everything the store holds; tests may inspect it. */
export interface MemoryState<Acc extends JsonValue> {
  windows: Map<string, StoredWindow>;
  shards: Map<string, StoredShard<Acc>>;
  ledger: Map<string, LedgerEntry>;
  dropped: Map<number, DroppedCounter>;
  outbox: Map<string, OutboxPane>;
  watermark: StoredWatermark | null;
  lease: Lease | null;
}

/**
 * Transactions run one at a time (a promise-chain mutex), which is trivially serializable; writes apply at commit,
 * and a commit creating an existing ledger entry applies nothing and reports `ledger_conflict`, as Firestore does.
 */
export class MemoryWindowStore<Acc extends JsonValue> implements WindowStore<Acc> {
  readonly state: MemoryState<Acc> = {
    windows: new Map(),
    shards: new Map(),
    ledger: new Map(),
    dropped: new Map(),
    outbox: new Map(),
    watermark: null,
    lease: null,
  };
  readonly metrics: StoreMetrics = newStoreMetrics();
  private chain: Promise<unknown> = Promise.resolve();
  private version = 0;

  transact<T>(
    _operation: string,
    fn: (tx: WindowTransaction<Acc>) => Promise<T>,
  ): Promise<TransactionResult<T>> {
    const run = this.chain.then(() => this.runOnce(fn));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async runOnce<T>(
    fn: (tx: WindowTransaction<Acc>) => Promise<T>,
  ): Promise<TransactionResult<T>> {
    this.metrics.transactions++;
    this.metrics.attempts++;
    const writes: Write[] = [];
    const creates: string[] = [];
    let wrote = false;
    const s = this.state;
    const tx: WindowTransaction<Acc> = {
      read: (request) => {
        if (wrote) throw new Error('read after write in a transaction');
        const windows = (request.windows ?? []).map((a) =>
          structuredClone(s.windows.get(windowKey(a)) ?? null),
        );
        const shards = (request.shards ?? []).map((a) =>
          structuredClone(s.shards.get(shardKey(a)) ?? null),
        );
        const ledger = (request.ledger ?? []).map((id) => s.ledger.has(id));
        this.metrics.reads += windows.length + shards.length + ledger.length;
        return Promise.resolve({ windows, shards, ledger });
      },
      checkLease: (lease) => {
        this.metrics.reads++;
        const current = s.lease;
        if (current === null || current.fence !== lease.fence || current.holder !== lease.holder) {
          return Promise.reject(new LeaseLostError(`lease fence ${lease.fence} lost`));
        }
        return Promise.resolve();
      },
      putWindow: (record) => {
        wrote = true;
        const copy = structuredClone(record);
        writes.push(() => s.windows.set(windowKey(copy), copy));
      },
      deleteWindow: (a) => {
        wrote = true;
        writes.push(() => s.windows.delete(windowKey(a)));
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
      createLedgerEntry: (entry) => {
        wrote = true;
        creates.push(entry.eventId);
        const copy = structuredClone(entry);
        writes.push(() => s.ledger.set(copy.eventId, copy));
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
    if (creates.some((id) => s.ledger.has(id))) {
      this.metrics.ledgerConflicts++;
      return { kind: 'ledger_conflict', attempts: 1 };
    }
    for (const w of writes) w();
    this.metrics.writes += writes.length;
    return { kind: 'committed', value, attempts: 1 };
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

  acquireLease(holder: string, nowMs: number, leaseMs: number): Promise<Lease | null> {
    const current = this.state.lease;
    if (current !== null && current.expiresAtMs > nowMs && current.holder !== holder) {
      return Promise.resolve(null);
    }
    this.state.lease = { holder, fence: (current?.fence ?? 0) + 1, expiresAtMs: nowMs + leaseMs };
    return Promise.resolve({ ...this.state.lease });
  }

  releaseLease(lease: Lease): Promise<void> {
    const current = this.state.lease;
    if (current !== null && current.fence === lease.fence && current.holder === lease.holder) {
      this.state.lease = { ...current, expiresAtMs: 0 };
    }
    return Promise.resolve();
  }

  findWindowsDue(timer: WindowTimer, beforeMs: number, limit: number): Promise<WindowAddress[]> {
    const due = [...this.state.windows.values()]
      .map((w) => ({ w, at: timer === 'endOfWindow' ? w.endOfWindowTimerMs : w.gcTimerMs }))
      .filter((x): x is { w: StoredWindow; at: number } => x.at !== null && x.at < beforeMs)
      .sort((a, b) => a.at - b.at)
      .slice(0, limit)
      .map(({ w }) => ({ key: w.key, window: { ...w.window } }));
    return Promise.resolve(due);
  }

  findPendingSince(atOrBeforeMs: number, limit: number): Promise<WindowAddress[]> {
    const found = new Map<string, WindowAddress>();
    const shards = [...this.state.shards.values()]
      .filter((s) => {
        const first = s.contribution.firstElementInPaneAtMs;
        return first !== null && first <= atOrBeforeMs;
      })
      .slice(0, limit);
    for (const s of shards) found.set(windowKey(s), { key: s.key, window: { ...s.window } });
    return Promise.resolve([...found.values()]);
  }

  earliestPendingSinceMs(): Promise<number | null> {
    let earliest: number | null = null;
    for (const s of this.state.shards.values()) {
      const first = s.contribution.firstElementInPaneAtMs;
      if (first !== null && (earliest === null || first < earliest)) earliest = first;
    }
    return Promise.resolve(earliest);
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
