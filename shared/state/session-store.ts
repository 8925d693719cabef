// The session layout's port: one record per key holding all of the key's open session windows and their dedup ids,
// so merging happens in one transaction; an in-memory implementation backs the fast tests.
import type { JsonValue, KeyState } from '../windowing';
import { keyGroupOf } from './ids';
import type { DroppedIncrement, Lease, OutboxPane } from './window-store';
import { LeaseLostError } from './window-store';

/**
 * Everything the store keeps for one key of a session pipeline: the core's `KeyState` (every open session, merged
 * or not, with its pane bookkeeping and contribution, and the key's watermark and processing-time clamps) and, per
 * session (`windowId`), the 16-character dedup ids (`dedupIdOf`) of the events counted in it or dropped from it as
 * `CLOSED_WINDOW`, concatenated. The ids live and die with their session: once it is garbage-collected a redelivery
 * of its events is behind the watermark (its proto-window ends no later than the session) and dropped as late.
 */
export interface StoredSessionKey<Acc extends JsonValue> {
  /** The key's state as the core holds it. */
  readonly state: KeyState<Acc>;
  /** Session `windowId` → concatenated dedup ids of its events. */
  readonly seen: Readonly<Record<string, string>>;
}

/**
 * The timers a record is found by (what fireWindows queries): `eventTimerMs`, the earliest end − 1 of a session
 * awaiting its on-time pane or end − 1 + allowed lateness of any other (due once the watermark is past it), and
 * `processingTimerMs`, the earliest processing-time deadline of a pending pane (due once processing time reaches
 * it), `null` when none. Epoch ms.
 */
export interface SessionTimers {
  readonly eventTimerMs: number | null;
  readonly processingTimerMs: number | null;
}

/** One transaction over session records; reads before writes (Firestore's rule). */
export interface SessionTransaction<Acc extends JsonValue> {
  /** The key's record, or `null` when it has no open session. */
  readSessionKey(key: string): Promise<StoredSessionKey<Acc> | null>;
  /** Reads the lease and throws LeaseLostError unless `lease` is still current. @throws LeaseLostError */
  checkLease(lease: Lease): Promise<void>;
  /** Writes the key's record with its timers. */
  putSessionKey(record: StoredSessionKey<Acc>, timers: SessionTimers): void;
  /** Deletes the key's record (its last session was garbage-collected). */
  deleteSessionKey(key: string): void;
  /** Adds to the dropped-late counter of a window start (as the other layouts do). */
  addDropped(increment: DroppedIncrement): void;
  /** Writes a fired pane to the pipeline's pane outbox. */
  putOutboxPane(pane: OutboxPane): void;
}

/** The session layout's store. Every method throws TransientError when the store is unreachable. */
export interface SessionStore<Acc extends JsonValue> {
  /**
   * Runs `fn` in a serializable transaction, retried on contention (`fn` must have no other side effects). Errors
   * thrown by `fn` propagate unchanged.
   * @throws TransientError when the store fails
   */
  transactSessions<T>(
    operation: string,
    fn: (tx: SessionTransaction<Acc>) => Promise<T>,
  ): Promise<T>;
  /** Key groups the keys are spread over (a key's group: `keyGroupOf(key, keyGroups)`). */
  readonly keyGroups: number;
  /**
   * Keys of the key groups `groups` (`null`: every key) whose event-time timer is before `watermarkMs` or whose
   * processing-time timer is at or before `processingTimeMs` (epoch ms), earliest timers first, at most `limit` of
   * each kind (per 30 groups), without repeats.
   */
  findSessionKeysDue(
    groups: readonly number[] | null,
    watermarkMs: number,
    processingTimeMs: number,
    limit: number,
  ): Promise<string[]>;
  /** The earliest processing-time timer of any key (epoch ms), `null` when none: the timer loop's seam. */
  earliestSessionTimerMs(): Promise<number | null>;
}

interface MemoryRecord<Acc extends JsonValue> {
  readonly record: StoredSessionKey<Acc>;
  readonly timers: SessionTimers;
}

