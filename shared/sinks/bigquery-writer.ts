// RowWriter over @google-cloud/bigquery's insertAll: raw rows, our insertIds, per-row error classification.
import type { BigQuery } from '@google-cloud/bigquery';
import type { TableRef } from '../config/env';
import { TransientError, errorText } from '../errors';
import { type InsertRow, type RowResult, type RowWriter, withInsertIds } from './row-writer';

/** One entry of insertAll's `insertErrors` (BigQuery REST reference, TableDataInsertAllResponse). */
interface InsertErrorEntry {
  index?: number;
  errors?: { reason?: string; message?: string; location?: string }[];
}

/**
 * Per-row error reasons that are the row's own data problem. BigQuery documents `invalid` for a row it refuses
 * (bad value, unknown field, missing required field); with skipInvalidRows the other rows are written.
 */
const DATA_REASONS = new Set(['invalid']);

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
 * Writes with `tabledata.insertAll` through the official client: `raw: true` (rows carry our insertIds, the client
 * generates none), `skipInvalidRows: true` (valid rows land even when a neighbour is refused),
 * `ignoreUnknownValues: false` (an unknown field is an error, never a silent drop), `partialRetries: 0` (the
 * client would otherwise re-send refused rows three times).
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

  private classifyPartial(
    operation: string,
    rows: readonly InsertRow[],
    err: unknown,
  ): RowResult[] {
    const response = (err as { response?: { insertErrors?: InsertErrorEntry[] } }).response;
    const entries = response?.insertErrors ?? [];
    const results: RowResult[] = rows.map(() => ({ ok: true }));
    for (const entry of entries) {
      const index = entry.index;
      if (index === undefined || index < 0 || index >= rows.length) {
        throw new TransientError(
          operation,
          `insertErrors entry without a valid row index: ${JSON.stringify(entry)}`,
        );
      }
      const errors = entry.errors ?? [];
      const message = errors.map((e) => `${e.reason ?? 'unknown'}: ${e.message ?? ''}`).join('; ');
      // A row refused for a non-data reason (backendError, timeout, stopped) was not written: redeliver.
      if (errors.length === 0 || !errors.every((e) => DATA_REASONS.has(e.reason ?? ''))) {
        throw new TransientError(
          operation,
          `row ${index} not written: ${message || 'no reason given'}`,
          {
            cause: err,
          },
        );
      }
      results[index] = {
        ok: false,
        kind: 'rejected',
        error: message,
        missingFields: missingFieldsOf(message),
      };
    }
    return results;
  }
}
