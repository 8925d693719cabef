// The port every BigQuery write goes through: rows in, one outcome per row out, transient failures thrown.
import type { TableRef } from '../config/env';

/** One streaming-insert row: the insertId BigQuery dedups on (best effort, ~1 min) and the row's JSON. */
export interface InsertRow {
  /** ≤ 128 characters (BigQuery insertAll limit). */
  insertId: string;
  json: Record<string, unknown>;
}

/**
 * What happened to one row. `rejected` means BigQuery refused the row's data (insertErrors reason `invalid`):
 * retrying the same row cannot succeed, so the caller routes it somewhere durable. `missingFields` lists the
 * unknown columns when the error was BigQuery's "no such field" (schema drift; see the schema sweep).
 */
export type RowResult =
  { ok: true } | { ok: false; kind: 'rejected'; error: string; missingFields: string[] };

/** Writes rows to a table. Implementations throw `TransientError` for anything a retry may fix. */
export interface RowWriter {
  /**
   * Inserts `rows` (1..500, ≤ 9 MB: BigQuery recommends ≤ 500 rows a request and caps a request at 10 MB) and
   * resolves with one result per row, in order.
   * @throws TransientError when the call failed as a whole for an infrastructure reason, or any row failed with a
   * non-data reason (backendError, timeout, …); the caller must not ack.
   */
  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]>;
}

/** Why a row cannot be streamed with an insertId, or `undefined` when its insertId is a non-empty string. */
export function insertIdProblem(row: InsertRow): string | undefined {
  const id: unknown = row.insertId;
  if (typeof id === 'string' && id !== '') return undefined;
  return `row has no insertId (got ${id === '' ? 'an empty string' : typeof id}): it cannot be deduplicated, so it is not streamed`;
}

/**
 * Calls `write` with the rows that have an insertId and answers the others `rejected` (a data problem the caller
 * routes, e.g. to the bad-data table) without sending them, so a row that lost its insertId upstream is routed
 * instead of crashing the writer or being streamed without dedup. Results are in the order of `rows`.
 */
export async function withInsertIds(
  rows: readonly InsertRow[],
  write: (rows: readonly InsertRow[]) => Promise<RowResult[]>,
): Promise<RowResult[]> {
  const problems = rows.map(insertIdProblem);
  if (problems.every((p) => p === undefined)) return write(rows);
  const sendable = rows.filter((_, i) => problems[i] === undefined);
  const written = sendable.length === 0 ? [] : await write(sendable);
  let next = 0;
  return problems.map((problem): RowResult => {
    if (problem !== undefined) {
      return { ok: false, kind: 'rejected', error: problem, missingFields: [] };
    }
    const result = written[next++];
    if (result === undefined)
      throw new Error(`writer returned ${written.length} results for ${sendable.length} rows`);
    return result;
  });
}
