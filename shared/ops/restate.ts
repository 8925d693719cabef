// `offvia gold restate`: recompute closed windows of any aggregation from what gold counts, with its own combine, and
// write a restatement pane for each window whose latest gold pane differs.
import type { Command } from 'commander';
import type { CliAction } from '../dashboard/command';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { aggregationNamespace } from '../pipeline/runtime/namespace';
import type { IntervalWindow } from '../windowing';
import { query, type OpsContext } from './context';
import { EXIT, OpsError, UsageError } from './errors';
import { insertAll } from './run';
import { collect } from './selection';
import { cellText, keyValues, plainRow, section, table, toJson, type Io } from './output';
import { tableName } from '../config/env';
import {
  heldSilverRow,
  isClosed,
  latestPaneSql,
  paneValues,
  parseKeys,
  parseUtcTime,
  planChanges,
  recomputedOf,
  recomputePanes,
  restatementRow,
  silverSql,
  windowsOfRange,
  type LatestPane,
  type RestatableAggregation,
  type SilverEvent,
  type WindowChange,
} from './restate-plan';
import { readWatermark, retryStoreRows, windowStoreAt } from './state-reader';

/** What the command was asked to do. */
export interface RestateOptions {
  /** First and last window start, epoch ms (UTC), both inclusive. */
  fromMs: number;
  toMs: number;
  /** Keys to restate (a route, a device, a region); empty for every key. */
  keys: readonly string[];
  dryRun: boolean;
  /** Also restate windows the watermark has not closed (docs/windows.md). */
  force: boolean;
}

/** One window of the report: its latest pane now and the restated one (key and value columns, canonical). */
export interface RestatedWindow {
  aggregation: string;
  /** RFC 3339 UTC. */
  windowStart: string;
  key: string;
  current: Pick<LatestPane, 'values' | 'restatement' | 'paneIndex'> | null;
  restated: Readonly<Record<string, unknown>>;
  action: WindowChange['action'];
  insertId: string | null;
}

/** One aggregation's part of a run. */
export interface AggregationRestate {
  name: string;
  goldTable: string;
  /** Windows of the range on this aggregation's grid. */
  windows: number;
  /** The watermark the windows were judged closed by, RFC 3339 UTC; null before any event. */
  watermark: string | null;
  allowedLatenessMs: number;
  /** (key, window)s whose latest pane already equals the recomputation. */
  unchanged: number;
  open: number;
  written: number;
}

/** The result of a run (or a dry run); `--json` prints it. */
export interface RestateReport {
  dryRun: boolean;
  pipeline: string;
  /** RFC 3339 UTC: the range's first and last window start. */
  from: string;
  to: string;
  keys: string[];
  aggregations: AggregationRestate[];
  /** `windows`, `unchanged`, `written` (0 in a dry run), `open`: the sums over the aggregations. */
  windows: number;
  unchanged: number;
  /** Only the (key, window)s that differ. */
  changes: RestatedWindow[];
  written: number;
  open: number;
  /** Events of the range read, and of those held in bad data or the retry store rather than Silver. */
  events: number;
  heldEvents: number;
}

/**
 * The aggregations to restate: those named (all when `names` is empty), each with a fixed or sliding window and a
 * `silverValue` in the pipeline's operator columns.
 * @throws UsageError, one line naming the aggregation and why it cannot be restated from Silver, or an unknown name
 */
