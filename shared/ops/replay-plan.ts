// Pure parts of `offvia replay`: flags, publish-time chunks, attribute filters, rate limit, checkpoint totals.
import { UsageError } from './errors';
import { parsePositiveInt } from './selection';

/** Most chunks one run may have (a checkpoint document each; a typo such as `--chunk-minutes 1` over a year). */
export const MAX_CHUNKS = 100_000;

/** Default chunk length: one hour of publish time. */
export const DEFAULT_CHUNK_MINUTES = 60;

/** One publish-time slice of a run: `[fromMs, toMs)`, epoch ms UTC; `index` counts from 0 at the run's start. */
export interface ReplayChunk {
  readonly index: number;
  readonly fromMs: number;
  readonly toMs: number;
}

/** `--filter attr.KEY=VALUE`: the message attribute KEY must equal VALUE exactly (all filters must hold). */
export interface AttributeFilter {
  readonly key: string;
  readonly value: string;
}

/**
 * What a replay is asked to do: publish-time range `[fromMs, toMs)` (epoch ms UTC; absent with `resume`), message ids
 * (`undefined`: all), `--rate` per second (`undefined`: no limit), chunk length (ms), messages in flight.
 */
export interface ReplayOptions {
  readonly fromMs: number | undefined;
  readonly toMs: number | undefined;
  readonly filters: readonly AttributeFilter[];
  readonly messageIds: readonly string[] | undefined;
  readonly dryRun: boolean;
  readonly ratePerSecond: number | undefined;
  readonly chunkMs: number;
  readonly resume: string | undefined;
  readonly concurrency: number;
  readonly operator: string;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * An RFC 3339 timestamp with seconds and an offset, as epoch ms UTC; calendar-checked, years 0001–9999.
 * @throws UsageError naming `flag` for anything else.
 */
export function parseRfc3339(text: string, flag: string): number {
  const m = RFC3339.exec(text.trim());
  const bad = () =>
    new UsageError(
      `${flag}: expected an RFC 3339 time with seconds and an offset, e.g. 2026-12-01T10:00:00Z, got ${JSON.stringify(text)}`,
    );
  if (!m) throw bad();
  const fields = m.slice(1, 7).map(Number);
  const c = new Date(0);
  c.setUTCFullYear(fields[0] ?? 0, (fields[1] ?? 0) - 1, fields[2]);
  c.setUTCHours(fields[3] ?? 0, fields[4], fields[5]);
  const back = [c.getUTCFullYear(), c.getUTCMonth() + 1, c.getUTCDate()];
  const time = [c.getUTCHours(), c.getUTCMinutes(), c.getUTCSeconds()];
  if ((fields[0] ?? 0) < 1 || [...back, ...time].some((v, i) => v !== fields[i])) throw bad();
  const ms = Date.parse(text.trim());
  if (Number.isNaN(ms)) throw bad();
  return ms;
}

/** `attr.KEY=VALUE` (KEY non-empty; VALUE may be empty or contain `=`). @throws UsageError otherwise. */
export function parseAttributeFilter(text: string): AttributeFilter {
  const m = /^attr\.([^=]+)=(.*)$/s.exec(text);
  if (!m?.[1]) {
    throw new UsageError(
      `--filter: expected attr.KEY=VALUE (a message attribute), got ${JSON.stringify(text)}`,
    );
  }
  return { key: m[1], value: m[2] ?? '' };
}

/** Whether a message's attributes satisfy every filter (no filter: always). */
export function matchesFilters(
  attributes: Readonly<Record<string, string>>,
  filters: readonly AttributeFilter[],
): boolean {
  return filters.every((f) => Object.hasOwn(attributes, f.key) && attributes[f.key] === f.value);
}

/**
 * `[fromMs, toMs)` (epoch ms) cut into chunks of `chunkMs` from `fromMs`, the last one maybe shorter.
 * @throws UsageError when `toMs <= fromMs`, `chunkMs < 1`, or there would be more than {@link MAX_CHUNKS} chunks.
 */
export function cutChunks(fromMs: number, toMs: number, chunkMs: number): ReplayChunk[] {
  if (!(toMs > fromMs)) throw new UsageError('--to must be later than --from');
  if (!(chunkMs >= 1)) throw new UsageError('--chunk-minutes must be at least 1');
  const count = Math.ceil((toMs - fromMs) / chunkMs);
  if (count > MAX_CHUNKS) {
    throw new UsageError(
      `the range makes ${count} chunks (more than ${MAX_CHUNKS}): pass a larger --chunk-minutes`,
    );
  }
  return Array.from({ length: count }, (_, index) => ({
    index,
    fromMs: fromMs + index * chunkMs,
    toMs: Math.min(toMs, fromMs + (index + 1) * chunkMs),
  }));
}

/** Where a replayed message ended, as the summary counts it. */
export type ReplayDestination = 'silver' | 'quarantine' | 'schema_retry' | 'bad_data';

/** A message of a chunk that still failed after its attempts (it is retried when the run is resumed). */
export interface ReplayFailure {
  readonly messageId: string;
  readonly error: string;
}

/**
 * A chunk's checkpoint, written once its every message was handled: `done`, or `failed` (some kept failing). A chunk
 * without a `done` checkpoint is run again, whole, by `--resume`. `rows`: Bronze rows read (deduplicated, filtered);
 * `alreadyPresent`: rows not written again, per layer; `failures`: at most {@link MAX_STORED_FAILURES} of
 * `failedCount`; `attempt`: 1 for the first run; times epoch ms UTC, `elapsedMs` ms.
 */
export interface ChunkCheckpoint {
  readonly index: number;
  readonly fromMs: number;
  readonly toMs: number;
  readonly status: 'done' | 'failed';
  readonly rows: number;
  readonly outcomes: Readonly<Partial<Record<ReplayDestination, number>>>;
  readonly alreadyPresent: Readonly<Record<string, number>>;
  readonly failures: readonly ReplayFailure[];
  readonly failedCount: number;
  readonly attempt: number;
  readonly finishedAtMs: number;
  readonly elapsedMs: number;
}

/** Failures kept per checkpoint document (Firestore caps a document at 1 MiB). */
export const MAX_STORED_FAILURES = 100;

/** The chunks a run (or a resumed run) still has to do: those without a `done` checkpoint, in order. */
export function chunksToRun(
  chunks: readonly ReplayChunk[],
  checkpoints: readonly ChunkCheckpoint[],
): ReplayChunk[] {
  const done = new Set(checkpoints.filter((c) => c.status === 'done').map((c) => c.index));
  return chunks.filter((c) => !done.has(c.index));
}

/** A run's totals over its chunk checkpoints. */
export interface ReplayTotals {
  rows: number;
  outcomes: Record<ReplayDestination, number>;
  alreadyPresent: Record<string, number>;
  failed: number;
  failures: ReplayFailure[];
  chunksDone: number;
  chunksFailed: number;
}

/** Sums the latest checkpoint of each chunk (a resumed chunk's newer checkpoint replaces its older one). */
export function totalsOf(checkpoints: readonly ChunkCheckpoint[]): ReplayTotals {
  const latest = new Map<number, ChunkCheckpoint>();
  for (const c of checkpoints) {
    const seen = latest.get(c.index);
    if (seen === undefined || c.attempt >= seen.attempt) latest.set(c.index, c);
  }
  const totals: ReplayTotals = {
    rows: 0,
    outcomes: { silver: 0, quarantine: 0, schema_retry: 0, bad_data: 0 },
    alreadyPresent: {},
    failed: 0,
    failures: [],
    chunksDone: 0,
    chunksFailed: 0,
  };
  for (const c of [...latest.values()].sort((a, b) => a.index - b.index)) {
    totals.rows += c.rows;
    for (const [k, n] of Object.entries(c.outcomes)) {
      totals.outcomes[k as ReplayDestination] += n;
    }
    for (const [k, n] of Object.entries(c.alreadyPresent)) {
      totals.alreadyPresent[k] = (totals.alreadyPresent[k] ?? 0) + n;
    }
    totals.failed += c.failedCount;
    totals.failures.push(...c.failures);
    if (c.status === 'done') totals.chunksDone++;
    else totals.chunksFailed++;
  }
  return totals;
}

/** At most `ratePerSecond` messages a second (`undefined`: no limit), evenly spaced with no burst. */
export class RateLimiter {
  private nextMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly ratePerSecond: number | undefined,
    private readonly now: () => number,
    private readonly sleep: (ms: number) => Promise<void>,
  ) {}

