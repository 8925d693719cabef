// `offvia replay`: reads the Bronze messages of a publish-time range, chunk by chunk, and runs each through the
// same ingest code as live traffic, in-process, with its original message id, publish time and attributes.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ingestPipelineMessage,
  type PipelineIngestDeps,
  type PipelineIngestOutcome,
} from '../pipeline/runtime/ingest';
import type { PubSubMessage } from '../pubsub/message';
import { firestoreCall, query, type OpsContext } from './context';
import { NotFoundError, UsageError } from './errors';
import {
  bronzePartitioning,
  countPerChunk,
  estimateScan,
  messagesMissingFromBronze,
  readChunk,
  type BronzeMessage,
  type BronzePartitioning,
  type ScanEstimate,
} from './replay-bronze';
import { emptyKnownRows, KnownRowsWriter, type KnownRows } from './known-rows-writer';
import { progressBar, type Io, type Progress } from './output';
import {
  bronzeGap,
  chunksToRun,
  cutChunks,
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
  assertPassengerIdModeFitsSilver,
  ingestDepsForRun,
  newRunId,
  pool,
  resolver,
  runLogFile,
  writeResolutions,
  type Resolution,
} from './run';

/** Attempts per message before it counts as failed (its chunk is redone on resume). */
const MESSAGE_ATTEMPTS = 3;
/** Backoff before the second attempt, ms; doubled for each further one. */
const FIRST_BACKOFF_MS = 500;
/** Message ids per `IN UNNEST(@ids)` parameter (far below BigQuery's 10 MB request). */
const IDS_PER_QUERY = 10_000;

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
  /** Why Bronze cannot hold all of the range ({@link bronzeGap}), or `null`; also among `warnings`. */
  bronzeGap: string | null;
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

const iso = (ms: number): string => new Date(ms).toISOString();

/** Loads what quarantine and bad data already hold for the chunk's messages (partitions from the chunk's start). */
async function loadKnownRows(
  ctx: OpsContext,
  chunk: ReplayChunk,
  messageIds: readonly string[],
): Promise<KnownRows> {
  const known = emptyKnownRows();
  const q = ctx.pipeline.operatorColumns.quarantine;
  for (let i = 0; i < messageIds.length; i += IDS_PER_QUERY) {
    const ids = messageIds.slice(i, i + IDS_PER_QUERY);
    const params = { fromMs: chunk.fromMs, ids };
    const types = { fromMs: 'INT64', ids: ['STRING'] };
    // Rows are written after the publish time: filtering from the chunk's start prunes older partitions.
    const [quarantined, bad] = await Promise.all([
      query<{ id: unknown; stage: unknown }>(
        ctx,
        `SELECT DISTINCT ${q.messageId} AS id, ${q.stage} AS stage FROM \`${ctx.tables.quarantine}\`
         WHERE ${q.rejectedAt} >= TIMESTAMP_MILLIS(@fromMs) AND ${q.messageId} IN UNNEST(@ids)`,
        params,
        types,
      ),
      query<{ insert_id: unknown; id: unknown }>(
        ctx,
        `SELECT DISTINCT insert_id, source_message_id AS id FROM \`${ctx.tables.badData}\`
         WHERE insert_time >= TIMESTAMP_MILLIS(@fromMs) AND source_message_id IN UNNEST(@ids)`,
        params,
        types,
      ),
    ]);
    for (const row of quarantined) {
      const id = String(row.id);
      const stages = known.quarantine.get(id) ?? new Set<string>();
      stages.add(String(row.stage));
      known.quarantine.set(id, stages);
    }
    for (const b of bad) {
      if (typeof b.insert_id !== 'string') continue;
      known.badData.add(b.insert_id);
      const id = String(b.id);
      known.badDataByMessage.set(id, [...(known.badDataByMessage.get(id) ?? []), b.insert_id]);
    }
  }
  return known;
}

