// The session layout's port: one record per key holding all of the key's open session windows and their dedup ids,
// so merging happens in one transaction. FirestoreSessionStore implements it; tests use an in-memory one.
import type { JsonValue, KeyState } from '../windowing';
import type { DroppedIncrement, Lease, OutboxPane } from './window-store';

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
