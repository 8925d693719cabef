// `offvia replay`: reads the Bronze messages of a publish-time range, chunk by chunk, and runs each through the
// same ingest code as live traffic, in-process, with its original message id, publish time and attributes.
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BigQuery } from '@google-cloud/bigquery';
import { ingestMessage, type IngestDeps, type IngestOutcome } from '../ingest/ingest-booking';
import { createIngestDeps } from '../ingest/runtime';
import { Logger, type LogEntry } from '../logging/logger';
import type { PubSubMessage } from '../pubsub/message';
import { firestoreCall, query, type OpsContext } from './context';
import { NotFoundError, OpsError, UsageError } from './errors';
import { emptyKnownRows, KnownRowsWriter, type KnownRows } from './known-rows-writer';
import { keyValues, progressBar, section, table, clip, type Io, type Progress } from './output';
import {
  chunksToRun,
  cutChunks,
  matchesFilters,
  MAX_STORED_FAILURES,
  RateLimiter,
  totalsOf,
  type ChunkCheckpoint,
  type ReplayChunk,
  type ReplayDestination,
  type ReplayFailure,
  type ReplayOptions,
  type ReplayTotals,
} from './replay-plan';
import {
  FirestoreReplayStore,
  type ReplayCheckpointStore,
  type ReplayRunRecord,
} from './replay-store';
import {
  LineageWriter,
  newRunId,
  pool,
  runLogFile,
  writeResolutions,
  type Resolution,
} from './run';

/** Attempts per message inside a chunk before it counts as failed (the chunk is then retried on resume). */
export const MESSAGE_ATTEMPTS = 3;
/** Backoff before the second attempt, ms; doubled for each further one. */
export const FIRST_BACKOFF_MS = 500;
/** Message ids per `IN UNNEST(@ids)` parameter (keeps a request far below BigQuery's 10 MB). */
const IDS_PER_QUERY = 10_000;
/**
 * BigQuery on-demand bills at least 10 MB per table a query references
 * (cloud.google.com/bigquery/pricing#on_demand_pricing), whatever the dry run says.
 */
export const MIN_BILLED_BYTES_PER_QUERY = 10 * 1024 * 1024;

/** One Bronze row, as the replay uses it. */
export interface BronzeMessage {
  messageId: string;
  /** RFC 3339 UTC, microseconds (BigQuery TIMESTAMP). */
  publishTime: string;
  publishTimeMs: number;
  data: string;
  attributes: Record<string, string>;
}

/** How the range's Bronze scan was measured: a BigQuery dry run, or an estimate where the emulator cannot. */
export interface ScanEstimate {
  /** `dry-run`: Σ totalBytesProcessed of each chunk's query; `estimate`: from column sizes (the local emulator). */
  method: 'dry-run' | 'estimate';
  /** Bytes the chunk queries scan with Bronze as it is (estimate: as sql/010 creates it, DAY-partitioned). */
  bytes: number;
  /** Bytes billed on demand: each query at least 10 MB. */
  billedBytes: number;
  /** Estimate only: the bytes if Bronze were not partitioned (each chunk query scans the whole table). */
  unpartitionedBytes: number | null;
  /** Estimate only: the bytes with DAY partitions on publish_time (each chunk scans the days it touches). */
  partitionedBytes: number | null;
  /** Queries counted (one per chunk; dry runs stop at 500 chunks and extrapolate). */
  queries: number;
  note: string;
}

/** What Bronze's table says about its partitioning. */
export interface BronzePartitioning {
  /** `yes` (time-partitioned on publish_time), `no`, or `unknown` (the emulator does not report it). */
  partitioned: 'yes' | 'no' | 'unknown';
  detail: string;
}

