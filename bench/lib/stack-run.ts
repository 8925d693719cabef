// Whole-stack run: publishes a stream to the booking topic on the running local stack and follows ingestBooking's
// structured log until every message has an outcome; events/s and publish-to-Silver latency (from the function's
// own `publish_to_write_ms`, taken after the Silver insert returned).
import { open, stat } from 'node:fs/promises';
import { PubSub } from '@google-cloud/pubsub';
import { BOOKING_TOPIC, projectIdFromEnv } from '../../deploy/local/resources';
import type { StreamEvent } from './stream';

/** What one whole-stack run measured. */
export interface StackRunResult {
  readonly messages: number;
  /** First publish to last outcome line, ms. */
  readonly elapsedMs: number;
  readonly eventsPerSecond: number;
  /** Publish-to-Silver latency percentiles over Silver rows, ms. */
  readonly latencyMs: { p50: number; p95: number; p99: number; max: number };
  /** Outcome per message id, from the function log (`silver`, `quarantine`, `bad_data`, …). */
  readonly outcomes: ReadonlyMap<string, string>;
  /** Message id per stream position. */
  readonly messageIds: readonly string[];
  /**
   * `insertAll` requests the BigQuery emulator answered for the counted tables during the run (its request log),
   * retries and failed calls included; undefined when no emulator log was given or it could not be read.
   */
  readonly bigQueryInsertCalls: number | undefined;
}

/** The BigQuery emulator's request log and the tables whose `insertAll` calls a run counts. */
export interface InsertAllLog {
  /** bqemulator's log: one JSON object per line, `{"method": "POST", "path": "/bigquery/v2/projects/…", …}`. */
  readonly path: string;
  /** `dataset.table` names (the function's Silver, quarantine and bad-data tables; not Bronze or gold). */
  readonly tables: readonly string[];
}

/** Size of a file in bytes, or undefined when it does not exist. */
async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch {
    return undefined;
  }
}

/**
 * Counts the `insertAll` POSTs to `log.tables` in the emulator's request log from byte `from` to its current end.
 * Lines that are not JSON (start-up text) are skipped.
 */
export async function countInsertAllCalls(log: InsertAllLog, from: number): Promise<number> {
  const size = (await stat(log.path)).size;
  if (size <= from) return 0;
  const handle = await open(log.path, 'r');
  try {
    const buffer = Buffer.alloc(size - from);
    await handle.read(buffer, 0, buffer.length, from);
    const wanted = new Set(
      log.tables.map((t) => {
        const [dataset, table] = t.split('.');
        return `/datasets/${dataset}/tables/${table}/insertAll`;
      }),
    );
    let calls = 0;
    for (const line of buffer.toString('utf8').split('\n')) {
      if (!line.startsWith('{') || !line.includes('insertAll')) continue;
      let entry: { method?: unknown; path?: unknown };
      try {
        entry = JSON.parse(line) as { method?: unknown; path?: unknown };
      } catch {
        continue; // a line cut at the read's end
      }
      if (entry.method !== 'POST' || typeof entry.path !== 'string') continue;
      const at = entry.path.indexOf('/datasets/');
      if (at >= 0 && wanted.has(entry.path.slice(at))) calls++;
    }
    return calls;
  } finally {
    await handle.close();
  }
}

/** The p-quantile (0..1) of ascending `sorted` (nearest rank); NaN when empty. */
export function quantile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[rank] as number;
}

/**
 * Publishes `events` (in order, batched by the client) and waits until the function log at `logPath` holds an
 * outcome for each, or `timeoutMs` passes.
 * @throws Error on timeout, naming how many messages are still without an outcome
 */
export async function runStack(
  events: readonly StreamEvent[],
  logPath: string,
  timeoutMs: number,
  insertAllLog?: InsertAllLog,
): Promise<StackRunResult> {
  const insertAllFrom = insertAllLog ? await sizeOf(insertAllLog.path) : undefined;
  const pubsub = new PubSub({ projectId: projectIdFromEnv() });
  const topic = pubsub.topic(BOOKING_TOPIC, {
    batching: { maxMessages: 100, maxMilliseconds: 5 },
  });
  let offset = (await stat(logPath)).size;
  const started = Date.now();
  const messageIds = await Promise.all(
    events.map((e) => topic.publishMessage({ data: Buffer.from(e.payload, 'utf8') })),
  );
  const wanted = new Set(messageIds);
  const outcomes = new Map<string, string>();
  const latencies: number[] = [];
  let lastOutcomeAt = Date.now();
  const handle = await open(logPath, 'r');
  let carry = '';
  try {
    while (outcomes.size < wanted.size) {
      if (Date.now() - started > timeoutMs) {
        throw new Error(
          `whole-stack run: ${wanted.size - outcomes.size} of ${wanted.size} messages without an outcome after ` +
            `${timeoutMs} ms (see ${logPath})`,
        );
      }
      const size = (await stat(logPath)).size;
      if (size > offset) {
        const buffer = Buffer.alloc(size - offset);
        await handle.read(buffer, 0, buffer.length, offset);
        offset = size;
        const lines = (carry + buffer.toString('utf8')).split('\n');
        carry = lines.pop() ?? '';
        for (const line of lines) {
          if (!line.startsWith('{')) continue;
          const entry = JSON.parse(line) as Record<string, unknown>;
          const id = entry.message_id;
          const outcome = entry.outcome;
          if (typeof id !== 'string' || typeof outcome !== 'string' || !wanted.has(id)) continue;
          if (!['silver', 'quarantine', 'bad_data', 'schema_retry'].includes(outcome)) continue;
          if (outcomes.has(id)) continue;
          outcomes.set(id, outcome);
          lastOutcomeAt = Date.now();
          if (outcome === 'silver' && typeof entry.publish_to_write_ms === 'number') {
            latencies.push(entry.publish_to_write_ms);
          }
        }
      } else {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    await handle.close();
    await pubsub.close();
  }
  latencies.sort((a, b) => a - b);
  const elapsedMs = lastOutcomeAt - started;
  const bigQueryInsertCalls =
    insertAllLog && insertAllFrom !== undefined
      ? await countInsertAllCalls(insertAllLog, insertAllFrom)
      : undefined;
  return {
    messages: wanted.size,
    elapsedMs,
    eventsPerSecond: (wanted.size * 1000) / elapsedMs,
    latencyMs: {
      p50: quantile(latencies, 0.5),
      p95: quantile(latencies, 0.95),
      p99: quantile(latencies, 0.99),
      max: latencies.at(-1) ?? Number.NaN,
    },
    outcomes,
    messageIds,
    bigQueryInsertCalls,
  };
}
