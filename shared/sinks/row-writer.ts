// The port every BigQuery write goes through: rows in, one outcome per row out, transient failures thrown.
import type { TableRef } from '../config/env';
import { TransientError } from '../errors';

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

/**
 * A row BigQuery did not write for a reason that is not its own data (`stopped` beside an `invalid` row, or a
 * transient reason). Only `PartialInsertError.outcomes` carries it.
 */
export interface RowNotWritten {
  readonly ok: false;
  readonly kind: 'not_written';
  /** The insertErrors reasons of the row, e.g. `['stopped']`. */
  readonly reasons: readonly string[];
  /** `reason: message; …`, for logs and the row's error text. */
  readonly error: string;
}

/** A row's outcome in a partially failed insertAll call. */
export type RowOutcome = RowResult | RowNotWritten;

/**
 * An insertAll call in which some row was not written for a reason other than its own data (`RowNotWritten`).
 * A `TransientError`, so ingest redelivers the whole call; the schema sweep reads `outcomes` to act per row.
 */
export class PartialInsertError extends TransientError {
  // `name` stays `TransientError`: logs and callers that know only the base class read it unchanged.
  /** One outcome per row of the call, in the order sent. */
  readonly outcomes: readonly RowOutcome[];
  constructor(
    operation: string,
    message: string,
    outcomes: readonly RowOutcome[],
    options?: { cause?: unknown },
  ) {
    super(operation, message, options);
    this.outcomes = outcomes;
  }
}

/** Writes rows to a table. Implementations throw `TransientError` for anything a retry may fix. */
export interface RowWriter {
  /**
   * Inserts `rows` (1..500, ≤ 9 MB: BigQuery recommends ≤ 500 rows a request and caps a request at 10 MB) and
   * resolves with one result per row, in order.
   * @throws TransientError when the call failed as a whole; `PartialInsertError` when some row failed with a
   * non-data reason, with every row's outcome. Either way the caller must not ack.
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
 * Calls `write` with the rows that have an insertId and answers the others `rejected` without sending them (never
 * streamed without dedup). Results are in the order of `rows`; a `PartialInsertError` from `write` is re-thrown
 * with one outcome per row of `rows` (the unsent rows `rejected`).
 */
export async function withInsertIds(
  rows: readonly InsertRow[],
  write: (rows: readonly InsertRow[]) => Promise<RowResult[]>,
): Promise<RowResult[]> {
  const problems = rows.map(insertIdProblem);
  if (problems.every((p) => p === undefined)) return write(rows);
  const sendable = rows.filter((_, i) => problems[i] === undefined);
  const merge = <T extends RowOutcome>(sent: readonly T[]): (T | RowResult)[] => {
    let next = 0;
    return problems.map((problem): T | RowResult => {
      if (problem !== undefined) {
        return { ok: false, kind: 'rejected', error: problem, missingFields: [] };
      }
      const result = sent[next++];
      if (result === undefined) {
        throw new Error(`writer returned ${sent.length} results for ${sendable.length} rows`);
      }
      return result;
    });
  };
  let written: RowResult[];
  try {
    written = sendable.length === 0 ? [] : await write(sendable);
  } catch (err) {
    if (!(err instanceof PartialInsertError)) throw err;
    const prefix = `${err.operation}: `;
    const message = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
    throw new PartialInsertError(err.operation, message, merge(err.outcomes), { cause: err });
  }
  return merge(written);
}
