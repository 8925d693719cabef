// DriftStore on Firestore: one document per target table (lease), with `changes`, `rows` and `updates` below it.
import { FieldValue, type Firestore, type Transaction } from '@google-cloud/firestore';
import * as v from 'valibot';
import { noteTransactionRetry } from '../attempt-observations';
import { TransientError, errorText } from '../errors';
import {
  loadProposedFields,
  mergeFieldSets,
  mergeFieldSetsCapped,
  schemaWindowOf,
  storeProposedFields,
  type ProposedFields,
  type SchemaWindow,
} from '../schema';
import type { DriftFieldError } from './field-errors';
import {
  LeaseLostError,
  MAX_STORED_ERRORS,
  type DriftStore,
  type Lease,
  type MergeResult,
  type ProposalMerge,
  type PendingChange,
  type PlannedUpdate,
  type RetryRow,
  type RowUpdate,
  type UpdateRecord,
} from './store';

/** gRPC status ALREADY_EXISTS, as the Firestore client reports a `create` of an existing document. */
const ALREADY_EXISTS = 6;
/** Writes per transaction: Firestore's limit is 500; the lease read and headroom make 400. */
export const MAX_WRITES_PER_TRANSACTION = 400;
/** Later changes read per query when a proposal's window was already swept. */
const MAX_LATER_WINDOWS = 50;

const ErrorSchema = v.object({
  field: v.nullable(v.string()),
  code: v.string(),
  reason: v.string(),
});

const RowDocSchema = v.object({
  target_table: v.string(),
  insert_id: v.string(),
  source_message_id: v.string(),
  processed_timestamp: v.pipe(v.number(), v.safeInteger()),
  row_json: v.string(),
  extra_fields_json: v.string(),
  window_id: v.string(),
  errors: v.array(ErrorSchema),
  error_count: v.number(),
  retry_count: v.number(),
  last_error: v.string(),
  last_attempt_ms: v.nullable(v.number()),
});

const ChangeDocSchema = v.object({
  window_id: v.string(),
  window_start_ms: v.number(),
  window_end_ms: v.number(),
  status: v.string(),
  proposed: v.unknown(),
});

const UpdateDocSchema = v.object({
  update_id: v.string(),
  target_table: v.string(),
  window_ids: v.array(v.string()),
  status: v.picklist(['started', 'applied', 'failed']),
  attempts: v.number(),
  fence: v.number(),
  statements: v.array(v.string()),
  add_columns: v.array(v.string()),
  catalog_patched: v.optional(v.array(v.string()), []),
  started_ms: v.number(),
  finished_ms: v.optional(v.nullable(v.number()), null),
  error: v.optional(v.nullable(v.string()), null),
});

/** Canonical text of a proposed field set (sorted storage form). */
export function fingerprintOf(proposed: ProposedFields): string {
  return JSON.stringify(storeProposedFields(proposed));
}

/** The subcollections under each table document of the drift store's root collection. */
export const DRIFT_COLLECTIONS = { changes: 'changes', rows: 'rows', updates: 'updates' } as const;

/**
 * Firestore layout, under the configured root collection (default `offviaSchemaDrift`):
 * - `{root}/{table}`: `target_table`, lease (`lease_holder`, `lease_fence`, `lease_expires_ms`), `last_update_ms`;
 * - `{root}/{table}/changes/{windowId}`: the pending change of a schema window (`proposed` as a list, `status`
 *   `pending` → `applying` → `applied` | `proposed`, the plan once swept);
 * - `{root}/{table}/rows/{retryRowId(insertId)}`: waiting rows (`processed_timestamp` ms, `row_json`,
 *   `extra_fields_json`, `insert_id`, `source_message_id`, `errors`, `retry_count`, …);
 * - `{root}/{table}/updates/{updateId}`: one audit record per table update.
 * `{table}` is `project.dataset.table`. Every query is on one field of one subcollection, so no composite index
 * is needed. All writes under a lease run in transactions that first re-read the table document's fence.
 */
export class FirestoreDriftStore implements DriftStore {
  constructor(
    private readonly db: Firestore,
    private readonly root: string,
  ) {}

  private tableRef(tableKey: string) {
    return this.db.collection(this.root).doc(tableKey);
  }

  private changeRef(tableKey: string, windowId: string) {
    return this.tableRef(tableKey).collection(DRIFT_COLLECTIONS.changes).doc(windowId);
  }

