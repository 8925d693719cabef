// `offvia trace <id>`: every place a message or event is, from a Pub/Sub message id, an event_id or a booking_id:
// Bronze, Silver (table and dedup view), quarantine, bad data, resolutions, the schema-retry store, the dedup
// ledger, the windows and gold panes that count it, and its log lines.
import { createAggregationFireDeps } from '../pipeline/runtime/compose';
import { BOOKING_PIPELINE } from '../pipelines/booking/definition';
import { routeKey } from '../aggregates/route-key';
import type { BookingAccumulator } from '../aggregates/booking-aggregates';
import { Logger } from '../logging/logger';
import type { FirestoreWindowStore } from '../state/firestore-window-store';
import { keyIdPart } from '../state/ids';
import { firestoreCall, query, type OpsContext } from './context';
import { NotFoundError } from './errors';
import { cellText, keyValues, plainRow, section, table, type Io } from './output';
import {
  ledgerEntry,
  localLogLines,
  retryStoreRows,
  windowDoc,
  type LogLine,
} from './state-reader';

type Row = Record<string, unknown>;

/** Most rows a trace reads per layer (a booking_id with a long history stays readable). */
const MAX_ROWS = 50;

/** One ledger entry with the windows it was counted in and their state. */
export interface TraceLedger {
  eventId: string;
  messageId: string;
  key: string;
  /** `counted` or `dropped` (too late for every window), as the ledger says. */
  outcome: string;
  appliedAt: string | null;
  windows: { windowId: string; phase: string | null; panesEmitted: number | null }[];
}

/** Everything `trace` found; `--json` prints it as is (rows as plain values, times RFC 3339 UTC). */
export interface TraceReport {
  id: string;
  messageIds: string[];
  eventIds: string[];
  bronze: Row[];
  silver: Row[];
  /** The rows the dedup view keeps for the event ids (one per event). */
  silverDedup: Row[];
  quarantine: Row[];
  badData: Row[];
  resolutions: Row[];
  retryStore: Row[];
  ledger: TraceLedger[];
  gold: Row[];
  logs: LogLine[];
  /** Where the log lines are when they cannot be read here (the cloud). */
  logsHint: string | null;
}

/** The places with at least one row, in the order a message travels. */
export function placesFound(r: TraceReport): string[] {
  const places: [string, number][] = [
    ['bronze', r.bronze.length],
    ['silver', r.silver.length],
    ['quarantine', r.quarantine.length],
    ['bad_data', r.badData.length],
    ['retry_store', r.retryStore.length],
    ['ledger', r.ledger.length],
    ['gold', r.gold.length],
    ['resolutions', r.resolutions.length],
  ];
  return places.filter(([, n]) => n > 0).map(([p]) => p);
}

const ids = (rows: readonly Row[], column: string): string[] =>
  rows.map((r) => r[column]).filter((v): v is string => typeof v === 'string' && v !== '');

/**
 * Traces `id` through every layer.
 * @throws NotFoundError (exit 3) when no layer knows the id; OpsError when a backend fails.
 */
