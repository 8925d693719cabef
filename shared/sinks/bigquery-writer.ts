// RowWriter over @google-cloud/bigquery's insertAll: raw rows, our insertIds, per-row error classification.
import { BigQuery } from '@google-cloud/bigquery';
import type { TableRef } from '../config/env';
import type { IngestConfig } from '../config/ingest-config';
import { TransientError, errorText } from '../errors';
import {
  PartialInsertError,
  type InsertRow,
  type RowOutcome,
  type RowResult,
  type RowWriter,
  withInsertIds,
} from './row-writer';

/**
 * A BigQuery client for the configured project; at the local emulator (BIGQUERY_EMULATOR_HOST) without
 * `autoRetry`, since the emulator's 500s are not transient.
 */
export function bigQueryClient(
  config: Pick<IngestConfig, 'projectId' | 'bigQueryEndpoint'>,
): BigQuery {
  return new BigQuery({
    ...(config.projectId ? { projectId: config.projectId } : {}),
    ...(config.bigQueryEndpoint ? { apiEndpoint: config.bigQueryEndpoint, autoRetry: false } : {}),
  });
}

/** One entry of insertAll's `insertErrors` (BigQuery REST reference, TableDataInsertAllResponse). */
interface InsertErrorEntry {
  index?: number;
  errors?: { reason?: string; message?: string; location?: string }[];
}

/**
 * What an insertErrors `reason` says about a row (https://cloud.google.com/bigquery/docs/error-messages):
 * `data` (`invalid`): the row's own data was refused, re-sending cannot help (except "no such field" while a new
 * column propagates, see `missingFields`); `stopped`: refused because another row was, "can be re-sent as-is";
 * `transient` (`timeout`, `backendError`, any other reason): not written for the service's own reasons.
 */
export type InsertErrorClass = 'data' | 'stopped' | 'transient';

/** The documented reasons and their class; an unknown reason is `transient` (never drop a row on a guess). */
export const INSERT_ERROR_REASONS: Readonly<Record<string, InsertErrorClass>> = {
  invalid: 'data',
  stopped: 'stopped',
  timeout: 'transient',
  backendError: 'transient',
  internalError: 'transient',
  rateLimitExceeded: 'transient',
  quotaExceeded: 'transient',
};

/** The class of one row's insert errors: `data` only when every reason is `invalid`; `stopped` when all are. */
export function classifyInsertErrors(reasons: readonly string[]): InsertErrorClass {
  const classes = reasons.map((r) => INSERT_ERROR_REASONS[r] ?? 'transient');
  if (classes.length > 0 && classes.every((c) => c === 'data')) return 'data';
  if (classes.length > 0 && classes.every((c) => c === 'stopped')) return 'stopped';
  return 'transient';
}

/** Whole-request HTTP failures that are data problems of the request itself (too large, malformed). */
function isRequestDataError(err: unknown): boolean {
  const e = err as { code?: unknown; errors?: { reason?: string }[] };
  if (e.code !== 400 && e.code !== 413) return false;
  const reasons = (e.errors ?? []).map((x) => x.reason);
  return reasons.length === 0 || reasons.every((r) => r === 'invalid' || r === 'badRequest');
}

const NO_SUCH_FIELD = /no such field:?\s*([A-Za-z0-9_.]+)/gi;

/** Unknown column names in a BigQuery "no such field: x." message; empty when the message has none. */
export function missingFieldsOf(message: string): string[] {
  const names = new Set<string>();
  for (const m of message.matchAll(NO_SUCH_FIELD)) {
    const name = m[1]?.replace(/\.$/, '');
    if (name) names.add(name);
  }
  return [...names].sort();
}

/**
 * Writes with `tabledata.insertAll`: `raw` (our insertIds), `skipInvalidRows` (valid rows land beside a refused
 * one), no `ignoreUnknownValues` (an unknown field is an error, never a silent drop), `partialRetries: 0`.
 */
export class BigQueryRowWriter implements RowWriter {
  constructor(private readonly bigquery: BigQuery) {}

  /** A row without an insertId is answered `rejected` and not sent (see `withInsertIds`). */
  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    return withInsertIds(rows, (sendable) => this.insertAll(table, sendable));
  }

  private async insertAll(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    if (rows.length === 0) return [];
    const operation = `insertAll ${table.datasetId}.${table.tableId}`;
    const dataset = this.bigquery.dataset(
      table.datasetId,
      table.projectId ? { projectId: table.projectId } : {},
    );
    try {
      await dataset.table(table.tableId).insert([...rows], {
        raw: true,
        skipInvalidRows: true,
        ignoreUnknownValues: false,
        partialRetries: 0,
      });
      return rows.map(() => ({ ok: true }));
    } catch (err) {
      if ((err as { name?: unknown }).name === 'PartialFailureError') {
        return this.classifyPartial(operation, rows, err);
      }
      if (isRequestDataError(err)) {
        // The request as a whole was refused for its content. Alone, the row is the culprit; in a batch, isolate.
        if (rows.length === 1) {
          return [
            {
              ok: false,
              kind: 'rejected',
              error: errorText(err),
              missingFields: missingFieldsOf(errorText(err)),
            },
          ];
        }
        const results: RowResult[] = [];
        for (const row of rows) results.push(...(await this.insertAll(table, [row])));
        return results;
      }
      throw new TransientError(operation, errorText(err), { cause: err });
    }
  }

  /**
   * Per-row outcomes of a call BigQuery answered with insertErrors (rows not listed were written).
   * @returns the results when every refused row was refused for its data (`invalid`).
   * @throws PartialInsertError when some row was not written for another reason (stopped, timeout,
   *   backendError, …), with every row's outcome; TransientError for an entry without a valid row index.
   */
  private classifyPartial(
    operation: string,
    rows: readonly InsertRow[],
    err: unknown,
  ): RowResult[] {
    const response = (err as { response?: { insertErrors?: InsertErrorEntry[] } }).response;
    const entries = response?.insertErrors ?? [];
    const outcomes: RowOutcome[] = rows.map(() => ({ ok: true }));
    const notWritten: string[] = [];
    for (const entry of entries) {
      const index = entry.index;
      if (index === undefined || index < 0 || index >= rows.length) {
        throw new TransientError(
          operation,
          `insertErrors entry without a valid row index: ${JSON.stringify(entry)}`,
        );
      }
      const errors = entry.errors ?? [];
      const reasons = errors.map((e) => e.reason ?? 'unknown');
      const message = errors.map((e) => `${e.reason ?? 'unknown'}: ${e.message ?? ''}`).join('; ');
      if (classifyInsertErrors(reasons) === 'data') {
        outcomes[index] = {
          ok: false,
          kind: 'rejected',
          error: message,
          missingFields: missingFieldsOf(message),
        };
        continue;
      }
      outcomes[index] = {
        ok: false,
        kind: 'not_written',
        reasons,
        error: message || 'no reason given',
      };
      notWritten.push(`row ${index} not written: ${message || 'no reason given'}`);
    }
    if (notWritten.length > 0) {
      // A row not written for a non-data reason: a caller that cannot act per row must redeliver the whole call.
      throw new PartialInsertError(operation, notWritten.join('; '), outcomes, { cause: err });
    }
    // Every outcome is now `ok` or `rejected`: a not-written row would have thrown above.
    return outcomes as RowResult[];
  }
}
