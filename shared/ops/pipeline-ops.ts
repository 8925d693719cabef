// `status`, `trace` and `quarantine list` for a registered pipeline other than booking, read from its definition:
// Bronze, Silver and its dedup view, the quarantine or dead-letter table, bad data, and each aggregation's window
// state (watermark, open windows, dedup ledger) under the pipeline's own Firestore root.
import type { TableRef } from '../config/env';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { aggregationNamespace } from '../pipeline/runtime/namespace';
import { GroupedFirestoreWindowStore } from '../state/grouped-window-store';
import { keyIdPart } from '../state/ids';
import { assignWindows, type JsonValue } from '../windowing';
import { firestoreCall, query, type OpsContext } from './context';
import { NotFoundError } from './errors';
import { cellText, keyValues, plainRow, section, table, type Io } from './output';
import { opsLayout, qualifiedTable } from './pipeline-choice';
import {
  countOpenWindows,
  droppedLate,
  ledgerEntry,
  readWatermark,
  windowDoc,
  windowStoreAt,
  type WindowNamespace,
} from './state-reader';

type Row = Record<string, unknown>;

/** Most rows a trace or a list reads per layer. */
const MAX_ROWS = 50;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const n = (value: unknown): number => Number(value ?? 0);

/** One aggregation's state in `status`: its watermark and windows (Firestore) and its gold panes (BigQuery). */
export interface AggregationStatus {
  /** The aggregation's name: its document under the pipeline's windows root. */
  name: string;
  /** `project.dataset.table` of its gold panes. */
  goldTable: string;
  /** Panes emitted since `since`. */
  goldPanes: number;
  /** RFC 3339 UTC; `null` before the first event. */
  watermark: string | null;
  /** How far the watermark is behind the clock, ms. */
  lagMs: number | null;
  maxEventTime: string | null;
  /** (key, window)s not yet closed. */
  openWindows: number;
  /** Elements dropped as too late (TTL-bounded counters). */
  droppedLate: number;
}

/** What `offvia --pipeline NAME status` reports; `--json` prints it as is. Times RFC 3339 UTC. */
export interface PipelineStatusReport {
  pipeline: string;
  since: string;
  now: string;
  target: { mode: 'local' | 'cloud'; project: string };
  /** Rows since `since`: Bronze by publish time, Silver by write time, the dead letter by rejection time. */
  layers: {
    bronze: number | null;
    silverRows: number;
    silverEvents: number;
    quarantineRows: number;
    badDataRows: number;
  };
  /** `project.dataset.table` of the quarantine or dead-letter table the counts come from. */
  quarantineTable: string;
  quarantineByStage: { stage: string; rows: number }[];
  topQuarantineReasons: { stage: string; reason: string; rows: number }[];
  aggregations: AggregationStatus[];
}

/** The Firestore namespace of one of the pipeline's aggregations, as the pipeline runtime lays it out. */
function namespaceOf(pipeline: AnyPipelineDefinition, aggregation: string): WindowNamespace {
  const { root, pipeline: name } = aggregationNamespace(pipeline, { name: aggregation });
  return { root, pipeline: name };
}

/**
 * Collects the status of `pipeline` over the look-back window.
 * @throws OpsError (one line) when a backend cannot be reached or refuses a query
 */
