// Parsing of the operator's selection flags (`--since 1h`, `--until`, `--ids`, `--stage`) into values a query takes.
import { UsageError } from './errors';

const UNIT_MS: Record<string, number> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * A duration such as `90s`, `30m`, `1h`, `7d`, `2w` (one integer and one unit), in ms.
 * @throws UsageError naming `flag` on anything else.
 */
export function parseDuration(text: string, flag: string): number {
  const match = /^(\d{1,9})([smhdw])$/.exec(text.trim());
  const unit = match?.[2];
  if (!match || unit === undefined) {
    throw new UsageError(
      `${flag}: expected a duration like 30m, 1h or 7d, got ${JSON.stringify(text)}`,
    );
  }
  return Number(match[1]) * (UNIT_MS[unit] ?? 0);
}

/**
 * A point in time: an RFC 3339 timestamp with an offset or `Z`, or a duration meaning "that long before `nowMs`".
 * Returns epoch ms (UTC).
 * @throws UsageError naming `flag` on anything else.
 */
export function parseTimeFlag(text: string, flag: string, nowMs: number): number {
  if (/^\d{1,9}[smhdw]$/.test(text.trim())) return nowMs - parseDuration(text, flag);
  const ms = Date.parse(text);
  if (
    !/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text) ||
    Number.isNaN(ms)
  ) {
    throw new UsageError(
      `${flag}: expected a duration (30m, 1h) or an RFC 3339 time with an offset, got ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

/** Commander's collector for a repeatable flag: each value appended to the ones before. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** Comma-separated ids (`--ids a,b,c`), trimmed, empty entries dropped; repeated flags are concatenated. */
export function parseIdList(values: readonly string[]): string[] {
  return [
    ...new Set(
      values
        .flatMap((v) => v.split(','))
        .map((v) => v.trim())
        .filter((v) => v !== ''),
    ),
  ];
}

/**
 * A regular expression given on the command line (`--reason`, `--error`), checked here so a bad one is a usage
 * error rather than a query failure. BigQuery's REGEXP_CONTAINS takes RE2 syntax; the common subset (classes,
 * alternation, anchors) is the same in JavaScript.
 * @throws UsageError when JavaScript cannot compile it.
 */
export function parsePattern(text: string, flag: string): string {
  try {
    new RegExp(text);
  } catch (err) {
    throw new UsageError(
      `${flag}: not a regular expression: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return text;
}

/** A positive integer flag (`--limit`, `--concurrency`). @throws UsageError otherwise. */
export function parsePositiveInt(text: string, flag: string, max: number): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1 || Number(text) > max) {
    throw new UsageError(
      `${flag}: expected an integer from 1 to ${max}, got ${JSON.stringify(text)}`,
    );
  }
  return Number(text);
}

/** The row filter of `quarantine reprocess` and `bad-data redrive`; every part optional, all must hold. */
export interface RowSelection {
  /** Quarantine: the stage column in these (stages of the pipeline's contract). */
  readonly stages?: readonly string[];
  /** Quarantine: error_reason matches; bad data: error matches (RE2). */
  readonly pattern?: string;
  /** Bad data: target_dest equals one of these (`project.dataset.table`). */
  readonly targets?: readonly string[];
  /** Received (quarantine) or inserted (bad data) at or after, epoch ms UTC. */
  readonly sinceMs?: number;
  /** ... and before, epoch ms UTC. */
  readonly untilMs?: number;
  /** Message ids (quarantine), or message ids and insert ids (bad data). */
  readonly ids?: readonly string[];
  /** At most this many rows, oldest first. */
  readonly limit: number;
}

/** Column names of the table a selection is applied to. */
export interface SelectionColumns {
  readonly time: string;
  readonly text: string;
  readonly ids: readonly string[];
  readonly stage?: string;
  readonly target?: string;
}

/**
 * The WHERE clause (with named parameters) for a selection over a quarantine or bad-data view. Values never enter
 * the SQL text: every one is a query parameter. Returns `TRUE` when nothing filters.
 */
export function selectionWhere(
  selection: RowSelection,
  columns: SelectionColumns,
): { where: string; params: Record<string, unknown>; types: Record<string, string | string[]> } {
  const parts: string[] = [];
  const params: Record<string, unknown> = {};
  const types: Record<string, string | string[]> = {};
  const add = (sql: string, name: string, value: unknown, type: string | string[]): void => {
    parts.push(sql);
    params[name] = value;
    types[name] = type;
  };
  if (selection.stages && selection.stages.length > 0 && columns.stage) {
    add(`${columns.stage} IN UNNEST(@stages)`, 'stages', [...selection.stages], ['STRING']);
  }
  if (selection.targets && selection.targets.length > 0 && columns.target) {
    add(`${columns.target} IN UNNEST(@targets)`, 'targets', [...selection.targets], ['STRING']);
  }
  if (selection.pattern !== undefined) {
    add(`REGEXP_CONTAINS(${columns.text}, @pattern)`, 'pattern', selection.pattern, 'STRING');
  }
  if (selection.sinceMs !== undefined) {
    add(`${columns.time} >= TIMESTAMP_MILLIS(@since_ms)`, 'since_ms', selection.sinceMs, 'INT64');
  }
  if (selection.untilMs !== undefined) {
    add(`${columns.time} < TIMESTAMP_MILLIS(@until_ms)`, 'until_ms', selection.untilMs, 'INT64');
  }
  if (selection.ids && selection.ids.length > 0) {
    const any = columns.ids.map((c) => `${c} IN UNNEST(@ids)`).join(' OR ');
    add(`(${any})`, 'ids', [...selection.ids], ['STRING']);
  }
  return { where: parts.length > 0 ? parts.join(' AND ') : 'TRUE', params, types };
}
