// What operator runs share: run id, lineage writer, in-process ingest path, worker pool, log file, resolution rows.
import { appendFileSync, mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { TableRef } from '../config/env';
import { boundedInsertId } from '../drift/bad-data';
import { loadPassengerIdConfig, type PassengerIdConfig } from '../config/passenger-id-config';
import { PSEUDONYM_PREFIX } from '../ingest/passenger-id';
import { createPipelineIngestDeps } from '../pipeline/runtime/compose';
import {
  ingestPipelineMessage,
  type PipelineIngestDeps,
  type PipelineIngestOutcome,
} from '../pipeline/runtime/ingest';
import { Logger, type LogEntry } from '../logging/logger';
import { BigQueryRowWriter } from '../sinks/bigquery-writer';
import type { InsertRow, RowResult, RowWriter } from '../sinks/row-writer';
import { query, repositoryRoot, type OpsContext } from './context';
import { NotFoundError, OpsError, UsageError } from './errors';
import { progressBar, type Io } from './output';
import type { ReprocessOptions, ReprocessReport } from './reprocess';
import type { RowSelection } from './selection';

/** The lineage column of Silver and quarantine rows a run writes (sql/045). */
export const LINEAGE_COLUMN = 'reprocess_run_id';

/** A run id: `offvia-<action>-<UTC yyyymmddThhmmss>-<6 hex>`; sorts by start time. */
export function newRunId(action: 'reprocess' | 'redrive' | 'replay', nowMs: number): string {
  const stamp = new Date(nowMs)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, '');
  return `offvia-${action}-${stamp}-${randomBytes(3).toString('hex')}`;
}

/** Who runs the command: `--by`, else the OS user name. */
export function operatorName(by: string | undefined): string {
  if (by !== undefined && by.trim() !== '') return by.trim();
  try {
    return os.userInfo().username;
  } catch (err) {
    // No passwd entry (a container with a numeric uid): the uid still says who.
    return `uid-${process.getuid?.() ?? 'unknown'} (${err instanceof Error ? err.message : String(err)})`;
  }
}

/** Whether two table references name the same table. */
export function sameTable(a: TableRef, b: TableRef): boolean {
  return a.datasetId === b.datasetId && a.tableId === b.tableId;
}

/** A RowWriter adding `reprocess_run_id` to the rows of `tables` (Silver, quarantine); other tables unchanged. */
export class LineageWriter implements RowWriter {
  constructor(
    private readonly inner: RowWriter,
    private readonly runId: string,
    private readonly tables: readonly TableRef[],
  ) {}

  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    if (!this.tables.some((t) => sameTable(t, table))) return this.inner.insertRows(table, rows);
    return this.inner.insertRows(
      table,
      rows.map((r) => ({
        insertId: r.insertId,
        json: { ...r.json, [LINEAGE_COLUMN]: this.runId },
      })),
    );
  }
}

/** The log file of a run: the local stack's logs directory, or `.local/offvia-runs/` for a cloud project. */
export function runLogFile(ctx: OpsContext, runId: string): string {
  const dir = ctx.logsDir ?? path.join(repositoryRoot(), '.local', 'offvia-runs');
  mkdirSync(dir, { recursive: true });
  return ctx.logsDir ? path.join(dir, 'offvia.log') : path.join(dir, `${runId}.log`);
}

/**
 * The pipeline's ingest path as its function runs it, from the target's environment, with the lineage writer (and
 * `wrap` around it) under it and its log lines appended to `logFile`.
 * @throws ConfigError for a bad variable of the target's environment
 */
