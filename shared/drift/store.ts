// The drift state's port: retry store, pending changes per (table, window), per-table sweep lease, update audit.
import { createHash } from 'node:crypto';
import type { BqField, ProposedFields, RejectedField, SchemaWindow } from '../schema';
import type { DriftFieldError } from './field-errors';

/**
 * A row waiting in the retry store for its target table to gain columns (bad-data design: kept with the time it
 * was first received). One per (target table, insertId): a redelivered event finds its row and keeps the first
 * `processedTimestampMs`, so its retry budget is not reset.
 */
export interface RetryRow {
  /** Document id: `retryRowId(insertId)`. */
  readonly id: string;
  /** `project.dataset.table` the row is meant for (from configuration). */
  readonly targetTable: string;
  /** The row's insertId in the target table (Silver: the `event_id`). */
  readonly insertId: string;
  readonly sourceMessageId: string;
  /** When the row was first received: ms since the epoch, UTC. Start of its retry budget. */
  readonly processedTimestampMs: number;
  /** The row as the ingest path would write it without extra fields (Silver columns + `event_id`), JSON text. */
  readonly rowJson: string;
  /** The event's extra top-level fields, JSON text (values exactly as `JSON.parse` read them). */
  readonly extraFieldsJson: string;
  readonly windowId: string;
  /** Why the row cannot be written, as of the last attempt (at most `MAX_STORED_ERRORS`). */
  readonly errors: readonly DriftFieldError[];
  /** Number of errors, including those not stored. */
  readonly errorCount: number;
  /** `retryCount(processedTimestampMs, lastAttemptMs, windowMinutes)` at the last attempt; 0 before any. */
  readonly retryCount: number;
  /** The last attempt's error text (`errorsText`). */
  readonly lastError: string;
  /** When the sweep last tried the row, ms since the epoch (UTC); `null` before the first sweep. */
  readonly lastAttemptMs: number | null;
}

/** Most errors stored on a row document (a 500-field event must not fill Firestore's 1 MiB document). */
export const MAX_STORED_ERRORS = 100;

/** The pending change for one (target table, schema window): the merged proposals of its rows. */
export interface PendingChange {
  readonly windowId: string;
  /** Window start and end, ms since the epoch (UTC). */
  readonly windowStartMs: number;
  readonly windowEndMs: number;
  /** `pending`: not swept yet; `applying`: an update was started and not finished (crash, lost lease). */
  readonly status: 'pending' | 'applying';
  readonly proposed: ProposedFields;
  /** Canonical text of `proposed`; an update is begun only if it is unchanged since the plan was made. */
  readonly fingerprint: string;
}

/** A sweep's lease on one target table. Every write under it checks that `fence` is still the table's fence. */
export interface Lease {
  /** `project.dataset.table`. */
  readonly tableKey: string;
  /** Who holds it: one id per sweep invocation. */
  readonly holder: string;
  /** Fencing token: incremented on every acquisition, so a sweep whose lease was taken over can write nothing. */
  readonly fence: number;
  /** When the lease lapses, ms since the epoch (UTC), by the lease clock. */
  readonly expiresMs: number;
  /** When the table was last updated by a sweep (ms, UTC), for the metadata-update rate; `null` if never. */
  readonly lastUpdateMs: number | null;
}

/** Raised by a fenced write when the lease was lost (expired and taken, or released): the sweep stops the table. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

/** One proposal merge: `proposed` for (`tableKey`, `window`). */
export interface ProposalMerge {
  readonly tableKey: string;
  readonly window: SchemaWindow;
  /** The schema window length in minutes, to find the next window when `window` was already swept. */
  readonly windowMinutes: number;
  readonly proposed: ProposedFields;
  /** The most distinct names a change holds (`maxProposedFieldsPerWindow`). */
  readonly maxFields: number;
  /** Now, ms since the epoch (UTC), by the writer's clock (the change's created/updated times). */
  readonly nowMs: number;
}

/** What a proposal merge did. */
export interface MergeResult {
  /** The window the proposal went to: the requested one, or a later one if that was already swept. */
  readonly windowId: string;
  /** Proposed names the change holds after the merge; a name missing here hit `maxProposedFieldsPerWindow`. */
  readonly accepted: ReadonlySet<string>;
}

/** One table update a sweep is about to make (the audit record's content). */
export interface PlannedUpdate {
  /** Deterministic id from the windows it covers; the audit document id. */
  readonly updateId: string;
  /** The windows it applies, with the fingerprints the plan was made from. */
  readonly changes: readonly { readonly windowId: string; readonly fingerprint: string }[];
  readonly addColumns: readonly BqField[];
  /** The DDL statements that make it. */
  readonly statements: readonly string[];
  /** Proposed fields that are already columns. */
  readonly unchanged: readonly string[];
  /** Proposed fields refused, with reasons. */
  readonly rejected: readonly RejectedField[];
}

