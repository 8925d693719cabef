// `offvia status` for any registered pipeline, read from its definition: counts per layer, quarantine and bad data
// by cause, the schema-retry store, each aggregation's watermark, holds, windows and panes, and the last runs.
import { tableName, type TableRef } from '../config/env';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { aggregationNamespace } from '../pipeline/runtime/namespace';
import { query, type OpsContext } from './context';
import { keyValues, pickTable, section, table } from './output';
import {
  countOpenWindows,
  droppedLate,
  type DroppedLateWindow,
  fireWindowsLease,
  lastLogEntry,
  type Lease,
  readWatermark,
  retryStoreRows,
  watermarkHolds,
  windowStoreAt,
} from './state-reader';

/** A scheduled function's last run: when (RFC 3339 UTC, `null` unknown) and what says so. */
export interface LastRun {
  at: string | null;
  detail: string;
}

/**
 * One aggregation's state: watermark (`null` before the first event) and its lag behind the clock (ms), holds,
 * open windows (sessions for session windows), dropped-late counters (window expired, trigger finished), gold panes
 * since `since` by Beam pane timing, and its last fireWindows run (the scheduler's call, else the lease).
 */
export interface AggregationStatus {
  /** Its document under the pipeline's windows root and the gold `pipeline` column. */
  name: string;
  /** `fixed`, `sliding` or `sessions`. */
  windowKind: string;
  goldTable: string;
  goldPanes: number;
  panesByTiming: { timing: string; panes: number }[];
  watermark: string | null;
  lagMs: number | null;
  maxEventTime: string | null;
  watermarkHolds: { active: number; stuck: number; oldestHeldPublishTime: string | null };
  /**
   * The newest heartbeat the ingest path processed (RFC 3339; `null`: none yet), its age (ms) and whether it is past
   * OFFVIA_WATERMARK_HOLD_MAX_MS (`stale`: it no longer holds): the idle rule goes no further than it.
   */
  heartbeat: { publishTime: string | null; ageMs: number | null; stale: boolean };
  openWindows: number;
  droppedLate: number;
  droppedExpiredWindow: number;
  droppedClosedWindow: number;
  /** The newest windows with drops, newest first (at most DROPPED_WINDOWS_SHOWN). */
  droppedLateWindows: DroppedLateWindow[];
  lastRun: LastRun;
}

/** The dropped-late counters by window and reason, newest first; empty when nothing was dropped. */
function droppedWindowsTable(a: AggregationStatus): string {
  if (a.droppedLateWindows.length === 0) return '';
  return (
    `\ndropped late by window (newest ${a.droppedLateWindows.length}; EXPIRED_WINDOW: allowed lateness ` +
    'passed, CLOSED_WINDOW: trigger finished)\n' +
    pickTable(a.droppedLateWindows, [
      ['window start', 'windowStart'],
      ['window end', 'windowEnd'],
      ['dropped', 'count'],
      ['EXPIRED_WINDOW', 'expiredWindow'],
      ['CLOSED_WINDOW', 'closedWindow'],
      ['last dropped at', 'lastDroppedAt'],
      ['last event id', 'lastEventId'],
    ])
  );
}

/** Everything `status` reports; `--json` prints it as is. Times are RFC 3339 UTC, durations ms. */
export interface StatusReport {
  pipeline: string;
  /** The look-back window: rows received, published or emitted at or after this time. */
  since: string;
  now: string;
  target: { mode: 'local' | 'cloud'; project: string };
  /** Rows per layer since `since` (Silver: rows, and events in the dedup view); `null`: no such table. */
  layers: {
    bronze: number | null;
    silverRows: number;
    silverEvents: number;
    quarantineRows: number;
    quarantineMessages: number;
    badDataRows: number;
    goldPanes: number;
    resolutions: number | null;
  };
  quarantineTable: string;
  /** Still to handle, whatever their age (the open views); `null` without an open view. */
  open: { quarantine: number | null; badData: number | null };
  quarantineByStage: { stage: string; rows: number; messages: number; open: number | null }[];
  topQuarantineReasons: { stage: string; reason: string; rows: number }[];
  badDataByCause: { target: string; error: string; rows: number; open: number | null }[];
  retryStore: { table: string; rows: number; oldest: string | null }[];
  aggregations: AggregationStatus[];
  /** The schema sweep's last run; `null` when the pipeline has no sweep. */
  schemaSweep: LastRun | null;
}

const iso = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

/** Number of a COUNT(*) column (the client returns INT64 as number; the emulator sometimes as text). */
const n = (value: unknown): number => Number(value ?? 0);

/**
 * Collects the report of `pipeline` over [sinceMs, nowMs] (epoch ms UTC), reads concurrent.
 * @throws OpsError (one line) when a backend cannot be reached or refuses a query.
 */
