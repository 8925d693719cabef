// The keyed window store's port: the records it keeps per pipeline and the transactional operations the windowed
// pipeline needs. GroupedFirestoreWindowStore implements it on Firestore; tests use an in-memory implementation.
import {
  windowId,
  type DropReason,
  type IntervalWindow,
  type JsonValue,
  type Pane,
  type PaneBookkeeping,
  type PaneTiming,
  type WatermarkState,
  type WindowContribution,
} from '../windowing';
import { paneInsertId } from './ids';

/** One (key, window) of a pipeline. */
export interface WindowAddress {
  /** The grouping key (for bookings, the route `JFK-LHR-USD`). */
  readonly key: string;
  /** The window, [startMs, endMs) epoch ms UTC. */
  readonly window: IntervalWindow;
}

/** One shard of a (key, window)'s contribution: 0 <= shard < the window's `shardCount`. */
export interface ShardAddress extends WindowAddress {
  readonly shard: number;
}

/** The pane bookkeeping record of one (key, window), with the timers fireWindows queries; not written per element. */
export interface StoredWindow extends WindowAddress {
  /** Trigger phase and pane counters (the core's `PaneBookkeeping`). */
  readonly pane: PaneBookkeeping;
  /** Shard documents this window's contribution is split over (fixed for the window's life). */
  readonly shardCount: number;
  /** Max timestamp (end − 1) while the on-time pane is still to come (phase EARLY), else `null`. */
  readonly endOfWindowTimerMs: number | null;
  /** end − 1 + allowed lateness: once the watermark is past it the window is closed and deleted. */
  readonly gcTimerMs: number;
  /**
   * Processing time of the current pane's first element (epoch ms), `null` while the pane is empty (one write per
   * pane), so an element on any shard can see a processing-time trigger come due.
   */
  readonly paneFirstElementAtMs: number | null;
  /** Highest input watermark applied to this window, epoch ms (keeps pane stamps monotone across instances). */
  readonly watermarkMs: number;
  /** Highest processing time applied to this window, epoch ms. */
  readonly processingTimeMs: number;
}

/** One shard of a window's contribution (merged with `mergeContributions` at firing time). */
export interface StoredShard<Acc extends JsonValue> extends ShardAddress {
  /** Accumulator, pending element count and first pending arrival of this shard's part of the current pane. */
  readonly contribution: WindowContribution<Acc>;
}

/** Where an event's dedup id is looked up: the shard of its key's group in one of its windows (`eventShardOf`). */
export interface SeenProbe extends ShardAddress {
  readonly eventId: string;
}

/** An event applied in a transaction: its dedup id goes to the given shard of its key's group in each window. */
export interface SeenEntry {
  /** The event's stable id (Silver insertId). */
  readonly eventId: string;
  readonly key: string;
  /** Whether it went into at least one window's state, or was dropped from all of them. */
  readonly outcome: 'counted' | 'dropped';
  /** Its windows and, per window, the shard whose document keeps the dedup id. */
  readonly windows: readonly IntervalWindow[];
  readonly shards: readonly number[];
}

/**
 * Elements dropped from one window as too late, added to the counter of the window start, kept per (window start,
 * key, shard) so a burst of late data does not serialise every instance on one document; readers sum them.
 */
export interface DroppedIncrement {
  readonly window: IntervalWindow;
  readonly key: string;
  /** The shard the writing instance uses (spreads concurrent writers). */
  readonly shard: number;
  readonly reason: DropReason;
  readonly count: number;
  /** Processing time of the drop, epoch ms. */
  readonly atMs: number;
  /** One of the dropped events, for operators. */
  readonly sampleEventId: string;
  /** Watermark the drop was decided against, epoch ms. */
  readonly watermarkMs: number;
  /** When the counter document may be deleted by TTL, epoch ms. */
  readonly expireAtMs: number;
}