/** An audit record of a table update (`updates` subcollection). */
export interface UpdateRecord {
  readonly updateId: string;
  readonly targetTable: string;
  readonly windowIds: readonly string[];
  readonly status: 'started' | 'applied' | 'failed';
  /** Times the update was begun (> 1 after a failure or a crash mid-update). */
  readonly attempts: number;
  readonly fence: number;
  readonly statements: readonly string[];
  readonly addColumns: readonly string[];
  /** Columns whose catalog entry had to be patched after the DDL (local emulator only). */
  readonly catalogPatched: readonly string[];
  readonly startedMs: number;
  readonly finishedMs: number | null;
  readonly error: string | null;
}

/** A change to a waiting row after an attempt. */
export interface RowUpdate {
  readonly id: string;
  readonly errors: readonly DriftFieldError[];
  readonly retryCount: number;
  readonly lastError: string;
  readonly lastAttemptMs: number;
}

/**
 * The drift state. Implementations throw `TransientError` when the store cannot be reached, and fenced writes
 * (those taking a `Lease`) throw `LeaseLostError` when the lease's fence is no longer the table's.
 */
export interface DriftStore {
  /**
   * Merges `proposed` into the pending change of (table, `window`) atomically; if that window was already swept,
   * into the next one. Holds at most `maxFields` distinct names (new names in code-unit order are admitted until
   * the cap; names already held always merge).
   */
  mergeProposal(merge: ProposalMerge): Promise<MergeResult>;
  /** Stores a waiting row unless one with its id exists (redelivery): `created` or `exists`. */
  putRow(tableKey: string, row: RetryRow): Promise<'created' | 'exists'>;
  /** Takes the table's lease if it is free or lapsed at `nowMs` (lease clock); `null` when another holds it. */
  acquireLease(
    tableKey: string,
    holder: string,
    nowMs: number,
    leaseMs: number,
  ): Promise<Lease | null>;
  /** Extends a held lease to `nowMs + leaseMs`. @throws LeaseLostError */
  renewLease(lease: Lease, nowMs: number, leaseMs: number): Promise<Lease>;
  /** Frees a held lease (keeps the fence). @throws LeaseLostError */
  releaseLease(lease: Lease): Promise<void>;
  /** Changes in status `pending` or `applying`, any window. */
  pendingChanges(tableKey: string): Promise<PendingChange[]>;
  /**
   * Closes changes without a table update: `applied` (nothing to add) or `proposed` (propose mode), storing the
   * plan. `stale` when a change moved on or its proposals grew since the plan. @throws LeaseLostError
   */
  recordPlan(
    lease: Lease,
    update: PlannedUpdate,
    status: 'applied' | 'proposed',
    nowMs: number,
  ): Promise<'ok' | 'stale'>;
  /** Marks the changes `applying` and writes the audit record `started`; `stale` as above. @throws LeaseLostError */
  beginUpdate(lease: Lease, update: PlannedUpdate, nowMs: number): Promise<'started' | 'stale'>;
  /**
   * Ends a begun update: `applied` (changes closed, table's last update time set) or failed (changes back to
   * `pending` with the error). @throws LeaseLostError
   */
  finishUpdate(
    lease: Lease,
    update: PlannedUpdate,
    outcome: { ok: true; catalogPatched: readonly string[] } | { ok: false; error: string },
    nowMs: number,
  ): Promise<void>;
  /** Up to `limit` waiting rows, oldest `processedTimestampMs` first; `malformed` counts unreadable documents. */
  waitingRows(
    tableKey: string,
    limit: number,
  ): Promise<{ rows: RetryRow[]; malformed: { id: string; problem: string }[] }>;
  /** Deletes rows that left the store and updates those still waiting. @throws LeaseLostError */
  settleRows(
    lease: Lease,
    deletes: readonly string[],
    updates: readonly RowUpdate[],
  ): Promise<void>;
  /** The audit records of a table's updates, oldest first. */
  updates(tableKey: string): Promise<UpdateRecord[]>;
}

/** Document id of a waiting row: 40 hex characters of SHA-256 over its insertId (any text, `/` included). */
export function retryRowId(insertId: string): string {
  return createHash('sha256').update(insertId, 'utf8').digest('hex').slice(0, 40);
}

/** Deterministic id of an update covering `windowIds`: `u-` + 24 hex characters of SHA-256 over the sorted ids. */
export function updateIdOf(windowIds: readonly string[]): string {
  return `u-${createHash('sha256')
    .update([...windowIds].sort().join('\n'), 'utf8')
    .digest('hex')
    .slice(0, 24)}`;
}