export function restatableAggregations(
  pipeline: AnyPipelineDefinition,
  names: readonly string[] = [],
): RestatableAggregation[] {
  const known = pipeline.aggregations.map((a) => a.name);
  const unknown = names.find((n) => !known.includes(n));
  if (unknown !== undefined) {
    throw new UsageError(
      `--aggregation ${JSON.stringify(unknown)}: pipeline ${pipeline.name} has ${known.join(', ') || 'no aggregation'}`,
    );
  }
  const chosen = pipeline.aggregations.filter((a) => names.length === 0 || names.includes(a.name));
  if (chosen.length === 0) {
    throw new UsageError(`gold restate: pipeline ${pipeline.name} has no aggregation to restate`);
  }
  return chosen.map((definition) => {
    const columns = pipeline.operatorColumns.aggregations[definition.name];
    const refuse = (why: string): never => {
      throw new UsageError(
        `gold restate: aggregation ${definition.name} of pipeline ${pipeline.name} cannot be restated from Silver: ${why}`,
      );
    };
    if (definition.strategy.windowFn.kind === 'sessions')
      refuse('session windows have no fixed grid to restate');
    if (columns?.silverValue === undefined) {
      refuse(
        `its combine's input cannot be read back from a Silver row (no operatorColumns.aggregations.${definition.name}.silverValue)`,
      );
    }
    return { definition, columns } as RestatableAggregation;
  });
}

/**
 * The events of [loMs, hiMs) that gold counts (docs/windows.md, "What gold counts"): the dedup view's rows, then
 * the retry store's rows waiting for Silver and bad-data rows whose `target_dest` is Silver, each event
 * (`COALESCE(event id, message id)`) once, Silver first.
 * @throws OpsError when a held row is not JSON with an event time (restating without it would undercount its window)
 */