  private rowRef(tableKey: string, id: string) {
    return this.tableRef(tableKey).collection(DRIFT_COLLECTIONS.rows).doc(id);
  }

  private updateRef(tableKey: string, updateId: string) {
    return this.tableRef(tableKey).collection(DRIFT_COLLECTIONS.updates).doc(updateId);
  }

  /**
   * Runs a transaction; Firestore failures become TransientError, LeaseLostError passes through. A callback run again
   * (the client retries after an aborted commit) is noted for the delivery's deadline, which then names contention.
   */
  private async transaction<T>(operation: string, fn: (tx: Transaction) => Promise<T>): Promise<T> {
    let attempts = 0;
    let failed: { error: unknown } | undefined;
    try {
      return await this.db.runTransaction(async (tx) => {
        attempts++;
        if (attempts > 1) {
          const after = failed === undefined ? undefined : errorText(failed.error);
          noteTransactionRetry(`firestore ${operation}`, after);
        }
        failed = undefined;
        try {
          return await fn(tx);
        } catch (err) {
          failed = { error: err };
          throw err;
        }
      });
    } catch (err) {
      if (err instanceof LeaseLostError || err instanceof TransientError) throw err;
      throw new TransientError(`firestore ${operation}`, errorText(err), { cause: err });
    }
  }

