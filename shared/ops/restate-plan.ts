// `offvia gold restate`'s pure part: the windows of a range, the recomputation query, which windows change, and the
// restatement pane each gets (its row and its insertId). No I/O: restate.ts reads and writes.
import { createHash } from 'node:crypto';
import { parseRouteKey } from '../aggregates/route-key';
import { parseScaledText } from '../aggregates/booking-aggregates';
import { formatScaled } from '../contract/numeric';
import type { GoldPaneRow } from '../aggregates/gold-row';
import { boundedInsertId } from '../drift/bad-data';
import { windowId, type IntervalWindow, type WindowFnSpec } from '../windowing';
import { UsageError } from './errors';

/** Most windows one restate may cover (a week of one-minute windows is 10,080): the query takes them as an array. */
export const MAX_RESTATE_WINDOWS = 50_000;

/** `source` of a gold row (sql/085): fireWindows' panes, or `offvia gold restate`'s. */
export type PaneSource = 'stream' | 'restatement';

/** A gold row with its `source` column (sql/085). */
export interface RestatementRow extends GoldPaneRow {
  source: 'restatement';
}

/**
 * One window's aggregate as gold shows it: count, and NUMERIC amounts as canonical decimal text (`formatScaled`,
 * e.g. `"749.5"`); `min`, `max`, `mean` are null for an empty window.
 */
export interface WindowAggregate {
  count: number;
  total: string;
  min: string | null;
  max: string | null;
  mean: string | null;
}

/** A window's latest pane in `route_panes_latest`, as restate compares it. */
export interface LatestPane extends WindowAggregate {
  routeKey: string;
  /** Window start, epoch ms (UTC). */
  windowStartMs: number;
  source: PaneSource;
  paneIndex: number;
  paneOnTimeIndex: number;
}

/** A (route, window)'s recomputed aggregate. */
export interface Recomputed extends WindowAggregate {
  routeKey: string;
  /** Window start, epoch ms (UTC). */
  windowStartMs: number;
}

/** What restate decided for one (route, window) whose latest pane differs from the recomputation. */
export interface WindowChange {
  routeKey: string;
  window: IntervalWindow;
  current: LatestPane | null;
  restated: WindowAggregate;
  /**
   * `restate`: closed (end + allowed lateness passed by the watermark) or forced; `open`: not closed, left alone
   * without --force.
   */
  action: 'restate' | 'open';
}

/**
 * A window start on the command line: RFC 3339 in UTC (`Z` or `+00:00`), e.g. `2026-10-07T14:10:00Z`. Epoch ms.
 * @throws UsageError naming `flag` for anything else (another offset too: window starts are UTC).
 */