/**
 * An in-memory SessionStore with the Firestore adapter's contract: transactions run one at a time (serializable),
 * writes apply at commit, records are deep-copied through JSON (as a document round trip would). Tests and the
 * differential harness run through it; `outbox` and `dropped` are inspectable.
 */
export class MemorySessionStore<Acc extends JsonValue> implements SessionStore<Acc> {
  readonly records = new Map<string, MemoryRecord<Acc>>();
  readonly outbox = new Map<string, OutboxPane>();
  /** Dropped-late counts by `windowId` and reason, e.g. `"0_10000|EXPIRED_WINDOW"`. */
  readonly dropped = new Map<string, number>();
  /** The current lease (tests set it). */
  lease: Lease | null = null;
  /** Committed transactions. */
  transactions = 0;
  private chain: Promise<unknown> = Promise.resolve();

  /** @param keyGroups key groups the keys are spread over (what a partition's query filters on) */
  constructor(readonly keyGroups = 16) {}

  transactSessions<T>(
    _operation: string,
    fn: (tx: SessionTransaction<Acc>) => Promise<T>,
  ): Promise<T> {
    const run = this.chain.then(() => this.runOnce(fn));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async runOnce<T>(fn: (tx: SessionTransaction<Acc>) => Promise<T>): Promise<T> {
    const writes: (() => void)[] = [];
    const copy = <V>(value: V): V => JSON.parse(JSON.stringify(value)) as V;
    const tx: SessionTransaction<Acc> = {
      readSessionKey: (key) => {
        const found = this.records.get(key);
        return Promise.resolve(found === undefined ? null : copy(found.record));
      },
      checkLease: (lease) => {
        const current = this.lease;
        if (current === null || current.fence !== lease.fence || current.holder !== lease.holder) {
          return Promise.reject(new LeaseLostError(`lease fence ${lease.fence} is lost`));
        }
        return Promise.resolve();
      },
      putSessionKey: (record, timers) => {
        const stored = copy({ record, timers });
        writes.push(() => this.records.set(record.state.key, stored));
      },
      deleteSessionKey: (key) => writes.push(() => this.records.delete(key)),
      addDropped: (increment) =>
        writes.push(() => {
          const id = `${increment.window.startMs}_${increment.window.endMs}|${increment.reason}`;
          this.dropped.set(id, (this.dropped.get(id) ?? 0) + increment.count);
        }),
      putOutboxPane: (pane) => writes.push(() => this.outbox.set(pane.insertId, copy(pane))),
    };
    const value = await fn(tx);
    for (const write of writes) write();
    this.transactions++;
    return value;
  }

  findSessionKeysDue(
    groups: readonly number[] | null,
    watermarkMs: number,
    processingTimeMs: number,
    limit: number,
  ): Promise<string[]> {
    const entries = [...this.records.entries()].filter(
      ([key]) => groups === null || groups.includes(keyGroupOf(key, this.keyGroups)),
    );
    const byEvent = entries
      .filter(([, r]) => r.timers.eventTimerMs !== null && r.timers.eventTimerMs < watermarkMs)
      .sort((a, b) => (a[1].timers.eventTimerMs ?? 0) - (b[1].timers.eventTimerMs ?? 0))
      .slice(0, limit);
    const byClock = entries
      .filter(
        ([, r]) =>
          r.timers.processingTimerMs !== null && r.timers.processingTimerMs <= processingTimeMs,
      )
      .sort((a, b) => (a[1].timers.processingTimerMs ?? 0) - (b[1].timers.processingTimerMs ?? 0))
      .slice(0, limit);
    return Promise.resolve([...new Set([...byEvent, ...byClock].map(([key]) => key))]);
  }

  earliestSessionTimerMs(): Promise<number | null> {
    const timers = [...this.records.values()]
      .map((r) => r.timers.processingTimerMs)
      .filter((t): t is number => t !== null);
    return Promise.resolve(timers.length === 0 ? null : Math.min(...timers));
  }
}
