// `offvia trace <id>`: every place a message or event is, from a message id, an event id or a lookup column (booking:
// booking_id), in every layer, state and log of the pipeline (read through the definition's `operatorColumns`).
import { tableName, type TableRef } from '../config/env';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { aggregationNamespace } from '../pipeline/runtime/namespace';
import { GroupedFirestoreWindowStore } from '../state/grouped-window-store';
import { assignWindows, type JsonValue } from '../windowing';
import { firestoreCall, query, type OpsContext } from './context';
import { NotFoundError } from './errors';
import { cellText, keyValues, pickTable, plainRow, rowsTable, section, table } from './output';
import { localLogLines, pipelineLogs, retryStoreRows, type LogLine } from './state-reader';

type Row = Record<string, unknown>;

/** Most rows a trace reads per layer (a booking_id with a long history stays readable). */
const MAX_ROWS = 50;

/**
 * What one aggregation's state says about an event: the message of its Silver row, its key, `counted` or `dropped`
 * (too late for every window), and its windows `start_end` (epoch ms; sessions: its proto-sessions before merging).
 */
export interface TraceWindows {
  aggregation: string;
  eventId: string;
  messageId: string | null;
  key: string;
  outcome: string;
  windows: { windowId: string }[];
}

/**
 * Everything `trace` found (rows as plain values, times RFC 3339 UTC): `silverDedup` the dedup view's rows of the
 * event ids, `windows` each aggregation's state of them, `gold` their windows' panes (with `aggregation` and
 * `event_id`), `logsHint` where the logs are when they cannot be read here (the cloud).
 */
export interface TraceReport {
  pipeline: string;
  id: string;
  messageIds: string[];
  eventIds: string[];
  bronze: Row[];
  silver: Row[];
  silverDedup: Row[];
  quarantine: Row[];
  badData: Row[];
  resolutions: Row[];
  retryStore: Row[];
  windows: TraceWindows[];
  gold: Row[];
  logs: LogLine[];
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
    ['windows', r.windows.length],
    ['gold', r.gold.length],
    ['resolutions', r.resolutions.length],
  ];
  return places.filter(([, count]) => count > 0).map(([p]) => p);
}

const ids = (rows: readonly Row[], column: string): string[] =>
  rows.map((r) => r[column]).filter((v): v is string => typeof v === 'string' && v !== '');

/** `a, b or c`: the ids `trace` accepts, for the not-found line. */
function idNames(pipeline: AnyPipelineDefinition): string {
  const names = ['message id', 'event_id', ...pipeline.operatorColumns.silver.lookupColumns];
  return `${names.slice(0, -1).join(', ')} or ${names[names.length - 1] ?? ''}`;
}

/**
 * Traces `id` through every layer of `pipeline`.
 * @throws NotFoundError (exit 3) when no layer knows the id; OpsError when a backend fails.
 */