export function parseUtcTime(text: string, flag: string): number {
  const ms = Date.parse(text);
  if (
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|\+00:00)$/.test(text) ||
    Number.isNaN(ms)
  ) {
    throw new UsageError(
      `${flag}: expected a window start in RFC 3339 UTC, e.g. 2026-10-07T14:10:00Z, got ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

/**
 * Route keys from `--key` (repeatable, comma-separated), each `ORIGIN-DESTINATION-CURRENCY` in capitals.
 * @throws UsageError for a value that is not a route key, or a flag given with no value.
 */
export function parseRouteKeys(values: readonly string[]): string[] {
  const keys = [
    ...new Set(
      values
        .flatMap((v) => v.split(','))
        .map((v) => v.trim())
        .filter((v) => v !== ''),
    ),
  ];
  if (values.length > 0 && keys.length === 0) throw new UsageError('--key: no value given');
  for (const key of keys) {
    try {
      parseRouteKey(key);
    } catch {
      // parseRouteKey's RangeError says only "not a route key": the usage line says what one looks like.
      throw new UsageError(
        `--key: expected ORIGIN-DESTINATION-CURRENCY in capitals (e.g. JFK-LHR-USD), got ${JSON.stringify(key)}`,
      );
    }
  }
  return keys.sort();
}

/**
 * The windows whose start is in [fromMs, toMs] (both inclusive), by the pipeline's window function: fixed windows
 * start every `sizeMs` from `offsetMs`, sliding windows every `periodMs` from `offsetMs` (Beam's `FixedWindows` /
 * `SlidingWindows`; the same grid `assignWindows` uses).
 * @throws UsageError when `fromMs` is after `toMs`, `fromMs` is not a window start, the window function is
 *   sessions (no fixed grid), or the range holds more than `MAX_RESTATE_WINDOWS` windows.
 */
export function windowsOfRange(
  windowFn: WindowFnSpec,
  fromMs: number,
  toMs: number,
): IntervalWindow[] {
  if (windowFn.kind === 'sessions') {
    throw new UsageError('gold restate: session windows have no fixed grid to restate');
  }
  if (fromMs > toMs) throw new UsageError('--from is after --to');
  const stepMs = windowFn.kind === 'fixed' ? windowFn.sizeMs : windowFn.periodMs;
  const rem = (((fromMs - windowFn.offsetMs) % stepMs) + stepMs) % stepMs;
  if (rem !== 0) {
    throw new UsageError(
      `--from: ${new Date(fromMs).toISOString()} is not a window start (windows start every ${stepMs / 1000} s` +
        `${windowFn.offsetMs === 0 ? '' : ` from an offset of ${windowFn.offsetMs} ms`})`,
    );
  }
  const count = Math.floor((toMs - fromMs) / stepMs) + 1;
  if (count > MAX_RESTATE_WINDOWS) {
    throw new UsageError(
      `--from/--to cover ${count} windows; restate at most ${MAX_RESTATE_WINDOWS} at a time`,
    );
  }
  return Array.from({ length: count }, (_, i) => {
    const startMs = fromMs + i * stepMs;
    return { startMs, endMs: startMs + windowFn.sizeMs };
  });
}

/**
 * Beam's closed-window rule, as the windowing core garbage-collects: a window is past its allowed lateness when
 * its garbage-collection time (`maxTimestamp` = end − 1 ms, plus allowed lateness) is before the watermark. Until
 * then the stream may still emit panes for it. `watermarkMs` null (no event ever counted) closes nothing.
 */
export function isClosed(
  window: IntervalWindow,
  allowedLatenessMs: number,
  watermarkMs: number | null,
): boolean {
  return watermarkMs !== null && window.endMs - 1 + allowedLatenessMs < watermarkMs;
}

/** The tables and values the recomputation query reads. */
export interface RestateQueryInput {
  /** `project.dataset.table` of Silver (the table: the query dedups by event as the dedup view does). */
  silverTable: string;
  badDataTable: string;
  /** The window grid: size, step between starts (size for fixed windows, the period for sliding ones), offset; ms. */
  grid: { sizeMs: number; stepMs: number; offsetMs: number };
  /** Route keys to restrict to; empty for all. */
  keys: readonly string[];
}

/**
 * One Silver-shaped value out of a bad-data `bad_data` text or a retry-store row: the drift gate writes
 * `{"row": {...}, "extra_fields": {...}}`, BigQuery-refused rows are the Silver row itself.
 */
function rowField(json: string, field: string): string {
  return `COALESCE(JSON_VALUE(${json}, '$.row.${field}'), JSON_VALUE(${json}, '$.${field}'))`;
}

/** The Silver-shaped columns of a JSON row (bad data, the retry store). */
function jsonRowColumns(json: string, sourceRank: number): string {
  return `${rowField(json, 'event_id')} AS event_key,
      ${rowField(json, 'origin_airport')} AS origin_airport,
      ${rowField(json, 'destination_airport')} AS destination_airport,
      ${rowField(json, 'currency')} AS currency,
      CAST(${rowField(json, 'fare_amount')} AS NUMERIC(38, 9)) AS fare,
      UNIX_MILLIS(TIMESTAMP(${rowField(json, 'event_timestamp')})) AS event_ms,
      ${sourceRank} AS source_rank`;
}

/**
 * The recomputation of every (route, window) of the range from what gold counts (docs/windows.md, "What gold
 * counts"): the Silver events (one per `COALESCE(event_id, source_message_id)`, as `fact_bookings_dedup` keeps
 * them), the retry store's Silver rows (parameter `@retryRows`, JSON texts) and bad-data rows whose `target_dest`
 * is Silver, each event once. Exact NUMERIC(38, 9) arithmetic: count, SUM, MIN, MAX; the mean is total / count
 * rounded half-even to 9 decimals as the stream's combiner does (`divideHalfEven`), computed on the total × 10^9 as
 * INT64 (exact; a window's total must stay below 9,223,372,036.854775807, or the CAST fails the query).
 *
 * Parameters: `@starts` (ARRAY<INT64>, window starts in epoch ms), `@loMs` / `@hiMs` (INT64, the event-time range
 * [first start, last end)), `@silverTable` (STRING), `@retryRows` (ARRAY<STRING>), `@keys` (ARRAY<STRING>, only
 * when `keys` is not empty). Silver is read through its partition column (`event_timestamp`, DATE partitions), so
 * BigQuery scans only the range's partitions; the dedup view could not be pruned (its ROW_NUMBER spans the table).
 *
 * Output columns: window_start_ms, route_key, booking_count, fare_total, fare_min, fare_max, fare_mean (NUMERIC
 * as STRING).
 */
export function restatementSql(input: RestateQueryInput): string {
  // `MOD(x, n) * 2`, not `2 * MOD(x, n)`: the local emulator evaluates the latter wrongly (0 for 2 * MOD(3, 2)).
  const halfEven = (t: string, n: string): string =>
    `SIGN(${t}) * (DIV(ABS(${t}), ${n}) + IF(MOD(ABS(${t}), ${n}) * 2 > ${n} OR (MOD(ABS(${t}), ${n}) * 2 = ${n} AND MOD(DIV(ABS(${t}), ${n}), 2) = 1), 1, 0))`;
  const keyFilter = input.keys.length > 0 ? 'WHERE route_key IN UNNEST(@keys)' : '';
  // Each event's windows by arithmetic (Beam's assignWindows: the latest start at or before it, then every step
  // back while the window still holds it), joined on equality with the range's starts: a range join of every event
  // with every start would be events × windows comparisons.
  const { sizeMs, stepMs, offsetMs } = input.grid;
  const perEvent = Math.ceil(sizeMs / stepMs);
  return `WITH candidates AS (
  SELECT COALESCE(event_id, source_message_id) AS event_key, origin_airport, destination_airport, currency,
      CAST(fare_amount AS NUMERIC(38, 9)) AS fare, UNIX_MILLIS(event_timestamp) AS event_ms, 1 AS source_rank,
      ingestion_timestamp, source_message_id
  FROM \`${input.silverTable}\`
  WHERE event_timestamp >= TIMESTAMP_MILLIS(@loMs) AND event_timestamp < TIMESTAMP_MILLIS(@hiMs)
),
silver AS (
  SELECT * EXCEPT (ingestion_timestamp, source_message_id, copy_rank)
  FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY event_key ORDER BY ingestion_timestamp, source_message_id) AS copy_rank
    FROM candidates
  )
  WHERE copy_rank = 1
),
held AS (
  SELECT ${jsonRowColumns('bad_data', 2)}
  FROM \`${input.badDataTable}\`
  WHERE target_dest = @silverTable
  UNION ALL
  SELECT ${jsonRowColumns('retry_row', 3)}
  FROM UNNEST(@retryRows) AS retry_row
),
events AS (
  SELECT * EXCEPT (event_rank)
  FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY event_key ORDER BY source_rank) AS event_rank
    FROM (
      SELECT * FROM silver
      UNION ALL
      SELECT * FROM held WHERE event_ms >= @loMs AND event_ms < @hiMs
    )
  )
  WHERE event_rank = 1
),
windowed AS (
  SELECT * FROM (
    SELECT window_start_ms, CONCAT(origin_airport, '-', destination_airport, '-', currency) AS route_key, fare
    FROM events
    CROSS JOIN UNNEST(GENERATE_ARRAY(0, ${perEvent - 1})) AS k
    JOIN UNNEST(@starts) AS window_start_ms
      ON window_start_ms = event_ms - MOD(event_ms - ${offsetMs}, ${stepMs}) - k * ${stepMs}
    WHERE event_ms < window_start_ms + ${sizeMs}
  )
  ${keyFilter}
),
totals AS (
  SELECT window_start_ms, route_key, COUNT(*) AS booking_count, SUM(fare) AS fare_total, MIN(fare) AS fare_min,
      MAX(fare) AS fare_max, CAST(SUM(fare) * 1000000000 AS INT64) AS total_scaled
  FROM windowed
  GROUP BY window_start_ms, route_key
)
SELECT window_start_ms, route_key, booking_count,
    CAST(fare_total AS STRING) AS fare_total,
    CAST(fare_min AS STRING) AS fare_min,
    CAST(fare_max AS STRING) AS fare_max,
    CAST(CAST(${halfEven('total_scaled', 'booking_count')} AS NUMERIC(38, 9)) / 1000000000 AS STRING) AS fare_mean
FROM totals
ORDER BY window_start_ms, route_key`;
}

/**
 * NUMERIC text as BigQuery or the emulator prints it (`"100.100"`, `"749.5"`, `"3"`) → canonical decimal text
 * (`formatScaled`), so amounts compare as text. Null stays null.
 * @throws AccumulatorFormatError for text that is not a decimal with at most 9 fraction digits
 */
export function canonicalAmount(text: string | null): string | null {
  return text === null ? null : formatScaled(parseScaledText(text));
}

/** Same count and amounts (min, max and mean too). */
export function sameAggregate(a: WindowAggregate, b: WindowAggregate): boolean {
  return (
    a.count === b.count &&
    a.total === b.total &&
    a.min === b.min &&
    a.max === b.max &&
    a.mean === b.mean
  );
}

const EMPTY: WindowAggregate = { count: 0, total: '0', min: null, max: null, mean: null };

/**
 * The (route, window)s whose latest pane differs from the recomputation, oldest window first, then by route: a
 * window with events but no pane, with a pane that counts differently, or with a pane but no event left (restated
 * as an empty pane). Each is `restate` when closed by the watermark (or `force`), else `open`.
 */
export function planChanges(
  windows: readonly IntervalWindow[],
  recomputed: readonly Recomputed[],
  latest: readonly LatestPane[],
  closedAt: (window: IntervalWindow) => boolean,
  force: boolean,
): WindowChange[] {
  const byStart = new Map(windows.map((w) => [w.startMs, w]));
  const id = (routeKey: string, startMs: number): string => `${startMs}|${routeKey}`;
  const current = new Map(latest.map((p) => [id(p.routeKey, p.windowStartMs), p]));
  const fresh = new Map(recomputed.map((r) => [id(r.routeKey, r.windowStartMs), r]));
  const changes: WindowChange[] = [];
  for (const key of new Set([...fresh.keys(), ...current.keys()])) {
    const pane = current.get(key) ?? null;
    const r = fresh.get(key);
    const startMs = r?.windowStartMs ?? pane?.windowStartMs ?? 0;
    const window = byStart.get(startMs);
    if (window === undefined) continue; // a pane outside the windows asked for
    const restated = r ? stripKey(r) : EMPTY;
    if (pane !== null && sameAggregate(pane, restated)) continue;
    changes.push({
      routeKey: r?.routeKey ?? pane?.routeKey ?? '',
      window,
      current: pane,
      restated,
      action: force || closedAt(window) ? 'restate' : 'open',
    });
  }
  return changes.sort(
    (a, b) => a.window.startMs - b.window.startMs || a.routeKey.localeCompare(b.routeKey),
  );
}

function stripKey(r: Recomputed): WindowAggregate {
  return { count: r.count, total: r.total, min: r.min, max: r.max, mean: r.mean };
}

/**
 * The insertId of a restatement pane: `restate~pipeline~window id~route key~` + 16 hex characters of SHA-256 over
 * the aggregate (count, total, min, max, mean). The same data restated twice gives the same id (BigQuery drops the
 * second copy, best effort; restate also writes nothing when the latest pane already equals the recomputation);
 * data that changed gives a new id. Bounded to BigQuery's 128 characters.
 */
export function restatementInsertId(
  pipeline: string,
  routeKey: string,
  window: IntervalWindow,
  value: WindowAggregate,
): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([value.count, value.total, value.min, value.max, value.mean]))
    .digest('hex')
    .slice(0, 16);
  return boundedInsertId('restate~', `${pipeline}~${windowId(window)}~${routeKey}~${digest}`);
}

