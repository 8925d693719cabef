// Builds bad-data rows (offvia_quarantine.bad_data, sql/040) for rows that leave the retry store as failures.
import { createHash } from 'node:crypto';
import type { BadDataRow } from '../pipeline/runtime/ingest';
import type { InsertRow } from '../sinks/row-writer';

/** BigQuery's insertId limit, in characters (insertAll reference). */
const MAX_INSERT_ID_LENGTH = 128;

/**
 * `prefix + id` when that fits BigQuery's 128-character insertId, else `prefix` + 64 hex characters of SHA-256
 * over `id` (stable, so a retried write dedups the same way).
 */
export function boundedInsertId(prefix: string, id: string): string {
  const plain = `${prefix}${id}`;
  if (plain.length <= MAX_INSERT_ID_LENGTH) return plain;
  return `${prefix}${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}

/** What a bad-data row is made of. */
export interface BadDataInput {
  /** The row as it would have been written without extra fields, JSON text. */
  readonly rowJson: string;
  /** The event's extra top-level fields, JSON text. */
  readonly extraFieldsJson: string;
  /** `project.dataset.table` the row was meant for. */
  readonly targetDest: string;
  /** The specific error of the last attempt. */
  readonly error: string;
  /** When the row is written to bad data, ms since the epoch (UTC). */
  readonly nowMs: number;
  /** When the row was first received, ms since the epoch (UTC). */
  readonly processedTimestampMs: number;
  /** Schema-migration attempts the row saw (`retryCount`). */
  readonly retryCount: number;
  readonly sourceMessageId: string;
  /** The row's insertId in its target table. */
  readonly insertId: string;
}

/**
 * The bad-data row of a drift row: `bad_data` is `{"row": <row>, "extra_fields": <extra fields>}` as JSON text,
 * built from the stored texts (nothing re-encoded); insertId `bad:<insertId>` (hashed when over 128 characters).
 */
export function badDataRowOf(input: BadDataInput): InsertRow {
  const row: BadDataRow = {
    bad_data: `{"row":${input.rowJson},"extra_fields":${input.extraFieldsJson}}`,
    target_dest: input.targetDest,
    error: input.error,
    insert_time: new Date(input.nowMs).toISOString(),
    processed_timestamp: new Date(input.processedTimestampMs).toISOString(),
    retry_count: input.retryCount,
    source_message_id: input.sourceMessageId,
    insert_id: input.insertId,
  };
  return { insertId: boundedInsertId('bad:', input.insertId), json: { ...row } };
}