/** The dropped-late counter of one window start. */
export interface DroppedCounter {
  readonly windowStartMs: number;
  readonly windowEndMs: number;
  readonly count: number;
  /** Drops because end + allowed lateness <= watermark (Beam `droppedDueToLateness`). */
  readonly expiredWindow: number;
  /** Drops because the trigger had finished (Beam `droppedDueToClosedWindow`). */
  readonly closedWindow: number;
  readonly lastDroppedAtMs: number;
  readonly lastEventId: string;
}

/** A fired pane waiting to be written to the gold table (transactional outbox; one document per insertId). */
export interface OutboxPane extends WindowAddress {
  /** The gold insertId: pipeline, window id, key and pane index (`paneInsertId`). */
  readonly insertId: string;
  /** The gold row (plain JSON values); timing, index and final flag are for logs. */
  readonly row: Readonly<Record<string, unknown>>;
  readonly timing: PaneTiming;
  readonly index: number;
  readonly isLast: boolean;
  /** Processing time of the firing, epoch ms. */
  readonly createdAtMs: number;
}

/** The outbox pane of a fired pane: insertId `paneInsertId`, the gold row `paneRow` builds, created at firing time. */
export function outboxPaneOf<Out>(
  pipeline: string,
  paneRow: (pane: Pane<Out>, insertId: string) => Record<string, unknown>,
  key: string,
  pane: Pane<Out>,
): OutboxPane {
  const insertId = paneInsertId(pipeline, key, pane.window, pane.index);
  return {
    key,
    window: pane.window,
    insertId,
    row: paneRow(pane, insertId),
    timing: pane.timing,
    index: pane.index,
    isLast: pane.isLast,
    createdAtMs: pane.firedAtProcessingTimeMs,
  };
}

/**
 * The dropped-late counter increments of one key's bundle: one per (window, reason), counting the bundle's elements
 * `drops` names (event id → the windows it was dropped from), with the first such event as the sample. `shard`
 * spreads concurrent writers; times epoch ms, `ttlMs` the counter's lifetime.
 */
export function droppedIncrementsOf(
  key: string,
  shard: number,
  elements: readonly { readonly eventId: string }[],
  drops: ReadonlyMap<
    string,
    readonly { readonly window: IntervalWindow; readonly reason: DropReason }[]
  >,
  watermarkMs: number,
  processingTimeMs: number,
  ttlMs: number,
): DroppedIncrement[] {
  const byWindow = new Map<string, DroppedIncrement>();
  for (const e of elements) {
    for (const d of drops.get(e.eventId) ?? []) {
      const id = `${windowId(d.window)}|${d.reason}`;
      const current = byWindow.get(id);
      byWindow.set(id, {
        window: d.window,
        key,
        shard,
        reason: d.reason,
        count: (current?.count ?? 0) + 1,
        atMs: processingTimeMs,
        sampleEventId: current?.sampleEventId ?? e.eventId,
        watermarkMs,
        expireAtMs: processingTimeMs + ttlMs,
      });
    }
  }
  return [...byWindow.values()];
}

/** The pipeline's watermark record as read, with the version a compare-and-set must match. */
export interface StoredWatermark {
  readonly state: WatermarkState;
  /** Processing time of the last write, epoch ms (spaces writes, see `WatermarkTracker`). */
  readonly updatedAtMs: number;
  /** Opaque version of the document (Firestore update time). */
  readonly version: string;
}

/** A held fireWindows lease. `fence` grows with every acquisition: the fencing token writes are checked against. */
export interface Lease {
  /** Lease document under `meta/` when not the pipeline's `fireWindowsLease` (fireWindows' partitions). */
  readonly name?: string;
  readonly holder: string;
  readonly fence: number;
  readonly expiresAtMs: number;
}

/** Thrown inside a transaction when the lease it writes under has been taken over (fence moved on). */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

/** What one transaction reads in one round trip (`WindowTransaction.read`). */
export interface WindowReadRequest {
  windows?: readonly WindowAddress[];
  shards?: readonly ShardAddress[];
  /** Is the event's dedup id in the probed shard document? */
  seen?: readonly SeenProbe[];
}

