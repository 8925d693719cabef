// `offvia gold restate`: recompute closed windows from what gold counts (Silver, the schema-retry store, bad data
// for Silver) in BigQuery and write a restatement pane for each window whose latest gold pane differs.
import type { Command } from 'commander';
import { parseBookingAccumulator } from '../aggregates/booking-aggregates';
import { tableName } from '../config/env';
import type { CliAction } from '../dashboard/command';
import { BigQueryRowWriter } from '../sinks/bigquery-writer';
import type { RowResult } from '../sinks/row-writer';
import type { IntervalWindow, WindowFnSpec } from '../windowing';
import { query, type OpsContext } from './context';
import { EXIT, OpsError, UsageError } from './errors';
import { cellText, keyValues, section, table, toJson, type Io } from './output';
import {
  canonicalAmount,
  isClosed,
  planChanges,
  restatementRow,
  restatementSql,
  parseRouteKeys,
  parseUtcTime,
  windowsOfRange,
  type LatestPane,
  type PaneSource,
  type Recomputed,
  type WindowAggregate,
  type WindowChange,
} from './restate-plan';
import { readWatermark, retryStoreRows, windowStoreAt } from './state-reader';
import { choosePipeline, DEFAULT_PIPELINE } from './pipeline-choice';

/** What the command was asked to do. */
export interface RestateOptions {
  /** First and last window start, epoch ms (UTC), both inclusive. */
  fromMs: number;
  toMs: number;
  /** Route keys to restate; empty for every route. */
  keys: readonly string[];
  dryRun: boolean;
  /** Restate windows the watermark has not closed yet (their stream panes would then be hidden: docs/windows.md). */
  force: boolean;
}

/** One window of the report: its latest pane now and the restated aggregate. */
export interface RestatedWindow {
  /** RFC 3339 UTC. */
  windowStart: string;
  routeKey: string;
  current: (WindowAggregate & { source: PaneSource; paneIndex: number }) | null;
  restated: WindowAggregate;
  /** `written` (or would be in a dry run), or `open`: not closed by the watermark, left alone (no --force). */
  action: 'restate' | 'open';
  insertId: string | null;
}

/** The result of a run (or a dry run); `--json` prints it. */
export interface RestateReport {
  dryRun: boolean;
  pipeline: string;
  /** RFC 3339 UTC: the range's first and last window start. */
  from: string;
  to: string;
  keys: string[];
  /** Windows in the range (per route: every route with data or a pane in them). */
  windows: number;
  /** The watermark restate judged closed windows by, RFC 3339 UTC; null before any event. */
  watermark: string | null;
  allowedLatenessMs: number;
  /** (route, window)s whose latest pane already equals the recomputation. */
  unchanged: number;
  /** Only the (route, window)s that differ. */
  changes: RestatedWindow[];
  /** Restatement panes written (0 in a dry run). */
  written: number;
  /** Windows left alone because the watermark has not closed them (see --force). */
  open: number;
  /** Retry-store rows of Silver passed to the query. */
  retryStoreRows: number;
}

/** A cell as text (NUMERIC and TIMESTAMP wrappers unwrapped); null stays null. */
function text(v: unknown): string | null {
  return v === null || v === undefined ? null : cellText(v);
}

/** The grid of a fixed or sliding window function (windowsOfRange refuses sessions before this is called). */
function gridOf(windowFn: WindowFnSpec): { sizeMs: number; stepMs: number; offsetMs: number } {
  if (windowFn.kind === 'sessions')
    throw new UsageError('gold restate: session windows have no grid');
  return {
    sizeMs: windowFn.sizeMs,
    stepMs: windowFn.kind === 'fixed' ? windowFn.sizeMs : windowFn.periodMs,
    offsetMs: windowFn.offsetMs,
  };
}

/** The recomputed aggregates of the range (restatementSql), with the retry store's Silver rows as a parameter. */
async function recompute(
  ctx: OpsContext,
  windows: readonly IntervalWindow[],
  keys: readonly string[],
  retryRows: readonly string[],
): Promise<Recomputed[]> {
  const first = windows[0];
  const last = windows[windows.length - 1];
  if (first === undefined || last === undefined) return [];
  const sql = restatementSql({
    silverTable: ctx.tables.silver,
    badDataTable: ctx.tables.badData,
    grid: gridOf(ctx.windows.strategy.windowFn),
    keys,
  });
  const rows = await query<Record<string, unknown>>(
    ctx,
    sql,
    {
      starts: windows.map((w) => w.startMs),
      loMs: first.startMs,
      hiMs: last.endMs,
      silverTable: ctx.tables.silver,
      retryRows: [...retryRows],
      ...keysParam(keys).params,
    },
    {
      starts: ['INT64'],
      loMs: 'INT64',
      hiMs: 'INT64',
      silverTable: 'STRING',
      retryRows: ['STRING'],
      ...keysParam(keys).types,
    },
  );
  return rows.map(recomputedOf);
}

