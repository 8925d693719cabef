// The ingest side of schema drift: write extra fields that are columns, hold the row when some are not.
import { stringify as losslessStringify } from 'lossless-json';
import type { SchemaDriftConfig } from '../config/schema-drift-config';
import { tableName, type TableRef } from '../config/env';
import { defineField } from '../contract/json-payload';
import { TransientError, errorText } from '../errors';
import type { DriftEvent, SchemaDriftGate } from '../pipeline/runtime/ingest';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import type { PubSubMessage } from '../pubsub/message';
import { describeName, proposeFields, schemaWindowOf, type ProposedFields } from '../schema';
import type { InsertRow, RowWriter } from '../sinks/row-writer';
import { badDataRowOf } from './bad-data';
import {
  classifyExtraFields,
  errorsText,
  isPermanentError,
  type DriftFieldError,
} from './field-errors';
import type { ProposalMerger } from './proposal-merger';
import { DRIFT_PROTECTED_NAMES } from './protected-names';
import type { TableSchemaCache } from './schema-cache';
import { retryRowId, type DriftStore } from './store';

/**
 * Largest stored row (row JSON + extra-fields JSON), UTF-8 bytes: a Firestore document holds at most 1 MiB
 * (https://firebase.google.com/docs/firestore/quotas); the rest is headroom for the other fields.
 */
export const MAX_RETRY_ROW_BYTES = 900_000;

/** A cached schema older than this, ms, is read again before a row is held for a field it lacks. */
export const MISS_REFRESH_MS = 5_000;

/** What the gate needs. */
export interface DriftGateDeps {
  readonly config: SchemaDriftConfig;
  readonly store: DriftStore;
  readonly schemas: TableSchemaCache;
  readonly merger: ProposalMerger;
  /** For rows too large for the retry store, which go to bad data at once. */
  readonly writer: RowWriter;
  readonly badDataTable: TableRef;
  /** The table valid events are written to (Silver); one of `config.targetTables`. */
  readonly target: TableRef;
  readonly projectId: string | undefined;
  readonly logger: Logger;
  /** ms since the epoch (UTC). */
  readonly now: () => number;
}

/** The outcome of holding a row. */
type Held = { action: 'held'; reason: string };

/** The row went to the bad-data table (a permanent error, or too large to wait); `error` is its `error` column. */
export type RoutedToBadData = { action: 'bad_data'; targetDest: string; error: string };

/**
 * `SchemaDriftGate` over the Firestore retry store (docs/schema-drift.md, "In `ingestBooking`"). For a valid event:
 * every extra field fitting a column of the cached schema (`classifyExtraFields`): `write`; a permanent error
 * (`isPermanentError`): bad data at once with every reason; otherwise the proposable fields are merged into the
 * pending change of the current schema window and the row is stored in the retry store (`held`).
 * `holdRejected` holds a written row BigQuery refused with "no such field" the same way.
 * Throws TransientError when BigQuery or Firestore cannot be reached (redelivery; holding is idempotent per insertId).
 */
export class RetryStoreDriftGate implements SchemaDriftGate {
  private readonly tableKey: string;

  constructor(private readonly deps: DriftGateDeps) {
    this.tableKey = tableName(deps.target, deps.projectId);
    const configured = deps.config.targetTables.map((t) => tableName(t, deps.projectId));
    if (!configured.includes(this.tableKey)) {
      throw new Error(`drift target ${this.tableKey} is not a configured target table`);
    }
  }