export async function collectStatus(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  sinceMs: number,
  nowMs: number,
): Promise<StatusReport> {
  const q = (ref: TableRef): string => tableName(ref, ctx.projectId);
  const { tables: t, operatorColumns: cols } = pipeline;
  const { silver: s, quarantine: c, openViews: open } = cols;
  const p = { since_ms: sinceMs };
  const types = { since_ms: 'INT64' };
  const since = 'TIMESTAMP_MILLIS(@since_ms)';
  const rows = <T>(sql: string, withSince = true): Promise<T[]> =>
    query<T>(ctx, sql, withSince ? p : {}, withSince ? types : undefined);
  /** Rows (or `what`) of `ref` whose `column` is in the look-back; `null` without the table. */
  const countSince = async <R extends TableRef | null>(
    ref: R,
    column: string,
    what = 'COUNT(*)',
  ) => {
    type Count = R extends null ? null : number;
    if (ref === null) return null as Count;
    const sql = `SELECT ${what} AS n FROM \`${q(ref)}\` WHERE ${column} >= ${since}`;
    return n((await rows<{ n: unknown }>(sql))[0]?.n) as Count;
  };
  const message = `COALESCE(${c.messageId}, ${c.payload})`;
  const layers = allOf({
    bronze: countSince(t.bronze, 'publish_time'),
    silverRows: countSince(t.silver, s.writtenAt),
    silverEvents: countSince(s.dedupView, s.writtenAt),
    quarantineRows: countSince(t.quarantine, c.rejectedAt),
    quarantineMessages: countSince(t.quarantine, c.rejectedAt, `COUNT(DISTINCT ${message})`),
    badDataRows: countSince(t.badData, 'insert_time'),
    resolutions: countSince(cols.resolutions, 'resolved_at'),
  });
  const [counts, stages, openStages, reasons, causes, openCauses, retry] = await Promise.all([
    layers,
    rows<{ stage: string; rows: unknown; messages: unknown }>(
      `SELECT ${c.stage} AS stage, COUNT(*) AS \`rows\`, COUNT(DISTINCT ${message}) AS messages
       FROM \`${q(t.quarantine)}\` WHERE ${c.rejectedAt} >= ${since} GROUP BY stage ORDER BY stage`,
    ),
    open === null
      ? Promise.resolve([])
      : rows<{ stage: string; open: unknown }>(
          `SELECT ${c.stage} AS stage, COUNT(*) AS open FROM \`${q(open.quarantine)}\` GROUP BY stage`,
          false,
        ),
    rows<{ stage: string; reason: string; rows: unknown }>(
      `SELECT ${c.stage} AS stage, ${c.reason} AS reason, COUNT(*) AS \`rows\`
       FROM \`${q(t.quarantine)}\` WHERE ${c.rejectedAt} >= ${since}
       GROUP BY stage, reason ORDER BY \`rows\` DESC, stage, reason LIMIT 5`,
    ),
    rows<{ target: string; error: string; rows: unknown }>(
      `SELECT target_dest AS target, error, COUNT(*) AS \`rows\`
       FROM \`${q(t.badData)}\` WHERE insert_time >= ${since}
       GROUP BY target_dest, error ORDER BY \`rows\` DESC, target, error LIMIT 10`,
    ),
    open === null
      ? Promise.resolve([])
      : rows<{ target: string; error: string; open: unknown }>(
          `SELECT target_dest AS target, error, COUNT(*) AS open FROM \`${q(open.badData)}\` GROUP BY target_dest, error`,
          false,
        ),
    retryStoreRows(ctx, pipeline),
  ]);
  const aggregations = await Promise.all(
    pipeline.aggregations.map(async (aggregation): Promise<AggregationStatus> => {
      const namespace = aggregationNamespace(pipeline, aggregation);
      const store = windowStoreAt(ctx, namespace, (v) => aggregation.parseAccumulator(v));
      const goldTable = q(aggregation.goldTable);
      const [watermark, holds, openWindows, dropped, lease, timings] = await Promise.all([
        readWatermark(ctx, store),
        watermarkHolds(ctx, namespace, aggregation.watermarkPolicy, nowMs),
        countOpenWindows(ctx, namespace),
        droppedLate(ctx, store),
        fireWindowsLease(ctx, namespace),
        query<{ timing: string; panes: unknown }>(
          ctx,
          `SELECT pane_timing AS timing, COUNT(*) AS panes FROM \`${goldTable}\`
           WHERE emitted_at >= ${since} AND pipeline = @pipeline GROUP BY pane_timing ORDER BY pane_timing`,
          { ...p, pipeline: aggregation.name },
          { ...types, pipeline: 'STRING' },
        ),
      ]);
      const panesByTiming = timings.map((r) => ({ timing: r.timing, panes: n(r.panes) }));
      return {
        name: aggregation.name,
        windowKind: aggregation.strategy.windowFn.kind,
        goldTable,
        goldPanes: panesByTiming.reduce((sum, x) => sum + x.panes, 0),
        panesByTiming,
        watermark: iso(watermark.watermarkMs),
        lagMs: watermark.watermarkMs === null ? null : nowMs - watermark.watermarkMs,
        maxEventTime: iso(watermark.maxEventTimeMs),
        watermarkHolds: {
          active: holds.active,
          stuck: holds.stuck,
          oldestHeldPublishTime: iso(holds.oldestPublishTimeMs),
        },
        heartbeat: {
          publishTime: iso(holds.heartbeat.publishTimeMs),
          ageMs:
            holds.heartbeat.publishTimeMs === null ? null : nowMs - holds.heartbeat.publishTimeMs,
          stale: holds.heartbeat.stale,
        },
        openWindows,
        droppedLate: dropped.total,
        droppedExpiredWindow: dropped.expiredWindow,
        droppedClosedWindow: dropped.closedWindow,
        droppedLateWindows: dropped.windows,
        lastRun: lastRun(ctx, pipeline.functions.fireWindows.entryPoint, lease),
      };
    }),
  );
  const openByStage = new Map(openStages.map((r) => [r.stage, n(r.open)]));
  const stageNames = [...new Set([...stages.map((x) => x.stage), ...openByStage.keys()])].sort();
  const openByCause = new Map(openCauses.map((r) => [`${r.target}\u0000${r.error}`, n(r.open)]));
  const sweep = pipeline.functions.schemaSweep;
  return {
    pipeline: pipeline.name,
    since: new Date(sinceMs).toISOString(),
    now: new Date(nowMs).toISOString(),
    target: { mode: ctx.mode, project: ctx.projectId },
    layers: { ...counts, goldPanes: aggregations.reduce((sum, a) => sum + a.goldPanes, 0) },
    quarantineTable: q(t.quarantine),
    // Every open row is in one group of its view, so the groups add up to the view's count.
    open: {
      quarantine: open === null ? null : sum([...openByStage.values()]),
      badData: open === null ? null : sum([...openByCause.values()]),
    },
    quarantineByStage: stageNames.map((stage) => {
      const row = stages.find((x) => x.stage === stage);
      return {
        stage,
        rows: n(row?.rows),
        messages: n(row?.messages),
        open: open === null ? null : (openByStage.get(stage) ?? 0),
      };
    }),
    topQuarantineReasons: reasons.map((r) => ({
      stage: r.stage,
      reason: r.reason,
      rows: n(r.rows),
    })),
    badDataByCause: causes.map((x) => ({
      target: x.target,
      error: x.error,
      rows: n(x.rows),
      open: open === null ? null : (openByCause.get(`${x.target}\u0000${x.error}`) ?? 0),
    })),
    retryStore: retry.map(({ table: name, rows: waiting }) => ({
      table: name,
      rows: waiting.length,
      oldest: iso(
        waiting.reduce<number | null>(
          (m, r) => (m === null ? r.processedTimestampMs : Math.min(m, r.processedTimestampMs)),
          null,
        ),
      ),
    })),
    aggregations,
    schemaSweep: sweep === null ? null : lastRun(ctx, sweep.entryPoint, null),
  };
}