export async function collectPipelineStatus(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  sinceMs: number,
  nowMs: number,
): Promise<PipelineStatusReport> {
  const layout = opsLayout(pipeline);
  const q = (ref: Parameters<typeof qualifiedTable>[0]) => qualifiedTable(ref, ctx.projectId);
  const t = pipeline.tables;
  const since = 'TIMESTAMP_MILLIS(@since_ms)';
  const params = { since_ms: sinceMs };
  const types = { since_ms: 'INT64' };
  const count = async (sql: string): Promise<number> => {
    const [row] = await query<{ n: unknown }>(ctx, sql, params, types);
    return n(row?.n);
  };
  const c = layout.quarantine;
  const [bronze, silverRows, silverEvents, quarantineRows, badDataRows, stages, reasons] =
    await Promise.all([
      t.bronze === null
        ? Promise.resolve(null)
        : count(`SELECT COUNT(*) AS n FROM \`${q(t.bronze)}\` WHERE publish_time >= ${since}`),
      count(
        `SELECT COUNT(*) AS n FROM \`${q(t.silver)}\` WHERE ${layout.silver.writtenAt} >= ${since}`,
      ),
      count(
        `SELECT COUNT(*) AS n FROM \`${q(layout.silver.dedupView)}\` WHERE ${layout.silver.writtenAt} >= ${since}`,
      ),
      count(`SELECT COUNT(*) AS n FROM \`${q(t.quarantine)}\` WHERE ${c.rejectedAt} >= ${since}`),
      count(`SELECT COUNT(*) AS n FROM \`${q(t.badData)}\` WHERE insert_time >= ${since}`),
      query<{ stage: string; rows: unknown }>(
        ctx,
        `SELECT ${c.stage} AS stage, COUNT(*) AS \`rows\` FROM \`${q(t.quarantine)}\`
         WHERE ${c.rejectedAt} >= ${since} GROUP BY stage ORDER BY stage`,
        params,
        types,
      ),
      query<{ stage: string; reason: string; rows: unknown }>(
        ctx,
        `SELECT ${c.stage} AS stage, ${c.reason} AS reason, COUNT(*) AS \`rows\` FROM \`${q(t.quarantine)}\`
         WHERE ${c.rejectedAt} >= ${since}
         GROUP BY stage, reason ORDER BY \`rows\` DESC, stage, reason LIMIT 5`,
        params,
        types,
      ),
    ]);
  const aggregations = await Promise.all(
    pipeline.aggregations.map(async (aggregation): Promise<AggregationStatus> => {
      const namespace = namespaceOf(pipeline, aggregation.name);
      const store = windowStoreAt(ctx, namespace, (v) => aggregation.parseAccumulator(v));
      const goldTable = q(aggregation.goldTable);
      const [watermark, openWindows, dropped, goldPanes] = await Promise.all([
        readWatermark(ctx, store),
        countOpenWindows(ctx, namespace),
        droppedLate(ctx, store),
        count(
          `SELECT COUNT(*) AS n FROM \`${goldTable}\` WHERE emitted_at >= ${since} AND pipeline = '${aggregation.name}'`,
        ),
      ]);
      return {
        name: aggregation.name,
        goldTable,
        goldPanes,
        watermark: iso(watermark.watermarkMs),
        lagMs: watermark.watermarkMs === null ? null : nowMs - watermark.watermarkMs,
        maxEventTime: iso(watermark.maxEventTimeMs),
        openWindows,
        droppedLate: dropped.total,
      };
    }),
  );
  return {
    pipeline: pipeline.name,
    since: new Date(sinceMs).toISOString(),
    now: new Date(nowMs).toISOString(),
    target: { mode: ctx.mode, project: ctx.projectId },
    layers: { bronze, silverRows, silverEvents, quarantineRows, badDataRows },
    quarantineTable: q(t.quarantine),
    quarantineByStage: stages.map((s) => ({ stage: s.stage, rows: n(s.rows) })),
    topQuarantineReasons: reasons.map((r) => ({
      stage: r.stage,
      reason: r.reason,
      rows: n(r.rows),
    })),
    aggregations,
  };
}

const seconds = (v: number | null): string => (v === null ? '' : `${(v / 1000).toFixed(1)} s`);

/** The report as tables. */
export function formatPipelineStatus(r: PipelineStatusReport): string {
  const l = r.layers;
  return [
    `offvia status: pipeline ${r.pipeline}, ${r.target.mode} project ${r.target.project}, since ${r.since} (now ${r.now})`,
    section(
      'Layers (rows since)',
      table(
        ['layer', 'rows', 'note'],
        [
          ['Bronze', l.bronze ?? '', l.bronze === null ? 'no Bronze' : 'every published message'],
          ['Silver', l.silverRows, `${l.silverEvents} distinct events in the dedup view`],
          ['dead letter', l.quarantineRows, r.quarantineTable],
          ['bad data', l.badDataRows, ''],
        ],
      ),
    ),
    section(
      'Dead letter by stage',
      table(
        ['stage', 'rows'],
        r.quarantineByStage.map((s) => [s.stage, s.rows]),
      ),
    ),
    section(
      'Top dead-letter reasons',
      table(
        ['stage', 'rows', 'reason'],
        r.topQuarantineReasons.map((s) => [s.stage, s.rows, s.reason]),
        80,
      ),
    ),
    ...r.aggregations.map((a) =>
      section(
        `Windows: ${a.name}`,
        keyValues([
          ['watermark', a.watermark ?? 'none yet'],
          ['watermark lag behind the clock', seconds(a.lagMs)],
          ['max event time', a.maxEventTime ?? ''],
          ['open windows', a.openWindows],
          ['dropped late (TTL-bounded counters)', a.droppedLate],
          ['gold panes emitted since', `${a.goldPanes} (${a.goldTable})`],
        ]),
      ),
    ),
  ].join('\n');
}

