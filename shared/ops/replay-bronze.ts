// How `offvia replay` reads Bronze: chunk queries that prune partitions, rows per chunk, whether Bronze is
// partitioned, and the bytes a range's chunk queries scan.
import type { BigQuery } from '@google-cloud/bigquery';
import { defineField } from '../contract/json-payload';
import { query, type OpsContext } from './context';
import { OpsError } from './errors';
import { cellText, clip } from './output';
import { matchesFilters, type ReplayChunk } from './replay-plan';
import { isHeartbeat } from '../pubsub/message';
import type { ReplayRunRecord } from './replay-store';

/** BigQuery on-demand bills at least 10 MB per table a query references (its pricing page), bytes. */
const MIN_BILLED_BYTES_PER_QUERY = 10 * 1024 * 1024;

/** One Bronze row, as the replay uses it. */
export interface BronzeMessage {
  messageId: string;
  /** RFC 3339 UTC, microseconds (BigQuery TIMESTAMP). */
  publishTime: string;
  publishTimeMs: number;
  data: string;
  attributes: Record<string, string>;
}

/**
 * The bytes a range's chunk queries scan and are billed (see {@link estimateScan}); the emulator's estimate also gives
 * them with and without DAY partitions on publish_time. `queries`: one per chunk.
 */
export interface ScanEstimate {
  method: 'dry-run' | 'estimate';
  bytes: number;
  billedBytes: number;
  unpartitionedBytes: number | null;
  partitionedBytes: number | null;
  queries: number;
  note: string;
}

/** What Bronze's table says about its partitioning and retention. */
export interface BronzePartitioning {
  /** `yes` (time-partitioned on publish_time), `no`, or `unknown` (the emulator does not report it). */
  partitioned: 'yes' | 'no' | 'unknown';
  detail: string;
  /** `timePartitioning.expirationMs`: a partition is deleted this long after its date, ms; `null`: never. */
  partitionExpirationMs: number | null;
  /** The table's `creationTime`, epoch ms UTC; `null` when not reported. */
  createdMs: number | null;
}

/**
 * The attributes of a Bronze or quarantine (`layer`) row (`TO_JSON_STRING(attributes)`), as the push decoder passed
 * them: an event whose time or key comes from an attribute must get the same ones on replay or reprocess.
 * @throws OpsError naming the message and the attribute when it is not a JSON object of strings (never dropped)
 */
export function attributesOf(
  value: unknown,
  messageId: string,
  layer = 'Bronze',
): Record<string, string> {
  if (value === null || value === undefined) return {};
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch (err) {
      throw new OpsError(
        `${layer} attributes of message ${messageId} are not JSON (${err instanceof Error ? err.message : String(err)}): ${clip(value, 80)}`,
      );
    }
  }
  if (parsed === null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new OpsError(
      `${layer} attributes of message ${messageId} are not a JSON object: ${clip(JSON.stringify(parsed), 80)}`,
    );
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof v !== 'string') {
      throw new OpsError(
        `${layer} attribute ${JSON.stringify(k)} of message ${messageId} is ${v === null ? 'null' : typeof v}, not a string: ${clip(JSON.stringify(v) ?? String(v), 80)}`,
      );
    }
    // defineProperty: an attribute named `__proto__` stays data, as the push decoder keeps it.
    defineField(out, k, v);
  }
  return out;
}

/** The range filter on the partitioning column itself, so BigQuery prunes partitions. */
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

/** The Bronze messages of one chunk matching the filters, oldest first, once per message id (at-least-once copies). */
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
    const publishTime = cellText(r.publish_time);
    const attributes = attributesOf(r.attributes, messageId);
    // Watermark heartbeats land in Bronze as every raw message does; they are no events to replay.
    if (isHeartbeat(attributes) || !matchesFilters(attributes, run.filters)) continue;
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
    `SELECT CAST(FLOOR((UNIX_MILLIS(publish_time) - @fromMs) / @chunkMs) AS INT64) AS chunk, COUNT(*) AS n
     FROM \`${ctx.tables.bronze}\` WHERE ${rangeWhere(messageIds)} GROUP BY chunk`,
    { ...params, chunkMs },
    { ...types, chunkMs: 'INT64' },
  );
  const counts = new Map<number, number>();
  for (const r of rows) {
    const index = Math.floor(Number(r.chunk));
    counts.set(index, (counts.get(index) ?? 0) + Number(r.n));
  }
  return counts;
}

/** A metadata number (the API sends int64 as a decimal string), or `null` when absent or not a number. */
function metadataNumber(value: unknown): number | null {
  const n = Number(value);
  return value === undefined || value === null || !Number.isFinite(n) ? null : n;
}

