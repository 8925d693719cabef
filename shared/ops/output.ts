// How `offvia` prints: tables for people (cli-table3), one JSON document for machines, a progress bar on stderr.
import { SingleBar } from 'cli-progress';
import Table from 'cli-table3';

/** Where a command writes; the CLI passes the process streams, tests capture the text. */
export interface Io {
  /** Results (stdout). */
  out(text: string): void;
  /** Errors and progress (stderr). */
  err(text: string): void;
  /** The stream progress bars draw on; `undefined` for no bar (tests, --json). */
  readonly progressStream?: NodeJS.WritableStream | undefined;
}

/** The process's stdout and stderr. */
export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  progressStream: process.stderr,
};

/** A cell as printed: BigQuery's NUMERIC (Big.js) and TIMESTAMP (`{value}`) wrappers as their text. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') {
    if ('value' in value && typeof value.value === 'string') return value.value;
    if (value.constructor?.name === 'Big' && 'toFixed' in value) {
      return (value as { toFixed(): string }).toFixed();
    }
    return JSON.stringify(value);
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  return typeof value;
}

/** The same conversion over a whole row, for JSON output (plain strings, numbers and booleans). */
export function plainRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    out[k] =
      v === null || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string'
        ? v
        : typeof v === 'bigint'
          ? v.toString()
          : cellText(v);
  }
  return out;
}

/** Shortens text for a table cell (the full value is in --json). */
export function clip(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Box characters without a rule between body rows (cli-table3 draws one by default). */
const COMPACT = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };

/** A table of `rows` with `columns` as the head; `(none)` when there is no row. */
export function table(
  columns: readonly string[],
  rows: readonly (readonly unknown[])[],
  clipAt = 60,
): string {
  if (rows.length === 0) return '  (none)';
  const t = new Table({ head: [...columns], style: { head: [], border: [] }, chars: COMPACT });
  for (const row of rows) t.push(row.map((v) => clip(cellText(v), clipAt)));
  return t.toString();
}

/** Rows as a table of `columns`: each a key, or a [heading, key] pair. */
export function pickTable(
  rows: readonly Readonly<Record<string, unknown>>[],
  columns: readonly (string | readonly [string, string])[],
  clipAt = 60,
): string {
  const pairs = columns.map((c) => (typeof c === 'string' ? [c, c] : c));
  return table(
    pairs.map(([heading]) => heading),
    rows.map((row) => pairs.map(([, key]) => row[key])),
    clipAt,
  );
}

/** Rows as a table of all their columns (in first-seen order). */
export function rowsTable(rows: readonly Readonly<Record<string, unknown>>[], clipAt = 40): string {
  return pickTable(rows, [...new Set(rows.flatMap((row) => Object.keys(row)))], clipAt);
}

/** Prints a command's report: `--json` as one JSON document, else as `format` renders it. */
export function printReport<R>(io: Io, report: R, json: boolean, format: (r: R) => string): void {
  io.out(json ? toJson(report) : format(report));
}

/** A two-column key/value table. */
export function keyValues(pairs: readonly (readonly [string, unknown])[]): string {
  const t = new Table({ style: { head: [], border: [] }, chars: COMPACT });
  for (const [k, v] of pairs) t.push({ [k]: clip(cellText(v), 100) });
  return t.toString();
}

/** A section: a title line and its body. */
export function section(title: string, body: string): string {
  return `\n${title}\n${body}`;
}

/** JSON for --json: bigints as strings, two-space indent. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
}

/** A progress counter: a bar with rate and ETA on `io.progressStream`, or nothing. */
export interface Progress {
  increment(by?: number): void;
  stop(): void;
}

/**
 * A progress bar for `total` items on stderr, with rate (items/s) and ETA; redrawn every 2 s when stderr is not a
 * terminal (a CI log), so the last line always shows the final count.
 */
export function progressBar(io: Io, label: string, total: number): Progress {
  const stream = io.progressStream;
  if (stream === undefined || total === 0)
    return { increment: () => undefined, stop: () => undefined };
  const started = Date.now();
  const bar = new SingleBar({
    format: `${label} [{bar}] {percentage}% | {value}/{total} | {rate}/s | ETA {eta_formatted} | {duration_formatted}`,
    stream,
    noTTYOutput: true,
    notTTYSchedule: 2000,
    hideCursor: false,
    etaBuffer: 200,
  });
  bar.start(total, 0, { rate: '0' });
  let done = 0;
  return {
    increment(by = 1) {
      done += by;
      const seconds = (Date.now() - started) / 1000;
      bar.increment(by, { rate: seconds > 0 ? (done / seconds).toFixed(0) : '0' });
    },
    stop() {
      bar.stop();
    },
  };
}