export async function trace(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  id: string,
): Promise<TraceReport> {
  const q = (ref: TableRef): string => tableName(ref, ctx.projectId);
  const { tables: t, operatorColumns: cols } = pipeline;
  const { silver: s, quarantine: c } = cols;
  // Inside payloads the id is matched as a JSON string ("BK-90210"): small integer ids would match any payload.
  const quoted = JSON.stringify(id);
  const p = { id, quoted };
  /** Up to MAX_ROWS rows of `ref` where `where` holds, ordered by `order`; none without the table. */
  const rowsOf = (
    ref: TableRef | null,
    where: string,
    order: string,
    params: Record<string, unknown> = p,
    types?: Record<string, string | string[]>,
  ): Promise<Row[]> =>
    ref === null
      ? Promise.resolve([])
      : query(
          ctx,
          `SELECT * FROM \`${q(ref)}\` WHERE ${where} ORDER BY ${order} LIMIT ${MAX_ROWS}`,
          params,
          types,
        );
  const silverIds = [s.messageId, s.eventId, ...s.lookupColumns].map((x) => `${x} = @id`);
  const [silver, quarantine, badData, firstResolutions, retry] = await Promise.all([
    rowsOf(t.silver, silverIds.join(' OR '), s.writtenAt),
    rowsOf(t.quarantine, `${c.messageId} = @id OR STRPOS(${c.payload}, @quoted) > 0`, c.rejectedAt),
    rowsOf(
      t.badData,
      'source_message_id = @id OR insert_id = @id OR STRPOS(bad_data, @quoted) > 0',
      'insert_time',
    ),
    rowsOf(
      cols.resolutions,
      'source_message_id = @id OR row_key = @id OR result_event_id = @id',
      'resolved_at',
    ),
    retryStoreRows(ctx, pipeline),
  ]);
  const retryStore = retry
    .flatMap(({ table: target, rows }) => rows.map((r) => ({ target, ...r })))
    .filter((r) => r.sourceMessageId === id || r.insertId === id || r.rowJson.includes(quoted))
    .map((r) => ({
      target_table: r.target,
      insert_id: r.insertId,
      source_message_id: r.sourceMessageId,
      processed_timestamp: new Date(r.processedTimestampMs).toISOString(),
      retry_count: r.retryCount,
      last_error: r.lastError,
      schema_window: r.windowId,
    }));
  const silverTable = q(t.silver);
  const messageIds = [
    ...new Set([
      ...ids(silver, s.messageId),
      ...ids(quarantine, c.messageId),
      ...ids(badData, 'source_message_id'),
      ...ids(firstResolutions, 'source_message_id'),
      ...retryStore.map((r) => r.source_message_id),
    ]),
  ];
  const eventIds = [
    ...new Set([
      ...ids(silver, s.eventId),
      ...ids(firstResolutions, 'result_event_id'),
      ...retryStore.map((r) => r.insert_id),
      // Bad-data rows of Silver carry the event id as their insert_id.
      ...ids(
        badData.filter((r) => String(r.target_dest) === silverTable),
        'insert_id',
      ),
    ]),
  ];
  const bronzeIds = [...new Set([id, ...messageIds])];
  const [bronze, silverDedup, resolutions] = await Promise.all([
    rowsOf(
      t.bronze,
      'message_id IN UNNEST(@ids) OR STRPOS(data, @quoted) > 0',
      'publish_time',
      { ids: bronzeIds, quoted },
      { ids: ['STRING'], quoted: 'STRING' },
    ),
    eventIds.length === 0
      ? Promise.resolve([])
      : query(
          ctx,
          `SELECT ${s.eventId} AS event_id, ${s.messageId} AS source_message_id, ${s.writtenAt} AS written_at
           FROM \`${q(s.dedupView)}\` WHERE ${s.eventId} IN UNNEST(@ids)`,
          { ids: eventIds },
          { ids: ['STRING'] },
        ),
    // Resolutions of every message and event found (a booking_id names neither).
    rowsOf(
      cols.resolutions,
      'source_message_id IN UNNEST(@mids) OR row_key IN UNNEST(@keys) OR result_event_id IN UNNEST(@eids)',
      'resolved_at',
      {
        mids: bronzeIds,
        keys: [...new Set([id, ...eventIds, ...messageIds])],
        eids: [id, ...eventIds],
      },
      { mids: ['STRING'], keys: ['STRING'], eids: ['STRING'] },
    ),
  ]);
  for (const m of ids(bronze, 'message_id')) if (!messageIds.includes(m)) messageIds.push(m);
  // The id may be an event id only the window state knows.
  const stateIds = [...new Set([...eventIds, id])];
  const windows: TraceWindows[] = [];
  for (const aggregation of pipeline.aggregations) {
    for (const eventId of stateIds) {
      const found = await windowsOf(ctx, pipeline, aggregation, eventId, silver);
      if (found !== null) windows.push(found);
    }
  }
  if (!eventIds.includes(id) && windows.some((w) => w.eventId === id)) eventIds.push(id);
  const gold = await goldPanes(ctx, pipeline, windows);
  const needles = [...new Set([id, ...messageIds, ...eventIds])];
  const report: TraceReport = {
    pipeline: pipeline.name,
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
    windows,
    gold,
    logs: localLogLines(ctx, needles, pipelineLogs(pipeline), s.lookupColumns),
    logsHint:
      ctx.mode === 'local'
        ? null
        : `gcloud logging read '${needles.map((x) => `jsonPayload.message_id="${x}" OR jsonPayload.event_id="${x}"`).join(' OR ')}' --project ${ctx.projectId} --freshness 30d`,
  };
  if (placesFound(report).length === 0 && report.logs.length === 0) {
    throw new NotFoundError(
      `${JSON.stringify(id)} is not a ${idNames(pipeline)} in any layer of pipeline ${pipeline.name} in ${ctx.projectId}`,
    );
  }
  return report;
}

/**
 * What one aggregation's state says about an event: its outcome in the key groups (the store as the runtime builds
 * it), the key from its Silver row and the windows from its event time; `null` when the state never saw it here.
 * @throws OpsError when Firestore fails
 */