  /** Waits for the next slot. */
  async take(): Promise<void> {
    if (this.ratePerSecond === undefined) return;
    const interval = 1000 / this.ratePerSecond;
    const now = this.now();
    const slot = Math.max(this.nextMs, now);
    this.nextMs = slot + interval;
    if (slot > now) await this.sleep(slot - now);
  }
}

/** The flags of `offvia replay` as commander hands them over (strings; repeatable ones as arrays). */
export interface ReplayFlags {
  from?: string | undefined;
  to?: string | undefined;
  filter?: string[] | undefined;
  messageIds?: string[] | undefined;
  dryRun?: boolean | undefined;
  rate?: string | undefined;
  /** `undefined` when not given: the default for a new run; a resumed run keeps its own. */
  chunkMinutes?: string | undefined;
  resume?: string | undefined;
  concurrency: string;
}

/** Highest `--rate`, messages per second (far above what one process sustains; a typo guard). */
const MAX_RATE = 100_000;

/** A positive decimal such as `50` or `0.5`, at most `max`. @throws UsageError naming `flag` otherwise. */
function parsePositiveNumber(text: string, flag: string, max: number): number {
  const n = Number(text.trim());
  if (!/^\d+(\.\d+)?$/.test(text.trim()) || !(n > 0) || n > max) {
    throw new UsageError(
      `${flag}: expected a number above 0 and at most ${max}, got ${JSON.stringify(text)}`,
    );
  }
  return n;
}

