// Fixtures for the schema-drift tests: bookings with extra fields, a fake table admin, a recording writer, config.
import { tableName, type TableRef } from '../../shared/config/env';
import {
  loadSchemaDriftConfig,
  type SchemaDriftConfig,
} from '../../shared/config/schema-drift-config';
import { validateBooking, type ValidationSuccess } from '../../shared/contract';
import { DdlError, type AddColumnsResult, type TableAdmin } from '../../shared/drift';
import type { PubSubMessage } from '../../shared/pubsub/message';
import type { BqField, TableSchema } from '../../shared/schema';
import type { InsertRow, RowResult, RowWriter } from '../../shared/sinks/row-writer';

/** Silver's columns (sql/020). */
export const SILVER_FIELDS: readonly BqField[] = [
  { name: 'booking_id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'passenger_id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'flight_number', type: 'STRING', mode: 'REQUIRED' },
  { name: 'origin_airport', type: 'STRING', mode: 'REQUIRED' },
  { name: 'destination_airport', type: 'STRING', mode: 'REQUIRED' },
  { name: 'fare_amount', type: 'NUMERIC', mode: 'REQUIRED' },
  { name: 'currency', type: 'STRING', mode: 'REQUIRED' },
  { name: 'booking_status', type: 'STRING', mode: 'REQUIRED' },
  { name: 'event_timestamp', type: 'TIMESTAMP', mode: 'REQUIRED' },
  { name: 'ingestion_timestamp', type: 'TIMESTAMP', mode: 'REQUIRED' },
  { name: 'source_message_id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'event_id', type: 'STRING', mode: 'NULLABLE' },
];

export const SILVER: TableRef = { datasetId: 'offvia_silver', tableId: 'fact_bookings' };
export const BAD_DATA: TableRef = { datasetId: 'offvia_quarantine', tableId: 'bad_data' };
export const SILVER_KEY = tableName(SILVER, 'p-test');
export const PROJECT = 'p-test';

/** A minute in ms. */
export const MIN = 60_000;
/** A window start (the default 3-minute windows, UTC), so tests know where windows end. */
export const W0 = Date.UTC(2026, 9, 7, 14, 9, 0);
/** After the window of W0 closed, with the default 10 s grace. */
export const AFTER_W0 = W0 + 3 * MIN + 10_000;

/** A valid booking payload with `extra` top-level fields; `i` makes booking ids (and event ids) distinct. */
export function bookingPayload(i: number | string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    booking_id: `BK-${i}`,
    passenger_id: 'PAX-1',
    flight_number: 'OF-104',
    origin: 'JFK',
    destination: 'LHR',
    fare: '749.50',
    event_time: '2026-10-07T14:10:00Z',
    ...extra,
  });
}

/** A decoded Pub/Sub message carrying `payload`. */
export function messageOf(
  payload: string,
  messageId: string,
  publishTimeMs?: number,
): PubSubMessage {
  return {
    messageId,
    publishTime: publishTimeMs === undefined ? undefined : new Date(publishTimeMs).toISOString(),
    publishTimeMs,
    attributes: {},
    data: Buffer.from(payload),
    subscription: undefined,
  };
}

/** The contract's verdict on `payload`, which must be valid. */
export function validEvent(
  payload: string,
  messageId: string,
  receivedAtMs: number,
): ValidationSuccess {
  const result = validateBooking(payload, {
    messageId,
    receivedAtMs,
    maxFutureSkewMs: Infinity,
    maxEventAgeMs: Infinity,
  });
  if (!result.ok) throw new Error(`fixture payload is invalid: ${result.reason}`);
  return result;
}

/** The row ingest passes to the gate for `event`. */
export function baseRowOf(event: ValidationSuccess): InsertRow {
  return { insertId: event.eventId, json: { ...event.row, event_id: event.eventId } };
}

/** The drift configuration with defaults (Silver target, project `p-test`) and `overrides`. */
export function driftConfig(overrides: Partial<SchemaDriftConfig> = {}): SchemaDriftConfig {
  return { ...loadSchemaDriftConfig({}, SILVER, PROJECT), ...overrides };
}

/** A TableAdmin over in-memory schemas: counts reads and DDL, can be told to fail. */
export class FakeTableAdmin implements TableAdmin {
  readonly schemas = new Map<string, BqField[]>();
  getSchemaCalls = 0;
  readonly addColumnsCalls: { table: string; columns: string[]; statements: string[] }[] = [];
  failNextAdd: string | undefined;

  constructor(fields: readonly BqField[] = SILVER_FIELDS, table: TableRef = SILVER) {
    this.schemas.set(tableName(table), [...fields]);
  }

  getSchema(table: TableRef): Promise<TableSchema> {
    this.getSchemaCalls++;
    const fields = this.schemas.get(tableName(table));
    if (fields === undefined) return Promise.reject(new Error(`no table ${tableName(table)}`));
    return Promise.resolve({ fields: [...fields] });
  }

  addColumns(
    table: TableRef,
    columns: readonly BqField[],
    statements: readonly string[],
  ): Promise<AddColumnsResult> {
    this.addColumnsCalls.push({
      table: tableName(table),
      columns: columns.map((c) => c.name),
      statements: [...statements],
    });
    if (this.failNextAdd !== undefined) {
      const message = this.failNextAdd;
      this.failNextAdd = undefined;
      return Promise.reject(new DdlError(message));
    }
    const fields = this.schemas.get(tableName(table)) ?? [];
    for (const c of columns) if (!fields.some((f) => f.name === c.name)) fields.push(c);
    this.schemas.set(tableName(table), fields);
    return Promise.resolve({ catalogPatched: [] });
  }
}

/** A RowWriter that records rows per table; `respond` decides each row's result (default: written). */
export class RecordingWriter implements RowWriter {
  readonly written = new Map<string, InsertRow[]>();
  respond: (table: string, row: InsertRow) => RowResult = () => ({ ok: true });

  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    const name = tableName(table);
    const results = rows.map((row) => this.respond(name, row));
    const ok = rows.filter((_, i) => results[i]?.ok === true);
    this.written.set(name, [...(this.written.get(name) ?? []), ...ok]);
    return Promise.resolve(results);
  }

  rows(table: TableRef): InsertRow[] {
    return this.written.get(tableName(table)) ?? [];
  }
}

/** A planned table update adding INT64 column `a` for `change` (the drift store's beginUpdate/finishUpdate input). */
export function addColumnUpdate(
  updateId: string,
  change: { readonly windowId: string; readonly fingerprint: string },
) {
  return {
    updateId,
    changes: [{ windowId: change.windowId, fingerprint: change.fingerprint }],
    addColumns: [{ name: 'a', type: 'INT64', mode: 'NULLABLE' } as const],
    statements: ['ALTER …'],
    unchanged: [],
    rejected: [],
  };
}
