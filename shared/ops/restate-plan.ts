// `offvia gold restate`'s pure part: the windows of a range, the panes recomputed from Silver with the aggregation's
// own combine, which windows change, and each restatement pane's row. No I/O (restate.ts reads and writes).
import { createHash } from 'node:crypto';
import { isPlainObject } from '../contract/json-payload';
import { boundedInsertId } from '../drift/bad-data';
import type { AggregationDefinition, OperatorColumns } from '../pipeline/definition';
import {
  assignWindows,
  windowId,
  type IntervalWindow,
  type JsonValue,
  type WindowFnSpec,
} from '../windowing';
import { UsageError } from './errors';
import { parseIdList } from './selection';

/** Most windows one restate may cover per aggregation (a week of one-minute windows is 10,080). */
export const MAX_RESTATE_WINDOWS = 50_000;

/** An aggregation as restate uses it: its definition and its operator columns (`silverValue` present). */
export interface RestatableAggregation {
  readonly definition: AggregationDefinition<unknown, unknown, never, JsonValue, unknown>;
  readonly columns: OperatorColumns['aggregations'][string] & {
    silverValue(row: Readonly<Record<string, unknown>>): unknown;
  };
}

/** Gold columns that say which pane a row is (Beam's `PaneInfo`, pipeline, insertId): never compared. */
const PANE_COLUMNS = new Set([
  'pipeline',
  'window_start',
  'window_end',
  'pane_timing',
  'pane_index',
  'pane_on_time_index',
  'is_first',
  'is_final',
  'accumulation_mode',
  'watermark_at_emission',
  'emitted_at',
  'insert_id',
]);

/** Key and window of a pane, and its value columns in canonical form (`canonicalCell`). */
export interface PaneValues {
  key: string;
  /** Window start, epoch ms (UTC). */
  windowStartMs: number;
  values: Readonly<Record<string, unknown>>;
}

/** A window's latest pane in gold, as restate compares it. */
export interface LatestPane extends PaneValues {
  /** A restatement pane (insertId `restate~…`), not a stream pane. */
  restatement: boolean;
  paneIndex: number;
  /** `pane_on_time_index`; −1 when the gold table has no such column or the pane was EARLY. */
  paneOnTimeIndex: number;
}

/** A (key, window) recomputed from Silver: the combine's output and its gold values. */
export interface Recomputed extends PaneValues {
  /** `extractOutput` of the window's accumulator. */
  output: unknown;
}

/** What restate decided for one (key, window) whose latest pane differs from the recomputation. */
export interface WindowChange {
  key: string;
  window: IntervalWindow;
  current: LatestPane | null;
  restated: Recomputed;
  /** `restate`: closed by the watermark (or forced); `open`: not closed, left alone without --force. */
  action: 'restate' | 'open';
}

