// The booking page's numbers: `offvia status` (the one source of the counts) plus the charts' time series: arrivals
// per minute, the latest panes per key, the watermark, dropped-late per window.
import { tableName, type TableRef } from '../config/env';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { aggregationNamespace } from '../pipeline/runtime/namespace';
import { firestoreCall, query, type OpsContext } from '../ops/context';
import { cellText } from '../ops/output';
import { retryStoreRows, windowStoreAt } from '../ops/state-reader';
import { collectStatus, type StatusReport } from '../ops/status';

const MINUTE_MS = 60_000;
/** Most routes the page charts, and most panes per route. */
const MAX_ROUTES = 12;
const MAX_PANES_PER_ROUTE = 30;

/** Arrivals per minute at one destination (`Silver`, `quarantine: <stage>`, `bad data`, `retry store`). */
export interface DestinationSeries {
  destination: string;
  counts: number[];
}

/**
 * The latest pane of one (route, window) from `route_panes_latest`: window bounds and firing time (epoch ms UTC),
 * bookings, the exact fare total as decimal text, Beam's pane timing, index and finality.
 */
export interface LatestPane {
  windowStartMs: number;
  windowEndMs: number;
  bookingCount: number;
  fareTotal: string;
  timing: string;
  paneIndex: number;
  isFinal: boolean;
  emittedAtMs: number;
}

/** The latest panes of one route key, oldest window first. */
export interface RoutePanes {
  routeKey: string;
  panes: LatestPane[];
}

/** The watermark at a wall-clock time (epoch ms), from a gold pane or read `now` from Firestore. */
export interface WatermarkSample {
  atMs: number;
  watermarkMs: number;
  source: 'gold' | 'now';
}

/** Elements dropped as too late in one window (epoch ms): window expired, or its trigger finished. */
export interface DroppedWindow {
  windowStartMs: number;
  windowEndMs: number;
  count: number;
  expiredWindow: number;
  closedWindow: number;
  /** The latest drop in the window (epoch ms UTC) and its event id (the `dropped_late` log line names it too). */
  lastDroppedAtMs: number;
  lastEventId: string;
}

/**
 * What `GET /api/dashboard` returns for one look-back: `collectStatus` exactly (every count the page prints), the
 * refresh interval (ms), the minute starts (epoch ms UTC) the series align with, the routes most recently fired
 * first, the watermark history oldest first, and the dropped-late counters.
 */
export interface DashboardData {
  status: StatusReport;
  refreshMs: number;
  minuteStartsMs: number[];
  perMinute: DestinationSeries[];
  routes: RoutePanes[];
  watermarkHistory: WatermarkSample[];
  droppedLate: DroppedWindow[];
}

/** Number of a COUNT(*) or INT64 column (the emulator sometimes returns text). */
const num = (value: unknown): number => Number(value ?? 0);

/** The minute starts covering [sinceMs, nowMs], epoch ms. */
export function minuteStarts(sinceMs: number, nowMs: number): number[] {
  const out: number[] = [];
  for (let m = Math.floor(sinceMs / MINUTE_MS) * MINUTE_MS; m <= nowMs; m += MINUTE_MS) out.push(m);
  return out;
}

/**
 * Buckets (minute start ms, key, count) rows into one series per key aligned with `minutes`; rows outside the range
 * (clock skew) go to the nearest end, so a series' sum equals the rows counted.
 */
export function bucketPerMinute(
  minutes: readonly number[],
  rows: readonly { minuteMs: number; key: string; n: number }[],
): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const first = minutes[0] ?? 0;
  for (const row of rows) {
    let series = out.get(row.key);
    if (!series) out.set(row.key, (series = minutes.map(() => 0)));
    const index = Math.min(
      minutes.length - 1,
      Math.max(0, Math.round((row.minuteMs - first) / MINUTE_MS)),
    );
    series[index] = (series[index] ?? 0) + row.n;
  }
  return out;
}

/**
 * Collects the dashboard's numbers of `pipeline` for [sinceMs, nowMs] (epoch ms UTC); panes, watermark and dropped
 * counters are its first aggregation's.
 * @throws OpsError (one line) when a backend cannot be reached or refuses a query.
 */