  async route(
    event: DriftEvent,
    message: PubSubMessage,
    receivedAtMs: number,
    row: InsertRow,
  ): Promise<{ action: 'write'; extraColumns: Record<string, unknown> } | Held | RoutedToBadData> {
    if (Object.keys(event.extraFields).length === 0) return { action: 'write', extraColumns: {} };
    return this.guard(message, async () => {
      const { schemas, target, config } = this.deps;
      const rules = {
        protectedNames: DRIFT_PROTECTED_NAMES,
        maxNewFieldsPerEvent: config.maxNewFieldsPerEvent,
      };
      let cached = await schemas.get(target);
      let verdict = classifyExtraFields(event.extraFields, cached.schema, rules);
      const misses = verdict.errors.some((e) => e.code === 'NO_COLUMN' || e.code === 'FIELD_FLOOD');
      if (misses && this.deps.now() - cached.fetchedMs >= MISS_REFRESH_MS) {
        cached = await schemas.get(target, MISS_REFRESH_MS);
        verdict = classifyExtraFields(event.extraFields, cached.schema, rules);
      }
      if (verdict.nullFields.length > 0) {
        logs.nullExtraFieldsLeftOut(this.deps.logger, {
          message_id: message.messageId,
          event_id: event.eventId,
          table: this.tableKey,
          null_fields: verdict.nullFields.slice(0, 20),
          null_field_count: verdict.nullFields.length,
        });
      }
      if (verdict.errors.length === 0)
        return { action: 'write', extraColumns: { ...verdict.values } };
      const permanent = verdict.errors.filter(isPermanentError);
      if (permanent.length > 0) {
        // Every reason, the permanent ones first.
        const errors = [...permanent, ...verdict.errors.filter((e) => !isPermanentError(e))];
        const error = errorsText(errors);
        logs.driftRowRejectedAtIngest(this.deps.logger, message, {
          eventId: event.eventId,
          table: this.tableKey,
          error,
        });
        return this.toBadData(message, receivedAtMs, row, storedForms(event, row), error);
      }
      return this.hold(event, message, receivedAtMs, row, verdict.errors, verdict.proposed);
    });
  }

  /**
   * BigQuery refused the row written after `route` said `write`. When the refusal names only unknown fields that
   * are extra fields of the event, the row is held; otherwise `undefined` (the caller routes it to bad data).
   * @param row the row without its extra columns, as passed to `route`.
   */
  async holdRejected(
    event: DriftEvent,
    message: PubSubMessage,
    receivedAtMs: number,
    row: InsertRow,
    rejection: { error: string; missingFields: readonly string[] },
  ): Promise<Held | RoutedToBadData | undefined> {
    this.deps.schemas.invalidate(this.deps.target);
    const extra = event.extraFields;
    const missing = rejection.missingFields;
    if (missing.length === 0 || !missing.every((f) => Object.hasOwn(extra, f))) return undefined;
    return this.guard(message, () => {
      const subset: Record<string, unknown> = {};
      for (const field of missing) defineField(subset, field, extra[field]);
      const errors: DriftFieldError[] = missing.map((field) => ({
        field,
        code: 'INSERT_REJECTED',
        reason: `BigQuery refused field ${describeName(field)}: ${rejection.error}`,
      }));
      return this.hold(event, message, receivedAtMs, row, errors, proposeFields(subset).proposed);
    });
  }