export async function ingestDepsForRun(
  ctx: OpsContext,
  runId: string,
  logFile: string,
  wrap: (writer: RowWriter) => RowWriter = (writer) => writer,
): Promise<PipelineIngestDeps> {
  const sink = (entry: LogEntry): void => {
    appendFileSync(logFile, `${JSON.stringify({ ...entry, run_id: runId })}\n`);
  };
  const { silver, quarantine } = ctx.pipeline.tables;
  return createPipelineIngestDeps(ctx.pipeline, ctx.env, new Logger('offvia', sink), {
    wrapWriter: (writer) => wrap(new LineageWriter(writer, runId, [silver, quarantine])),
  });
}

/**
 * Refuses a run whose ingest path (`passengerId`, by default the target environment's) would store `passenger_id` raw
 * in a Silver that holds pseudonyms (`hmac1:`, docs/privacy.md). Pipelines without `pseudonymColumn` pass.
 * @throws UsageError (exit 2) naming the variables to export; OpsError when BigQuery cannot answer.
 */
export async function assertPassengerIdModeFitsSilver(
  ctx: OpsContext,
  passengerId: PassengerIdConfig = loadPassengerIdConfig(ctx.env),
): Promise<void> {
  const column = ctx.pipeline.operatorColumns.silver.pseudonymColumn;
  if (column === undefined || passengerId.mode !== 'raw') return;
  const hashed = await query(
    ctx,
    `SELECT 1 AS hashed FROM \`${ctx.tables.silver}\` WHERE STARTS_WITH(${column}, @prefix) LIMIT 1`,
    { prefix: PSEUDONYM_PREFIX },
  );
  if (hashed.length > 0) {
    throw new UsageError(
      `${ctx.tables.silver} holds pseudonymised passenger_id (${PSEUDONYM_PREFIX}…) but OFFVIA_PASSENGER_ID_MODE is ` +
        'raw here: export OFFVIA_PASSENGER_ID_MODE=hmac-sha256 and OFFVIA_PASSENGER_ID_HMAC_KEY (the deployed key) ' +
        'first, or the re-driven rows reach Silver with the raw id (docs/privacy.md)',
    );
  }
}

/** Runs `work` (which must not throw) over `items`, at most `concurrency` in flight, calling `done` after each. */
export async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
  done: () => void,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
      done();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** A row of the resolutions table (sql/070). */
export interface Resolution {
  layer: 'quarantine' | 'bad_data';
  /** The open view's key: quarantine `message_key`, bad-data `row_key`. */
  row_key: string;
  source_message_id: string | null;
  run_id: string;
  action: 'reprocess' | 'redrive' | 'replay';
  outcome: string;
  result_event_id: string | null;
  fix: string;
  resolved_by: string;
  /** RFC 3339 UTC. */
  resolved_at: string;
}

/** Who resolves rows and how: the run, its action, the fix applied, the operator, and the clock (epoch ms). */
export interface ResolvingRun {
  readonly runId: string;
  readonly action: Resolution['action'];
  readonly fix: string;
  readonly operator: string;
  readonly now: () => number;
}

/** Where a row went: an ingest outcome, or a target table (`destination`) with the Silver event id it has there. */
export interface Reached {
  readonly destination: string;
  readonly eventId?: string | null;
}

/** The resolutions `run` writes: the row keyed `rowKey` of `layer` (message `messageId`), stamped now (UTC). */
export function resolver(
  run: ResolvingRun,
): (
  layer: Resolution['layer'],
  rowKey: string,
  messageId: string | null,
  reached: Reached,
) => Resolution {
  return (layer, rowKey, messageId, reached) => ({
    layer,
    row_key: rowKey,
    source_message_id: messageId,
    run_id: run.runId,
    action: run.action,
    outcome: reached.destination,
    result_event_id: reached.eventId ?? null,
    fix: run.fix,
    resolved_by: run.operator,
    resolved_at: new Date(run.now()).toISOString(),
  });
}

/**
 * Appends `rows` to `table`, 500 a call (BigQuery's recommended insertAll size).
 * @throws OpsError `failed(rows written so far, cause)` when a call fails, or naming how many `what` the table
 *   refused (as `label`).
 */
