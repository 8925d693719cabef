// Reads the Bronze, Silver, quarantine and bad-data layers, and the schema-retry store, for a set of Pub/Sub
// message ids (demo and tests).
import { setTimeout as sleep } from 'node:timers/promises';
import { BigQuery } from '@google-cloud/bigquery';
import { Firestore } from '@google-cloud/firestore';
import { tableName } from '../../shared/config/env';
import { loadIngestConfig } from '../../shared/config/ingest-config';
import { firestoreClient } from '../../shared/drift/runtime';
import { loadSchemaDriftConfig } from '../../shared/config/schema-drift-config';
import { FirestoreDriftStore } from '../../shared/drift/firestore-store';
import { plainRow } from '../../shared/ops/output';

/** Connection settings, from the stack's env file (`.local/stack/env`). */
export interface StackEnv {
  projectId: string;
  bigQueryEndpoint: string | undefined;
}

/** Reads the stack's environment variables (set by `deploy/local/stack.sh env` or with-stack.sh). */
export function stackEnv(env: NodeJS.ProcessEnv = process.env): StackEnv {
  const projectId = env.OFFVIA_PROJECT_ID ?? env.GOOGLE_CLOUD_PROJECT ?? 'offvia-local';
  const host = env.BIGQUERY_EMULATOR_HOST;
  return {
    projectId,
    bigQueryEndpoint:
      host === undefined ? undefined : /^https?:/.test(host) ? host : `http://${host}`,
  };
}

/** A BigQuery client for the stack (emulator when BIGQUERY_EMULATOR_HOST is set). */
export function stackBigQuery(env: StackEnv = stackEnv()): BigQuery {
  return new BigQuery({
    projectId: env.projectId,
    ...(env.bigQueryEndpoint ? { apiEndpoint: env.bigQueryEndpoint, autoRetry: false } : {}),
  });
}

export type Row = Record<string, unknown>;

/** Runs `query` with named `params` (and their `types`, where the emulator needs them); resolves with its rows. */
export async function queryRows(
  bq: BigQuery,
  query: string,
  params: Record<string, unknown> = {},
  types?: Record<string, string | string[]>,
): Promise<Row[]> {
  const [rows] = await bq.query({ query, params, ...(types && { types }) });
  return rows as Row[];
}

/** The four layers' rows for the given message ids, and the rows waiting in the schema-retry store. */
export interface Layers {
  bronze: Row[];
  silver: Row[];
  quarantine: Row[];
  badData: Row[];
  /**
   * Rows held for a schema change (Firestore), one per event: the booking's Silver columns that place it in a
   * window (`booking_id`, route, `event_timestamp`, `event_id`), `source_message_id`, target, retry count, error.
   */
  retryStore: Row[];
}

let firestore: Firestore | undefined;

/**
 * The schema-retry store's rows whose first delivery had one of `messageIds`, for every configured target table
 * (`OFFVIA_SCHEMA_*`, as the functions read them); empty when the stack has no Firestore emulator or drift is off.
 */