export async function trace(ctx: OpsContext, id: string): Promise<TraceReport> {
  const t = ctx.tables;
  // Inside payloads the id is matched as a JSON string value ("BK-90210"), not as any substring: message ids on
  // the emulator are small integers that would match every payload.
  const quoted = JSON.stringify(id);
  const p = { id, quoted };
  const [silver, quarantine, badData, firstResolutions] = await Promise.all([
    query(
      ctx,
      `SELECT * FROM \`${t.silver}\` WHERE source_message_id = @id OR event_id = @id OR booking_id = @id
       ORDER BY ingestion_timestamp LIMIT ${MAX_ROWS}`,
      p,
    ),
    query(
      ctx,
      `SELECT * FROM \`${t.quarantine}\` WHERE source_message_id = @id OR STRPOS(raw_payload, @quoted) > 0
       ORDER BY received_timestamp LIMIT ${MAX_ROWS}`,
      p,
    ),
    query(
      ctx,
      `SELECT * FROM \`${t.badData}\` WHERE source_message_id = @id OR insert_id = @id OR STRPOS(bad_data, @quoted) > 0
       ORDER BY insert_time LIMIT ${MAX_ROWS}`,
      p,
    ),
    query(
      ctx,
      `SELECT * FROM \`${t.resolutions}\` WHERE source_message_id = @id OR row_key = @id OR result_event_id = @id
       ORDER BY resolved_at LIMIT ${MAX_ROWS}`,
      p,
    ),
  ]);
  const retryAll = (await retryStoreRows(ctx)).flatMap(({ table, rows }) =>
    rows.map((r) => ({ table, ...r })),
  );
  const retryStore = retryAll
    .filter((r) => r.sourceMessageId === id || r.insertId === id || r.rowJson.includes(quoted))
    .map((r) => ({
      target_table: r.table,
      insert_id: r.insertId,
      source_message_id: r.sourceMessageId,
      processed_timestamp: new Date(r.processedTimestampMs).toISOString(),
      retry_count: r.retryCount,
      last_error: r.lastError,
      schema_window: r.windowId,
    }));
  const messageIds = [
    ...new Set([
      ...ids(silver, 'source_message_id'),
      ...ids(quarantine, 'source_message_id'),
      ...ids(badData, 'source_message_id'),
      ...ids(firstResolutions, 'source_message_id'),
      ...retryStore.map((r) => r.source_message_id),
    ]),
  ];
  const eventIds = [
    ...new Set([
      ...ids(silver, 'event_id'),
      ...ids(firstResolutions, 'result_event_id'),
      ...retryStore.map((r) => r.insert_id),
      // Bad-data rows of Silver carry the event id as their insert_id.
      ...badData
        .filter((r) => String(r.target_dest) === t.silver)
        .flatMap((r) => ids([r], 'insert_id')),
    ]),
  ];
  const bronzeIds = [...new Set([id, ...messageIds])];
  const [bronze, silverDedup, resolutions] = await Promise.all([
    query(
      ctx,
      `SELECT * FROM \`${t.bronze}\` WHERE message_id IN UNNEST(@ids) OR STRPOS(data, @quoted) > 0
       ORDER BY publish_time LIMIT ${MAX_ROWS}`,
      { ids: bronzeIds, quoted },
      { ids: ['STRING'], quoted: 'STRING' },
    ),
    eventIds.length === 0
      ? Promise.resolve([])
      : query(
          ctx,
          `SELECT event_id, source_message_id, ingestion_timestamp, reprocess_run_id FROM \`${t.silverDedup}\`
           WHERE event_id IN UNNEST(@ids)`,
          { ids: eventIds },
          { ids: ['STRING'] },
        ),
    // Resolutions of every message and event found, not only of the id typed (a booking_id names neither).
    query(
      ctx,
      `SELECT * FROM \`${t.resolutions}\`
       WHERE source_message_id IN UNNEST(@mids) OR row_key IN UNNEST(@keys) OR result_event_id IN UNNEST(@eids)
       ORDER BY resolved_at LIMIT ${MAX_ROWS}`,
      {
        mids: bronzeIds,
        keys: [...new Set([id, ...eventIds, ...messageIds])],
        eids: [id, ...eventIds],
      },
      { mids: ['STRING'], keys: ['STRING'], eids: ['STRING'] },
    ),
  ]);
  for (const m of ids(bronze, 'message_id')) if (!messageIds.includes(m)) messageIds.push(m);
  // The id itself may be an event id only the ledger knows (an event whose Silver row is gone or elsewhere).
  const ledgerIds = [...new Set([...eventIds, id])];
  const ledger: TraceLedger[] = [];
  for (const eventId of ledgerIds) {
    const entry = await ledgerEntry(ctx, eventId);
    if (entry === null) {
      // The key-groups layout keeps dedup ids inside the window state, not in ledger documents: ask the store
      // (either layout) with the event's key and windows, from its Silver row.
      const found = await keyGroupsOutcome(ctx, eventId, silver);
      if (found !== null) ledger.push(found);
      continue;
    }
    const key = String(entry.key);
    const windowIds = Array.isArray(entry.window_ids) ? entry.window_ids.map(String) : [];
    const windows = await Promise.all(
      windowIds.map(async (windowId) => {
        const doc = await windowDoc(ctx, `${keyIdPart(key)}~${windowId}`);
        return {
          windowId,
          phase: doc === null ? null : String(doc.phase),
          panesEmitted: doc === null ? null : Number(doc.panes_emitted),
        };
      }),
    );
    ledger.push({
      eventId,
      messageId: String(entry.message_id),
      key,
      outcome: String(entry.outcome),
      appliedAt:
        typeof entry.applied_at_ms === 'number'
          ? new Date(entry.applied_at_ms).toISOString()
          : null,
      windows,
    });
  }
  if (!eventIds.includes(id) && ledger.some((l) => l.eventId === id)) eventIds.push(id);
  const gold: Row[] = [];
  for (const l of ledger) {
    const starts = l.windows.map((w) => Number(w.windowId.split('_')[0]));
    if (starts.length === 0) continue;
    const rows = await query(
      ctx,
      `SELECT route_key, window_start, window_end, pane_timing, pane_index, booking_count, fare_total, is_final,
              emitted_at, insert_id
       FROM \`${t.gold}\`
       WHERE pipeline = @pipeline AND route_key = @key AND UNIX_MILLIS(window_start) IN UNNEST(@starts)
       ORDER BY window_start, pane_index`,
      { pipeline: ctx.windows.pipeline, key: l.key, starts },
      { pipeline: 'STRING', key: 'STRING', starts: ['INT64'] },
    );
    const appliedMs = l.appliedAt === null ? 0 : Date.parse(l.appliedAt);
    // A pane counts the event when it was emitted after the event was applied to the window state.
    for (const r of rows) {
      gold.push({
        ...plainRow(r),
        event_id: l.eventId,
        includes_event: Date.parse(cellText(r.emitted_at)) >= appliedMs,
      });
    }
  }
  const needles = [...new Set([id, ...messageIds, ...eventIds])];
  const report: TraceReport = {
    id,
    messageIds,
    eventIds,
    bronze: bronze.map(plainRow),
    silver: silver.map(plainRow),
    silverDedup: silverDedup.map(plainRow),
    quarantine: quarantine.map(plainRow),
    badData: badData.map(plainRow),
    resolutions: resolutions.map(plainRow),
    retryStore,
    ledger,
    gold,
    logs: localLogLines(ctx, needles),
    logsHint:
      ctx.mode === 'local'
        ? null
        : `gcloud logging read '${needles.map((n) => `jsonPayload.message_id="${n}" OR jsonPayload.event_id="${n}"`).join(' OR ')}' --project ${ctx.projectId} --freshness 30d`,
  };
  if (placesFound(report).length === 0 && report.logs.length === 0) {
    throw new NotFoundError(
      `${JSON.stringify(id)} is not a message id, event_id or booking_id in any layer of ${ctx.projectId}`,
    );
  }
  return report;
}