export async function insertAll(
  ctx: OpsContext,
  table: TableRef,
  rows: readonly InsertRow[],
  what: string,
  label: string,
  failed: (written: number, cause: string) => string,
): Promise<void> {
  const writer = new BigQueryRowWriter(ctx.bigquery);
  for (let i = 0; i < rows.length; i += 500) {
    let results: RowResult[];
    try {
      results = await writer.insertRows(table, rows.slice(i, i + 500));
    } catch (err) {
      throw new OpsError(failed(i, err instanceof Error ? err.message : String(err)));
    }
    const refused = results.filter((r) => !r.ok);
    if (refused.length > 0) {
      throw new OpsError(
        `${refused.length} ${what} refused by ${label}: ${JSON.stringify(refused[0])}`,
      );
    }
  }
}

/**
 * Appends resolution rows (insertId `res:<layer>:<row_key>:<run_id>`, so a retried call adds no second row).
 * @throws OpsError naming how many rows were re-driven without their resolution: running the same command again
 *   is safe (Silver and the window state dedup by event_id) and records them.
 */
export function writeResolutions(ctx: OpsContext, rows: readonly Resolution[]): Promise<void> {
  const table: TableRef = { ...ctx.pipeline.tables.quarantine, tableId: 'resolutions' };
  return insertAll(
    ctx,
    table,
    rows.map((r) => ({
      insertId: boundedInsertId('res:', `${r.layer}:${r.row_key}:${r.run_id}`),
      json: { ...r },
    })),
    'resolution rows',
    `${table.datasetId}.${table.tableId}`,
    (written, cause) =>
      `${rows.length - written} re-driven rows have no resolution row yet (${cause}); run the same command again: re-driving is idempotent`,
  );
}

/**
 * The open rows `select` finds, the empty report and when the run `started` (epoch ms). `--ids` that select nothing
 * are fine when resolved already, but ids no row of `known.table` holds in `known.idColumns` are a wrong selection.
 * @throws NotFoundError `no <known.notFound>` ({ids} replaced, exit 3); OpsError when BigQuery fails.
 */
export async function selectOpenRows<C>(
  ctx: OpsContext,
  options: ReprocessOptions,
  now: () => number,
  select: (ctx: OpsContext, selection: RowSelection) => Promise<C[]>,
  known: {
    readonly table: string;
    readonly idColumns: readonly string[];
    readonly notFound: string;
  },
): Promise<{ started: number; candidates: C[]; report: ReprocessReport }> {
  const started = now();
  const candidates = await select(ctx, options.selection);
  const ids = options.selection.ids ?? [];
  if (candidates.length === 0 && ids.length > 0) {
    const where = known.idColumns.map((c) => `${c} IN UNNEST(@ids)`).join(' OR ');
    const sql = `SELECT COUNT(*) AS n FROM \`${known.table}\` WHERE ${where}`;
    const [found] = await query<{ n: unknown }>(ctx, sql, { ids }, { ids: ['STRING'] });
    if (Number(found?.n ?? 0) === 0) {
      throw new NotFoundError(`no ${known.notFound.replace('{ids}', ids.join(', '))}`);
    }
  }
  const report: ReprocessReport = {
    runId: null,
    dryRun: options.dryRun,
    fix: options.fix.description,
    selected: candidates.length,
    outcomes: {},
    skipped: [],
    failed: [],
    resolutionsWritten: 0,
    sample: [],
    elapsedMs: 0,
    rowsPerSecond: null,
    logFile: null,
  };
  return { started, candidates, report };
}

/**
 * Sends a fixed message through the ingest path with its original message id and no publish time (the retry-age
 * guard is for Pub/Sub redeliveries).
 * @returns the outcome, or undefined when ingest threw (the error is in `report.failed`; the row stays open).
 */