/** Whether Bronze is time-partitioned on publish_time, and how long it keeps partitions, from the table's metadata. */
export async function bronzePartitioning(ctx: OpsContext): Promise<BronzePartitioning> {
  const [projectId, datasetId, tableId] = ctx.tables.bronze.split('.') as [string, string, string];
  let metadata: {
    timePartitioning?: { type?: string; field?: string; expirationMs?: unknown };
    creationTime?: unknown;
  };
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
  const retention = {
    partitionExpirationMs: metadataNumber(tp?.expirationMs),
    createdMs: metadataNumber(metadata.creationTime),
  };
  if (tp?.field === 'publish_time') {
    return {
      partitioned: 'yes',
      detail: `partitioned by ${tp.type ?? 'DAY'} on publish_time`,
      ...retention,
    };
  }
  if (tp !== undefined) {
    return {
      partitioned: 'no',
      detail: `partitioned on ${tp.field ?? 'ingestion time'}, not publish_time: a range scans every partition`,
      ...retention,
    };
  }
  if (ctx.mode === 'local') {
    return {
      partitioned: 'unknown',
      detail:
        'the BigQuery emulator does not report partitioning of tables made by DDL; sql/010 creates Bronze partitioned by DAY(publish_time)',
      ...retention,
    };
  }
  return {
    partitioned: 'no',
    detail: 'not partitioned: every chunk query scans all of Bronze',
    ...retention,
  };
}

/** Most message ids the Bronze coverage check takes from Silver and quarantine (one `IN UNNEST` parameter). */
const MAX_WITNESSES = 10_000;
/**
 * How far before a span the coverage check looks for a witness's Bronze row, ms: 7 days, Pub/Sub's longest
 * subscription message retention, so no live delivery is written later than that after its publish time.
 */
const MAX_DELIVERY_DELAY_MS = 7 * 86_400_000;

/**
 * The messages Silver and quarantine wrote in `[fromMs, toMs)` (their written-at columns, `operatorColumns`; at most
 * {@link MAX_WITNESSES}, restricted to `messageIds` when given) and how many of those Bronze holds nowhere with a
 * publish time from {@link MAX_DELIVERY_DELAY_MS} before `fromMs` up to `toMs`. A live row is written after its
 * publish time, so such a message was published before `toMs` and should be in Bronze. Reads Silver's written-at
 * and message-id columns over all its partitions (Silver is partitioned on event time): the replay runs it only for
 * chunks where Bronze has no row.
 */
export async function messagesMissingFromBronze(
  ctx: OpsContext,
  fromMs: number,
  toMs: number,
  messageIds: readonly string[] | null,
): Promise<{ written: number; missing: number }> {
  const { silver, quarantine } = ctx.pipeline.operatorColumns;
  const only = (column: string) => (messageIds === null ? '' : ` AND ${column} IN UNNEST(@ids)`);
  const { params, types } = rangeParams(fromMs, toMs, messageIds);
  const written = await query<{ id: unknown }>(
    ctx,
    `SELECT DISTINCT id FROM (
       SELECT ${silver.messageId} AS id FROM \`${ctx.tables.silver}\`
       WHERE ${silver.writtenAt} >= TIMESTAMP_MILLIS(@fromMs) AND ${silver.writtenAt} < TIMESTAMP_MILLIS(@toMs)${only(silver.messageId)}
       UNION ALL
       SELECT ${quarantine.messageId} AS id FROM \`${ctx.tables.quarantine}\`
       WHERE ${quarantine.rejectedAt} >= TIMESTAMP_MILLIS(@fromMs) AND ${quarantine.rejectedAt} < TIMESTAMP_MILLIS(@toMs)${only(quarantine.messageId)}
     ) WHERE id IS NOT NULL LIMIT ${MAX_WITNESSES}`,
    params,
    types,
  );
  const ids = written.map((r) => String(r.id));
  if (ids.length === 0) return { written: 0, missing: 0 };
  const held = await query<{ id: unknown }>(
    ctx,
    `SELECT DISTINCT message_id AS id FROM \`${ctx.tables.bronze}\`
     WHERE publish_time >= TIMESTAMP_MILLIS(@fromMs) AND publish_time < TIMESTAMP_MILLIS(@toMs)
       AND message_id IN UNNEST(@ids)`,
    { fromMs: fromMs - MAX_DELIVERY_DELAY_MS, toMs, ids },
    { fromMs: 'INT64', toMs: 'INT64', ids: ['STRING'] },
  );
  const inBronze = new Set(held.map((r) => String(r.id)));
  return { written: ids.length, missing: ids.filter((id) => !inBronze.has(id)).length };
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
    return Number(metadata?.statistics?.totalBytesProcessed ?? 0);
  } catch (err) {
    throw new OpsError(
      `${ctx.describe.bigquery}: dry run failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
}

/** Most chunks measured one by one with a dry run; beyond, the mean of those is extrapolated. */
const MAX_DRY_RUN_QUERIES = 500;

/**
 * The bytes the run's chunk queries scan: in the cloud a (free) dry run of each; on the emulator, which answers 0,
 * an estimate from BigQuery's data sizes (STRING 2 + UTF-8 bytes, TIMESTAMP 8, JSON its text) of the columns read,
 * for DAY partitions (each chunk scans its days) and unpartitioned (each scans the whole table).
 */
export async function estimateScan(
  ctx: OpsContext,
  chunks: readonly ReplayChunk[],
  messageIds: readonly string[] | null,
  partitioning: Pick<BronzePartitioning, 'partitioned'>,
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