/** The report as sections, one per place. */
export function formatTrace(r: TraceReport): string {
  const out: string[] = [
    `offvia trace ${r.id}: found in ${placesFound(r).join(', ') || 'logs only'}`,
    `message ids: ${r.messageIds.join(', ') || '-'}   event ids: ${r.eventIds.join(', ') || '-'}`,
  ];
  out.push(
    section(
      `Bronze (${r.bronze.length})`,
      table(
        ['message_id', 'publish_time', 'data'],
        r.bronze.map((b) => [b.message_id, b.publish_time, b.data]),
      ),
    ),
    section(
      `Silver (${r.silver.length} rows; the dedup view keeps ${r.silverDedup.length})`,
      table(
        [
          'event_id',
          'booking_id',
          'route',
          'fare',
          'status',
          'event_timestamp',
          'source_message_id',
          'run',
          'in view',
        ],
        r.silver.map((s) => [
          s.event_id,
          s.booking_id,
          `${cellText(s.origin_airport)}-${cellText(s.destination_airport)}`,
          `${cellText(s.fare_amount)} ${cellText(s.currency)}`,
          s.booking_status,
          s.event_timestamp,
          s.source_message_id,
          s.reprocess_run_id,
          r.silverDedup.some(
            (d) =>
              d.event_id === s.event_id &&
              d.source_message_id === s.source_message_id &&
              d.ingestion_timestamp === s.ingestion_timestamp,
          )
            ? 'yes'
            : 'no',
        ]),
        30,
      ),
    ),
    section(
      `Quarantine (${r.quarantine.length})`,
      table(
        ['source_message_id', 'stage', 'received', 'reason', 'payload'],
        r.quarantine.map((q) => [
          q.source_message_id,
          q.error_stage,
          q.received_timestamp,
          q.error_reason,
          q.raw_payload,
        ]),
        40,
      ),
    ),
    section(
      `Bad data (${r.badData.length})`,
      table(
        ['insert_id', 'target', 'inserted', 'error'],
        r.badData.map((b) => [b.insert_id, b.target_dest, b.insert_time, b.error]),
        50,
      ),
    ),
    section(
      `Resolutions (${r.resolutions.length})`,
      table(
        ['layer', 'row_key', 'run_id', 'action', 'outcome', 'by', 'at'],
        r.resolutions.map((x) => [
          x.layer,
          x.row_key,
          x.run_id,
          x.action,
          x.outcome,
          x.resolved_by,
          x.resolved_at,
        ]),
        40,
      ),
    ),
    section(
      `Schema-retry store (${r.retryStore.length})`,
      table(
        ['target', 'insert_id', 'message', 'retries', 'last error'],
        r.retryStore.map((x) => [
          x.target_table,
          x.insert_id,
          x.source_message_id,
          x.retry_count,
          x.last_error,
        ]),
        40,
      ),
    ),
    section(
      `Dedup ledger and windows (${r.ledger.length})`,
      r.ledger.length === 0
        ? table(['event_id'], [])
        : r.ledger
            .map((l) =>
              keyValues([
                ['event_id', l.eventId],
                ['first delivered by', l.messageId],
                ['key', l.key],
                ['outcome', l.outcome],
                ['applied at', l.appliedAt],
                [
                  'windows',
                  l.windows
                    .map((w) => `${w.windowId} ${w.phase ?? 'gone'} (${w.panesEmitted ?? 0} panes)`)
                    .join('; '),
                ],
              ]),
            )
            .join('\n'),
    ),
    section(
      `Gold panes of its windows (${r.gold.length})`,
      table(
        [
          'route',
          'window_start',
          'timing',
          'index',
          'bookings',
          'fare_total',
          'final',
          'emitted_at',
          'counts it',
        ],
        r.gold.map((g) => [
          g.route_key,
          g.window_start,
          g.pane_timing,
          g.pane_index,
          g.booking_count,
          g.fare_total,
          g.is_final,
          g.emitted_at,
          g.includes_event ? 'yes' : 'no',
        ]),
      ),
    ),
    section(
      `Log lines (${r.logs.length})`,
      r.logsHint ??
        (r.logs
          .map((l) => `${l.service}: ${l.line.length > 300 ? `${l.line.slice(0, 299)}…` : l.line}`)
          .join('\n') ||
          '(none)'),
    ),
  );
  return out.join('\n');
}