/** One event of the range: its event time (epoch ms UTC) and its Silver row (cells as plain JSON values). */
export interface SilverEvent {
  eventMs: number;
  row: Readonly<Record<string, unknown>>;
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
 * Keys from `--key` (repeatable, comma-separated), deduplicated and sorted.
 * @throws UsageError for a key every aggregation's `checkKey` refuses (the first reason), or no value given.
 */
export function parseKeys(
  values: readonly string[],
  aggregations: readonly Pick<RestatableAggregation, 'columns'>[],
): string[] {
  const keys = parseIdList(values);
  if (values.length > 0 && keys.length === 0) throw new UsageError('--key: no value given');
  for (const key of keys) {
    const reasons = aggregations.map((a) => a.columns.checkKey?.(key) ?? null);
    const reason = reasons[0];
    if (reasons.length > 0 && reason && reasons.every((r) => r !== null)) {
      throw new UsageError(`--key: ${reason}, got ${JSON.stringify(key)}`);
    }
  }
  return keys.sort();
}

/**
 * The windows starting in [fromMs, toMs] (epoch ms, both inclusive) on the grid `assignWindows` uses: every `sizeMs`
 * (fixed) or `periodMs` (sliding) from `offsetMs`.
 * @throws UsageError for sessions, `fromMs` after `toMs` or off the grid, or over `MAX_RESTATE_WINDOWS` windows.
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
 * Beam's closed-window rule: the garbage-collection time (end − 1 ms + allowed lateness) is before the watermark;
 * until then the stream may still emit panes. `watermarkMs` null (no event counted yet) closes nothing.
 */
export function isClosed(
  window: IntervalWindow,
  allowedLatenessMs: number,
  watermarkMs: number | null,
): boolean {
  return watermarkMs !== null && window.endMs - 1 + allowedLatenessMs < watermarkMs;
}

/**
 * Decimal text as canonical text (`"100.100"` → `"100.1"`, no `+`, `-0` as `0`), so NUMERIC cells compare whatever
 * scale BigQuery printed; null and other text unchanged.
 */
export function canonicalAmount(text: string | null): string | null {
  if (text === null) return null;
  const match = /^([+-]?)(\d+)(?:\.(\d*))?$/.exec(text);
  if (match === null) return text;
  const integer = (match[2] ?? '0').replace(/^0+(?=\d)/, '');
  const fraction = (match[3] ?? '').replace(/0+$/, '');
  const digits = fraction === '' ? integer : `${integer}.${fraction}`;
  return match[1] === '-' && /[1-9]/.test(digits) ? `-${digits}` : digits;
}

/** A gold cell as compared: numbers canonical, client wrappers unwrapped, arrays and records cell by cell, keys sorted. */
export function canonicalCell(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return value.map(canonicalCell);
  if (typeof value === 'number' || typeof value === 'bigint') return canonicalAmount(String(value));
  if (typeof value === 'string') return canonicalAmount(value);
  if (typeof value === 'object') {
    if ('value' in value && typeof value.value === 'string') return value.value;
    if (value.constructor?.name === 'Big' && 'toFixed' in value) {
      return canonicalAmount((value as { toFixed(): string }).toFixed());
    }
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonicalCell((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** A gold row's key and value columns (all but the pane columns and `skip`), canonical. */
export function paneValues(
  row: Readonly<Record<string, unknown>>,
  skip: Readonly<Record<string, string>> = {},
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(row).sort()) {
    if (!PANE_COLUMNS.has(name) && !(name in skip) && name !== 'pane_rank') {
      out[name] = canonicalCell(row[name]);
    }
  }
  return out;
}

/** The same key and value columns on both sides (the latest pane's own extra columns, e.g. `source`, aside). */
function sameValues(
  current: Readonly<Record<string, unknown>>,
  restated: Readonly<Record<string, unknown>>,
): boolean {
  return Object.keys(restated).every(
    (k) => JSON.stringify(current[k] ?? null) === JSON.stringify(restated[k] ?? null),
  );
}

/** A pane's gold row as `goldRow` writes it for `output`; without `pane`, a comparison pane (pane columns ignored). */
export function goldRowOf(
  aggregation: RestatableAggregation['definition'],
  key: string,
  window: IntervalWindow,
  output: unknown,
  insertId: string,
  pane: { index: number; onTimeIndex: number; watermarkMs: number; nowMs: number } = {
    index: 0,
    onTimeIndex: 0,
    watermarkMs: Number.NEGATIVE_INFINITY,
    nowMs: window.endMs,
  },
): Record<string, unknown> {
  return aggregation.goldRow(
    {
      key,
      window,
      value: output,
      timing: 'LATE',
      index: pane.index,
      onTimeIndex: pane.onTimeIndex,
      isFirst: pane.index === 0,
      isLast: true,
      firedAtProcessingTimeMs: pane.nowMs,
      watermarkMs: pane.watermarkMs,
    },
    insertId,
    'ACCUMULATING',
  );
}

/**
 * The panes of `windows` recomputed from the events: key and value from each Silver row (no key: skipped), windows as
 * `assignWindows` gives them, one accumulator per (key, window); only `keys` when given. Oldest window, then key.
 * @throws Error from `silverValue` for a row that is not what the contract wrote
 */
export function recomputePanes(
  aggregation: RestatableAggregation,
  events: readonly SilverEvent[],
  windows: readonly IntervalWindow[],
  keys: readonly string[],
): Recomputed[] {
  const { definition, columns } = aggregation;
  const combine = definition.combineFn as unknown as {
    createAccumulator(): JsonValue;
    addInput(acc: JsonValue, input: unknown): JsonValue;
    extractOutput(acc: JsonValue): unknown;
  };
  const starts = new Map(windows.map((w) => [w.startMs, w]));
  const wanted = new Set(keys);
  const accs = new Map<string, { key: string; window: IntervalWindow; acc: JsonValue }>();
  for (const { eventMs, row } of events) {
    const key = columns.silverKey(row);
    if (key === null || (wanted.size > 0 && !wanted.has(key))) continue;
    const value = columns.silverValue(row);
    for (const assigned of assignWindows(definition.strategy.windowFn, eventMs)) {
      const window = starts.get(assigned.startMs);
      if (window === undefined) continue;
      const id = `${window.startMs}|${key}`;
      const slot = accs.get(id) ?? { key, window, acc: combine.createAccumulator() };
      slot.acc = combine.addInput(slot.acc, value);
      accs.set(id, slot);
    }
  }
  return [...accs.values()]
    .map(({ key, window, acc }) =>
      recomputedOf(aggregation, key, window, combine.extractOutput(acc)),
    )
    .sort((a, b) => a.windowStartMs - b.windowStartMs || a.key.localeCompare(b.key));
}

/** A (key, window)'s recomputation from the combine's output. */
export function recomputedOf(
  aggregation: Pick<RestatableAggregation, 'definition' | 'columns'>,
  key: string,
  window: IntervalWindow,
  output: unknown,
): Recomputed {
  const row = goldRowOf(aggregation.definition, key, window, output, '');
  return {
    key,
    windowStartMs: window.startMs,
    output,
    values: paneValues(row, aggregation.columns.restatementColumns),
  };
}

/**
 * The (key, window)s whose latest pane differs from the recomputation (a pane with no event left is restated as
 * `empty(key, window)`), oldest window then key; `restate` when closed (or `force`), else `open`.
 */
export function planChanges(
  windows: readonly IntervalWindow[],
  recomputed: readonly Recomputed[],
  latest: readonly LatestPane[],
  empty: (key: string, window: IntervalWindow) => Recomputed,
  closedAt: (window: IntervalWindow) => boolean,
  force: boolean,
): WindowChange[] {
  const byStart = new Map(windows.map((w) => [w.startMs, w]));
  const id = (p: PaneValues): string => `${p.windowStartMs}|${p.key}`;
  const current = new Map(latest.map((p) => [id(p), p]));
  const fresh = new Map(recomputed.map((r) => [id(r), r]));
  const changes: WindowChange[] = [];
  for (const slot of new Set([...fresh.keys(), ...current.keys()])) {
    const pane = current.get(slot) ?? null;
    const r = fresh.get(slot);
    const key = r?.key ?? pane?.key ?? '';
    const window = byStart.get(r?.windowStartMs ?? pane?.windowStartMs ?? Number.NaN);
    if (window === undefined) continue; // a pane outside the windows asked for
    const restated = r ?? empty(key, window);
    if (pane !== null && sameValues(pane.values, restated.values)) continue;
    changes.push({
      key,
      window,
      current: pane,
      restated,
      action: force || closedAt(window) ? 'restate' : 'open',
    });
  }
  return changes.sort((a, b) => a.window.startMs - b.window.startMs || a.key.localeCompare(b.key));
}

/**
 * A restatement pane's insertId: `restate~aggregation~window id~key~` + 16 hex of SHA-256 over its canonical values,
 * so the same data gives the same id and changed data a new one; at most 128 characters.
 */
export function restatementInsertId(
  aggregation: string,
  key: string,
  window: IntervalWindow,
  values: Readonly<Record<string, unknown>>,
): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(canonicalCell(values)))
    .digest('hex')
    .slice(0, 16);
  return boundedInsertId('restate~', `${aggregation}~${windowId(window)}~${key}~${digest}`);
}

/**
 * A restatement's gold row: `goldRow` of a final LATE pane carrying the whole window (ACCUMULATING), the next pane
 * index after the latest pane, plus `restatementColumns`. `watermarkMs` null: none yet.
 * @throws RangeError from `goldRow` when the key or a time cannot be represented
 */
export function restatementRow(
  aggregation: Pick<RestatableAggregation, 'definition' | 'columns'>,
  change: WindowChange,
  watermarkMs: number | null,
  nowMs: number,
): Record<string, unknown> {
  const { definition, columns } = aggregation;
  const insertId = restatementInsertId(
    definition.name,
    change.key,
    change.window,
    change.restated.values,
  );
  return {
    ...goldRowOf(definition, change.key, change.window, change.restated.output, insertId, {
      index: change.current === null ? 0 : change.current.paneIndex + 1,
      onTimeIndex: change.current === null ? 0 : Math.max(change.current.paneOnTimeIndex, -1) + 1,
      watermarkMs: watermarkMs ?? Number.NEGATIVE_INFINITY,
      nowMs,
    }),
    ...columns.restatementColumns,
  };
}

/**
 * The latest pane of every (key, window) in a gold table, windows starting in [`@fromMs`, `@toMs`] (INT64 epoch ms),
 * `@pipeline` the aggregation, `@keys` only `withKeys`: the newest restatement wins, else the highest pane index
 * (docs/windows.md, "Restatement panes").
 */
export function latestPaneSql(goldTable: string, keyColumn: string, withKeys: boolean): string {
  const restatement = `insert_id LIKE 'restate~%'`;
  return `SELECT * EXCEPT (pane_rank), UNIX_MILLIS(window_start) AS window_start_ms,
    ${restatement} AS is_restatement
FROM (
  SELECT *, ROW_NUMBER() OVER (
      PARTITION BY ${keyColumn}, window_start
      ORDER BY IF(${restatement}, 1, 0) DESC, IF(${restatement}, emitted_at, NULL) DESC, pane_index DESC,
        emitted_at DESC, insert_id
    ) AS pane_rank
  FROM \`${goldTable}\`
  WHERE pipeline = @pipeline AND window_start >= TIMESTAMP_MILLIS(@fromMs)
    AND window_start <= TIMESTAMP_MILLIS(@toMs)${withKeys ? `\n    AND ${keyColumn} IN UNNEST(@keys)` : ''}
)
WHERE pane_rank = 1`;
}

/** The dedup view's rows with event time in [`@loMs`, `@hiMs`) (INT64 epoch ms), plus it as `restate_event_ms`. */
export function silverSql(dedupView: string, eventTime: string): string {
  return `SELECT *, UNIX_MILLIS(${eventTime}) AS restate_event_ms FROM \`${dedupView}\`
WHERE ${eventTime} >= TIMESTAMP_MILLIS(@loMs) AND ${eventTime} < TIMESTAMP_MILLIS(@hiMs)`;
}

/**
 * The Silver row in a bad-data or retry-store text: the drift gate's `{"row", "extra_fields"}`, else the row itself.
 * @throws SyntaxError when the text is not a JSON object
 */
export function heldSilverRow(json: string): Record<string, unknown> {
  const parsed = JSON.parse(json) as unknown;
  if (!isPlainObject(parsed)) throw new SyntaxError('not a JSON object');
  return isPlainObject(parsed.row) ? parsed.row : parsed;
}