/** The `@keys` query parameter and its type when routes are chosen (`--key`); nothing for every route. */
function keysParam(keys: readonly string[]): {
  params: { keys?: string[] };
  types: { keys?: string[] };
} {
  return keys.length > 0
    ? { params: { keys: [...keys] }, types: { keys: ['STRING'] } }
    : { params: {}, types: {} };
}

/** A (route, window)'s aggregate as the recomputation and the latest-pane view both return it. */
function recomputedOf(r: Record<string, unknown>): Recomputed {
  return {
    routeKey: text(r.route_key) ?? '',
    windowStartMs: Number(text(r.window_start_ms)),
    count: Number(text(r.booking_count)),
    total: canonicalAmount(text(r.fare_total)) ?? '0',
    min: canonicalAmount(text(r.fare_min)),
    max: canonicalAmount(text(r.fare_max)),
    mean: canonicalAmount(text(r.fare_mean)),
  };
}

/** The latest pane of every (route, window) of the range, from the gold table's latest-pane view. */
async function latestPanes(
  ctx: OpsContext,
  windows: readonly IntervalWindow[],
  keys: readonly string[],
): Promise<LatestPane[]> {
  const first = windows[0];
  const last = windows[windows.length - 1];
  if (first === undefined || last === undefined) return [];
  const view = tableName(
    { ...ctx.windows.goldTable, tableId: `${ctx.windows.goldTable.tableId}_latest` },
    ctx.projectId,
  );
  // window_start is a partition column of the view's ROW_NUMBER, so BigQuery prunes gold's DATE partitions. The
  // emulator does not compare TIMESTAMP parameters: INT64 epoch ms through TIMESTAMP_MILLIS.
  const rows = await query<Record<string, unknown>>(
    ctx,
    `SELECT route_key, UNIX_MILLIS(window_start) AS window_start_ms, booking_count,
            CAST(fare_total AS STRING) AS fare_total, CAST(fare_min AS STRING) AS fare_min,
            CAST(fare_max AS STRING) AS fare_max, CAST(fare_mean AS STRING) AS fare_mean,
            source, pane_index, pane_on_time_index
     FROM \`${view}\`
     WHERE pipeline = @pipeline AND window_start >= TIMESTAMP_MILLIS(@fromMs)
       AND window_start <= TIMESTAMP_MILLIS(@toMs)
       ${keys.length > 0 ? 'AND route_key IN UNNEST(@keys)' : ''}`,
    {
      pipeline: ctx.windows.pipeline,
      fromMs: first.startMs,
      toMs: last.startMs,
      ...keysParam(keys).params,
    },
    {
      pipeline: 'STRING',
      fromMs: 'INT64',
      toMs: 'INT64',
      ...keysParam(keys).types,
    },
  );
  return rows.map((r) => ({
    ...recomputedOf(r),
    source: r.source === 'restatement' ? 'restatement' : 'stream',
    paneIndex: Number(text(r.pane_index)),
    paneOnTimeIndex: Number(text(r.pane_on_time_index)),
  }));
}

/**
 * The retry store's rows waiting for Silver whose event time is in [loMs, hiMs), as their Silver row JSON texts.
 * Gold counted them when they arrived (docs/windows.md), so the recomputation must too.
 * @throws OpsError when a stored row is not JSON with an `event_timestamp` (a corrupt document: restating without
 *   it would undercount its window).
 */
