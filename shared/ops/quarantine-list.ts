// `offvia quarantine list` for any registered pipeline: the newest rows of its quarantine or dead-letter table, with
// the columns its definition's `operatorColumns` names.
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { query, type OpsContext } from './context';
import { cellText, plainRow, table, type Io } from './output';
import { qualifiedTable } from './pipeline-choice';

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
 * The newest rows of the pipeline's quarantine or dead-letter table: message id, stage, reason, rejection time, the layout's extra
 * columns and the payload.
 * @throws OpsError when BigQuery fails
 */
export async function listQuarantine(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  options: QuarantineListOptions,
): Promise<QuarantineListReport> {
  const c = pipeline.operatorColumns.quarantine;
  const name = qualifiedTable(pipeline.tables.quarantine, ctx.projectId);
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  const types: Record<string, string | string[]> = {};
  if (options.stages !== undefined) {
    where.push(`${c.stage} IN UNNEST(@stages)`);
    params.stages = [...options.stages];
    types.stages = ['STRING'];
  }
  if (options.sinceMs !== undefined) {
    where.push(`${c.rejectedAt} >= TIMESTAMP_MILLIS(@since_ms)`);
    params.since_ms = options.sinceMs;
    types.since_ms = 'INT64';
  }
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
    `SELECT ${columns.join(', ')} FROM \`${name}\`
     ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY ${c.rejectedAt} DESC, ${c.messageId} LIMIT ${options.limit}`,
    params,
    types,
  );
  return { pipeline: pipeline.name, table: name, rows: rows.map(plainRow) };
}

/** Prints the list as a table (with a count line) or JSON. */
export function printQuarantineList(io: Io, report: QuarantineListReport, json: boolean): void {
  if (json) {
    io.out(JSON.stringify(report, null, 2));
    return;
  }
  const columns = [...new Set(report.rows.flatMap((r) => Object.keys(r)))];
  io.out(
    table(
      columns,
      report.rows.map((r) => columns.map((name) => cellText(r[name]))),
      60,
    ),
  );
  io.out(`${report.rows.length} row(s) of ${report.table}, newest first`);
}