/** The answer to a `WindowReadRequest`, in request order (`null` for a missing document). */
export interface WindowReadResult<Acc extends JsonValue> {
  windows: (StoredWindow | null)[];
  shards: (StoredShard<Acc> | null)[];
  /** One answer per `seen` probe. */
  seen: boolean[];
  /**
   * Per requested window: the highest watermark any committed transaction applied to the key group's bookkeeping,
   * garbage collection included (epoch ms), `null` when it does not exist. A lower bound of the pipeline watermark
   * that closed any key of the group.
   */
  floors: (number | null)[];
}

/** Reads and writes of one transaction: all reads before the first write (Firestore's rule). */
export interface WindowTransaction<Acc extends JsonValue> {
  read(request: WindowReadRequest): Promise<WindowReadResult<Acc>>;
  /** The (key, window)s kept in one key group of `window` (reads the group's bookkeeping). */
  groupKeys(window: IntervalWindow, group: number): Promise<WindowAddress[]>;
  /**
   * Reads the lease document and throws LeaseLostError unless `lease` (holder and fence) is still current.
   * @throws LeaseLostError
   */
  checkLease(lease: Lease): Promise<void>;
  /** Creates or replaces a bookkeeping record (`putShard`: a shard's contribution). */
  putWindow(record: StoredWindow): void;
  /** Deletes a bookkeeping record (garbage collection) closed at watermark `watermarkMs` (epoch ms; the floor). */
  deleteWindow(address: WindowAddress, watermarkMs?: number): void;
  putShard(shard: StoredShard<Acc>): void;
  deleteShard(address: ShardAddress): void;
  /** Keeps the event's dedup id (a later `seen` probe finds it). */
  addSeen(entry: SeenEntry): void;
  /** Adds to the dropped-late counter of the increment's window start (a blind increment, no read). */
  addDropped(increment: DroppedIncrement): void;
  /** Writes a fired pane to the outbox (document id = its insertId, so a repeat overwrites it). */
  putOutboxPane(pane: OutboxPane): void;
}

/** The keyed window store of one pipeline. Every method throws TransientError when the store is unreachable. */
export interface WindowStore<Acc extends JsonValue> {
  /** Key groups per window (`keyGroupOf(key, keyGroups)` places a key's state). */
  readonly keyGroups: number;
  /**
   * Runs `fn` in a serializable transaction, retried on contention (so `fn` must have no side effects besides
   * the transaction's), and resolves with its value once committed. Errors thrown by `fn` propagate unchanged.
   * @throws TransientError when the store fails or contention outlasts the retries; LeaseLostError from checkLease
   */
  transact<T>(operation: string, fn: (tx: WindowTransaction<Acc>) => Promise<T>): Promise<T>;
  /** The watermark record, or `null` before the first write. A strongly consistent read. */
  readWatermark(): Promise<StoredWatermark | null>;
  /**
   * Writes `state` if the record is still at `expected` (`null`: still absent). Returns the new record, or `null`
   * when another writer got there first.
   */
  writeWatermark(
    state: WatermarkState,
    updatedAtMs: number,
    expected: StoredWatermark | null,
  ): Promise<StoredWatermark | null>;
  /**
   * Takes the fireWindows lease `name` under `meta/` (default `fireWindowsLease`; partitions `fireWindowsLease~p<n>`)
   * if it is free or expired at `nowMs`; `null` when someone else holds it.
   */
  acquireLease(
    holder: string,
    nowMs: number,
    leaseMs: number,
    name?: string,
  ): Promise<Lease | null>;
  /** Gives the lease up if still held with this fence (a lost lease is left alone). */
  releaseLease(lease: Lease): Promise<void>;
  /** Outbox panes created at or before `createdAtOrBeforeMs` (oldest first, at most `limit`). */
  listOutbox(createdAtOrBeforeMs: number, limit: number): Promise<OutboxPane[]>;
  /** Deletes outbox panes once they are in the gold table. */
  deleteOutbox(insertIds: readonly string[]): Promise<void>;
  /** The dropped-late counters, by window start. */
  readDropped(): Promise<DroppedCounter[]>;
}