/** The report of a run or a dry run; `--json` prints it. */
export interface ReplayReport {
  runId: string | null;
  dryRun: boolean;
  resumed: boolean;
  /** RFC 3339 UTC. */
  from: string;
  to: string;
  chunkMinutes: number;
  chunks: number;
  /** Chunks this invocation ran (the others were done before a resume). */
  chunksRun: number;
  filters: string[];
  messageIds: string[] | null;
  /** Bronze rows in the range (dry run: before attribute filters and de-duplication). */
  bronzeRows: number;
  partitioning: BronzePartitioning;
  scan: ScanEstimate | null;
  warnings: string[];
  /** Totals over every chunk of the run (a resumed run includes the chunks done before). */
  totals: ReplayTotals | null;
  resolutionsWritten: number;
  elapsedMs: number;
  /** Rows of this invocation per second. */
  rowsPerSecond: number | null;
  logFile: string | null;
  status: ReplayRunRecord['status'] | 'dry-run';
}

/** What a replay runs against; tests pass stubs, the CLI the real ones. */
export interface ReplayDeps {
  readonly store: ReplayCheckpointStore;
  /** Epoch ms. */
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

/** The real dependencies: Firestore checkpoints in the context's database, the wall clock. */
export function replayDeps(ctx: OpsContext): ReplayDeps {
  return {
    store: new FirestoreReplayStore(ctx.firestore()),
    now: Date.now,
    sleep: (ms) => sleep(ms),
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function timestampText(value: unknown): string {
  if (typeof value === 'object' && value !== null && 'value' in value) return String(value.value);
  return String(value);
}

function attributesOf(value: unknown): Record<string, string> {
  if (value === null || value === undefined) return {};
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch (err) {
      throw new OpsError(
        `Bronze attributes are not JSON (${err instanceof Error ? err.message : String(err)}): ${clip(value, 80)}`,
      );
    }
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
    // defineProperty: an attribute named `__proto__` stays data, as the push decoder keeps it.
    if (typeof v === 'string')
      Object.defineProperty(out, k, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return out;
}

/** The range filter on the partitioning column itself, so BigQuery prunes partitions (querying-partitioned-tables). */
function rangeWhere(messageIds: readonly string[] | null): string {
  return (
    'publish_time >= TIMESTAMP_MILLIS(@fromMs) AND publish_time < TIMESTAMP_MILLIS(@toMs)' +
    (messageIds === null ? '' : ' AND message_id IN UNNEST(@ids)')
  );
}

function rangeParams(
  fromMs: number,
  toMs: number,
  messageIds: readonly string[] | null,
): { params: Record<string, unknown>; types: Record<string, string | string[]> } {
  return {
    params: { fromMs, toMs, ...(messageIds === null ? {} : { ids: [...messageIds] }) },
    types: { fromMs: 'INT64', toMs: 'INT64', ...(messageIds === null ? {} : { ids: ['STRING'] }) },
  };
}

/** The query a chunk reads Bronze with (also what the dry run measures). */
export function chunkSql(bronze: string, messageIds: readonly string[] | null): string {
  return `SELECT message_id, publish_time, data, TO_JSON_STRING(attributes) AS attributes
FROM \`${bronze}\`
WHERE ${rangeWhere(messageIds)}
ORDER BY publish_time, message_id`;
}

/**
 * The Bronze messages of one chunk, oldest first, one per message id (the BigQuery subscription writes at least
 * once), keeping those whose attributes match the filters.
 */
export async function readChunk(
  ctx: OpsContext,
  chunk: ReplayChunk,
  run: Pick<ReplayRunRecord, 'filters' | 'messageIds'>,
): Promise<BronzeMessage[]> {
  const { params, types } = rangeParams(chunk.fromMs, chunk.toMs, run.messageIds);
  const rows = await query<Record<string, unknown>>(
    ctx,
    chunkSql(ctx.tables.bronze, run.messageIds),
    params,
    types,
  );
  const seen = new Set<string>();
  const out: BronzeMessage[] = [];
  for (const r of rows) {
    const messageId = String(r.message_id);
    if (seen.has(messageId)) continue;
    seen.add(messageId);
    const publishTime = timestampText(r.publish_time);
    const attributes = attributesOf(r.attributes);
    if (!matchesFilters(attributes, run.filters)) continue;
    out.push({
      messageId,
      publishTime,
      publishTimeMs: Date.parse(publishTime),
      data: typeof r.data === 'string' ? r.data : '',
      attributes,
    });
  }
  return out;
}

/** Bronze rows per chunk index in the range (before attribute filters and de-duplication). */
export async function countPerChunk(
  ctx: OpsContext,
  fromMs: number,
  toMs: number,
  chunkMs: number,
  messageIds: readonly string[] | null,
): Promise<Map<number, number>> {
  const { params, types } = rangeParams(fromMs, toMs, messageIds);
  const rows = await query<{ chunk: unknown; n: unknown }>(
    ctx,
    `SELECT DIV(UNIX_MILLIS(publish_time) - @fromMs, @chunkMs) AS chunk, COUNT(*) AS n
     FROM \`${ctx.tables.bronze}\` WHERE ${rangeWhere(messageIds)} GROUP BY chunk`,
    { ...params, chunkMs },
    { ...types, chunkMs: 'INT64' },
  );
  return new Map(rows.map((r) => [Number(r.chunk), Number(r.n)]));
}

/** Whether Bronze is time-partitioned on publish_time, from the table's metadata. */
export async function bronzePartitioning(ctx: OpsContext): Promise<BronzePartitioning> {
  const [projectId, datasetId, tableId] = ctx.tables.bronze.split('.') as [string, string, string];
  let metadata: { timePartitioning?: { type?: string; field?: string } };
  try {
    [metadata] = (await ctx.bigquery
      .dataset(datasetId, { projectId })
      .table(tableId)
      .getMetadata()) as unknown as [typeof metadata];
  } catch (err) {
    throw new OpsError(
      `${ctx.describe.bigquery}: cannot read the Bronze table ${ctx.tables.bronze}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
  const tp = metadata.timePartitioning;
  if (tp?.field === 'publish_time') {
    return { partitioned: 'yes', detail: `partitioned by ${tp.type ?? 'DAY'} on publish_time` };
  }
  if (tp !== undefined) {
    return {
      partitioned: 'no',
      detail: `partitioned on ${tp.field ?? 'ingestion time'}, not publish_time: a range scans every partition`,
    };
  }
  if (ctx.mode === 'local') {
    return {
      partitioned: 'unknown',
      detail:
        'the BigQuery emulator does not report partitioning of tables made by DDL; sql/010 creates Bronze partitioned by DAY(publish_time)',
    };
  }
  return { partitioned: 'no', detail: 'not partitioned: every chunk query scans all of Bronze' };
}

/** `dryRun` statistics of one query: totalBytesProcessed. */
async function dryRunBytes(
  bigquery: BigQuery,
  ctx: OpsContext,
  sql: string,
  params: Record<string, unknown>,
  types: Record<string, string | string[]>,
): Promise<number> {
  try {
    const [job] = await bigquery.createQueryJob({
      query: sql,
      params,
      types,
      dryRun: true,
      ...(ctx.mode === 'cloud' ? { location: ctx.env.OFFVIA_BQ_LOCATION ?? 'US' } : {}),
    });
    const metadata = job.metadata as { statistics?: { totalBytesProcessed?: unknown } } | undefined;
    const stats = metadata?.statistics;
    return Number(stats?.totalBytesProcessed ?? 0);
  } catch (err) {
    throw new OpsError(
      `${ctx.describe.bigquery}: dry run failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
}

/** Most chunks measured one by one with a dry run; beyond, the mean of those is extrapolated. */
const MAX_DRY_RUN_QUERIES = 500;

/**
 * The bytes the run's chunk queries scan. In the cloud: a BigQuery dry run of each chunk's query
 * (totalBytesProcessed; dry runs are free). On the emulator, whose dry run answers 0 bytes, an estimate from
 * BigQuery's column sizes (STRING 2 bytes + UTF-8 length, TIMESTAMP 8 bytes, JSON its text's UTF-8 length:
 * cloud.google.com/bigquery/pricing#data_size_calculation) over the columns the query reads, both for DAY
 * partitions on publish_time (a chunk scans the days it touches) and for an unpartitioned table (each chunk scans
 * the whole table).
 */
export async function estimateScan(
  ctx: OpsContext,
  chunks: readonly ReplayChunk[],
  messageIds: readonly string[] | null,
  partitioning: BronzePartitioning,
): Promise<ScanEstimate> {
  const sql = chunkSql(ctx.tables.bronze, messageIds);
  const billed = (perQuery: readonly number[]) =>
    perQuery.reduce((s, b) => s + Math.max(b, MIN_BILLED_BYTES_PER_QUERY), 0);
  if (ctx.mode === 'cloud') {
    const measured = chunks.slice(0, MAX_DRY_RUN_QUERIES);
    const perQuery: number[] = [];
    for (const c of measured) {
      const { params, types } = rangeParams(c.fromMs, c.toMs, messageIds);
      perQuery.push(await dryRunBytes(ctx.bigquery, ctx, sql, params, types));
    }
    const mean = perQuery.reduce((s, b) => s + b, 0) / Math.max(1, perQuery.length);
    const rest = chunks.length - measured.length;
    return {
      method: 'dry-run',
      bytes: Math.round(perQuery.reduce((s, b) => s + b, 0) + rest * mean),
      billedBytes: Math.round(billed(perQuery) + rest * Math.max(mean, MIN_BILLED_BYTES_PER_QUERY)),
      unpartitionedBytes: null,
      partitionedBytes: null,
      queries: chunks.length,
      note:
        rest > 0
          ? `dry run of the first ${measured.length} chunk queries, extrapolated to ${chunks.length}`
          : `dry run of each of the ${chunks.length} chunk queries (totalBytesProcessed)`,
    };
  }
  const days = await query<{ day: unknown; bytes: unknown }>(
    ctx,
    `SELECT UNIX_DATE(DATE(publish_time)) AS day,
            SUM(2 + COALESCE(BYTE_LENGTH(message_id), 0) + 8 + 2 + COALESCE(BYTE_LENGTH(data), 0)
                + COALESCE(BYTE_LENGTH(TO_JSON_STRING(attributes)), 0)) AS bytes
     FROM \`${ctx.tables.bronze}\` GROUP BY day`,
  );
  const perDay = new Map(days.map((d) => [Number(d.day), Number(d.bytes)]));
  const whole = [...perDay.values()].reduce((s, b) => s + b, 0);
  const dayOf = (ms: number) => Math.floor(ms / 86_400_000);
  const partitionedPerQuery = chunks.map((c) => {
    let bytes = 0;
    for (let d = dayOf(c.fromMs); d <= dayOf(c.toMs - 1); d++) bytes += perDay.get(d) ?? 0;
    return bytes;
  });
  const partitionedBytes = partitionedPerQuery.reduce((s, b) => s + b, 0);
  const unpartitionedBytes = whole * chunks.length;
  const unpartitioned = partitioning.partitioned === 'no';
  return {
    method: 'estimate',
    bytes: unpartitioned ? unpartitionedBytes : partitionedBytes,
    billedBytes: unpartitioned ? billed(chunks.map(() => whole)) : billed(partitionedPerQuery),
    unpartitionedBytes,
    partitionedBytes,
    queries: chunks.length,
    note:
      'the BigQuery emulator cannot dry-run (it answers 0 bytes): estimated from the column sizes of the rows ' +
      '(message_id, publish_time, data, attributes) in the days each chunk touches, or in the whole table',
  };
}

/** Loads what quarantine and bad data already hold for the chunk's messages (partitions from the chunk's start). */
async function loadKnownRows(
  ctx: OpsContext,
  chunk: ReplayChunk,
  messageIds: readonly string[],
): Promise<KnownRows> {
  const known = emptyKnownRows();
  for (let i = 0; i < messageIds.length; i += IDS_PER_QUERY) {
    const ids = messageIds.slice(i, i + IDS_PER_QUERY);
    const params = { fromMs: chunk.fromMs, ids };
    const types = { fromMs: 'INT64', ids: ['STRING'] };
    // A message's rows are written after its publish time: filtering the partitioning column from the chunk's
    // start prunes the older partitions of both tables.
    const [quarantined, bad] = await Promise.all([
      query<{ id: unknown; stage: unknown }>(
        ctx,
        `SELECT DISTINCT source_message_id AS id, error_stage AS stage FROM \`${ctx.tables.quarantine}\`
         WHERE received_timestamp >= TIMESTAMP_MILLIS(@fromMs) AND source_message_id IN UNNEST(@ids)`,
        params,
        types,
      ),
      query<{ insert_id: unknown }>(
        ctx,
        `SELECT DISTINCT insert_id FROM \`${ctx.tables.badData}\`
         WHERE insert_time >= TIMESTAMP_MILLIS(@fromMs) AND source_message_id IN UNNEST(@ids)`,
        params,
        types,
      ),
    ]);
    for (const q of quarantined) {
      const id = String(q.id);
      const stages = known.quarantine.get(id) ?? new Set<string>();
      stages.add(String(q.stage));
      known.quarantine.set(id, stages);
    }
    for (const b of bad) if (typeof b.insert_id === 'string') known.badData.add(b.insert_id);
  }
  return known;
}

/** The ingest path for a replay: as the function builds it, with the known-rows and lineage writers under it. */
function replayIngest(
  ctx: OpsContext,
  runId: string,
  logFile: string,
): { deps: IngestDeps; writer: () => KnownRowsWriter } {
  const sink = (entry: LogEntry): void => {
    appendFileSync(logFile, `${JSON.stringify({ ...entry, run_id: runId })}\n`);
  };
  let known: KnownRowsWriter | undefined;
  const deps = createIngestDeps(ctx.env, new Logger('offvia', sink), {
    wrapWriter: (writer) => {
      known = new KnownRowsWriter(
        new LineageWriter(writer, runId, [ctx.ingest.silverTable, ctx.ingest.quarantineTable]),
        ctx.ingest.quarantineTable,
        ctx.ingest.badDataTable,
      );
      return known;
    },
  });
  // The retry-age guard is for Pub/Sub redeliveries: a replayed message is old by nature, and its failures are the
  // replay's to retry and record (chunk checkpoints), not a reason to park it in bad data.
  deps.config = { ...deps.config, maxRetryAgeMs: Number.POSITIVE_INFINITY };
  // The event-time window is checked at the publish time, so the verdict does not change with the replay's date.
  deps.rulesAtMs = (message) => message.publishTimeMs;
  return {
    deps,
    writer: () => {
      if (known === undefined) throw new Error('the ingest path was built without its writer');
      return known;
    },
  };
}

/** The message as the push decoder would have produced it from the original delivery. */
function pubSubMessage(m: BronzeMessage): PubSubMessage {
  return {
    messageId: m.messageId,
    publishTime: m.publishTime,
    publishTimeMs: Number.isFinite(m.publishTimeMs) ? m.publishTimeMs : undefined,
    attributes: m.attributes,
    data: Buffer.from(m.data, 'utf8'),
    subscription: undefined,
  };
}

/** What one chunk did (before it becomes a checkpoint). */
interface ChunkResult {
  rows: number;
  outcomes: Partial<Record<ReplayDestination, number>>;
  alreadyPresent: Record<string, number>;
  failures: ReplayFailure[];
  resolutions: Resolution[];
}

/**
 * Runs one chunk: reads it, loads what quarantine and bad data hold for it, and ingests each message (up to
 * {@link MESSAGE_ATTEMPTS} attempts with backoff; one still failing is recorded, never skipped silently).
 */
async function runChunk(
  ctx: OpsContext,
  chunk: ReplayChunk,
  run: ReplayRunRecord,
  ingest: { deps: IngestDeps; writer: () => KnownRowsWriter },
  options: ReplayOptions,
  limiter: RateLimiter,
  deps: ReplayDeps,
  bar: Progress,
  expectedRows: number,
): Promise<ChunkResult> {
  const messages = await readChunk(ctx, chunk, run);
  const known = await loadKnownRows(
    ctx,
    chunk,
    messages.map((m) => m.messageId),
  );
  ingest.writer().known = known;
  const result: ChunkResult = {
    rows: messages.length,
    outcomes: {},
    alreadyPresent: known.skipped,
    failures: [],
    resolutions: [],
  };
  await pool(
    messages,
    options.concurrency,
    async (m) => {
      await limiter.take();
      let outcome: IngestOutcome | undefined;
      let lastError = '';
      for (let attempt = 1; attempt <= MESSAGE_ATTEMPTS && outcome === undefined; attempt++) {
        try {
          outcome = await ingestMessage({ ok: true, message: pubSubMessage(m) }, ingest.deps);
        } catch (err) {
          // The ingest path logged the failure with its context (run log); retry, then record it.
          lastError = err instanceof Error ? err.message : String(err);
          if (attempt < MESSAGE_ATTEMPTS) await deps.sleep(FIRST_BACKOFF_MS * 2 ** (attempt - 1));
        }
      }
      if (outcome === undefined) {
        result.failures.push({ messageId: m.messageId, error: lastError });
        return;
      }
      result.outcomes[outcome.destination] = (result.outcomes[outcome.destination] ?? 0) + 1;
      // A message that has a quarantine row and now lands elsewhere (the contract or a fix changed): resolve it,
      // so the open view no longer lists it, as `quarantine reprocess` does.
      if (outcome.destination !== 'quarantine' && known.quarantine.has(m.messageId)) {
        result.resolutions.push({
          layer: 'quarantine',
          row_key: m.messageId,
          source_message_id: m.messageId,
          run_id: run.runId,
          action: 'replay',
          outcome: outcome.destination,
          result_event_id: 'eventId' in outcome ? outcome.eventId : null,
          fix: 'none (replayed from Bronze)',
          resolved_by: options.operator,
          resolved_at: iso(deps.now()),
        });
      }
    },
    () => bar.increment(),
  );
  // Rows the count saw that the chunk did not replay (duplicates in Bronze, attribute filters).
  if (expectedRows > messages.length) bar.increment(expectedRows - messages.length);
  return result;
}

function emptyReport(
  run: Pick<ReplayRunRecord, 'fromMs' | 'toMs' | 'chunkMs' | 'filters' | 'messageIds'>,
  options: ReplayOptions,
  chunks: number,
): ReplayReport {
  return {
    runId: null,
    dryRun: options.dryRun,
    resumed: options.resume !== undefined,
    from: iso(run.fromMs),
    to: iso(run.toMs),
    chunkMinutes: run.chunkMs / 60_000,
    chunks,
    chunksRun: 0,
    filters: run.filters.map((f) => `attr.${f.key}=${f.value}`),
    messageIds: run.messageIds === null ? null : [...run.messageIds],
    bronzeRows: 0,
    partitioning: { partitioned: 'unknown', detail: '' },
    scan: null,
    warnings: [],
    totals: null,
    resolutionsWritten: 0,
    elapsedMs: 0,
    rowsPerSecond: null,
    logFile: null,
    status: 'dry-run',
  };
}

/**
 * Runs `offvia replay` (or its dry run). A new run creates its run record, then runs the chunks in order, writing
 * each chunk's checkpoint after all its messages were handled; `--resume` runs the chunks of an existing run that
 * have no `done` checkpoint. A dry run reads only counts and the scan estimate, and writes nothing.
 * @throws UsageError for a range or resume that does not fit; NotFoundError for an unknown `--resume` id;
 *   OpsError when BigQuery or Firestore fail (the checkpoints written so far stay: resume continues from them).
 */
export async function replay(
  ctx: OpsContext,
  options: ReplayOptions,
  io: Io,
  deps: ReplayDeps,
): Promise<ReplayReport> {
  const started = deps.now();
  let run: ReplayRunRecord;
  let resumed: ChunkCheckpoint[] = [];
  if (options.resume !== undefined) {
    const runId = options.resume;
    const found = await firestoreCall(ctx, 'replay run', () => deps.store.readRun(runId));
    if (found === null) throw new NotFoundError(`no replay run ${runId}`);
    if (
      (options.fromMs !== undefined && options.fromMs !== found.fromMs) ||
      (options.toMs !== undefined && options.toMs !== found.toMs)
    ) {
      throw new UsageError(
        `--resume ${runId}: the run covers ${iso(found.fromMs)} to ${iso(found.toMs)}; omit --from/--to or give those`,
      );
    }
    run = found;
    resumed = await firestoreCall(ctx, 'replay checkpoints', () =>
      deps.store.readCheckpoints(runId),
    );
  } else {
    if (options.fromMs === undefined || options.toMs === undefined) {
      throw new UsageError('--from and --to are required (or --resume RUN_ID)');
    }
    run = {
      runId: newRunId('replay', started),
      fromMs: options.fromMs,
      toMs: options.toMs,
      chunkMs: options.chunkMs,
      filters: options.filters,
      messageIds: options.messageIds === undefined ? null : [...options.messageIds],
      operator: options.operator,
      createdAtMs: started,
      status: 'running',
      updatedAtMs: started,
    };
  }
  const chunks = cutChunks(run.fromMs, run.toMs, run.chunkMs);
  const report = emptyReport(run, options, chunks.length);
  const todo = chunksToRun(chunks, resumed);
  report.partitioning = await bronzePartitioning(ctx);
  if (report.partitioning.partitioned === 'no') {
    report.warnings.push(
      `Bronze (${ctx.tables.bronze}) is ${report.partitioning.detail}: each of the ${todo.length} chunk queries is billed for the whole table; recreate Bronze from sql/010 (docs/backfill.md) or use a larger --chunk-minutes`,
    );
  }
  const counts = await countPerChunk(ctx, run.fromMs, run.toMs, run.chunkMs, run.messageIds);
  report.bronzeRows = [...counts.values()].reduce((s, n) => s + n, 0);

  if (options.dryRun) {
    report.scan = await estimateScan(ctx, todo, run.messageIds, report.partitioning);
    report.runId = options.resume ?? null;
    report.chunksRun = 0;
    report.elapsedMs = deps.now() - started;
    return report;
  }

  if (options.resume === undefined) {
    await firestoreCall(ctx, 'replay run', () => deps.store.createRun(run));
  } else {
    await firestoreCall(ctx, 'replay run', () =>
      deps.store.setRunStatus(run.runId, 'running', deps.now()),
    );
  }
  report.runId = run.runId;
  report.status = 'running';
  const logFile = runLogFile(ctx, run.runId);
  report.logFile = logFile;
  const ingest = replayIngest(ctx, run.runId, logFile);
  const limiter = new RateLimiter(options.ratePerSecond, deps.now, deps.sleep);
  const expected = todo.reduce((s, c) => s + (counts.get(c.index) ?? 0), 0);
  const bar = progressBar(io, 'replay', expected);
  const previous = new Map(resumed.map((c) => [c.index, c]));
  let rowsRun = 0;
  try {
    for (const chunk of todo) {
      const chunkStarted = deps.now();
      const result = await runChunk(
        ctx,
        chunk,
        run,
        ingest,
        options,
        limiter,
        deps,
        bar,
        counts.get(chunk.index) ?? 0,
      );
      // Resolutions before the checkpoint: a run killed in between redoes the chunk, and the resolution's insertId
      // (layer, row, run) makes the second one a copy the open view's DISTINCT ignores.
      await writeResolutions(ctx, result.resolutions);
      report.resolutionsWritten += result.resolutions.length;
      const checkpoint: ChunkCheckpoint = {
        index: chunk.index,
        fromMs: chunk.fromMs,
        toMs: chunk.toMs,
        status: result.failures.length === 0 ? 'done' : 'failed',
        rows: result.rows,
        outcomes: result.outcomes,
        alreadyPresent: result.alreadyPresent,
        failures: result.failures.slice(0, MAX_STORED_FAILURES),
        failedCount: result.failures.length,
        attempt: (previous.get(chunk.index)?.attempt ?? 0) + 1,
        finishedAtMs: deps.now(),
        elapsedMs: deps.now() - chunkStarted,
      };
      await firestoreCall(ctx, 'replay checkpoint', () =>
        deps.store.writeCheckpoint(run.runId, checkpoint),
      );
      previous.set(chunk.index, checkpoint);
      rowsRun += result.rows;
      report.chunksRun++;
    }
  } finally {
    bar.stop();
  }
  const totals = totalsOf([...previous.values()]);
  report.totals = totals;
  report.status = totals.chunksDone === chunks.length ? 'done' : 'incomplete';
  await firestoreCall(ctx, 'replay run', () =>
    deps.store.setRunStatus(run.runId, report.status as ReplayRunRecord['status'], deps.now()),
  );
  report.elapsedMs = deps.now() - started;
  report.rowsPerSecond =
    report.elapsedMs > 0 ? Math.round((rowsRun * 1000) / report.elapsedMs) : null;
  return report;
}

/** Bytes as `1.23 GiB (1,320,702,443 bytes)`. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const exact = `${Math.round(bytes).toLocaleString('en-US')} bytes`;
  return unit === 0 ? exact : `${value.toFixed(2)} ${units[unit]} (${exact})`;
}

/** The report as text. */
export function formatReplay(r: ReplayReport): string {
  const range = `${r.from} to ${r.to}, ${r.chunks} chunk(s) of ${r.chunkMinutes} min`;
  const out: string[] = [];
  if (r.dryRun) {
    out.push(`replay --dry-run: ${range}; nothing written`);
    const scan = r.scan;
    out.push(
      section(
        'Would replay',
        keyValues([
          ['Bronze rows in the range', r.bronzeRows],
          ['filters', r.filters.length === 0 ? '(none)' : r.filters.join(', ')],
          ['message ids', r.messageIds === null ? '(all)' : r.messageIds.length],
          ['Bronze partitioning', `${r.partitioning.partitioned}: ${r.partitioning.detail}`],
          ...(scan === null
            ? []
            : ([
                [`bytes scanned (${scan.method})`, formatBytes(scan.bytes)],
                ['bytes billed on demand (10 MB minimum a query)', formatBytes(scan.billedBytes)],
                ...(scan.partitionedBytes === null
                  ? []
                  : ([
                      ['  if DAY-partitioned on publish_time', formatBytes(scan.partitionedBytes)],
                    ] as const)),
                ...(scan.unpartitionedBytes === null
                  ? []
                  : ([['  if not partitioned', formatBytes(scan.unpartitionedBytes)]] as const)),
                ['how', scan.note],
              ] as const)),
        ]),
      ),
    );
  } else {
    const rate = r.rowsPerSecond === null ? '' : ` (${r.rowsPerSecond} rows/s)`;
    out.push(
      `replay run ${r.runId}${r.resumed ? ' (resumed)' : ''}: ${range}; ${r.chunksRun} chunk(s) run in ${(r.elapsedMs / 1000).toFixed(1)} s${rate}; ${r.status}`,
    );
    const t = r.totals;
    if (t !== null) {
      out.push(
        section(
          'Outcomes (every chunk of the run)',
          keyValues([
            ['rows replayed', t.rows],
            ['Silver', t.outcomes.silver],
            ['quarantine', t.outcomes.quarantine],
            ['retry store', t.outcomes.schema_retry],
            ['bad data', t.outcomes.bad_data],
            ['failed', t.failed],
            [
              'already present, not written again',
              Object.entries(t.alreadyPresent)
                .map(([k, n]) => `${k} ${n}`)
                .join(', ') || '0',
            ],
            ['quarantine rows resolved', r.resolutionsWritten],
            ['chunks done / failed', `${t.chunksDone} / ${t.chunksFailed}`],
          ]),
        ),
      );
      if (t.failures.length > 0) {
        out.push(
          section(
            `Failed (resume with: offvia replay --resume ${r.runId})`,
            table(
              ['message', 'error'],
              t.failures.slice(0, 20).map((f) => [f.messageId, clip(f.error, 100)]),
              100,
            ),
          ),
        );
      }
    }
    if (r.logFile) out.push(`\nlog: ${r.logFile}`);
  }
  for (const w of r.warnings) out.push(`warning: ${w}`);
  return out.join('\n');
}
