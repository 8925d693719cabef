// What a re-drive run shares: its id, the lineage writer, the in-process ingest path, a bounded worker pool, the
// log file and the resolution rows it appends.
import { appendFileSync, mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { TableRef } from '../config/env';
import { boundedInsertId } from '../drift/bad-data';
import { createIngestDeps } from '../ingest/runtime';
import type { IngestDeps } from '../ingest/ingest-booking';
import { Logger, type LogEntry } from '../logging/logger';
import { BigQueryRowWriter } from '../sinks/bigquery-writer';
import type { InsertRow, RowResult, RowWriter } from '../sinks/row-writer';
import { repositoryRoot, type OpsContext } from './context';
import { OpsError } from './errors';

/** The lineage column of Silver and quarantine rows a run writes (sql/045). */
export const LINEAGE_COLUMN = 'reprocess_run_id';

/** A run id: `offvia-<action>-<UTC yyyymmddThhmmss>-<6 hex>`; sorts by start time. */
export function newRunId(action: 'reprocess' | 'redrive', nowMs: number): string {
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

function sameTable(a: TableRef, b: TableRef): boolean {
  return a.datasetId === b.datasetId && a.tableId === b.tableId;
}

/**
 * A RowWriter that adds `reprocess_run_id` to every row written to the given tables (Silver and quarantine), so
 * re-driven rows carry the run that wrote them; other tables (bad data, gold) are written unchanged.
 */
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
 * The ingest path as the functions run it (validation, Silver, quarantine, schema drift, window state), built from
 * the target's environment, with the lineage writer under it and its log lines appended to `logFile` (stdout is the
 * command's output).
 */
export function ingestDepsForRun(ctx: OpsContext, runId: string, logFile: string): IngestDeps {
  const sink = (entry: LogEntry): void => {
    appendFileSync(logFile, `${JSON.stringify({ ...entry, run_id: runId })}\n`);
  };
  return createIngestDeps(ctx.env, new Logger('offvia', sink), {
    wrapWriter: (writer) =>
      new LineageWriter(writer, runId, [ctx.ingest.silverTable, ctx.ingest.quarantineTable]),
  });
}

/**
 * Runs `work` over `items` with at most `concurrency` in flight, calling `done` after each; resolves when all
 * settled. `work` must not throw (it records its own failure).
 */
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
  action: 'reprocess' | 'redrive';
  outcome: string;
  result_event_id: string | null;
  fix: string;
  resolved_by: string;
  /** RFC 3339 UTC. */
  resolved_at: string;
}

/**
 * Appends resolution rows (insertId `res:<layer>:<row_key>:<run_id>`, so a retried call adds no second row),
 * 500 a call (BigQuery's recommended insertAll size).
 * @throws OpsError naming how many rows were re-driven without their resolution: running the same command again
 *   is safe (Silver dedups by event_id, the window ledger by event_id) and records them.
 */
export async function writeResolutions(
  ctx: OpsContext,
  rows: readonly Resolution[],
): Promise<void> {
  const writer = new BigQueryRowWriter(ctx.bigquery);
  const table: TableRef = { ...ctx.ingest.quarantineTable, tableId: 'resolutions' };
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    let results: RowResult[];
    try {
      results = await writer.insertRows(
        table,
        chunk.map((r) => ({
          insertId: boundedInsertId('res:', `${r.layer}:${r.row_key}:${r.run_id}`),
          json: { ...r },
        })),
      );
    } catch (err) {
      throw new OpsError(
        `${rows.length - i} re-driven rows have no resolution row yet (${err instanceof Error ? err.message : String(err)}); run the same command again: re-driving is idempotent`,
      );
    }
    const refused = results.filter((r) => !r.ok);
    if (refused.length > 0) {
      throw new OpsError(
        `${refused.length} resolution rows refused by ${table.datasetId}.${table.tableId}: ${JSON.stringify(refused[0])}`,
      );
    }
  }
}
