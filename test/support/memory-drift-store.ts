// An in-memory DriftStore with the Firestore store's semantics (fences, window hops, caps), for unit tests.
import {
  LeaseLostError,
  fingerprintOf,
  type DriftStore,
  type Lease,
  type MergeResult,
  type ProposalMerge,
  type PendingChange,
  type PlannedUpdate,
  type RetryRow,
  type RowUpdate,
  type UpdateRecord,
} from '../../shared/drift';
import {
  mergeFieldSetsCapped,
  schemaWindowOf,
  type FieldProposal,
  type ProposedFields,
  type SchemaWindow,
} from '../../shared/schema';

interface ChangeState {
  window: SchemaWindow;
  status: 'pending' | 'applying' | 'applied' | 'proposed';
  proposed: ProposedFields;
  plan?: PlannedUpdate;
  lastError?: string;
}

interface TableState {
  holder: string | null;
  fence: number;
  expiresMs: number;
  lastUpdateMs: number | null;
  changes: Map<string, ChangeState>;
  rows: Map<string, RetryRow>;
  updates: Map<string, UpdateRecord>;
}

/** Counts of calls, for tests that check how much I/O a path does. */
export interface MemoryStoreCalls {
  mergeProposal: number;
  putRow: number;
  settleRows: number;
}

export class MemoryDriftStore implements DriftStore {
  readonly tables = new Map<string, TableState>();
  readonly calls: MemoryStoreCalls = { mergeProposal: 0, putRow: 0, settleRows: 0 };

  table(key: string): TableState {
    let t = this.tables.get(key);
    if (t === undefined) {
      t = {
        holder: null,
        fence: 0,
        expiresMs: 0,
        lastUpdateMs: null,
        changes: new Map(),
        rows: new Map(),
        updates: new Map(),
      };
      this.tables.set(key, t);
    }
    return t;
  }