async function windowsOf(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  aggregation: AnyPipelineDefinition['aggregations'][number],
  eventId: string,
  silver: readonly Row[],
): Promise<TraceWindows | null> {
  const namespace = aggregationNamespace(pipeline, aggregation);
  const s = pipeline.operatorColumns.silver;
  const keyOf = pipeline.operatorColumns.aggregations[aggregation.name];
  const row = silver.find((r) => String(r[s.eventId]) === eventId);
  if (keyOf === undefined || row === undefined) return null;
  const key = keyOf.silverKey(row);
  const eventTimeMs = Date.parse(cellText(row[s.eventTime]));
  if (key === null || Number.isNaN(eventTimeMs)) return null;
  const { earlyFirings, lateFirings } = aggregation.strategy.trigger;
  const store = new GroupedFirestoreWindowStore<JsonValue>(ctx.firestore(), {
    root: namespace.root,
    pipeline: namespace.pipeline,
    parseAccumulator: (v) => aggregation.parseAccumulator(v),
    keyGroups: ctx.windows.keyGroups,
    shards: aggregation.shards,
    earlyDelayMs: earlyFirings?.processingTimeDelayMs ?? null,
    lateDelayMs: lateFirings?.processingTimeDelayMs ?? null,
    dedupTtlMs: ctx.windows.ledgerTtlMs,
  });
  const assigned = assignWindows(aggregation.strategy.windowFn, eventTimeMs);
  const outcome = await firestoreCall(ctx, 'window state', () =>
    store.eventOutcome(eventId, key, assigned),
  );
  if (outcome === null) return null;
  return {
    aggregation: aggregation.name,
    eventId,
    messageId: typeof row[s.messageId] === 'string' ? String(row[s.messageId]) : null,
    key,
    outcome,
    windows: assigned.map((w) => ({ windowId: `${w.startMs}_${w.endMs}` })),
  };
}

/** The gold panes of the traced windows for the event's key, each with the aggregation and the traced event id. */
async function goldPanes(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  windows: readonly TraceWindows[],
): Promise<Row[]> {
  const gold: Row[] = [];
  for (const w of windows) {
    const aggregation = pipeline.aggregations.find((a) => a.name === w.aggregation);
    const keyColumn = pipeline.operatorColumns.aggregations[w.aggregation]?.goldKeyColumn;
    const starts = w.windows.map((x) => Number(x.windowId.split('_')[0]));
    if (aggregation === undefined || keyColumn === undefined || starts.length === 0) continue;
    const rows = await query(
      ctx,
      `SELECT * FROM \`${tableName(aggregation.goldTable, ctx.projectId)}\`
       WHERE pipeline = @pipeline AND ${keyColumn} = @key AND UNIX_MILLIS(window_start) IN UNNEST(@starts)
       ORDER BY window_start, pane_index`,
      { pipeline: aggregation.name, key: w.key, starts },
      { pipeline: 'STRING', key: 'STRING', starts: ['INT64'] },
    );
    for (const r of rows)
      gold.push({ aggregation: w.aggregation, ...plainRow(r), event_id: w.eventId });
  }
  return gold;
}

/** The report as sections, one per place. */
export function formatTrace(r: TraceReport): string {
  return [
    `offvia trace ${r.id} (pipeline ${r.pipeline}): found in ${placesFound(r).join(', ') || 'logs only'}`,
    `message ids: ${r.messageIds.join(', ') || '-'}   event ids: ${r.eventIds.join(', ') || '-'}`,
    section(
      `Bronze (${r.bronze.length})`,
      pickTable(r.bronze, ['message_id', 'publish_time', 'data']),
    ),
    section(
      `Silver (${r.silver.length} rows; the dedup view keeps ${r.silverDedup.length})`,
      rowsTable(r.silver, 30),
    ),
    section(`Quarantine (${r.quarantine.length})`, rowsTable(r.quarantine)),
    section(
      `Bad data (${r.badData.length})`,
      pickTable(
        r.badData,
        ['insert_id', ['target', 'target_dest'], ['inserted', 'insert_time'], 'error'],
        50,
      ),
    ),
    section(
      `Resolutions (${r.resolutions.length})`,
      pickTable(
        r.resolutions,
        [
          'layer',
          'row_key',
          'run_id',
          'action',
          'outcome',
          ['by', 'resolved_by'],
          ['at', 'resolved_at'],
        ],
        40,
      ),
    ),
    section(
      `Schema-retry store (${r.retryStore.length})`,
      pickTable(
        r.retryStore,
        [
          ['target', 'target_table'],
          'insert_id',
          ['message', 'source_message_id'],
          ['retries', 'retry_count'],
          ['last error', 'last_error'],
        ],
        40,
      ),
    ),
    section(
      `Dedup state and windows (${r.windows.length})`,
      r.windows.length === 0
        ? table(['event_id'], [])
        : r.windows
            .map((w) =>
              keyValues([
                ['aggregation', w.aggregation],
                ['event_id', w.eventId],
                ['first delivered by', w.messageId ?? ''],
                ['key', w.key],
                ['outcome', w.outcome],
                ['windows', w.windows.map((x) => x.windowId).join('; ')],
              ]),
            )
            .join('\n'),
    ),
    section(`Gold panes of its windows (${r.gold.length})`, rowsTable(r.gold, 30)),
    section(
      `Log lines (${r.logs.length})`,
      r.logsHint ??
        (r.logs
          .map((l) => `${l.service}: ${l.line.length > 300 ? `${l.line.slice(0, 299)}…` : l.line}`)
          .join('\n') ||
          '(none)'),
    ),
  ].join('\n');
}