  private async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw new TransientError(`firestore ${operation}`, errorText(err), { cause: err });
    }
  }

  /** Reads the table document in `tx` and throws LeaseLostError unless `lease` is still its lease. */
  private async checkFence(tx: Transaction, lease: Lease): Promise<void> {
    const data = (await tx.get(this.tableRef(lease.tableKey))).data();
    if (data?.lease_fence !== lease.fence || data?.lease_holder !== lease.holder) {
      throw new LeaseLostError(
        `lease on ${lease.tableKey} (fence ${lease.fence}) is lost: the table's fence is ` +
          `${String(data?.lease_fence)} held by ${String(data?.lease_holder)}`,
      );
    }
  }

  async mergeProposal(merge: ProposalMerge): Promise<MergeResult> {
    const { tableKey, window, windowMinutes, proposed, maxFields, nowMs } = merge;
    // Most proposals repeat what the change already holds (every event of a burst proposes the same fields);
    // a plain read answers them without a transaction, so a burst does not contend on one document.
    const current = await this.call('read change', () => this.changeRef(tableKey, window.id).get());
    const held = current.data();
    if (held !== undefined && held.status === 'pending') {
      const loaded = loadProposedFields(held.proposed);
      if (
        loaded.ok &&
        [...proposed.keys()].every((name) => loaded.value.has(name)) &&
        fingerprintOf(mergeFieldSets(loaded.value, proposed)) === fingerprintOf(loaded.value)
      ) {
        return { windowId: window.id, accepted: new Set(loaded.value.keys()) };
      }
    }
    return this.transaction('merge proposal', async (tx) => {
      const target = await this.openWindow(tx, tableKey, window, windowMinutes);
      const ref = this.changeRef(tableKey, target.id);
      const data = (await tx.get(ref)).data();
      let existing: ProposedFields = new Map();
      if (data !== undefined) {
        const loaded = loadProposedFields(data.proposed);
        if (!loaded.ok) {
          throw new TransientError(
            'firestore merge proposal',
            `change ${tableKey}/${target.id} has a malformed proposal: ${loaded.message}`,
          );
        }
        existing = loaded.value;
      }
      const merged = mergeFieldSetsCapped(existing, proposed, maxFields);
      tx.set(ref, {
        target_table: tableKey,
        window_id: target.id,
        window_start_ms: target.startMs,
        window_end_ms: target.endMs,
        status: 'pending',
        proposed: storeProposedFields(merged),
        proposed_count: merged.size,
        created_ms: typeof data?.created_ms === 'number' ? data.created_ms : nowMs,
        updated_ms: nowMs,
      });
      return { windowId: target.id, accepted: new Set(merged.keys()) };
    });
  }

  /**
   * In `tx`: `window` if its change is still pending (or absent), else the first later window of the same
   * length whose change is. A proposal never joins a swept change, which would leave its field out of every update.
   */
  private async openWindow(
    tx: Transaction,
    tableKey: string,
    window: SchemaWindow,
    windowMinutes: number,
  ): Promise<SchemaWindow> {
    const first = (await tx.get(this.changeRef(tableKey, window.id))).data();
    if (first === undefined || first.status === 'pending') return window;
    const suffix = window.id.slice(window.id.lastIndexOf('_'));
    let candidate = schemaWindowOf(window.endMs, windowMinutes);
    for (;;) {
      const later = await tx.get(
        this.tableRef(tableKey)
          .collection(DRIFT_COLLECTIONS.changes)
          .where('window_start_ms', '>=', candidate.startMs)
          .orderBy('window_start_ms')
          .limit(MAX_LATER_WINDOWS),
      );
      const swept = new Set(
        later.docs
          .filter((d) => d.id.endsWith(suffix) && d.get('status') !== 'pending')
          .map((d) => d.id),
      );
      while (swept.has(candidate.id)) candidate = schemaWindowOf(candidate.endMs, windowMinutes);
      const last = later.docs.at(-1)?.get('window_start_ms') as unknown;
      // A full page may end before the candidate: read the next page; otherwise the candidate is open.
      if (later.size < MAX_LATER_WINDOWS || typeof last !== 'number' || candidate.startMs <= last) {
        return candidate;
      }
    }
  }

  async putRow(tableKey: string, row: RetryRow): Promise<'created' | 'exists'> {
    try {
      await this.rowRef(tableKey, row.id).create({
        target_table: row.targetTable,
        insert_id: row.insertId,
        source_message_id: row.sourceMessageId,
        processed_timestamp: row.processedTimestampMs,
        row_json: row.rowJson,
        extra_fields_json: row.extraFieldsJson,
        window_id: row.windowId,
        errors: row.errors.slice(0, MAX_STORED_ERRORS).map(plainError),
        error_count: row.errorCount,
        retry_count: row.retryCount,
        last_error: row.lastError,
        last_attempt_ms: row.lastAttemptMs,
      });
      return 'created';
    } catch (err) {
      if ((err as { code?: unknown }).code === ALREADY_EXISTS) return 'exists';
      throw new TransientError('firestore put row', errorText(err), { cause: err });
    }
  }

  async acquireLease(
    tableKey: string,
    holder: string,
    nowMs: number,
    leaseMs: number,
  ): Promise<Lease | null> {
    return this.transaction('acquire lease', async (tx) => {
      const ref = this.tableRef(tableKey);
      const data = (await tx.get(ref)).data();
      const heldByOther =
        typeof data?.lease_holder === 'string' &&
        data.lease_holder !== holder &&
        typeof data.lease_expires_ms === 'number' &&
        data.lease_expires_ms > nowMs;
      if (heldByOther) return null;
      const fence = (typeof data?.lease_fence === 'number' ? data.lease_fence : 0) + 1;
      const expiresMs = nowMs + leaseMs;
      tx.set(
        ref,
        {
          target_table: tableKey,
          lease_holder: holder,
          lease_fence: fence,
          lease_expires_ms: expiresMs,
        },
        { merge: true },
      );
      const lastUpdateMs = typeof data?.last_update_ms === 'number' ? data.last_update_ms : null;
      return { tableKey, holder, fence, expiresMs, lastUpdateMs };
    });
  }

  async renewLease(lease: Lease, nowMs: number, leaseMs: number): Promise<Lease> {
    return this.transaction('renew lease', async (tx) => {
      await this.checkFence(tx, lease);
      const expiresMs = nowMs + leaseMs;
      tx.update(this.tableRef(lease.tableKey), { lease_expires_ms: expiresMs });
      return { ...lease, expiresMs };
    });
  }

  async releaseLease(lease: Lease): Promise<void> {
    await this.transaction('release lease', async (tx) => {
      await this.checkFence(tx, lease);
      tx.update(this.tableRef(lease.tableKey), { lease_holder: null, lease_expires_ms: 0 });
    });
  }

  async pendingChanges(tableKey: string): Promise<PendingChange[]> {
    const snap = await this.call('pending changes', () =>
      this.tableRef(tableKey)
        .collection(DRIFT_COLLECTIONS.changes)
        .where('status', 'in', ['pending', 'applying'])
        .get(),
    );
    const out: PendingChange[] = [];
    for (const doc of snap.docs) {
      const parsed = v.safeParse(ChangeDocSchema, doc.data());
      const proposed = parsed.success
        ? loadProposedFields(parsed.output.proposed)
        : { ok: false as const, message: v.summarize(parsed.issues) };
      if (!parsed.success || !proposed.ok) {
        throw new TransientError(
          'firestore pending changes',
          `change ${tableKey}/${doc.id} is malformed: ${proposed.ok ? '' : proposed.message}`,
        );
      }
      const d = parsed.output;
      out.push({
        windowId: d.window_id,
        windowStartMs: d.window_start_ms,
        windowEndMs: d.window_end_ms,
        status: d.status === 'applying' ? 'applying' : 'pending',
        proposed: proposed.value,
        fingerprint: fingerprintOf(proposed.value),
      });
    }
    return out.sort((a, b) => a.windowStartMs - b.windowStartMs);
  }

  /** In `tx`: whether every change of `update` is still pending/applying with the planned proposals. */
  private async changesUnchanged(
    tx: Transaction,
    tableKey: string,
    update: PlannedUpdate,
  ): Promise<boolean> {
    if (update.changes.length === 0) return true;
    const snaps = await tx.getAll(
      ...update.changes.map((c) => this.changeRef(tableKey, c.windowId)),
    );
    return snaps.every((snap, i) => {
      const data = snap.data();
      if (data === undefined || (data.status !== 'pending' && data.status !== 'applying'))
        return false;
      const loaded = loadProposedFields(data.proposed);
      return loaded.ok && fingerprintOf(loaded.value) === update.changes[i]?.fingerprint;
    });
  }

  /**
   * Inside `tx`: checks the lease's fence and that the update's changes are as planned, then sets `fields` and the
   * sweep fence on each. Resolves false (nothing written) when a change moved on since the plan.
   * @throws LeaseLostError when another sweep holds the table
   */
  private async markChanges(
    tx: Transaction,
    lease: Lease,
    update: PlannedUpdate,
    fields: Record<string, unknown>,
  ): Promise<boolean> {
    await this.checkFence(tx, lease);
    if (!(await this.changesUnchanged(tx, lease.tableKey, update))) return false;
    for (const change of update.changes) {
      tx.update(this.changeRef(lease.tableKey, change.windowId), {
        ...fields,
        sweep_fence: lease.fence,
      });
    }
    return true;
  }

  async recordPlan(
    lease: Lease,
    update: PlannedUpdate,
    status: 'applied' | 'proposed',
    nowMs: number,
  ): Promise<'ok' | 'stale'> {
    return this.transaction('record plan', async (tx) => {
      const fields = { status, plan: planDoc(update), swept_ms: nowMs };
      return (await this.markChanges(tx, lease, update, fields)) ? 'ok' : 'stale';
    });
  }

  async beginUpdate(
    lease: Lease,
    update: PlannedUpdate,
    nowMs: number,
  ): Promise<'started' | 'stale'> {
    return this.transaction('begin update', async (tx) => {
      const fields = { status: 'applying', update_id: update.updateId };
      if (!(await this.markChanges(tx, lease, update, fields))) return 'stale';
      tx.set(
        this.updateRef(lease.tableKey, update.updateId),
        {
          update_id: update.updateId,
          target_table: lease.tableKey,
          window_ids: update.changes.map((c) => c.windowId),
          status: 'started',
          attempts: FieldValue.increment(1),
          fence: lease.fence,
          holder: lease.holder,
          statements: [...update.statements],
          add_columns: update.addColumns.map((c) => c.name),
          add_column_types: update.addColumns.map((c) => c.type),
          started_ms: nowMs,
          finished_ms: null,
          error: null,
        },
        { merge: true },
      );
      return 'started';
    });
  }

  async finishUpdate(
    lease: Lease,
    update: PlannedUpdate,
    outcome: { ok: true; catalogPatched: readonly string[] } | { ok: false; error: string },
    nowMs: number,
  ): Promise<void> {
    await this.transaction('finish update', async (tx) => {
      await this.checkFence(tx, lease);
      for (const change of update.changes) {
        tx.update(
          this.changeRef(lease.tableKey, change.windowId),
          outcome.ok
            ? { status: 'applied', plan: planDoc(update), swept_ms: nowMs, last_error: null }
            : { status: 'pending', last_error: outcome.error },
        );
      }
      tx.update(
        this.updateRef(lease.tableKey, update.updateId),
        outcome.ok
          ? { status: 'applied', finished_ms: nowMs, catalog_patched: [...outcome.catalogPatched] }
          : { status: 'failed', finished_ms: nowMs, error: outcome.error },
      );
      if (outcome.ok) tx.update(this.tableRef(lease.tableKey), { last_update_ms: nowMs });
    });
  }

  async waitingRows(
    tableKey: string,
    limit: number,
  ): Promise<{ rows: RetryRow[]; malformed: { id: string; problem: string }[] }> {
    const snap = await this.call('waiting rows', () =>
      this.tableRef(tableKey)
        .collection(DRIFT_COLLECTIONS.rows)
        .orderBy('processed_timestamp')
        .limit(limit)
        .get(),
    );
    const rows: RetryRow[] = [];
    const malformed: { id: string; problem: string }[] = [];
    for (const doc of snap.docs) {
      const parsed = v.safeParse(RowDocSchema, doc.data());
      if (!parsed.success) {
        malformed.push({ id: doc.id, problem: v.summarize(parsed.issues) });
        continue;
      }
      const d = parsed.output;
      rows.push({
        id: doc.id,
        targetTable: d.target_table,
        insertId: d.insert_id,
        sourceMessageId: d.source_message_id,
        processedTimestampMs: d.processed_timestamp,
        rowJson: d.row_json,
        extraFieldsJson: d.extra_fields_json,
        windowId: d.window_id,
        errors: d.errors as DriftFieldError[],
        errorCount: d.error_count,
        retryCount: d.retry_count,
        lastError: d.last_error,
        lastAttemptMs: d.last_attempt_ms,
      });
    }
    return { rows, malformed };
  }

  async settleRows(
    lease: Lease,
    deletes: readonly string[],
    updates: readonly RowUpdate[],
  ): Promise<void> {
    const writes: ((tx: Transaction) => void)[] = [
      ...deletes.map((id) => (tx: Transaction) => {
        tx.delete(this.rowRef(lease.tableKey, id));
      }),
      ...updates.map((u) => (tx: Transaction) => {
        tx.update(this.rowRef(lease.tableKey, u.id), {
          errors: u.errors.slice(0, MAX_STORED_ERRORS).map(plainError),
          error_count: u.errors.length,
          retry_count: u.retryCount,
          last_error: u.lastError,
          last_attempt_ms: u.lastAttemptMs,
        });
      }),
    ];
    for (let i = 0; i < writes.length; i += MAX_WRITES_PER_TRANSACTION) {
      const chunk = writes.slice(i, i + MAX_WRITES_PER_TRANSACTION);
      await this.transaction('settle rows', async (tx) => {
        await this.checkFence(tx, lease);
        for (const write of chunk) write(tx);
      });
    }
  }

  async updates(tableKey: string): Promise<UpdateRecord[]> {
    const snap = await this.call('updates', () =>
      this.tableRef(tableKey).collection(DRIFT_COLLECTIONS.updates).orderBy('started_ms').get(),
    );
    return snap.docs.map((doc) => {
      const parsed = v.safeParse(UpdateDocSchema, doc.data());
      if (!parsed.success) {
        throw new TransientError(
          'firestore updates',
          `update ${tableKey}/${doc.id} is malformed: ${v.summarize(parsed.issues)}`,
        );
      }
      const d = parsed.output;
      return {
        updateId: d.update_id,
        targetTable: d.target_table,
        windowIds: d.window_ids,
        status: d.status,
        attempts: d.attempts,
        fence: d.fence,
        statements: d.statements,
        addColumns: d.add_columns,
        catalogPatched: d.catalog_patched,
        startedMs: d.started_ms,
        finishedMs: d.finished_ms,
        error: d.error,
      };
    });
  }
}

/** An error as a plain Firestore map. */
function plainError(e: DriftFieldError): { field: string | null; code: string; reason: string } {
  return { field: e.field, code: e.code, reason: e.reason };
}

/** The plan as stored on a swept change (rejections capped like row errors). */
function planDoc(update: PlannedUpdate): Record<string, unknown> {
  return {
    update_id: update.updateId,
    add_columns: update.addColumns.map((c) => ({ name: c.name, type: c.type })),
    unchanged: [...update.unchanged],
    rejected: update.rejected
      .slice(0, MAX_STORED_ERRORS)
      .map((r) => ({ field: r.field, code: r.code, reason: r.reason })),
    rejected_count: update.rejected.length,
  };
}
