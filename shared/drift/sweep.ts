// schemaSweep's logic: per target table, apply the closed windows' change once, then retry the waiting rows.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleepMs } from 'node:timers/promises';
import { parse as losslessParse } from 'lossless-json';
import type { DdlStyle, SchemaDriftConfig } from '../config/schema-drift-config';
import { tableName, type TableRef } from '../config/env';
import { isPlainObject } from '../contract/json-payload';
import { errorText } from '../errors';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import {
  isPastBudget,
  isWindowClosed,
  mergeAllFieldSets,
  planSchemaChange,
  retryCount,
  schemaWindowOf,
  supportOf,
  type ProposalSupport,
  type ProposedFields,
  type BqField,
  type RejectedField,
  type ResolvedConflict,
  type SchemaChangePlan,
  type TableSchema,
} from '../schema';
import {
  PartialInsertError,
  type InsertRow,
  type RowOutcome,
  type RowWriter,
} from '../sinks/row-writer';
import { badDataRowOf } from './bad-data';
import { DDL_PACING_BUDGET_MS, updateDelayMs } from './ddl-pacer';
import {
  classifyExtraFields,
  errorsText,
  isPermanentError,
  withPlanRejections,
  type DriftFieldError,
} from './field-errors';
import { DRIFT_PROTECTED_NAMES } from './protected-names';
import { assignColumns } from './row-json';
import {
  LeaseLostError,
  updateIdOf,
  type DriftStore,
  type Lease,
  type PendingChange,
  type PlannedUpdate,
  type RetryRow,
  type RowUpdate,
} from './store';
import { DdlError, type TableAdmin } from './table-admin';

/** Rows per insertAll call and per settle step (BigQuery recommends ≤ 500 rows a request). */
export const SWEEP_BATCH_ROWS = 400;
/** Re-plans when a change grew between planning and beginning the update, at most this often. */
const MAX_PLAN_ATTEMPTS = 3;
/** insertAll calls one batch of waiting rows may take in one sweep: the first, then re-sends (`insertWithResends`). */
export const MAX_INSERT_ATTEMPTS = 3;