/** Prints the report as tables or JSON. */
export function printPipelineStatus(io: Io, report: PipelineStatusReport, json: boolean): void {
  io.out(json ? JSON.stringify(report, null, 2) : formatPipelineStatus(report));
}

/** One aggregation's dedup-ledger entry for an event and the state of the windows it was counted in. */
export interface PipelineTraceWindows {
  aggregation: string;
  eventId: string;
  /** The key the event was counted under (a device id, a region). */
  key: string;
  /** `counted` or `dropped` (too late for every window), as the ledger says. */
  outcome: string;
  appliedAt: string | null;
  windows: { windowId: string; phase: string | null; panesEmitted: number | null }[];
}

/** What `offvia --pipeline NAME trace ID` found; `--json` prints it as is. */
export interface PipelineTraceReport {
  pipeline: string;
  id: string;
  messageIds: string[];
  eventIds: string[];
  bronze: Row[];
  silver: Row[];
  /** The rows the dedup view keeps for the event ids. */
  silverDedup: Row[];
  /** Rows of the quarantine or dead-letter table. */
  quarantine: Row[];
  badData: Row[];
  /** Per aggregation, the ledger entries and window state of the event ids. */
  windows: PipelineTraceWindows[];
}

/** The places with at least one row, in the order a message travels. */
export function pipelinePlacesFound(r: PipelineTraceReport): string[] {
  const places: [string, number][] = [
    ['bronze', r.bronze.length],
    ['silver', r.silver.length],
    ['dead_letter', r.quarantine.length],
    ['bad_data', r.badData.length],
    ['windows', r.windows.length],
  ];
  return places.filter(([, count]) => count > 0).map(([p]) => p);
}

const column = (rows: readonly Row[], name: string): string[] =>
  rows.map((r) => r[name]).filter((v): v is string => typeof v === 'string' && v !== '');

/**
 * Traces a Pub/Sub message id or an event id of `pipeline` through Bronze, Silver, the dead letter, bad data and
 * each aggregation's dedup ledger and windows.
 * @throws NotFoundError (exit 3) when no layer knows the id; OpsError when a backend fails
 */