  /** Runs `fn` as an async store call: its throw becomes a rejection. */
  private run<T>(fn: () => T): Promise<T> {
    try {
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  private check(lease: Lease): TableState {
    const t = this.table(lease.tableKey);
    if (t.fence !== lease.fence || t.holder !== lease.holder) {
      throw new LeaseLostError(`lease on ${lease.tableKey} (fence ${lease.fence}) is lost`);
    }
    return t;
  }

  private unchanged(t: TableState, update: PlannedUpdate): boolean {
    return update.changes.every((c) => {
      const state = t.changes.get(c.windowId);
      return (
        state !== undefined &&
        (state.status === 'pending' || state.status === 'applying') &&
        fingerprintOf(state.proposed) === c.fingerprint
      );
    });
  }

  mergeProposal(merge: ProposalMerge): Promise<MergeResult> {
    const { tableKey, window, windowMinutes, proposed, maxFields } = merge;
    this.calls.mergeProposal++;
    return this.run(() => {
      const t = this.table(tableKey);
      let target = window;
      let state = t.changes.get(target.id);
      while (state !== undefined && state.status !== 'pending') {
        target = schemaWindowOf(target.endMs, windowMinutes);
        state = t.changes.get(target.id);
      }
      const existing = state?.proposed ?? new Map<string, FieldProposal>();
      const merged = mergeFieldSetsCapped(existing, proposed, maxFields);
      t.changes.set(target.id, { window: target, status: 'pending', proposed: merged });
      return { windowId: target.id, accepted: new Set(merged.keys()) };
    });
  }

  putRow(tableKey: string, row: RetryRow): Promise<'created' | 'exists'> {
    this.calls.putRow++;
    return this.run(() => {
      const t = this.table(tableKey);
      if (t.rows.has(row.id)) return 'exists';
      t.rows.set(row.id, row);
      return 'created';
    });
  }

  acquireLease(
    tableKey: string,
    holder: string,
    nowMs: number,
    leaseMs: number,
  ): Promise<Lease | null> {
    return this.run(() => {
      const t = this.table(tableKey);
      if (t.holder !== null && t.holder !== holder && t.expiresMs > nowMs) return null;
      t.fence++;
      t.holder = holder;
      t.expiresMs = nowMs + leaseMs;
      return {
        tableKey,
        holder,
        fence: t.fence,
        expiresMs: t.expiresMs,
        lastUpdateMs: t.lastUpdateMs,
      };
    });
  }

  renewLease(lease: Lease, nowMs: number, leaseMs: number): Promise<Lease> {
    return this.run(() => {
      const t = this.check(lease);
      t.expiresMs = nowMs + leaseMs;
      return { ...lease, expiresMs: t.expiresMs };
    });
  }

  releaseLease(lease: Lease): Promise<void> {
    return this.run(() => {
      const t = this.check(lease);
      t.holder = null;
      t.expiresMs = 0;
    });
  }

  pendingChanges(tableKey: string): Promise<PendingChange[]> {
    return this.run(() => {
      const out: PendingChange[] = [];
      for (const [id, c] of this.table(tableKey).changes) {
        if (c.status !== 'pending' && c.status !== 'applying') continue;
        out.push({
          windowId: id,
          windowStartMs: c.window.startMs,
          windowEndMs: c.window.endMs,
          status: c.status,
          proposed: c.proposed,
          fingerprint: fingerprintOf(c.proposed),
        });
      }
      return out.sort((a, b) => a.windowStartMs - b.windowStartMs);
    });
  }

  recordPlan(
    lease: Lease,
    update: PlannedUpdate,
    status: 'applied' | 'proposed',
  ): Promise<'ok' | 'stale'> {
    return this.run(() => {
      const t = this.check(lease);
      if (!this.unchanged(t, update)) return 'stale';
      for (const c of update.changes) {
        const state = t.changes.get(c.windowId);
        if (state) Object.assign(state, { status, plan: update });
      }
      return 'ok';
    });
  }

  beginUpdate(lease: Lease, update: PlannedUpdate, nowMs: number): Promise<'started' | 'stale'> {
    return this.run(() => {
      const t = this.check(lease);
      if (!this.unchanged(t, update)) return 'stale';
      for (const c of update.changes) {
        const state = t.changes.get(c.windowId);
        if (state) state.status = 'applying';
      }
      const before = t.updates.get(update.updateId);
      t.updates.set(update.updateId, {
        updateId: update.updateId,
        targetTable: lease.tableKey,
        windowIds: update.changes.map((c) => c.windowId),
        status: 'started',
        attempts: (before?.attempts ?? 0) + 1,
        fence: lease.fence,
        statements: update.statements,
        addColumns: update.addColumns.map((c) => c.name),
        catalogPatched: [],
        startedMs: nowMs,
        finishedMs: null,
        error: null,
      });
      return 'started';
    });
  }

  finishUpdate(
    lease: Lease,
    update: PlannedUpdate,
    outcome: { ok: true; catalogPatched: readonly string[] } | { ok: false; error: string },
    nowMs: number,
  ): Promise<void> {
    return this.run(() => {
      const t = this.check(lease);
      for (const c of update.changes) {
        const state = t.changes.get(c.windowId);
        if (!state) continue;
        if (outcome.ok) Object.assign(state, { status: 'applied', plan: update });
        else Object.assign(state, { status: 'pending', lastError: outcome.error });
      }
      const record = t.updates.get(update.updateId);
      if (record) {
        t.updates.set(update.updateId, {
          ...record,
          status: outcome.ok ? 'applied' : 'failed',
          finishedMs: nowMs,
          catalogPatched: outcome.ok ? outcome.catalogPatched : [],
          error: outcome.ok ? null : outcome.error,
        });
      }
      if (outcome.ok) t.lastUpdateMs = nowMs;
    });
  }

  waitingRows(
    tableKey: string,
    limit: number,
  ): Promise<{ rows: RetryRow[]; malformed: { id: string; problem: string }[] }> {
    return this.run(() => ({
      rows: [...this.table(tableKey).rows.values()]
        .sort((a, b) => a.processedTimestampMs - b.processedTimestampMs)
        .slice(0, limit),
      malformed: [],
    }));
  }

  settleRows(
    lease: Lease,
    deletes: readonly string[],
    updates: readonly RowUpdate[],
  ): Promise<void> {
    this.calls.settleRows++;
    return this.run(() => {
      const t = this.check(lease);
      for (const id of deletes) t.rows.delete(id);
      for (const u of updates) {
        const row = t.rows.get(u.id);
        if (row === undefined) continue;
        t.rows.set(u.id, {
          ...row,
          errors: u.errors,
          errorCount: u.errors.length,
          retryCount: u.retryCount,
          lastError: u.lastError,
          lastAttemptMs: u.lastAttemptMs,
        });
      }
    });
  }

  updates(tableKey: string): Promise<UpdateRecord[]> {
    return this.run(() =>
      [...this.table(tableKey).updates.values()].sort((a, b) => a.startedMs - b.startedMs),
    );
  }
}
