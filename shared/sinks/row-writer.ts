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
