// `offvia quarantine list` for any registered pipeline: the newest rows of its quarantine or dead-letter table, with
// the columns its definition's `operatorColumns` names.
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { query, type OpsContext } from './context';
import { plainRow, printReport, rowsTable, type Io } from './output';
import { tableName } from '../config/env';
import { selectionWhere } from './selection';

type Row = Record<string, unknown>;

/** Options of `quarantine list`. */
export interface QuarantineListOptions {
  /** Only these stages (all when absent). */
  readonly stages?: readonly string[] | undefined;
  /** Rejected at or after, epoch ms UTC. */
  readonly sinceMs?: number | undefined;
  /** Most rows, newest first. */
  readonly limit: number;
}

/** What `quarantine list` prints: the table read and its rows, newest first. */
export interface QuarantineListReport {
  pipeline: string;
  /** `project.dataset.table` the rows come from. */
  table: string;
  rows: Row[];
}

/**
 * The newest rows of the pipeline's quarantine or dead-letter table: message id, stage, reason, rejection time, the
 * layout's extra columns and the payload.
 * @throws OpsError when BigQuery fails
 */
export async function listQuarantine(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  options: QuarantineListOptions,
): Promise<QuarantineListReport> {
  const c = pipeline.operatorColumns.quarantine;
  const name = tableName(pipeline.tables.quarantine, ctx.projectId);
  const { where, params, types } = selectionWhere(
    {
      limit: options.limit,
      ...(options.stages === undefined ? {} : { stages: options.stages }),
      ...(options.sinceMs === undefined ? {} : { sinceMs: options.sinceMs }),
    },
    { time: c.rejectedAt, text: c.reason, ids: [], stage: c.stage },
  );
  const columns = [
    `${c.messageId} AS source_message_id`,
    `${c.stage} AS stage`,
    `${c.reason} AS reason`,
    `${c.rejectedAt} AS rejected_at`,
    ...c.extra,
    `${c.payload} AS payload`,
  ];
  const rows = await query(
    ctx,
    `SELECT ${columns.join(', ')} FROM \`${name}\` WHERE ${where}
     ORDER BY ${c.rejectedAt} DESC, ${c.messageId} LIMIT ${options.limit}`,
    params,
    types,
  );
  return { pipeline: pipeline.name, table: name, rows: rows.map(plainRow) };
}

/** Prints the list as a table (with a count line) or JSON. */
export function printQuarantineList(io: Io, report: QuarantineListReport, json: boolean): void {
  printReport(
    io,
    report,
    json,
    (r) => `${rowsTable(r.rows, 60)}\n${r.rows.length} row(s) of ${r.table}, newest first`,
  );
}