export async function tracePipeline(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  id: string,
): Promise<PipelineTraceReport> {
  const layout = opsLayout(pipeline);
  const q = (ref: Parameters<typeof qualifiedTable>[0]) => qualifiedTable(ref, ctx.projectId);
  const t = pipeline.tables;
  const s = layout.silver;
  const c = layout.quarantine;
  const p = { id };
  const [silver, quarantine, badData] = await Promise.all([
    query(
      ctx,
      `SELECT * FROM \`${q(t.silver)}\` WHERE ${s.messageId} = @id OR ${s.eventId} = @id
       ORDER BY ${s.writtenAt} LIMIT ${MAX_ROWS}`,
      p,
    ),
    query(
      ctx,
      `SELECT * FROM \`${q(t.quarantine)}\` WHERE ${c.messageId} = @id
       ORDER BY ${c.rejectedAt} LIMIT ${MAX_ROWS}`,
      p,
    ),
    query(
      ctx,
      `SELECT * FROM \`${q(t.badData)}\` WHERE source_message_id = @id OR insert_id = @id
       ORDER BY insert_time LIMIT ${MAX_ROWS}`,
      p,
    ),
  ]);
  const messageIds = [
    ...new Set([
      ...column(silver, s.messageId),
      ...column(quarantine, c.messageId),
      ...column(badData, 'source_message_id'),
    ]),
  ];
  const eventIds = [...new Set(column(silver, s.eventId))];
  const bronzeIds = [...new Set([id, ...messageIds])];
  const [bronze, silverDedup] = await Promise.all([
    t.bronze === null
      ? Promise.resolve([])
      : query(
          ctx,
          `SELECT * FROM \`${q(t.bronze)}\` WHERE message_id IN UNNEST(@ids) ORDER BY publish_time LIMIT ${MAX_ROWS}`,
          { ids: bronzeIds },
          { ids: ['STRING'] },
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
  ]);
  for (const m of column(bronze, 'message_id')) if (!messageIds.includes(m)) messageIds.push(m);
  // The id may be an event id only the ledger knows (its Silver row elsewhere or not yet visible).
  const ledgerIds = [...new Set([...eventIds, id])];
  const windows: PipelineTraceWindows[] = [];
  for (const aggregation of pipeline.aggregations) {
    const namespace = namespaceOf(pipeline, aggregation.name);
    const store = windowStoreAt(ctx, namespace, (v) => aggregation.parseAccumulator(v));
    for (const eventId of ledgerIds) {
      const entry = await ledgerEntry(ctx, eventId, store);
      if (entry === null) {
        // The key-groups layout (what the pipeline runtime writes) keeps dedup ids inside the key-group documents,
        // not in ledger documents: ask its store with the event's key and windows, from its Silver row.
        const found = await keyGroupsOutcome(ctx, pipeline, aggregation.name, eventId, silver);
        if (found !== null) windows.push(found);
        continue;
      }
      const key = String(entry.key);
      const windowIds = Array.isArray(entry.window_ids) ? entry.window_ids.map(String) : [];
      windows.push({
        aggregation: aggregation.name,
        eventId,
        key,
        outcome: String(entry.outcome),
        appliedAt:
          typeof entry.applied_at_ms === 'number'
            ? new Date(entry.applied_at_ms).toISOString()
            : null,
        windows: await Promise.all(
          windowIds.map(async (windowId) => {
            const doc = await windowDoc(ctx, `${keyIdPart(key)}~${windowId}`, namespace);
            return {
              windowId,
              phase: doc === null ? null : String(doc.phase),
              panesEmitted: doc === null ? null : Number(doc.panes_emitted),
            };
          }),
        ),
      });
    }
  }
  if (!eventIds.includes(id) && windows.some((w) => w.eventId === id)) eventIds.push(id);
  const report: PipelineTraceReport = {
    pipeline: pipeline.name,
    id,
    messageIds,
    eventIds,
    bronze: bronze.map(plainRow),
    silver: silver.map(plainRow),
    silverDedup: silverDedup.map(plainRow),
    quarantine: quarantine.map(plainRow),
    badData: badData.map(plainRow),
    windows,
  };
  if (pipelinePlacesFound(report).length === 0) {
    throw new NotFoundError(
      `${JSON.stringify(id)} is not a message id or event id in any layer of pipeline ${pipeline.name} in ${ctx.projectId}`,
    );
  }
  return report;
}

/**
 * What an aggregation's key-groups state says about an event that has no ledger document: `counted` or `dropped`
 * from the dedup ids of its key-group documents (`GroupedFirestoreWindowStore.eventOutcome`), the store built as
 * the pipeline runtime builds it (its namespace, the aggregation's shards and trigger delays, the key groups of
 * `OFFVIA_WINDOW_KEY_GROUPS`), the key from the Silver row's key column and the windows from its event time.
 * `null` when the event has no Silver row here, no key for this aggregation, or the state never saw it.
 * @throws OpsError when Firestore fails (via firestoreCall)
 */
async function keyGroupsOutcome(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  aggregationName: string,
  eventId: string,
  silver: readonly Row[],
): Promise<PipelineTraceWindows | null> {
  const layout = opsLayout(pipeline).silver;
  const aggregation = pipeline.aggregations.find((a) => a.name === aggregationName);
  const keyColumn = layout.keyColumns[aggregationName];
  const row = silver.find((r) => String(r[layout.eventId]) === eventId);
  if (aggregation === undefined || keyColumn === undefined || row === undefined) return null;
  const keyValue = row[keyColumn];
  if (keyValue === null || keyValue === undefined || keyValue === '') return null;
  const key = cellText(keyValue);
  const eventTimeMs = Date.parse(cellText(row[layout.eventTime]));
  if (Number.isNaN(eventTimeMs)) return null;
  const namespace = namespaceOf(pipeline, aggregation.name);
  const { earlyFirings, lateFirings } = aggregation.strategy.trigger;
  const store = new GroupedFirestoreWindowStore<JsonValue>(ctx.firestore(), {
    root: namespace.root,
    pipeline: namespace.pipeline,
    parseAccumulator: (value) => aggregation.parseAccumulator(value),
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

/** The trace as sections, one per place; Silver and dead-letter rows show every column. */
export function formatPipelineTrace(r: PipelineTraceReport): string {
  const rows = (list: readonly Row[], width = 40): string => {
    const columns = [...new Set(list.flatMap((row) => Object.keys(row)))];
    return table(
      columns,
      list.map((row) => columns.map((name) => row[name])),
      width,
    );
  };
  return [
    `offvia trace ${r.id} (pipeline ${r.pipeline}): found in ${pipelinePlacesFound(r).join(', ')}`,
    `message ids: ${r.messageIds.join(', ') || '-'}   event ids: ${r.eventIds.join(', ') || '-'}`,
    section(
      `Bronze (${r.bronze.length})`,
      table(
        ['message_id', 'publish_time', 'data'],
        r.bronze.map((b) => [b.message_id, b.publish_time, b.data]),
      ),
    ),
    section(
      `Silver (${r.silver.length} rows; the dedup view keeps ${r.silverDedup.length})`,
      rows(r.silver, 30),
    ),
    section(`Dead letter (${r.quarantine.length})`, rows(r.quarantine)),
    section(`Bad data (${r.badData.length})`, rows(r.badData)),
    section(
      `Windows (${r.windows.length} ledger entries)`,
      table(
        ['aggregation', 'event_id', 'key', 'outcome', 'applied', 'window', 'phase', 'panes'],
        r.windows.flatMap((w) =>
          (w.windows.length === 0 ? [null] : w.windows).map((win) => [
            w.aggregation,
            w.eventId,
            w.key,
            w.outcome,
            w.appliedAt,
            win?.windowId ?? '',
            win?.phase ?? '',
            win?.panesEmitted ?? '',
          ]),
        ),
        40,
      ),
    ),
  ].join('\n');
}

/** Prints the trace as sections or JSON. */
export function printPipelineTrace(io: Io, report: PipelineTraceReport, json: boolean): void {
  io.out(json ? JSON.stringify(report, null, 2) : formatPipelineTrace(report));
}

/** Options of `quarantine list`. */
export interface QuarantineListOptions {
  /** Only these stages (all when absent). */
  readonly stages?: readonly string[] | undefined;
  /** Rejected at or after, epoch ms UTC. */
  readonly sinceMs?: number | undefined;
  /** Most rows, newest first. */
  readonly limit: number;
}

/** What `quarantine list` prints: the table read and its rows, newest first. */
export interface QuarantineListReport {
  pipeline: string;
  /** `project.dataset.table` the rows come from. */
  table: string;
  rows: Row[];
}

/**
 * The newest rows of the pipeline's quarantine or dead-letter table (`tableOverride`: booking's configured
 * quarantine table, `OFFVIA_QUARANTINE_TABLE`): message id, stage, reason, rejection time, the layout's extra
 * columns and the payload.
 * @throws OpsError when BigQuery fails
 */
export async function listQuarantine(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  options: QuarantineListOptions,
  tableOverride?: TableRef,
): Promise<QuarantineListReport> {
  const c = opsLayout(pipeline).quarantine;
  const name = qualifiedTable(tableOverride ?? pipeline.tables.quarantine, ctx.projectId);
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  const types: Record<string, string | string[]> = {};
  if (options.stages !== undefined) {
    where.push(`${c.stage} IN UNNEST(@stages)`);
    params.stages = [...options.stages];
    types.stages = ['STRING'];
  }
  if (options.sinceMs !== undefined) {
    where.push(`${c.rejectedAt} >= TIMESTAMP_MILLIS(@since_ms)`);
    params.since_ms = options.sinceMs;
    types.since_ms = 'INT64';
  }
  const columns = [
    `${c.messageId} AS source_message_id`,
    `${c.stage} AS stage`,
    `${c.reason} AS reason`,
    `${c.rejectedAt} AS rejected_at`,
    ...c.extra,
    `${c.payload} AS payload`,
  ];
  const rows = await query(
    ctx,
    `SELECT ${columns.join(', ')} FROM \`${name}\`
     ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY ${c.rejectedAt} DESC, ${c.messageId} LIMIT ${options.limit}`,
    params,
    types,
  );
  return { pipeline: pipeline.name, table: name, rows: rows.map(plainRow) };
}

/** Prints the list as a table (with a count line) or JSON. */
export function printQuarantineList(io: Io, report: QuarantineListReport, json: boolean): void {
  if (json) {
    io.out(JSON.stringify(report, null, 2));
    return;
  }
  const columns = [...new Set(report.rows.flatMap((r) => Object.keys(r)))];
  io.out(
    table(
      columns,
      report.rows.map((r) => columns.map((name) => cellText(r[name]))),
      60,
    ),
  );
  io.out(`${report.rows.length} row(s) of ${report.table}, newest first`);
}