/** A scheduled function's last run: the local scheduler's last call, else the fireWindows lease, else where to look. */
function lastRun(ctx: OpsContext, entryPoint: string, lease: Lease | null): LastRun {
  const entry = lastLogEntry(ctx, 'scheduler', new RegExp(`^${entryPoint} (answered|call failed)`));
  if (entry !== null) {
    return {
      at: typeof entry.time === 'string' ? entry.time : null,
      detail: `scheduler: ${String(entry.message)}`,
    };
  }
  if (lease !== null) {
    return {
      at: iso(lease.acquiredAtMs),
      detail: `lease #${lease.fence} taken by ${lease.holder}`,
    };
  }
  return {
    at: null,
    detail:
      ctx.mode === 'local'
        ? 'no run in the scheduler log'
        : `see Cloud Logging: gcloud logging read 'resource.labels.service_name=~"${entryPoint.toLowerCase()}"' --limit 5`,
  };
}

const sum = (values: readonly number[]): number => values.reduce((total, v) => total + v, 0);

/** Awaits every promise of an object, concurrently: the object of their values. */
async function allOf<T extends Record<string, Promise<unknown>>>(
  promises: T,
): Promise<{ [K in keyof T]: Awaited<T[K]> }> {
  const entries = await Promise.all(
    Object.entries(promises).map(async ([name, promise]) => [name, await promise] as const),
  );
  return Object.fromEntries(entries) as { [K in keyof T]: Awaited<T[K]> };
}