export async function collectDashboard(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  sinceMs: number,
  nowMs: number,
  options: { refreshMs: number },
): Promise<DashboardData> {
  const q = (ref: TableRef): string => tableName(ref, ctx.projectId);
  const { tables: t, operatorColumns: cols, aggregations } = pipeline;
  const aggregation = aggregations[0];
  if (aggregation === undefined) throw new Error(`pipeline ${pipeline.name} has no aggregation`);
  const gold = q(aggregation.goldTable);
  const keyColumn = cols.aggregations[aggregation.name]?.goldKeyColumn ?? 'key';
  const p = { since_ms: sinceMs };
  const types = { since_ms: 'INT64' };
  const since = 'TIMESTAMP_MILLIS(@since_ms)';
  /** Rows of `ref` per minute of `column` and per destination `key` (an SQL expression). */
  const perMinuteOf = (ref: TableRef, column: string, key: string) =>
    query<{ minute_ms: unknown; k: unknown; n: unknown }>(
      ctx,
      `SELECT UNIX_MILLIS(TIMESTAMP_TRUNC(${column}, MINUTE)) AS minute_ms, ${key} AS k, COUNT(*) AS n
       FROM \`${q(ref)}\` WHERE ${column} >= ${since} GROUP BY 1, 2`,
      p,
      types,
    );
  const [status, silver, quarantine, badData, panes, marks, retry, dropped] = await Promise.all([
    collectStatus(ctx, pipeline, sinceMs, nowMs),
    perMinuteOf(t.silver, cols.silver.writtenAt, "'Silver'"),
    perMinuteOf(
      t.quarantine,
      cols.quarantine.rejectedAt,
      `CONCAT('quarantine: ', ${cols.quarantine.stage})`,
    ),
    perMinuteOf(t.badData, 'insert_time', "'bad data'"),
    query<Record<string, unknown>>(
      ctx,
      `SELECT ${keyColumn} AS route_key, UNIX_MILLIS(window_start) AS window_start_ms, UNIX_MILLIS(window_end) AS window_end_ms,
              booking_count, fare_total, pane_timing, pane_index, is_final, UNIX_MILLIS(emitted_at) AS emitted_ms
       FROM \`${gold}_latest\`
       WHERE pipeline = @pipeline AND emitted_at >= ${since}
       ORDER BY route_key, window_start_ms`,
      { ...p, pipeline: aggregation.name },
      { ...types, pipeline: 'STRING' },
    ),
    query<{ at_ms: unknown; wm_ms: unknown }>(
      ctx,
      `SELECT UNIX_MILLIS(emitted_at) AS at_ms, MAX(UNIX_MILLIS(watermark_at_emission)) AS wm_ms
       FROM \`${gold}\`
       WHERE pipeline = @pipeline AND emitted_at >= ${since} AND watermark_at_emission IS NOT NULL
       GROUP BY 1 ORDER BY 1 DESC LIMIT 500`,
      { ...p, pipeline: aggregation.name },
      { ...types, pipeline: 'STRING' },
    ),
    retryStoreRows(ctx, pipeline),
    firestoreCall(ctx, 'dropped-late counters', () =>
      windowStoreAt(ctx, aggregationNamespace(pipeline, aggregation), (v) =>
        aggregation.parseAccumulator(v),
      ).readDropped(),
    ),
  ]);

  const minutes = minuteStarts(sinceMs, nowMs);
  const minuteRows = [...silver, ...quarantine, ...badData].map((r) => ({
    minuteMs: num(r.minute_ms),
    key: String(r.k),
    n: num(r.n),
  }));
  for (const { rows } of retry) {
    for (const row of rows) {
      if (row.processedTimestampMs < sinceMs) continue;
      minuteRows.push({
        minuteMs: Math.floor(row.processedTimestampMs / MINUTE_MS) * MINUTE_MS,
        key: 'retry store',
        n: 1,
      });
    }
  }
  const buckets = bucketPerMinute(minutes, minuteRows);
  const order = (k: string): string =>
    k === 'Silver' ? '0' : k.startsWith('quarantine') ? `1${k}` : k === 'bad data' ? '2' : '3';
  const perMinute = [...buckets.entries()]
    .sort(([a], [b]) => order(a).localeCompare(order(b)))
    .map(([destination, counts]) => ({ destination, counts }));

  const byRoute = new Map<string, LatestPane[]>();
  for (const r of panes) {
    const key = String(r.route_key);
    const list = byRoute.get(key) ?? [];
    list.push({
      windowStartMs: num(r.window_start_ms),
      windowEndMs: num(r.window_end_ms),
      bookingCount: num(r.booking_count),
      fareTotal: cellText(r.fare_total),
      timing: String(r.pane_timing),
      paneIndex: num(r.pane_index),
      isFinal: r.is_final === true,
      emittedAtMs: num(r.emitted_ms),
    });
    byRoute.set(key, list);
  }
  const lastEmitted = (list: LatestPane[]): number => Math.max(...list.map((x) => x.emittedAtMs));
  const routes = [...byRoute.entries()]
    .sort(([ka, a], [kb, b]) => lastEmitted(b) - lastEmitted(a) || ka.localeCompare(kb))
    .slice(0, MAX_ROUTES)
    .map(([routeKey, list]) => ({ routeKey, panes: list.slice(-MAX_PANES_PER_ROUTE) }));

  const watermarkHistory: WatermarkSample[] = marks
    .map((m) => ({ atMs: num(m.at_ms), watermarkMs: num(m.wm_ms), source: 'gold' as const }))
    .reverse();
  const wm = status.aggregations[0]?.watermark ?? null;
  if (wm !== null)
    watermarkHistory.push({ atMs: nowMs, watermarkMs: Date.parse(wm), source: 'now' });

  return {
    status,
    refreshMs: options.refreshMs,
    minuteStartsMs: minutes,
    perMinute,
    routes,
    watermarkHistory,
    droppedLate: dropped.map((d) => ({
      windowStartMs: d.windowStartMs,
      windowEndMs: d.windowEndMs,
      count: d.count,
      expiredWindow: d.expiredWindow,
      closedWindow: d.closedWindow,
      lastDroppedAtMs: d.lastDroppedAtMs,
      lastEventId: d.lastEventId,
    })),
  };
}