/** What the sweep needs; tests pass emulator-backed or stubbed adapters and their own clocks. */
export interface SweepDeps {
  readonly config: SchemaDriftConfig;
  readonly store: DriftStore;
  readonly admin: TableAdmin;
  readonly writer: RowWriter;
  /** `OFFVIA_BAD_DATA_TABLE`. */
  readonly badDataTable: TableRef;
  /** Project of the clients, for `project.dataset.table` names; `undefined` to leave it out. */
  readonly projectId: string | undefined;
  readonly logger: Logger;
  /** Processing-time clock, ms since the epoch (UTC): windows, retry counts and budget, bad-data `insert_time`. */
  readonly now: () => number;
  /**
   * Real clock, ms since the epoch (UTC): leases, the metadata-update rate and audit times (apart from `now`, so
   * a sweep with an advanced clock and a scheduled sweep still exclude each other).
   */
  readonly leaseNow: () => number;
  /** A unique id per sweep invocation (lease holder); default a random UUID. */
  readonly newHolderId?: () => string;
  /** Waits `ms` by the lease clock (DDL pacing); default a real timer. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** The table update a sweep made. */
export interface AppliedUpdateSummary {
  readonly updateId: string;
  readonly columns: readonly string[];
  readonly statements: readonly string[];
  /** Columns whose catalog entry was patched after the DDL (local emulator only). */
  readonly catalogPatched: readonly string[];
}

/** One target table's sweep. */
export interface TableSweepResult {
  /** `project.dataset.table`. */
  readonly table: string;
  /** `busy`: another sweep holds the lease; `failed`: see `error` (what finished before is kept). */
  readonly status: 'swept' | 'busy' | 'failed';
  /** The closed windows whose change this sweep handled. */
  readonly windows: readonly string[];
  readonly update: AppliedUpdateSummary | null;
  /** Columns planned but only recorded (propose mode), or deferred (update rate). */
  readonly notApplied: readonly string[];
  /** Why `notApplied` is not applied: `propose_mode` or `update_rate`; null when everything planned was applied. */
  readonly notAppliedReason: 'propose_mode' | 'update_rate' | null;
  /** Proposed fields refused by the plan (first 20), with reasons. */
  readonly rejected: readonly { field: string; code: string; reason: string }[];
  readonly rejectedCount: number;
  /** Case and type contests the plan decided by waiting-row support (first 20). */
  readonly resolved: readonly ResolvedConflict[];
  /** Waiting rows: inserted into the table, still waiting, written to bad data, unreadable documents. */
  readonly rows: {
    readonly inserted: number;
    readonly waiting: number;
    readonly badData: number;
    readonly malformed: number;
  };
  readonly error: string | null;
}

/** A sweep over every configured target table. */
export interface SweepResult {
  /** The processing time the sweep ran at, ms since the epoch (UTC). */
  readonly nowMs: number;
  readonly mode: SchemaDriftConfig['mode'];
  /** False when any table failed (the HTTP function answers 500, so Cloud Scheduler retries and alerts). */
  readonly ok: boolean;
  readonly tables: readonly TableSweepResult[];
}

/**
 * The schema sweep (docs/schema-drift.md, "The sweep"): for each configured target table, in order, under the
 * table's lease (a table leased by another sweep is skipped as `busy`):
 * 1. the closed windows' pending changes are planned against the current schema (`planSchemaChange`); in `apply`
 *    mode the plan becomes ONE paced table update, never within `minUpdateIntervalMs` of the last; in `propose`
 *    mode it is only recorded. A failure here does not skip step 2;
 * 2. up to `sweepMaxRows` waiting rows, oldest first, are inserted, kept (with their retry count) or, past the
 *    budget (`isPastBudget`) or with a permanent error, written to bad data; every write is fenced by the lease;
 * 3. fields of still-waiting rows that may still become columns are proposed again into the current window.
 * Never throws for one table's failure: it is in the result (`ok: false`), logged, and retried next time.
 */
export async function runSchemaSweep(deps: SweepDeps): Promise<SweepResult> {
  const nowMs = deps.now();
  const tables: TableSweepResult[] = [];
  for (const target of deps.config.targetTables) tables.push(await sweepTable(deps, target));
  return {
    nowMs,
    mode: deps.config.mode,
    ok: tables.every((t) => t.status !== 'failed'),
    tables,
  };
}

/** What one table's sweep reports, as it accumulates. */
interface RunTally {
  windows: string[];
  update: AppliedUpdateSummary | null;
  notApplied: string[];
  notAppliedReason: TableSweepResult['notAppliedReason'];
  rejected: RejectedField[];
  resolved: ResolvedConflict[];
  rows: { inserted: number; waiting: number; badData: number; malformed: number };
}

function emptyTally(): RunTally {
  return {
    windows: [],
    update: null,
    notApplied: [],
    notAppliedReason: null,
    rejected: [],
    resolved: [],
    rows: { inserted: 0, waiting: 0, badData: 0, malformed: 0 },
  };
}

/** Mutable working state of one table's sweep. */
interface TableRun extends RunTally {
  readonly target: TableRef;
  readonly key: string;
  lease: Lease;
  schema: TableSchema;
  rejections: Map<string, RejectedField>;
  errors: string[];
  /** The waiting rows read at the start of the sweep, oldest first (phase 2 retries these). */
  waiting: RetryRow[];
  /** Rows behind each proposed (field, type), counted over `waiting`: decides case and type contests. */
  support: ProposalSupport;
}

async function sweepTable(deps: SweepDeps, target: TableRef): Promise<TableSweepResult> {
  const key = tableName(target, deps.projectId);
  const holder = (deps.newHolderId ?? randomUUID)();
  let lease: Lease | null;
  try {
    lease = await deps.store.acquireLease(key, holder, deps.leaseNow(), deps.config.leaseMs);
  } catch (err) {
    logs.sweepTableFailed(deps.logger, key, errorText(err));
    return tableResult(key, 'failed', emptyTally(), errorText(err));
  }
  if (lease === null) {
    logs.sweepTableBusy(deps.logger, key);
    return tableResult(key, 'busy', emptyTally(), null);
  }
  const run: TableRun = {
    ...emptyTally(),
    target,
    key,
    lease,
    schema: { fields: [] },
    rejections: new Map(),
    errors: [],
    waiting: [],
    support: new Map(),
  };
  try {
    run.schema = await deps.admin.getSchema(target);
    await readWaitingRows(deps, run);
    try {
      await applyClosedChanges(deps, run);
    } catch (err) {
      // The waiting rows are still retried and their budget checked, against the schema as it is now.
      if (err instanceof LeaseLostError) throw err;
      run.errors.push(errorText(err));
    }
    const carry = await retryWaitingRows(deps, run);
    if (carry.size > 0) {
      const nowMs = deps.now();
      await deps.store.mergeProposal({
        tableKey: key,
        window: schemaWindowOf(nowMs, deps.config.windowMinutes),
        windowMinutes: deps.config.windowMinutes,
        proposed: carry,
        maxFields: deps.config.maxProposedFieldsPerWindow,
        nowMs,
      });
    }
  } catch (err) {
    run.errors.push(errorText(err));
  } finally {
    try {
      await deps.store.releaseLease(run.lease);
    } catch (err) {
      // A lost lease at release means another sweep took over: nothing of ours to undo, but say so.
      run.errors.push(`release lease: ${errorText(err)}`);
    }
  }
  const result = tableResult(
    key,
    run.errors.length === 0 ? 'swept' : 'failed',
    run,
    run.errors.length === 0 ? null : run.errors.join('; '),
  );
  if (result.error !== null) logs.sweepTableFailed(deps.logger, key, result.error);
  logs.sweepTableDone(deps.logger, {
    table: key,
    status: result.status,
    schema_windows: result.windows,
    update_id: result.update?.updateId ?? null,
    added_columns: result.update?.columns ?? [],
    rows_inserted: result.rows.inserted,
    rows_waiting: result.rows.waiting,
    rows_bad_data: result.rows.badData,
    rows_malformed: result.rows.malformed,
  });
  return result;
}

function tableResult(
  table: string,
  status: TableSweepResult['status'],
  tally: RunTally,
  error: string | null,
): TableSweepResult {
  return {
    table,
    status,
    windows: tally.windows,
    update: tally.update,
    notApplied: tally.notApplied,
    notAppliedReason: tally.notAppliedReason,
    rejected: tally.rejected
      .slice(0, 20)
      .map((r) => ({ field: r.field, code: r.code, reason: r.reason })),
    rejectedCount: tally.rejected.length,
    resolved: tally.resolved.slice(0, 20),
    rows: tally.rows,
    error,
  };
}

/** One call of `TableAdmin.addColumns`: the columns it adds and the statements that add them. */
interface DdlStep {
  readonly columns: readonly BqField[];
  readonly statements: readonly string[];
}

/** The plan's DDL as calls: one for the `single` statement, or one per column (`per_column`). */
function ddlSteps(plan: SchemaChangePlan, style: DdlStyle): DdlStep[] {
  if (plan.addColumns.length === 0) return [];
  if (style === 'single')
    return [{ columns: plan.addColumns, statements: plan.ddl === null ? [] : [plan.ddl] }];
  return plan.addColumns.map((column, i) => ({
    columns: [column],
    statements: plan.ddlPerColumn[i] === undefined ? [] : [plan.ddlPerColumn[i]],
  }));
}

/** What a table update's DDL did: the columns it added, and why it stopped early, if it did. */
interface DdlOutcome {
  readonly added: string[];
  readonly statements: string[];
  readonly catalogPatched: string[];
  /** `update_rate`: BigQuery's table-update rate (403) or the pacing budget; `error`: anything else. */
  readonly stop: { kind: 'update_rate' | 'error'; error: string } | null;
}

/**
 * Runs the steps in order under `TABLE_UPDATE_RATE`: before each it waits (`updateDelayMs`, counting the table's
 * last update) and renews the lease. It stops at the first failure, keeping what was added: a 403
 * `rateLimitExceeded` or a wait past `DDL_PACING_BUDGET_MS` is an `update_rate` stop (continued next sweep); any
 * other failure is an `error` stop.
 * @throws LeaseLostError when the lease was lost before a step (nothing more is issued).
 */
async function runDdlSteps(
  deps: SweepDeps,
  run: TableRun,
  steps: readonly DdlStep[],
): Promise<DdlOutcome> {
  const sleep = deps.sleep ?? ((ms: number) => sleepMs(ms));
  const outcome: DdlOutcome = { added: [], statements: [], catalogPatched: [], stop: null };
  const issuedMs: number[] = run.lease.lastUpdateMs === null ? [] : [run.lease.lastUpdateMs];
  const pacingEndsMs = deps.leaseNow() + DDL_PACING_BUDGET_MS;
  for (const [i, step] of steps.entries()) {
    const delayMs = updateDelayMs(issuedMs, deps.leaseNow());
    if (delayMs > 0 && deps.leaseNow() + delayMs > pacingEndsMs) {
      return {
        ...outcome,
        stop: {
          kind: 'update_rate',
          error:
            `paced under BigQuery's table-update rate (5 per 10 s): ${i} of ${steps.length} statements run ` +
            `within this sweep's ${DDL_PACING_BUDGET_MS} ms pacing budget; the next sweep adds the rest`,
        },
      };
    }
    if (delayMs > 0) await sleep(delayMs);
    run.lease = await deps.store.renewLease(run.lease, deps.leaseNow(), deps.config.leaseMs);
    issuedMs.push(deps.leaseNow());
    try {
      const result = await deps.admin.addColumns(run.target, step.columns, step.statements);
      outcome.added.push(...step.columns.map((c) => c.name));
      outcome.statements.push(...step.statements);
      outcome.catalogPatched.push(...result.catalogPatched);
    } catch (err) {
      const error = errorText(err);
      const rateLimited = err instanceof DdlError && err.rateLimited;
      return {
        ...outcome,
        stop: {
          kind: rateLimited ? 'update_rate' : 'error',
          error: `${error} (after ${i} of ${steps.length} statements)`,
        },
      };
    }
  }
  return outcome;
}

/** Phase 1: plan the closed windows' changes and apply (or record) them, once. */
async function applyClosedChanges(deps: SweepDeps, run: TableRun): Promise<void> {
  const { config, store } = deps;
  for (let attempt = 1; attempt <= MAX_PLAN_ATTEMPTS; attempt++) {
    const nowMs = deps.now();
    const closed = (await store.pendingChanges(run.key)).filter((c) =>
      isWindowClosed(
        { startMs: c.windowStartMs, endMs: c.windowEndMs, id: c.windowId },
        nowMs,
        config.windowGraceMs,
      ),
    );
    if (closed.length === 0) return;
    const plan = planSchemaChange(
      run.schema,
      mergeAllFieldSets(closed.map((c) => c.proposed)),
      {
        protectedNames: DRIFT_PROTECTED_NAMES,
        maxNewColumnsPerWindow: config.maxNewColumnsPerWindow,
        maxColumnsPerTable: config.maxColumnsPerTable,
      },
      // The DDL names the project explicitly (the job's project could differ from the table's).
      {
        ...run.target,
        ...(deps.projectId && !run.target.projectId ? { projectId: deps.projectId } : {}),
      },
      run.support,
    );
    const update = plannedUpdate(closed, plan, config.ddlStyle);
    run.windows = closed.map((c) => c.windowId);
    run.rejected = [...plan.rejected];
    run.resolved = [...plan.resolved];
    for (const contest of plan.resolved) {
      logs.schemaContestResolved(deps.logger, run.key, run.windows, contest);
    }
    run.rejections = new Map(plan.rejected.map((r) => [r.field, r]));
    const columns = plan.addColumns.map((c) => c.name);

    if (config.mode === 'propose' || plan.addColumns.length === 0) {
      const status = config.mode === 'propose' ? 'proposed' : 'applied';
      if ((await store.recordPlan(run.lease, update, status, deps.leaseNow())) === 'stale')
        continue;
      if (status === 'proposed' && columns.length > 0) {
        run.notApplied = columns;
        run.notAppliedReason = 'propose_mode';
      }
      logs.schemaChangeRecorded(deps.logger, {
        table: run.key,
        status,
        windows: run.windows,
        columns,
        rejected: plan.rejected.length,
      });
      return;
    }

    if (
      run.lease.lastUpdateMs !== null &&
      deps.leaseNow() - run.lease.lastUpdateMs < config.minUpdateIntervalMs
    ) {
      run.notApplied = columns;
      run.notAppliedReason = 'update_rate';
      logs.schemaUpdateDeferred(
        deps.logger,
        run.key,
        run.lease.lastUpdateMs,
        config.minUpdateIntervalMs,
      );
      return;
    }

    run.lease = await store.renewLease(run.lease, deps.leaseNow(), config.leaseMs);
    if ((await store.beginUpdate(run.lease, update, deps.leaseNow())) === 'stale') continue;
    const ddl = await runDdlSteps(deps, run, ddlSteps(plan, config.ddlStyle));
    // After a stop the change goes back to `pending`: the next sweep plans it against the table as it then is, so
    // the columns added before the stop are `unchanged` there and only the rest is issued (never from the start).
    await store.finishUpdate(
      run.lease,
      update,
      ddl.stop === null
        ? { ok: true, catalogPatched: ddl.catalogPatched }
        : { ok: false, error: ddl.stop.error },
      deps.leaseNow(),
    );
    if (ddl.stop !== null) {
      run.notApplied = columns.filter((c) => !ddl.added.includes(c));
      if (ddl.stop.kind === 'update_rate') {
        run.notAppliedReason = 'update_rate';
        logs.schemaUpdateRateLimited(deps.logger, {
          table: run.key,
          update_id: update.updateId,
          added_columns: ddl.added,
          remaining_columns: run.notApplied,
          reason: ddl.stop.error,
        });
      } else {
        logs.schemaUpdateFailed(deps.logger, run.key, update.updateId, ddl.stop.error);
        run.errors.push(`schema update ${update.updateId}: ${ddl.stop.error}`);
      }
    }
    if (ddl.added.length === 0) return;
    run.update = {
      updateId: update.updateId,
      columns: ddl.added,
      statements: ddl.statements,
      catalogPatched: ddl.catalogPatched,
    };
    logs.schemaUpdateApplied(deps.logger, {
      table: run.key,
      update_id: update.updateId,
      schema_windows: run.windows,
      added_columns: ddl.added,
      ddl: ddl.statements,
      catalog_patched: ddl.catalogPatched,
      rejected_fields: plan.rejected.length,
    });
    run.schema = await deps.admin.getSchema(run.target);
    return;
  }
  throw new Error(
    `the pending changes of ${run.key} kept changing while being planned (${MAX_PLAN_ATTEMPTS} attempts); ` +
      'the next sweep retries',
  );
}

function plannedUpdate(
  closed: readonly PendingChange[],
  plan: SchemaChangePlan,
  style: DdlStyle,
): PlannedUpdate {
  return {
    updateId: updateIdOf(closed.map((c) => c.windowId)),
    changes: closed.map((c) => ({ windowId: c.windowId, fingerprint: c.fingerprint })),
    addColumns: plan.addColumns,
    statements: ddlSteps(plan, style).flatMap((step) => step.statements),
    unchanged: plan.unchanged,
    rejected: plan.rejected,
  };
}

/** A waiting row judged at one instant. */
type RowVerdict =
  | { kind: 'ready'; row: RetryRow; insert: InsertRow }
  | { kind: 'failing'; row: RetryRow; errors: DriftFieldError[]; proposed: ProposedFields };

/**
 * Judges one waiting row against `schema` (pure): `ready` with the row to insert when every extra field fits
 * a column, else `failing` with its errors (plan rejections spelled out) and the fields it still proposes.
 * A stored text that is not JSON is a failing row with an `UNREADABLE_ROW` error (it will reach bad data).
 */
export function judgeWaitingRow(
  row: RetryRow,
  schema: TableSchema,
  rules: { maxNewFieldsPerEvent: number },
  rejections: ReadonlyMap<string, RejectedField> = new Map(),
): RowVerdict {
  const unreadable = (reason: string): RowVerdict => ({
    kind: 'failing',
    row,
    errors: [{ field: null, code: 'UNREADABLE_ROW', reason }],
    proposed: new Map(),
  });
  let base: unknown;
  let extra: unknown;
  try {
    base = JSON.parse(row.rowJson);
    extra = parseExtraFields(row.extraFieldsJson);
  } catch (err) {
    return unreadable(`stored row: ${errorText(err)}`);
  }
  if (!isPlainObject(base) || !isPlainObject(extra)) {
    return unreadable('stored row is not a JSON object');
  }
  const verdict = classifyExtraFields(extra, schema, {
    protectedNames: DRIFT_PROTECTED_NAMES,
    maxNewFieldsPerEvent: rules.maxNewFieldsPerEvent,
  });
  if (verdict.errors.length === 0) {
    return {
      kind: 'ready',
      row,
      insert: { insertId: row.insertId, json: assignColumns(base, verdict.values) },
    };
  }
  return {
    kind: 'failing',
    row,
    errors: withPlanRejections(verdict.errors, rejections),
    proposed: verdict.proposed,
  };
}

/**
 * A stored row's extra fields, numbers as `LosslessNumber` (exact digits; the gate stores them with lossless-json),
 * duplicate keys last-wins. @throws SyntaxError for text that is not JSON.
 */
export function parseExtraFields(text: string): unknown {
  return losslessParse(text, null, { onDuplicateKey: ({ newValue }) => newValue });
}

/** Phase 0: read the waiting rows once and count the support of each proposed (field, type) among them. */
async function readWaitingRows(deps: SweepDeps, run: TableRun): Promise<void> {
  const { rows, malformed } = await deps.store.waitingRows(run.key, deps.config.sweepMaxRows);
  for (const m of malformed) logs.driftRowMalformed(deps.logger, run.key, m.id, m.problem);
  run.rows.malformed = malformed.length;
  run.waiting = rows;
  const supporting: { extraFields: Record<string, unknown>; processedTimestampMs: number }[] = [];
  for (const row of rows) {
    let extra: unknown;
    try {
      extra = parseExtraFields(row.extraFieldsJson);
    } catch (err) {
      // Judged again in phase 2, where it becomes an UNREADABLE_ROW on its way to bad data; only not counted here.
      logs.driftRowMalformed(deps.logger, run.key, row.id, `extra fields: ${errorText(err)}`);
      continue;
    }
    if (isPlainObject(extra)) {
      supporting.push({ extraFields: extra, processedTimestampMs: row.processedTimestampMs });
    }
  }
  run.support = supportOf(supporting);
}

/** A ready row's fate after its insert and re-sends. */
type InsertFate =
  | { readonly kind: 'written' }
  | { readonly kind: 'invalid'; readonly error: string; readonly missingFields: readonly string[] }
  | { readonly kind: 'not_written'; readonly error: string };

/**
 * Inserts one batch's rows into `table` (target or bad-data table), re-sending at once, up to `MAX_INSERT_ATTEMPTS`
 * calls with the lease renewed before each, the rows not written for a reason that is not their data (`stopped`,
 * `timeout`, `backendError`). `invalid` rows are not re-sent. A call that fails as a whole (HTTP 5xx, network)
 * leaves its rows `not_written` for the next sweep.
 * @returns one fate per row of `rows`, in order. @throws only LeaseLostError.
 */
async function insertWithResends(
  deps: SweepDeps,
  run: TableRun,
  table: TableRef,
  rows: readonly InsertRow[],
): Promise<InsertFate[]> {
  const fates: InsertFate[] = rows.map(() => ({ kind: 'not_written', error: 'not sent' }));
  let pending = rows.map((_, i) => i);
  for (let attempt = 1; attempt <= MAX_INSERT_ATTEMPTS && pending.length > 0; attempt++) {
    if (attempt > 1) {
      run.lease = await deps.store.renewLease(run.lease, deps.leaseNow(), deps.config.leaseMs);
    }
    const sent = pending.map((i) => rows[i]).filter((r): r is InsertRow => r !== undefined);
    let outcomes: readonly RowOutcome[];
    try {
      outcomes = await deps.writer.insertRows(table, sent);
    } catch (err) {
      if (err instanceof PartialInsertError && err.outcomes.length === sent.length) {
        outcomes = err.outcomes;
      } else {
        const error = errorText(err);
        const name = tableName(table, deps.projectId);
        logs.sweepInsertFailed(deps.logger, { table: name, rows: sent.length, attempt, error });
        for (const i of pending) fates[i] = { kind: 'not_written', error };
        run.errors.push(`insert of ${sent.length} rows into ${name}: ${error}`);
        break;
      }
    }
    const next: number[] = [];
    const reasons = new Set<string>();
    outcomes.forEach((outcome, j) => {
      const i = pending[j];
      if (i === undefined) return;
      if (outcome.ok) fates[i] = { kind: 'written' };
      else if (outcome.kind === 'rejected') {
        fates[i] = { kind: 'invalid', error: outcome.error, missingFields: outcome.missingFields };
      } else {
        fates[i] = { kind: 'not_written', error: outcome.error };
        for (const r of outcome.reasons) reasons.add(r);
        next.push(i);
      }
    });
    if (next.length > 0 && attempt < MAX_INSERT_ATTEMPTS) {
      logs.sweepRowsResent(deps.logger, {
        table: tableName(table, deps.projectId),
        attempt: attempt + 1,
        rows: next.length,
        reasons: [...reasons].sort(),
      });
    }
    pending = next;
  }
  return fates;
}

/** The error a ready row carries after its insert failed (see `DRIFT_ERROR_PERMANENCE`). */
function insertErrorOf(fate: Exclude<InsertFate, { kind: 'written' }>): DriftFieldError {
  if (fate.kind === 'not_written') {
    return { field: null, code: 'INSERT_NOT_WRITTEN', reason: fate.error };
  }
  // "no such field" is a new column propagating to streaming (clears within minutes); any other `invalid` is final.
  return fate.missingFields.length > 0
    ? { field: null, code: 'INSERT_REJECTED', reason: fate.error }
    : { field: null, code: 'INSERT_INVALID', reason: fate.error };
}

/** A failing row on its way to the bad-data table. */
interface BadRow {
  readonly row: RetryRow;
  readonly retryCount: number;
  readonly error: string;
  readonly cause: 'retry_budget' | 'permanent_error' | 'insert_invalid';
}

/**
 * Phase 2: retry the rows read in phase 0, in batches. Each batch's ready rows are inserted (`insertWithResends`);
 * then every row still failing gets its verdict in the same sweep: a permanent error (`isPermanentError`) or a
 * spent budget (`isPastBudget`) sends it to bad data, otherwise it waits with its derived retry count. A batch
 * whose insert or bad-data write failed does not stop the others; the budget check runs for every row read.
 * @returns the fields still-waiting rows propose again.
 */
async function retryWaitingRows(deps: SweepDeps, run: TableRun): Promise<ProposedFields> {
  const { config, store } = deps;
  const rows = run.waiting;
  const carry: ProposedFields[] = [];
  for (let i = 0; i < rows.length; i += SWEEP_BATCH_ROWS) {
    run.lease = await store.renewLease(run.lease, deps.leaseNow(), config.leaseMs);
    const nowMs = deps.now();
    const verdicts = rows
      .slice(i, i + SWEEP_BATCH_ROWS)
      .map((row) => judgeWaitingRow(row, run.schema, config, run.rejections));
    const deletes: string[] = [];
    const failing: { row: RetryRow; errors: DriftFieldError[]; proposed: ProposedFields }[] = [];
    let schemaStale = false;

    const ready = verdicts.filter((v) => v.kind === 'ready');
    if (ready.length > 0) {
      const fates = await insertWithResends(
        deps,
        run,
        run.target,
        ready.map((v) => v.insert),
      );
      ready.forEach((v, j) => {
        const fate = fates[j] ?? { kind: 'not_written', error: 'no outcome' };
        if (fate.kind === 'written') {
          deletes.push(v.row.id);
          run.rows.inserted++;
          return;
        }
        const error = insertErrorOf(fate);
        // "no such field": the schema is read again before the next batch.
        if (error.code === 'INSERT_REJECTED') schemaStale = true;
        failing.push({ row: v.row, errors: [error], proposed: new Map() });
      });
    }
    for (const v of verdicts) if (v.kind === 'failing') failing.push(v);

    const updates: RowUpdate[] = [];
    const bad: BadRow[] = [];
    for (const f of failing) {
      const count = retryCount(f.row.processedTimestampMs, nowMs, config.windowMinutes);
      // Permanent errors first, so the bad-data `error` column leads with the reason waiting could not help.
      const permanent = f.errors.filter(isPermanentError);
      const errors = [...permanent, ...f.errors.filter((e) => !isPermanentError(e))];
      const error = errorsText(errors);
      if (permanent.length > 0) {
        const cause = permanent.some((e) => e.code === 'INSERT_INVALID')
          ? 'insert_invalid'
          : 'permanent_error';
        bad.push({ row: f.row, retryCount: count, error, cause });
        continue;
      }
      if (isPastBudget(f.row.processedTimestampMs, nowMs, config.retryMinutes)) {
        bad.push({ row: f.row, retryCount: count, error, cause: 'retry_budget' });
        continue;
      }
      updates.push({
        id: f.row.id,
        errors: f.errors,
        // Derived from time, never incremented; max() so a sweep with a clock behind never lowers it.
        retryCount: Math.max(count, f.row.retryCount),
        lastError: error,
        lastAttemptMs: nowMs,
      });
      // Only rows whose own window was swept propose again; a row in an open window is in its change already.
      // A case variant that lost its contest is not proposed again: its winner is (if it still waits).
      const own = schemaWindowOf(f.row.processedTimestampMs, config.windowMinutes);
      const again = new Map(
        [...f.proposed].filter(([name]) => run.rejections.get(name)?.code !== 'CASE_VARIANT_LOST'),
      );
      if (again.size > 0 && isWindowClosed(own, nowMs, config.windowGraceMs)) {
        carry.push(again);
      }
    }

    if (bad.length > 0) {
      // The same re-sends as the target table, so a refused bad-data row does not keep its `stopped` neighbours out.
      const rows = bad.map((b) =>
        badDataRowOf({
          ...b.row,
          targetDest: run.key,
          error: b.error,
          nowMs,
          retryCount: b.retryCount,
        }),
      );
      const written = await insertWithResends(deps, run, deps.badDataTable, rows);
      bad.forEach((b, j) => {
        const result = written[j] ?? { kind: 'not_written', error: 'no outcome' };
        if (result.kind === 'written') {
          deletes.push(b.row.id);
          run.rows.badData++;
          logs.driftRowToBadData(deps.logger, {
            message_id: b.row.sourceMessageId,
            insert_id: b.row.insertId,
            target_dest: run.key,
            retry_count: b.retryCount,
            bad_data_cause: b.cause,
            error: b.error,
          });
          return;
        }
        // Nowhere durable to move it: it stays, with the refusal on record, and is tried again next sweep.
        logs.badDataRefused(deps.logger, {
          message_id: b.row.sourceMessageId,
          insert_id: b.row.insertId,
          table: tableName(deps.badDataTable, deps.projectId),
          error: result.error,
        });
        run.errors.push(`bad-data row ${b.row.insertId} refused: ${result.error}`);
        updates.push({
          id: b.row.id,
          errors: [
            { field: null, code: 'INSERT_REJECTED', reason: `bad-data table: ${result.error}` },
          ],
          retryCount: b.retryCount,
          lastError: `${b.error}; bad-data table refused the row: ${result.error}`,
          lastAttemptMs: nowMs,
        });
      });
    }
    run.rows.waiting += updates.length;
    await store.settleRows(run.lease, deletes, updates);
    if (schemaStale) {
      try {
        run.schema = await deps.admin.getSchema(run.target);
      } catch (err) {
        // The next batches are judged against the schema read before; the next sweep reads it again.
        run.errors.push(`schema re-read after "no such field": ${errorText(err)}`);
      }
    }
  }
  return mergeAllFieldSets(carry);
}