const seconds = (v: number | null): string => (v === null ? '' : `${(v / 1000).toFixed(1)} s`);

/**
 * Why the heartbeat holds the watermark, or not: a heartbeat processed within two schedule periods (2 min) is a
 * flowing ingest path; an older one holds the idle rule at its publish time (the path stalls); a stale one, past
 * OFFVIA_WATERMARK_HOLD_MAX_MS, no longer holds (heartbeats stopped: the job paused or the topic gone).
 */
function heartbeatText(h: AggregationStatus['heartbeat']): string {
  if (h.publishTime === null || h.ageMs === null) {
    return 'none processed yet: no heartbeat cap (is the heartbeat job publishing?)';
  }
  const age = `newest processed ${h.publishTime}, ${seconds(h.ageMs)} old`;
  if (h.stale)
    return `${age}: STALE past OFFVIA_WATERMARK_HOLD_MAX_MS, no longer holds (heartbeats stopped)`;
  if (h.ageMs > 2 * 60_000)
    return `${age}: HOLDS the watermark (the ingest path is not processing heartbeats)`;
  return `${age}: the ingest path is flowing`;
}
const orNone = (v: number | null, what: string): string | number => v ?? `no ${what}`;

/** The report as tables. */
export function formatStatus(r: StatusReport): string {
  const l = r.layers;
  const openNote = (v: number | null): string => (v === null ? '' : `; ${v} open (all time)`);
  return [
    `offvia status: pipeline ${r.pipeline}, ${r.target.mode} project ${r.target.project}, since ${r.since} (now ${r.now})`,
    section(
      'Layers (rows since)',
      table(
        ['layer', 'rows', 'note'],
        [
          ['Bronze', orNone(l.bronze, 'Bronze'), 'every published message'],
          ['Silver', l.silverRows, `${l.silverEvents} distinct events in the dedup view`],
          [
            'quarantine',
            l.quarantineRows,
            `${l.quarantineMessages} messages${openNote(r.open.quarantine)} (${r.quarantineTable})`,
          ],
          ['bad data', l.badDataRows, openNote(r.open.badData).replace(/^; /, '')],
          ['gold panes', l.goldPanes, ''],
          ['resolutions', orNone(l.resolutions, 'resolutions table'), 'rows re-driven by offvia'],
        ],
        90,
      ),
    ),
    section(
      'Quarantine by stage',
      pickTable(r.quarantineByStage, ['stage', 'rows', 'messages', 'open']),
    ),
    section(
      'Top quarantine reasons',
      pickTable(r.topQuarantineReasons, ['stage', 'rows', 'reason'], 80),
    ),
    section(
      'Bad data by target and error',
      pickTable(r.badDataByCause, ['target', 'rows', 'open', 'error'], 70),
    ),
    section(
      'Schema-retry store',
      pickTable(r.retryStore, ['table', ['rows waiting', 'rows'], 'oldest']),
    ),
    ...r.aggregations.map((a) =>
      section(
        `Windows: ${a.name} (${a.windowKind})`,
        keyValues([
          ['watermark', a.watermark ?? 'none yet'],
          ['watermark lag behind the clock', seconds(a.lagMs)],
          ['max event time', a.maxEventTime ?? ''],
          [
            'watermark holds (failing deliveries)',
            a.watermarkHolds.active === 0
              ? 'none'
              : `${a.watermarkHolds.active} (oldest held publish time ${a.watermarkHolds.oldestHeldPublishTime ?? 'none'}; ` +
                `${a.watermarkHolds.stuck} stuck past OFFVIA_WATERMARK_HOLD_MAX_MS)`,
          ],
          ['watermark heartbeat', heartbeatText(a.heartbeat)],
          [a.windowKind === 'sessions' ? 'open sessions' : 'open windows', a.openWindows],
          [
            'dropped late (TTL-bounded counters)',
            `${a.droppedLate} (${a.droppedExpiredWindow} expired window, ${a.droppedClosedWindow} closed window)`,
          ],
          [
            'panes emitted since',
            `${a.panesByTiming.map((x) => `${x.timing} ${x.panes}`).join(', ') || '0'} (${a.goldTable})`,
          ],
          ['last fireWindows run', `${a.lastRun.at ?? ''} ${a.lastRun.detail}`.trim()],
        ]) + droppedWindowsTable(a),
      ),
    ),
    ...(r.schemaSweep === null
      ? []
      : [
          section(
            'Schema sweep',
            keyValues([['last run', `${r.schemaSweep.at ?? ''} ${r.schemaSweep.detail}`.trim()]]),
          ),
        ]),
  ].join('\n');
}
