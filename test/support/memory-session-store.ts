// An in-memory SessionStore with the Firestore adapter's contract, for the unit tests and the differential harness.
import type { JsonValue } from '../../shared/windowing';
import { keyGroupOf } from '../../shared/state/ids';
import type {
  SessionStore,
  SessionTimers,
  SessionTransaction,
  StoredSessionKey,
} from '../../shared/state/session-store';
import { LeaseLostError, type Lease, type OutboxPane } from '../../shared/state/window-store';

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