/**
 * The replay's options from its flags, checked before anything connects: `--from`/`--to` unless `--resume`, chunk
 * length 1 minute to 7 days, concurrency 1–256.
 * @throws UsageError for any bad flag value.
 */
export function parseReplayFlags(flags: ReplayFlags, operator: string): ReplayOptions {
  const fromMs = flags.from === undefined ? undefined : parseRfc3339(flags.from, '--from');
  const toMs = flags.to === undefined ? undefined : parseRfc3339(flags.to, '--to');
  if (flags.resume === undefined && (fromMs === undefined || toMs === undefined)) {
    throw new UsageError('--from and --to are required (or --resume RUN_ID)');
  }
  if (flags.resume !== undefined && !/^offvia-replay-[0-9T]+-[0-9a-f]{6}$/.test(flags.resume)) {
    throw new UsageError(
      `--resume: expected a replay run id such as offvia-replay-20261201T101500-a1b2c3, got ${JSON.stringify(flags.resume)}`,
    );
  }
  if (fromMs !== undefined && toMs !== undefined && toMs <= fromMs) {
    throw new UsageError(`--to (${flags.to}) must be later than --from (${flags.from})`);
  }
  if (flags.resume !== undefined && flags.chunkMinutes !== undefined) {
    throw new UsageError('--resume continues a run with its own chunks: omit --chunk-minutes');
  }
  const chunkMinutes = parsePositiveInt(
    flags.chunkMinutes ?? String(DEFAULT_CHUNK_MINUTES),
    '--chunk-minutes',
    7 * 24 * 60,
  );
  let messageIds: string[] | undefined;
  if (flags.messageIds !== undefined) {
    messageIds = [
      ...new Set(
        flags.messageIds
          // A Pub/Sub message id has no blank: "1843 1844" is two ids, not one that matches nothing.
          .flatMap((v) => v.split(/[\s,]+/))
          .filter((v) => v !== ''),
      ),
    ];
    if (messageIds.length === 0) throw new UsageError('--message-ids: no id given');
  }
  const options: ReplayOptions = {
    fromMs,
    toMs,
    filters: (flags.filter ?? []).map(parseAttributeFilter),
    messageIds,
    dryRun: flags.dryRun === true,
    ratePerSecond:
      flags.rate === undefined ? undefined : parsePositiveNumber(flags.rate, '--rate', MAX_RATE),
    chunkMs: chunkMinutes * 60_000,
    resume: flags.resume,
    concurrency: parsePositiveInt(flags.concurrency, '--concurrency', 256),
    operator,
  };
  if (fromMs !== undefined && toMs !== undefined) cutChunks(fromMs, toMs, options.chunkMs);
  if (flags.resume !== undefined && (options.filters.length > 0 || messageIds !== undefined)) {
    throw new UsageError(
      '--resume continues a run with its own filters: omit --filter and --message-ids',
    );
  }
  return options;
}