export async function readRetryStore(
  projectId: string,
  messageIds: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Row[]> {
  if (!env.FIRESTORE_EMULATOR_HOST) return [];
  const ingest = loadIngestConfig(env);
  const drift = loadSchemaDriftConfig(env, ingest.silverTable, projectId);
  if (!drift.enabled) return [];
  firestore ??= firestoreClient(projectId, ingest.firestoreDatabase);
  const store = new FirestoreDriftStore(firestore, drift.firestoreRoot);
  const wanted = new Set(messageIds);
  const rows: Row[] = [];
  for (const table of drift.targetTables) {
    const key = tableName(table, projectId);
    const { rows: waiting } = await store.waitingRows(key, 100_000);
    for (const r of waiting) {
      if (!wanted.has(r.sourceMessageId)) continue;
      const silverRow = JSON.parse(r.rowJson) as Row;
      rows.push({
        booking_id: silverRow.booking_id,
        origin_airport: silverRow.origin_airport,
        destination_airport: silverRow.destination_airport,
        currency: silverRow.currency,
        event_timestamp: silverRow.event_timestamp,
        event_id: silverRow.event_id,
        source_message_id: r.sourceMessageId,
        target_table: r.targetTable,
        schema_window: r.windowId,
        retry_count: r.retryCount,
        last_error: r.lastError,
      });
    }
  }
  return rows;
}

/** Reads every layer's rows whose message id is in `messageIds`, as plain strings (timestamps RFC 3339 UTC). */
export async function readLayers(
  bq: BigQuery,
  projectId: string,
  messageIds: readonly string[],
): Promise<Layers> {
  const q = async (sql: string): Promise<Row[]> =>
    (await queryRows(bq, sql, { ids: [...messageIds] }, { ids: ['STRING'] })).map(plainRow);
  const p = projectId;
  const [bronze, silver, quarantine, badData] = await Promise.all([
    q(`SELECT message_id, publish_time, subscription_name,
         SUBSTR(data, 1, 80) AS data, TO_JSON_STRING(attributes) AS attributes
       FROM \`${p}.offvia_bronze.raw_bookings\` WHERE message_id IN UNNEST(@ids) ORDER BY SAFE_CAST(message_id AS INT64), message_id`),
    q(`SELECT booking_id, passenger_id, flight_number, origin_airport, destination_airport,
         fare_amount, currency, booking_status,
         event_timestamp, source_message_id, event_id
       FROM \`${p}.offvia_silver.fact_bookings\` WHERE source_message_id IN UNNEST(@ids) ORDER BY booking_id`),
    q(`SELECT error_stage, error_reason, SUBSTR(raw_payload, 1, 60) AS raw_payload, source_message_id,
         received_timestamp
       FROM \`${p}.offvia_quarantine.poisoned_events\` WHERE source_message_id IN UNNEST(@ids)
       ORDER BY error_stage, SAFE_CAST(source_message_id AS INT64), source_message_id`),
    q(`SELECT target_dest, error, SUBSTR(bad_data, 1, 60) AS bad_data, source_message_id
       FROM \`${p}.offvia_quarantine.bad_data\` WHERE source_message_id IN UNNEST(@ids) ORDER BY SAFE_CAST(source_message_id AS INT64), source_message_id`),
  ]);
  // After BigQuery: a row only ever leaves the retry store (for Silver or bad data), so reading it second can
  // miss a row in flight (the caller polls again) but never show one in two places.
  const retryStore = await readRetryStore(projectId, messageIds);
  return { bronze, silver, quarantine, badData, retryStore };
}

/**
 * Polls until each id is in Bronze (when `requireBronze`) and in Silver, quarantine, bad data or the schema-retry
 * store, or `timeoutMs` passes. Returns the last read and whether it completed.
 */
export async function waitForLayers(
  bq: BigQuery,
  projectId: string,
  messageIds: readonly string[],
  timeoutMs: number,
  options: { requireBronze?: boolean } = {},
): Promise<{ layers: Layers; complete: boolean }> {
  const requireBronze = options.requireBronze ?? true;
  const deadline = Date.now() + timeoutMs;
  const want = new Set(messageIds);
  for (;;) {
    const layers = await readLayers(bq, projectId, messageIds);
    const bronzeIds = new Set(layers.bronze.map((r) => String(r.message_id)));
    const routed = new Set(
      [...layers.silver, ...layers.quarantine, ...layers.badData, ...layers.retryStore].map((r) =>
        String(r.source_message_id),
      ),
    );
    const complete = [...want].every(
      (id) => (!requireBronze || bronzeIds.has(id)) && routed.has(id),
    );
    if (complete || Date.now() > deadline) return { layers, complete };
    await sleep(300);
  }
}

/** Polls `done()` every `intervalMs` until it is true (resolves true) or `deadlineMs` (epoch ms) passes (false). */
export async function pollUntil(
  deadlineMs: number,
  intervalMs: number,
  done: () => Promise<boolean>,
): Promise<boolean> {
  for (;;) {
    if (await done()) return true;
    if (Date.now() >= deadlineMs) return false;
    await sleep(Math.min(intervalMs, deadlineMs - Date.now()));
  }
}

/** Renders rows as an aligned text table (long cells cut at `maxCell` characters). */
export function formatTable(title: string, rows: readonly Row[], maxCell = 48): string {
  if (rows.length === 0) return `${title}: (no rows)\n`;
  const cols = Object.keys(rows[0] ?? {});
  const cell = (v: unknown): string => {
    const s =
      v === null || v === undefined ? 'NULL' : typeof v === 'string' ? v : JSON.stringify(v);
    const flat = s.replace(/\s+/g, ' ');
    return flat.length > maxCell ? `${flat.slice(0, maxCell - 1)}…` : flat;
  };
  const body = rows.map((r) => cols.map((c) => cell(r[c])));
  const widths = cols.map((c, i) => Math.max(c.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]) =>
    '| ' + cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ') + ' |';
  const sep = '|-' + widths.map((w) => '-'.repeat(w)).join('-|-') + '-|';
  return [`${title} (${rows.length} rows)`, line(cols), sep, ...body.map(line)].join('\n') + '\n';
}