/** Prints the report as sections or JSON. */
export function printTrace(io: Io, report: TraceReport, json: boolean): void {
  io.out(json ? JSON.stringify(report, null, 2) : formatTrace(report));
}

/** A BigQuery cell as text: timestamps come back as `{ value }` objects. */
function cellString(v: unknown): string {
  if (v !== null && typeof v === 'object' && 'value' in v) return String(v.value);
  return String(v);
}

/**
 * What the window state says about an event that has no per-window ledger document: its outcome (`counted` or
 * `dropped`) from the dedup ids kept in its key-group shard documents (`GroupedFirestoreWindowStore.eventOutcome`,
 * which falls back to the ledger for windows still in the per-window layout), with its key and windows computed
 * from its Silver row as ingest computed them. `null` when the event has no Silver row here or the state never
 * saw it (or its tombstones expired).
 * @throws OpsError when Firestore fails (via firestoreCall)
 */
async function keyGroupsOutcome(
  ctx: OpsContext,
  eventId: string,
  silver: readonly Row[],
): Promise<TraceLedger | null> {
  const row = silver.find((r) => String(r.event_id) === eventId);
  if (row === undefined) return null;
  const eventTimeMs = Date.parse(cellString(row.event_timestamp));
  if (Number.isNaN(eventTimeMs)) return null;
  const key = routeKey({
    origin: String(row.origin_airport),
    destination: String(row.destination_airport),
    currency: String(row.currency),
  });
  const windows = createAggregationFireDeps(
    BOOKING_PIPELINE,
    ctx.env,
    new Logger('offvia', () => undefined),
    {
      firestore: ctx.firestore(),
    },
  );
  const assigned = windows.keyed.assign(eventTimeMs);
  const outcome = await firestoreCall(ctx, 'window state', () =>
    (windows.store as FirestoreWindowStore<BookingAccumulator>).eventOutcome(
      eventId,
      key,
      assigned,
    ),
  );
  if (outcome === null) return null;
  return {
    eventId,
    messageId: String(row.source_message_id),
    key,
    outcome,
    appliedAt: null,
    windows: assigned.map((w) => ({
      windowId: `${w.startMs}_${w.endMs}`,
      phase: null,
      panesEmitted: null,
    })),
  };
}