/**
 * What says whether Bronze holds a replay range, besides Bronze's own rows: the message ids Silver and quarantine
 * wrote while the range's empty chunks lasted and how many of them Bronze lacks, and Bronze's retention. Times epoch ms
 * UTC; `partitionExpirationMs` and `createdMs` are `null` when Bronze sets or reports none (the emulator reports none).
 */
export interface BronzeCoverage {
  readonly fromMs: number;
  readonly toMs: number;
  readonly nowMs: number;
  /** Bronze rows in the range. */
  readonly bronzeRows: number;
  /** Distinct message ids Silver or quarantine wrote in the empty chunks' span (at most the witness limit). */
  readonly written: number;
  /** Of `written`, those Bronze holds nowhere from a week before the span to its end. */
  readonly missing: number;
  /** Bronze's partition expiration (`timePartitioning.expirationMs`), ms. */
  readonly partitionExpirationMs: number | null;
  /** When the Bronze table was created. */
  readonly createdMs: number | null;
}

const DAY_MS = 86_400_000;

/**
 * The one line `offvia replay` warns with when Bronze cannot hold all of the range, or `null` when nothing says so:
 * Silver or quarantine wrote messages in the range that Bronze lacks (deleted, or never written), or the range starts
 * before what Bronze's partition expiration keeps (BigQuery deletes a partition that long after its date). A range
 * that is simply quiet (no rows anywhere) is not a gap.
 */
export function bronzeGap(c: BronzeCoverage): string | null {
  const causes: string[] = [];
  if (c.missing > 0) {
    const created =
      c.createdMs !== null && c.createdMs > c.fromMs
        ? `; Bronze was created at ${new Date(c.createdMs).toISOString()}`
        : '';
    causes.push(
      `Silver and quarantine hold ${c.missing} message(s) written in the range (of ${c.written} checked) that Bronze does not hold${created}`,
    );
  }
  if (c.partitionExpirationMs !== null && c.fromMs < c.nowMs - c.partitionExpirationMs) {
    const keptFrom = new Date(c.nowMs - c.partitionExpirationMs).toISOString();
    const age = ((c.nowMs - c.fromMs) / DAY_MS).toFixed(1);
    causes.push(
      `Bronze partitions expire after ${(c.partitionExpirationMs / DAY_MS).toFixed(1)} days and the range starts ${age} days ago: nothing published before ${keptFrom} is left`,
    );
  }
  if (causes.length === 0) return null;
  return `Bronze holds ${c.bronzeRows} row(s) from ${new Date(c.fromMs).toISOString()} to ${new Date(c.toMs).toISOString()}, but ${causes.join('; and ')}: those messages cannot be replayed (docs/backfill.md#when-bronze-lacks-the-range)`;
}