async function heldRows(ctx: OpsContext, loMs: number, hiMs: number): Promise<string[]> {
  const out: string[] = [];
  for (const { table: target, rows } of await retryStoreRows(
    ctx,
    choosePipeline(DEFAULT_PIPELINE),
  )) {
    if (target !== ctx.tables.silver) continue;
    for (const row of rows) {
      let eventMs: number;
      try {
        eventMs = Date.parse(
          String((JSON.parse(row.rowJson) as Record<string, unknown>).event_timestamp),
        );
      } catch (err) {
        throw new OpsError(
          `retry store row ${row.id} (${target}) is not JSON: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      if (Number.isNaN(eventMs)) {
        throw new OpsError(`retry store row ${row.id} (${target}) has no event_timestamp`);
      }
      if (eventMs >= loMs && eventMs < hiMs) out.push(row.rowJson);
    }
  }
  return out;
}

/**
 * Runs `gold restate`: recomputes every (route, window) of the range, compares it with the latest pane, and (unless
 * a dry run) writes a restatement pane for each closed window that differs, 500 rows a call (BigQuery's recommended
 * insertAll size). Windows still open by the watermark are reported and left alone unless `force`.
 * @throws OpsError when BigQuery or Firestore fail, or gold refuses a row (the rows already written stand: running
 *   the command again writes only what is still missing, as the latest panes then equal the recomputation).
 */
export async function restate(
  ctx: OpsContext,
  options: RestateOptions,
  now: () => number,
): Promise<RestateReport> {
  const { strategy, pipeline } = ctx.windows;
  const windows = windowsOfRange(strategy.windowFn, options.fromMs, options.toMs);
  const first = windows[0] as IntervalWindow;
  const last = windows[windows.length - 1] as IntervalWindow;
  // Booking's window state, under its configured namespace (OFFVIA_WINDOW_FIRESTORE_ROOT / OFFVIA_WINDOW_PIPELINE).
  const watermark = await readWatermark(
    ctx,
    windowStoreAt(ctx, { root: ctx.windows.firestoreRoot, pipeline }, parseBookingAccumulator),
  );
  const retryRows = await heldRows(ctx, first.startMs, last.endMs);
  const [recomputed, latest] = await Promise.all([
    recompute(ctx, windows, options.keys, retryRows),
    latestPanes(ctx, windows, options.keys),
  ]);
  const changes = planChanges(
    windows,
    recomputed,
    latest,
    (w) => isClosed(w, strategy.allowedLatenessMs, watermark.watermarkMs),
    options.force,
  );
  const examined = new Set([
    ...recomputed.map((r) => `${r.windowStartMs}|${r.routeKey}`),
    ...latest.map((p) => `${p.windowStartMs}|${p.routeKey}`),
  ]).size;
  const nowMs = now();
  const rows = changes
    .filter((c) => c.action === 'restate')
    .map((c) => restatementRow(pipeline, c, watermark.watermarkMs, nowMs));
  const insertIds = new Map(rows.map((r) => [`${r.window_start}|${r.route_key}`, r.insert_id]));
  const report: RestateReport = {
    dryRun: options.dryRun,
    pipeline,
    from: new Date(first.startMs).toISOString(),
    to: new Date(last.startMs).toISOString(),
    keys: [...options.keys],
    windows: windows.length,
    watermark:
      watermark.watermarkMs === null ? null : new Date(watermark.watermarkMs).toISOString(),
    allowedLatenessMs: strategy.allowedLatenessMs,
    unchanged: examined - changes.length,
    changes: changes.map((c) => reported(c, insertIds)),
    written: 0,
    open: changes.filter((c) => c.action === 'open').length,
    retryStoreRows: retryRows.length,
  };
  if (options.dryRun || rows.length === 0) return report;

  const writer = new BigQueryRowWriter(ctx.bigquery);
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    let results: RowResult[];
    try {
      results = await writer.insertRows(
        ctx.windows.goldTable,
        chunk.map((r) => ({ insertId: r.insert_id, json: { ...r } })),
      );
    } catch (err) {
      throw new OpsError(
        `${report.written} of ${rows.length} restatement panes written, then ${ctx.tables.gold} failed ` +
          `(${err instanceof Error ? err.message : String(err)}); run the same command again: it writes only what is still missing`,
      );
    }
    const refused = results.filter((r) => !r.ok);
    if (refused.length > 0) {
      throw new OpsError(
        `${refused.length} restatement panes refused by ${ctx.tables.gold}: ${JSON.stringify(refused[0])}`,
      );
    }
    report.written += chunk.length;
  }
  return report;
}

function reported(c: WindowChange, insertIds: Map<string, string>): RestatedWindow {
  const start = new Date(c.window.startMs).toISOString();
  return {
    windowStart: start,
    routeKey: c.routeKey,
    current:
      c.current === null
        ? null
        : {
            count: c.current.count,
            total: c.current.total,
            min: c.current.min,
            max: c.current.max,
            mean: c.current.mean,
            source: c.current.source,
            paneIndex: c.current.paneIndex,
          },
    restated: c.restated,
    action: c.action,
    insertId: insertIds.get(`${start}|${c.routeKey}`) ?? null,
  };
}

/** The report as text: a summary, then one line per window that changes (current pane → restated). */
export function formatRestate(r: RestateReport): string {
  const head = r.dryRun
    ? `gold restate --dry-run: ${r.changes.length - r.open} window(s) would be restated; nothing written`
    : `gold restate: ${r.written} restatement pane(s) written`;
  const out = [
    head,
    section(
      'Range',
      keyValues([
        ['pipeline', r.pipeline],
        ['window starts', `${r.from} … ${r.to} (${r.windows} windows)`],
        ['routes', r.keys.length > 0 ? r.keys.join(', ') : 'all'],
        ['watermark', r.watermark ?? 'none (no event counted yet)'],
        ['allowed lateness', `${r.allowedLatenessMs / 1000} s`],
        ['retry-store rows in range', r.retryStoreRows],
        ['unchanged (route, window)s', r.unchanged],
        ['open, left alone (see --force)', r.open],
      ]),
    ),
  ];
  out.push(
    section(
      r.dryRun ? 'Windows that would change' : 'Windows that changed',
      table(
        ['window start', 'route', 'latest pane now', 'restated', r.dryRun ? 'would' : 'done'],
        r.changes.map((c) => [
          c.windowStart,
          c.routeKey,
          c.current === null
            ? '(no pane)'
            : `${c.current.count} / ${c.current.total} (${c.current.source})`,
          `${c.restated.count} / ${c.restated.total}`,
          c.action === 'open' ? 'skip: window still open' : r.dryRun ? 'restate' : 'restated',
        ]),
        80,
      ),
    ),
  );
  if (r.changes.length > 0) out.push('\n(count / fare total)');
  if (r.open > 0) {
    out.push(
      `\n${r.open} window(s) not yet past end + allowed lateness by the watermark were left alone: the stream may ` +
        'still add panes to them. Restate them once closed, or pass --force (docs/windows.md).',
    );
  }
  return out.join('\n');
}

/** Flags of `offvia gold restate`. */
interface RestateFlags {
  from?: string;
  to?: string;
  key?: string[];
  dryRun?: boolean;
  force?: boolean;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * Registers `offvia gold restate` (called from shared/ops/cli.ts). Exit codes: 0 done, 1 a backend failed or windows
 * were left open (without --force), 2 bad flags.
 */
export function addGoldCommand(
  program: Command,
  action: CliAction,
  deps: { readonly io: Io; readonly now: () => number },
): void {
  const gold = program
    .command('gold')
    .description('work on the gold table (offvia_gold.route_panes)');
  gold
    .command('restate')
    .description(
      'recompute closed windows from Silver, the schema-retry store and bad data (exact NUMERIC in BigQuery) and write a restatement pane where the latest pane differs',
    )
    .option('--from <time>', 'first window start, RFC 3339 UTC (e.g. 2026-10-07T14:10:00Z)')
    .option('--to <time>', 'last window start, RFC 3339 UTC, inclusive')
    .option('--key <route>', 'only this route, ORIGIN-DESTINATION-CURRENCY (repeatable)', collect)
    .option(
      '--dry-run',
      'print each window that would change (latest pane now, restated); write nothing',
    )
    .option(
      '--force',
      'also restate windows the watermark has not closed (end + allowed lateness); see docs/windows.md',
    )
    .addHelpText(
      'after',
      '\nA restatement pane (source = restatement) wins over the stream panes of its window in route_panes_latest.\n' +
        'Restating unchanged data again writes nothing.\nExamples:\n' +
        '  offvia gold restate --from 2026-10-07T14:00:00Z --to 2026-10-07T14:59:00Z --dry-run\n' +
        '  offvia gold restate --from 2026-10-07T14:10:00Z --to 2026-10-07T14:10:00Z --key JFK-LHR-USD',
    )
    .action(
      action(async (open, flags, opts: RestateFlags) => {
        if (opts.from === undefined || opts.to === undefined) {
          throw new UsageError('gold restate: --from and --to are required');
        }
        const options: RestateOptions = {
          fromMs: parseUtcTime(opts.from, '--from'),
          toMs: parseUtcTime(opts.to, '--to'),
          keys: parseRouteKeys(opts.key ?? []),
          dryRun: opts.dryRun === true,
          force: opts.force === true,
        };
        const ctx = open();
        // The grid is checked before any backend call, so a bad range is a usage error even with no stack up.
        windowsOfRange(ctx.windows.strategy.windowFn, options.fromMs, options.toMs);
        const report = await restate(ctx, options, deps.now);
        deps.io.out(flags.json ? toJson(report) : formatRestate(report));
        return report.open > 0 ? EXIT.failure : EXIT.ok;
      }),
    );
}