async function eventsOfRange(
  ctx: OpsContext,
  loMs: number,
  hiMs: number,
): Promise<{ events: SilverEvent[]; held: number }> {
  const { silver } = ctx.pipeline.operatorColumns;
  const [silverRows, badRows, retry] = await Promise.all([
    query<Record<string, unknown>>(
      ctx,
      silverSql(tableName(silver.dedupView, ctx.projectId), silver.eventTime),
      { loMs, hiMs },
      { loMs: 'INT64', hiMs: 'INT64' },
    ),
    query<{ bad_data: string; insert_id: unknown }>(
      ctx,
      `SELECT bad_data, insert_id FROM \`${ctx.tables.badData}\` WHERE target_dest = @silverTable`,
      { silverTable: ctx.tables.silver },
    ),
    retryStoreRows(ctx, ctx.pipeline),
  ]);
  const eventKey = (row: Readonly<Record<string, unknown>>): string =>
    JSON.stringify(row[silver.eventId] ?? row[silver.messageId] ?? null);
  const byEvent = new Map<string, SilverEvent>();
  for (const r of silverRows) {
    const row = plainRow(r);
    byEvent.set(eventKey(row), { eventMs: Number(row.restate_event_ms), row });
  }
  const held = [
    ...badRows.map((r) => ({ where: `bad-data row ${String(r.insert_id)}`, json: r.bad_data })),
    ...retry
      .filter((t) => t.table === ctx.tables.silver)
      .flatMap((t) =>
        t.rows.map((r) => ({ where: `retry store row ${r.id} (${t.table})`, json: r.rowJson })),
      ),
  ];
  let heldCount = 0;
  for (const { where, json } of held) {
    let row: Record<string, unknown>;
    try {
      row = heldSilverRow(json);
    } catch (err) {
      throw new OpsError(
        `${where} is not JSON: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const eventMs = Date.parse(String(row[silver.eventTime]));
    if (Number.isNaN(eventMs)) throw new OpsError(`${where} has no ${silver.eventTime}`);
    const key = eventKey(row);
    if (eventMs < loMs || eventMs >= hiMs || byEvent.has(key)) continue;
    byEvent.set(key, { eventMs, row });
    heldCount += 1;
  }
  return { events: [...byEvent.values()], held: heldCount };
}

/** The latest pane of every (key, window) of the range in the aggregation's gold table. */
async function latestPanes(
  ctx: OpsContext,
  aggregation: RestatableAggregation,
  windows: readonly IntervalWindow[],
  keys: readonly string[],
): Promise<LatestPane[]> {
  const first = windows[0];
  const last = windows[windows.length - 1];
  if (first === undefined || last === undefined) return [];
  const keyColumn = aggregation.columns.goldKeyColumn;
  const withKeys = keys.length > 0;
  const rows = await query<Record<string, unknown>>(
    ctx,
    latestPaneSql(tableName(aggregation.definition.goldTable, ctx.projectId), keyColumn, withKeys),
    {
      pipeline: aggregation.definition.name,
      fromMs: first.startMs,
      toMs: last.startMs,
      ...(withKeys ? { keys: [...keys] } : {}),
    },
    {
      pipeline: 'STRING',
      fromMs: 'INT64',
      toMs: 'INT64',
      ...(withKeys ? { keys: ['STRING'] } : {}),
    },
  );
  // The raw cells, not `plainRow`: a ranking's ARRAY<STRUCT> must stay a list to compare (canonicalCell unwraps).
  return rows.map((r) => {
    const { window_start_ms: startMs, is_restatement: restatement, ...row } = r;
    const onTime = row.pane_on_time_index;
    return {
      key: cellText(row[keyColumn]),
      windowStartMs: Number(cellText(startMs)),
      values: paneValues(row, aggregation.columns.restatementColumns),
      restatement: restatement === true,
      paneIndex: Number(cellText(row.pane_index)),
      paneOnTimeIndex: onTime === undefined || onTime === null ? -1 : Number(cellText(onTime)),
    };
  });
}

/** One aggregation's plan: its windows, watermark and changes, and the restatement rows to write. */
async function planAggregation(
  ctx: OpsContext,
  aggregation: RestatableAggregation,
  options: RestateOptions,
  events: readonly SilverEvent[],
  nowMs: number,
): Promise<{
  report: AggregationRestate;
  changes: RestatedWindow[];
  rows: Record<string, unknown>[];
}> {
  const { strategy, name, goldTable } = aggregation.definition;
  const windows = windowsOfRange(strategy.windowFn, options.fromMs, options.toMs);
  const store = windowStoreAt(
    ctx,
    aggregationNamespace(ctx.pipeline, aggregation.definition),
    (v) => aggregation.definition.parseAccumulator(v),
  );
  const [watermark, latest] = await Promise.all([
    readWatermark(ctx, store),
    latestPanes(ctx, aggregation, windows, options.keys),
  ]);
  const recomputed = recomputePanes(aggregation, events, windows, options.keys);
  const combine = aggregation.definition.combineFn as unknown as {
    createAccumulator(): unknown;
    extractOutput(acc: unknown): unknown;
  };
  const changes = planChanges(
    windows,
    recomputed,
    latest,
    (key, window) =>
      recomputedOf(aggregation, key, window, combine.extractOutput(combine.createAccumulator())),
    (w) => isClosed(w, strategy.allowedLatenessMs, watermark.watermarkMs),
    options.force,
  );
  const examined = new Set([...recomputed, ...latest].map((p) => `${p.windowStartMs}|${p.key}`))
    .size;
  const rows: Record<string, unknown>[] = [];
  const reported = changes.map((c): RestatedWindow => {
    const row =
      c.action === 'restate' ? restatementRow(aggregation, c, watermark.watermarkMs, nowMs) : null;
    if (row !== null) rows.push(row);
    const { current } = c;
    return {
      aggregation: name,
      windowStart: new Date(c.window.startMs).toISOString(),
      key: c.key,
      current: current && {
        values: current.values,
        restatement: current.restatement,
        paneIndex: current.paneIndex,
      },
      restated: c.restated.values,
      action: c.action,
      insertId: row === null ? null : String(row.insert_id),
    };
  });
  return {
    report: {
      name,
      goldTable: tableName(goldTable, ctx.projectId),
      windows: windows.length,
      watermark:
        watermark.watermarkMs === null ? null : new Date(watermark.watermarkMs).toISOString(),
      allowedLatenessMs: strategy.allowedLatenessMs,
      unchanged: examined - changes.length,
      open: changes.filter((c) => c.action === 'open').length,
      written: 0,
    },
    changes: reported,
    rows,
  };
}

/**
 * Runs `gold restate` on `aggregations`: recomputes every (key, window) of the range from the events gold counts and,
 * unless a dry run, writes a restatement pane for each closed (or `force`d) window whose latest gold pane differs.
 * @throws UsageError for a range off an aggregation's grid; OpsError when BigQuery or Firestore fail, a held row is
 *   corrupt, or gold refuses a row
 */
export async function restate(
  ctx: OpsContext,
  aggregations: readonly RestatableAggregation[],
  options: RestateOptions,
  now: () => number,
): Promise<RestateReport> {
  const grids = aggregations.map((a) =>
    windowsOfRange(a.definition.strategy.windowFn, options.fromMs, options.toMs),
  );
  const loMs = Math.min(...grids.map((w) => w[0]?.startMs ?? options.fromMs));
  const hiMs = Math.max(...grids.map((w) => w[w.length - 1]?.endMs ?? options.toMs));
  const { events, held } = await eventsOfRange(ctx, loMs, hiMs);
  const nowMs = now();
  const plans = await Promise.all(
    aggregations.map((a) => planAggregation(ctx, a, options, events, nowMs)),
  );
  const report: RestateReport = {
    dryRun: options.dryRun,
    pipeline: ctx.pipeline.name,
    from: new Date(options.fromMs).toISOString(),
    to: new Date(options.toMs).toISOString(),
    keys: [...options.keys],
    aggregations: plans.map((p) => p.report),
    windows: plans.reduce((n, p) => n + p.report.windows, 0),
    unchanged: plans.reduce((n, p) => n + p.report.unchanged, 0),
    changes: plans.flatMap((p) => p.changes),
    written: 0,
    open: plans.reduce((n, p) => n + p.report.open, 0),
    events: events.length,
    heldEvents: held,
  };
  if (options.dryRun) return report;
  for (const [i, plan] of plans.entries()) {
    const aggregation = aggregations[i];
    if (aggregation === undefined || plan.rows.length === 0) continue;
    await insertAll(
      ctx,
      aggregation.definition.goldTable,
      plan.rows.map((r) => ({ insertId: String(r.insert_id), json: { ...r } })),
      'restatement panes',
      plan.report.goldTable,
      // The rows already written stand: running the command again writes only what is still missing.
      (written, cause) =>
        `${written} of ${plan.rows.length} restatement panes written, then ${plan.report.goldTable} failed (${cause}); run the same command again: it writes only what is still missing`,
    );
    plan.report.written = plan.rows.length;
    report.written += plan.rows.length;
  }
  return report;
}

/** Value columns as short text: `name=value` joined by spaces (the key columns aside). */
function valuesText(
  values: Readonly<Record<string, unknown>>,
  keyColumns: ReadonlySet<string>,
): string {
  return Object.entries(values)
    .filter(([k]) => !keyColumns.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
}

/** The report as text: a summary, the aggregations, then one line per window that changes (latest → restated). */
export function formatRestate(
  r: RestateReport,
  keyColumns: ReadonlySet<string> = new Set(),
): string {
  const head = r.dryRun
    ? `gold restate --dry-run: ${r.changes.length - r.open} window(s) would be restated; nothing written`
    : `gold restate: ${r.written} restatement pane(s) written`;
  const out = [
    head,
    section(
      'Range',
      keyValues([
        ['pipeline', r.pipeline],
        ['window starts', `${r.from} … ${r.to}`],
        ['keys', r.keys.length > 0 ? r.keys.join(', ') : 'all'],
        ['events read', `${r.events} (${r.heldEvents} held in bad data or the retry store)`],
        ['unchanged (key, window)s', r.unchanged],
        ['open, left alone (see --force)', r.open],
      ]),
    ),
    section(
      'Aggregations',
      table(
        ['aggregation', 'windows', 'watermark', 'allowed lateness', 'unchanged', 'open', 'written'],
        r.aggregations.map((a) => [
          a.name,
          a.windows,
          a.watermark ?? 'none (no event counted yet)',
          `${a.allowedLatenessMs / 1000} s`,
          a.unchanged,
          a.open,
          a.written,
        ]),
        80,
      ),
    ),
    section(
      r.dryRun ? 'Windows that would change' : 'Windows that changed',
      table(
        [
          'aggregation',
          'window start',
          'key',
          'latest pane now',
          'restated',
          r.dryRun ? 'would' : 'done',
        ],
        r.changes.map((c) => [
          c.aggregation,
          c.windowStart,
          c.key,
          c.current === null
            ? '(no pane)'
            : `${valuesText(c.current.values, keyColumns)} (${c.current.restatement ? 'restatement' : 'stream'})`,
          valuesText(c.restated, keyColumns),
          c.action === 'open' ? 'skip: window still open' : r.dryRun ? 'restate' : 'restated',
        ]),
        80,
      ),
    ),
  ];
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
  aggregation?: string[];
  dryRun?: boolean;
  force?: boolean;
}

/**
 * Registers `offvia gold restate`. Exit codes: 0 done, 1 a backend failed or windows were left open (without --force),
 * 2 bad flags or an aggregation that cannot be restated from Silver.
 */
export function addGoldCommand(
  program: Command,
  action: CliAction,
  deps: { readonly io: Io; readonly now: () => number },
): void {
  const gold = program.command('gold').description("work on the pipeline's gold tables");
  gold
    .command('restate')
    .description(
      "recompute closed windows from Silver's dedup view, the schema-retry store and bad data with each aggregation's own combine, and write a restatement pane where the latest pane differs",
    )
    .option('--from <time>', 'first window start, RFC 3339 UTC (e.g. 2026-10-07T14:10:00Z)')
    .option('--to <time>', 'last window start, RFC 3339 UTC, inclusive')
    .option(
      '--key <key>',
      'only this key of the aggregations (booking: a route ORIGIN-DESTINATION-CURRENCY; telemetry: a device or a region); repeatable',
      collect,
    )
    .option(
      '--aggregation <name>',
      'only this aggregation (default: every one); repeatable',
      collect,
    )
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
      '\nA restatement pane (insertId restate~…; booking: source = restatement) wins over the stream panes of its window.\n' +
        'Restating unchanged data again writes nothing.\nExamples:\n' +
        '  offvia gold restate --from 2026-10-07T14:00:00Z --to 2026-10-07T14:59:00Z --dry-run\n' +
        '  offvia gold restate --from 2026-10-07T14:10:00Z --to 2026-10-07T14:10:00Z --key JFK-LHR-USD\n' +
        '  offvia --pipeline telemetry gold restate --from 2026-10-07T14:10:00Z --to 2026-10-07T14:10:00Z --aggregation telemetry_device_1m',
    )
    .action(
      action(async (open, flags, opts: RestateFlags) => {
        if (opts.from === undefined || opts.to === undefined) {
          throw new UsageError('gold restate: --from and --to are required');
        }
        const fromMs = parseUtcTime(opts.from, '--from');
        const toMs = parseUtcTime(opts.to, '--to');
        // Connecting makes no backend call: the checks below are usage errors even with no stack up.
        const ctx = open();
        const aggregations = restatableAggregations(ctx.pipeline, opts.aggregation ?? []);
        const options: RestateOptions = {
          fromMs,
          toMs,
          keys: parseKeys(opts.key ?? [], aggregations),
          dryRun: opts.dryRun === true,
          force: opts.force === true,
        };
        const report = await restate(ctx, aggregations, options, deps.now);
        const keyColumns = new Set(
          Object.values(ctx.pipeline.operatorColumns.aggregations).map((c) => c.goldKeyColumn),
        );
        deps.io.out(flags.json ? toJson(report) : formatRestate(report, keyColumns));
        return report.open > 0 ? EXIT.failure : EXIT.ok;
      }),
    );
}