  /** Logs a transient failure with the message's context before it propagates (redelivery). */
  private async guard<T>(message: PubSubMessage, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const operation = err instanceof TransientError ? err.operation : 'schema drift gate';
      logs.transientFailure(this.deps.logger, message, operation, errorText(err));
      throw err;
    }
  }

  private async hold(
    event: DriftEvent,
    message: PubSubMessage,
    receivedAtMs: number,
    row: InsertRow,
    fieldErrors: readonly DriftFieldError[],
    proposed: ProposedFields,
  ): Promise<Held | RoutedToBadData> {
    const { config, store, merger, logger } = this.deps;
    const forms = storedForms(event, row);
    const { rowJson, extraFieldsJson } = forms;
    const bytes = Buffer.byteLength(rowJson, 'utf8') + Buffer.byteLength(extraFieldsJson, 'utf8');
    if (bytes > MAX_RETRY_ROW_BYTES) {
      // The retry store cannot hold it: bad data at once, with the reason.
      logs.driftRowTooLarge(logger, message, this.tableKey, bytes, MAX_RETRY_ROW_BYTES);
      const error =
        `row with extra fields is ${bytes} bytes, more than the schema-retry store holds ` +
        `(${MAX_RETRY_ROW_BYTES}); it cannot wait for a schema change`;
      return this.toBadData(message, receivedAtMs, row, forms, error);
    }
    let errors = [...fieldErrors];
    const window = schemaWindowOf(this.deps.now(), config.windowMinutes);
    let windowId = window.id;
    if (proposed.size > 0) {
      const merged = await merger.merge(this.tableKey, window, proposed);
      windowId = merged.windowId;
      errors = errors.map((e) =>
        e.field !== null && proposed.has(e.field) && !merged.accepted.has(e.field)
          ? {
              field: e.field,
              code: 'PROPOSAL_CAP',
              reason:
                `the pending change of window ${merged.windowId} already holds ` +
                `${config.maxProposedFieldsPerWindow} fields (OFFVIA_SCHEMA_MAX_PROPOSED_FIELDS_PER_WINDOW); ` +
                `field ${describeName(e.field)} is not proposed`,
            }
          : e,
      );
    }
    const lastError = errorsText(errors);
    const stored = await store.putRow(this.tableKey, {
      id: retryRowId(row.insertId),
      targetTable: this.tableKey,
      insertId: row.insertId,
      sourceMessageId: message.messageId,
      processedTimestampMs: receivedAtMs,
      rowJson,
      extraFieldsJson,
      windowId,
      errors,
      errorCount: errors.length,
      retryCount: 0,
      lastError,
      lastAttemptMs: null,
    });
    logs.rowHeldForSchema(logger, {
      message_id: message.messageId,
      event_id: event.eventId,
      table: this.tableKey,
      schema_window: windowId,
      proposed_fields: [...proposed.keys()].slice(0, 20),
      proposed_count: proposed.size,
      error: errorsText(errors, 5),
      retry_store: stored === 'created' ? 'stored' : 'already stored (redelivery)',
    });
    return { action: 'held', reason: errorsText(errors, 5) };
  }

  /**
   * Writes the row to the bad-data table (retry count 0, `insert_time` now) and says so.
   * @throws TransientError when BigQuery refuses it (the message is redelivered; the row is not lost).
   */
  private async toBadData(
    message: PubSubMessage,
    receivedAtMs: number,
    row: InsertRow,
    forms: StoredForms,
    error: string,
  ): Promise<RoutedToBadData> {
    const { writer, badDataTable, logger, projectId } = this.deps;
    const badRow = badDataRowOf({
      ...forms,
      targetDest: this.tableKey,
      error,
      nowMs: this.deps.now(),
      processedTimestampMs: receivedAtMs,
      retryCount: 0,
      sourceMessageId: message.messageId,
      insertId: row.insertId,
    });
    const [result] = await writer.insertRows(badDataTable, [badRow]);
    if (result !== undefined && !result.ok) {
      throw new TransientError(
        `insertAll ${tableName(badDataTable, projectId)}`,
        `bad-data row refused: ${result.error}`,
      );
    }
    logs.badDataWritten(logger, message, this.tableKey, tableName(badDataTable, projectId));
    return { action: 'bad_data', targetDest: this.tableKey, error };
  }
}

interface StoredForms {
  readonly rowJson: string;
  readonly extraFieldsJson: string;
}

/**
 * The retry store's and bad-data table's text forms of a row: the Silver row as JSON, and the extra fields with
 * lossless-json, so a big integer keeps every digit (JSON.stringify would turn a `LosslessNumber` into an object).
 */
function storedForms(event: DriftEvent, row: InsertRow): StoredForms {
  return {
    rowJson: JSON.stringify(row.json),
    extraFieldsJson: losslessStringify(event.extraFields) ?? '{}',
  };
}