export async function ingestFixed(
  report: ReprocessReport,
  reportedId: string | null,
  message: { messageId: string; attributes: Record<string, string>; data: Buffer },
  deps: PipelineIngestDeps,
): Promise<PipelineIngestOutcome | undefined> {
  try {
    return await ingestPipelineMessage(
      {
        ok: true,
        message: {
          messageId: message.messageId,
          publishTime: undefined,
          publishTimeMs: undefined,
          attributes: message.attributes,
          data: message.data,
          subscription: undefined,
        },
      },
      deps,
    );
  } catch (err) {
    report.failed.push({
      messageId: reportedId,
      error: err instanceof Error ? err.message : String(err),
    });
    return undefined;
  }
}

/** Counts one row under `key` (a destination or target) in the report's outcomes. */
export function countOutcome(report: ReprocessReport, key: string): void {
  report.outcomes[key] = (report.outcomes[key] ?? 0) + 1;
}

/** Sets the run's elapsed time since `started` and its rate over `rows` (null when no time passed). */
export function finishTiming(
  report: ReprocessReport,
  rows: number,
  started: number,
  now: () => number,
): void {
  report.elapsedMs = now() - started;
  report.rowsPerSecond = report.elapsedMs > 0 ? Math.round((rows * 1000) / report.elapsedMs) : null;
}

/** An open row a run selected: its open view's key (quarantine `message_key`, bad-data `row_key`), its message. */
export interface OpenRow {
  readonly rowKey: string;
  readonly messageId: string | null;
}

/** What one re-drive command does with each selected open row of a real run (see {@link runOverRows}). */
export interface RowPass<C extends OpenRow> {
  readonly action: 'reprocess' | 'redrive';
  readonly layer: Resolution['layer'];
  /** Whether some row goes through the ingest path: then it is built and the passenger-id check runs first. */
  readonly needsIngest: boolean;
  /** Sends one row on, counting it; resolves to where it went, or undefined when it stays open. Must not throw. */
  readonly handle: (
    c: C,
    run: { readonly runId: string; readonly ingest: () => PipelineIngestDeps },
  ) => Promise<Reached | undefined>;
}

/**
 * A real `quarantine reprocess` or `bad-data redrive` run: run id, log file, the ingest path when needed, the pass
 * over `candidates` with a progress bar, the resolution rows and the timing. Fills in and returns `report`.
 * @throws UsageError or ConfigError before anything is written; OpsError when the resolutions cannot be written.
 */
export async function runOverRows<C extends OpenRow>(
  ctx: OpsContext,
  options: ReprocessOptions,
  report: ReprocessReport,
  candidates: readonly C[],
  pass: RowPass<C>,
  io: Io,
  started: number,
  now: () => number,
): Promise<ReprocessReport> {
  const runId = newRunId(pass.action, started);
  report.runId = runId;
  report.logFile = runLogFile(ctx, runId);
  let deps: PipelineIngestDeps | undefined;
  if (pass.needsIngest) {
    deps = await ingestDepsForRun(ctx, runId, report.logFile);
    await assertPassengerIdModeFitsSilver(ctx);
  }
  const ingest = (): PipelineIngestDeps => {
    if (deps === undefined)
      throw new Error(`${pass.action}: the ingest path was not built (needsIngest)`);
    return deps;
  };
  const resolutions: Resolution[] = [];
  const resolve = resolver({
    runId,
    action: pass.action,
    fix: options.fix.description,
    operator: options.operator,
    now,
  });
  const bar = progressBar(io, pass.action, candidates.length);
  await pool(
    candidates,
    options.concurrency,
    async (c) => {
      const reached = await pass.handle(c, { runId, ingest });
      if (reached === undefined) return;
      resolutions.push(resolve(pass.layer, c.rowKey, c.messageId, reached));
    },
    () => bar.increment(),
  );
  bar.stop();
  await writeResolutions(ctx, resolutions);
  report.resolutionsWritten = resolutions.length;
  finishTiming(report, candidates.length, started, now);
  return report;
}