/**
 * The gold row of a restatement. It carries the whole window (so `accumulation_mode` is ACCUMULATING whatever the
 * pipeline's mode), `pane_timing` LATE (it comes after the watermark passed the window: Beam has no other timing
 * for that), the next pane index after the window's latest pane, `is_final` true, and `source` `restatement`.
 * @throws RangeError when `routeKey` is not a route key
 */
export function restatementRow(
  pipeline: string,
  change: WindowChange,
  watermarkMs: number | null,
  nowMs: number,
): RestatementRow {
  const route = parseRouteKey(change.routeKey);
  const v = change.restated;
  return {
    pipeline,
    window_start: new Date(change.window.startMs).toISOString(),
    window_end: new Date(change.window.endMs).toISOString(),
    route_key: change.routeKey,
    origin_airport: route.origin,
    destination_airport: route.destination,
    currency: route.currency,
    booking_count: v.count,
    fare_total: v.total,
    fare_min: v.min,
    fare_max: v.max,
    fare_mean: v.mean,
    pane_timing: 'LATE',
    pane_index: change.current === null ? 0 : change.current.paneIndex + 1,
    pane_on_time_index: change.current === null ? 0 : change.current.paneOnTimeIndex + 1,
    is_first: change.current === null,
    is_final: true,
    accumulation_mode: 'ACCUMULATING',
    watermark_at_emission: watermarkMs === null ? null : new Date(watermarkMs).toISOString(),
    emitted_at: new Date(nowMs).toISOString(),
    insert_id: restatementInsertId(pipeline, change.routeKey, change.window, v),
    source: 'restatement',
  };
}