/** The ingest path for a replay: as the function builds it, with the known-rows and lineage writers under it. */
async function replayIngest(
  ctx: OpsContext,
  runId: string,
  logFile: string,
): Promise<{ deps: PipelineIngestDeps; writer: () => KnownRowsWriter }> {
  let known: KnownRowsWriter | undefined;
  const built = await ingestDepsForRun(ctx, runId, logFile, (lineage) => {
    const { tables, operatorColumns } = ctx.pipeline;
    known = new KnownRowsWriter(
      lineage,
      tables.quarantine,
      tables.badData,
      operatorColumns.quarantine,
    );
    return known;
  });
  const deps: PipelineIngestDeps = {
    ...built,
    // The retry-age guard is for Pub/Sub redeliveries; a replay retries and records its own failures.
    maxRetryAgeMs: Number.POSITIVE_INFINITY,
    // The event-time window is checked at the publish time: the verdict does not change with the replay's date.
    rulesAtMs: (message) => message.publishTimeMs,
  };
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

/** Runs one chunk: reads it, loads what quarantine and bad data hold, ingests each message (retried, then recorded). */
async function runChunk(
  ctx: OpsContext,
  chunk: ReplayChunk,
  run: ReplayRunRecord,
  ingest: { deps: PipelineIngestDeps; writer: () => KnownRowsWriter },
  options: ReplayOptions,
  limiter: RateLimiter,
  deps: ReplayDeps,
  bar: Progress,
  expectedRows: number,
): Promise<ChunkResult> {
  // No row counted: no read query (each is billed at least 10 MB).
  const messages = expectedRows === 0 ? [] : await readChunk(ctx, chunk, run);
  const known = await loadKnownRows(
    ctx,
    chunk,
    messages.map((m) => m.messageId),
  );
  ingest.writer().known = known;
  const resolve = resolver({
    runId: run.runId,
    action: 'replay',
    fix: 'none (replayed from Bronze)',
    operator: options.operator,
    now: deps.now,
  });
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
      let outcome: PipelineIngestOutcome | undefined;
      let lastError = '';
      for (let attempt = 1; attempt <= MESSAGE_ATTEMPTS && outcome === undefined; attempt++) {
        try {
          outcome = await ingestPipelineMessage(
            { ok: true, message: pubSubMessage(m) },
            ingest.deps,
          );
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
      // Bronze's heartbeats are skipped when read (replay-bronze.ts readChunk): none reaches here.
      if (outcome.destination === 'heartbeat') return;
      result.outcomes[outcome.destination] = (result.outcomes[outcome.destination] ?? 0) + 1;
      // Its bad-data or quarantine rows are resolved when it now lands elsewhere, as redrive and reprocess do.
      if (outcome.destination !== 'bad_data') {
        for (const insertId of known.badDataByMessage.get(m.messageId) ?? []) {
          result.resolutions.push(resolve('bad_data', insertId, m.messageId, outcome));
        }
      }
      if (outcome.destination !== 'quarantine' && known.quarantine.has(m.messageId)) {
        result.resolutions.push(resolve('quarantine', m.messageId, m.messageId, outcome));
      }
    },
    () => bar.increment(),
  );
  // Rows the count saw that the chunk did not replay (duplicates in Bronze, attribute filters).
  if (expectedRows > messages.length) bar.increment(expectedRows - messages.length);
  return result;
}

/**
 * Whether Bronze holds the whole range ({@link bronzeGap}): the messages Silver and quarantine wrote over the chunks
 * where Bronze has no row (asked only when there is such a chunk), and Bronze's partition expiration.
 */
async function checkBronzeCoverage(
  ctx: OpsContext,
  run: ReplayRunRecord,
  chunks: readonly ReplayChunk[],
  counts: ReadonlyMap<number, number>,
  report: ReplayReport,
  nowMs: number,
): Promise<string | null> {
  const empty = chunks.filter((c) => (counts.get(c.index) ?? 0) === 0);
  const witnesses =
    empty.length === 0
      ? { written: 0, missing: 0 }
      : await messagesMissingFromBronze(
          ctx,
          Math.min(...empty.map((c) => c.fromMs)),
          Math.max(...empty.map((c) => c.toMs)),
          run.messageIds,
        );
  return bronzeGap({
    fromMs: run.fromMs,
    toMs: run.toMs,
    nowMs,
    bronzeRows: report.bronzeRows,
    ...witnesses,
    partitionExpirationMs: report.partitioning.partitionExpirationMs,
    createdMs: report.partitioning.createdMs,
  });
}

/**
 * Runs `offvia replay`: a new run records itself, then runs its chunks in order, checkpointing each once handled;
 * `--resume` redoes a run's chunks without a `done` checkpoint. A dry run reads counts and the scan estimate only.
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
      ratePerSecond: options.ratePerSecond ?? null,
      createdAtMs: started,
      status: 'running',
      updatedAtMs: started,
    };
  }
  const chunks = cutChunks(run.fromMs, run.toMs, run.chunkMs);
  const report: ReplayReport = {
    runId: null,
    dryRun: options.dryRun,
    resumed: options.resume !== undefined,
    from: iso(run.fromMs),
    to: iso(run.toMs),
    chunkMinutes: run.chunkMs / 60_000,
    chunks: chunks.length,
    chunksRun: 0,
    filters: run.filters.map((f) => `attr.${f.key}=${f.value}`),
    messageIds: run.messageIds === null ? null : [...run.messageIds],
    bronzeRows: 0,
    partitioning: {
      partitioned: 'unknown',
      detail: '',
      partitionExpirationMs: null,
      createdMs: null,
    },
    scan: null,
    bronzeGap: null,
    warnings: [],
    totals: null,
    resolutionsWritten: 0,
    elapsedMs: 0,
    rowsPerSecond: null,
    logFile: null,
    status: 'dry-run',
  };
  const todo = chunksToRun(chunks, resumed);
  report.partitioning = await bronzePartitioning(ctx);
  if (report.partitioning.partitioned === 'no') {
    report.warnings.push(
      `Bronze (${ctx.tables.bronze}) is ${report.partitioning.detail}: each of the ${todo.length} chunk queries is billed for the whole table; recreate Bronze from sql/010 (docs/backfill.md) or use a larger --chunk-minutes`,
    );
  }
  const counts = await countPerChunk(ctx, run.fromMs, run.toMs, run.chunkMs, run.messageIds);
  report.bronzeRows = [...counts.values()].reduce((s, n) => s + n, 0);
  report.bronzeGap = await checkBronzeCoverage(ctx, run, chunks, counts, report, deps.now());
  if (report.bronzeGap !== null) report.warnings.push(report.bronzeGap);

  if (options.dryRun) {
    report.scan = await estimateScan(ctx, todo, run.messageIds, report.partitioning);
    report.runId = options.resume ?? null;
    report.elapsedMs = deps.now() - started;
    return report;
  }

  // Before the run is recorded: a refused run leaves nothing to resume.
  await assertPassengerIdModeFitsSilver(ctx);
  if (options.resume === undefined) {
    await firestoreCall(ctx, 'replay run', () => deps.store.createRun(run));
  } else {
    await firestoreCall(ctx, 'replay run', () =>
      deps.store.setRunStatus(run.runId, 'running', deps.now()),
    );
  }
  report.runId = run.runId;
  report.status = 'running';
  // Before any work: a run killed at any point can be resumed by this id.
  io.err(
    `offvia replay: run ${run.runId} ${options.resume === undefined ? 'started' : 'resumed'} (${todo.length} of ${chunks.length} chunks to do); if it stops, continue with: offvia replay --resume ${run.runId}`,
  );
  const logFile = runLogFile(ctx, run.runId);
  report.logFile = logFile;
  const ingest = await replayIngest(ctx, run.runId, logFile);
  // A resumed run keeps its rate unless --rate is given again.
  const limiter = new RateLimiter(
    options.ratePerSecond ?? run.ratePerSecond ?? undefined,
    deps.now,
    deps.sleep,
  );
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
      // Resolutions before the checkpoint: a redone chunk's copies share their insertId (layer, row, run).
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
