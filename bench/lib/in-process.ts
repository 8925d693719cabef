// ingestBooking in-process with the real clients against the emulators: the function's own composition root
// (createPipelineIngestDeps), many invocations in flight as on a gen2 instance, and the calls the clients were asked to make.
import { createWriteStream } from 'node:fs';
import { BigQuery } from '@google-cloud/bigquery';
import {
  ingestPipelineMessage,
  type PipelineIngestOutcome as IngestOutcome,
} from '../../shared/pipeline/runtime/ingest';
import { createPipelineIngestDeps } from '../../shared/pipeline/runtime/compose';
import { BOOKING_PIPELINE } from '../../shared/pipelines/booking/definition';
import { bigQueryClient } from '../../shared/sinks/bigquery-writer';
import { loadIngestConfig } from '../../shared/config/ingest-config';
import { Logger, type LogEntry } from '../../shared/logging/logger';
import { newStoreMetrics, type StoreMetrics } from '../../shared/state/firestore-window-store';
import type { RowWriter } from '../../shared/sinks/row-writer';
import { requestBytes } from '../../shared/sinks/coalescing-writer';
import { errorText, TransientError } from '../../shared/errors';
import type { StreamEvent } from './stream';

/** insertAll calls as BigQuery receives them (below the coalescing layer). */
export interface WriteCounts {
  calls: number;
  rows: number;
  /** Request bytes (rows' JSON and insertIds, UTF-8), as `requestBytes` estimates them. */
  bytes: number;
  /** Billable streaming bytes: each row counts at least 1 KB (BigQuery streaming-insert pricing). */
  billableBytes: number;
}

/** What one in-process run measured. */
export interface InProcessResult {
  readonly label: string;
  readonly events: number;
  readonly concurrency: number;
  readonly elapsedMs: number;
  readonly eventsPerSecond: number;
  /** Invocations that threw a TransientError and were delivered again (emulator hiccups). */
  readonly redeliveries: number;
  readonly bigQuery: WriteCounts;
  readonly firestore: StoreMetrics;
  /** Per stream position: `silver`, a quarantine stage, `bad_data` or `schema_retry`. */
  readonly outcomes: readonly string[];
  /** Invocation latency percentiles (receipt to resolution), ms. */
  readonly latencyMs: { p50: number; p95: number; p99: number };
}

/** Wraps a writer and counts the calls and rows that reach it. */
export function countingWriter(inner: RowWriter, counts: WriteCounts): RowWriter {
  return {
    insertRows: async (table, rows) => {
      counts.calls++;
      counts.rows += rows.length;
      for (const row of rows) {
        const bytes = requestBytes([row]);
        counts.bytes += bytes;
        counts.billableBytes += Math.max(1024, bytes);
      }
      return inner.insertRows(table, rows);
    },
  };
}

function outcomeLabel(o: IngestOutcome): string {
  return o.destination === 'quarantine' ? o.stage : o.destination;
}

function quantile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[
    Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))
  ] as number;
}

/**
 * Runs the stream through `ingestMessage` with `concurrency` invocations in flight. Message ids are
 * `{label}-{seq}` and the window state lives under pipeline `bench_{label}`, so runs do not see each other's rows
 * or ledger. The function's log lines go to `logPath`.
 * @throws the first invocation's error (a transient failure is a failed benchmark: nothing here retries)
 */
export async function runInProcess(
  label: string,
  events: readonly StreamEvent[],
  env: Record<string, string | undefined>,
  concurrency: number,
  logPath: string,
): Promise<InProcessResult> {
  const file = createWriteStream(logPath, { flags: 'a' });
  const logger = new Logger('ingestBooking', (entry: LogEntry) => {
    file.write(
      JSON.stringify(entry, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)) + '\n',
    );
  });
  const counts: WriteCounts = { calls: 0, rows: 0, bytes: 0, billableBytes: 0 };
  const firestore = newStoreMetrics();
  const deps = await createPipelineIngestDeps(
    BOOKING_PIPELINE,
    { ...env, OFFVIA_WINDOW_PIPELINE: `bench_${label}` },
    logger,
    { wrapWriter: (w) => countingWriter(w, counts), metrics: firestore },
  );
  const outcomes: string[] = new Array<string>(events.length);
  const latencies: number[] = [];
  let next = 0;
  let redeliveries = 0;
  /** As Pub/Sub does: an invocation that throws is delivered again after a backoff (here 1 s), up to 5 times. */
  const deliver = async (i: number, call: () => Promise<IngestOutcome>): Promise<IngestOutcome> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof TransientError) || attempt >= 5) {
          throw new Error(`event ${i}: delivery ${attempt} failed: ${errorText(err)}`, {
            cause: err,
          });
        }
        redeliveries++;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  const started = Date.now();
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      const event = events[i];
      if (event === undefined) return;
      const t0 = Date.now();
      const outcome = await deliver(i, () =>
        ingestPipelineMessage(
          {
            ok: true,
            message: {
              messageId: `${label}-${event.seq}`,
              publishTime: new Date(t0).toISOString(),
              publishTimeMs: t0,
              attributes: {},
              data: Buffer.from(event.payload, 'utf8'),
              subscription: 'projects/offvia-local/subscriptions/bench',
            },
          },
          deps,
        ),
      );
      latencies.push(Date.now() - t0);
      outcomes[i] = outcomeLabel(outcome);
    }
  };
  try {
    // allSettled: every worker stops before the log closes, even when one failed.
    const settled = await Promise.allSettled(Array.from({ length: concurrency }, worker));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
  } finally {
    await new Promise<void>((resolve) => file.end(resolve));
  }
  const elapsedMs = Date.now() - started;
  latencies.sort((a, b) => a - b);
  return {
    label,
    events: events.length,
    concurrency,
    elapsedMs,
    eventsPerSecond: (events.length * 1000) / elapsedMs,
    redeliveries,
    bigQuery: counts,
    firestore,
    outcomes,
    latencyMs: {
      p50: quantile(latencies, 0.5),
      p95: quantile(latencies, 0.95),
      p99: quantile(latencies, 0.99),
    },
  };
}

/**
 * The Silver and quarantine rows a run left, as sorted `table|source_message_id|event_id or stage` lines, read back
 * from the BigQuery emulator: the benchmark's check that coalescing changed no row.
 */
export async function rowsOfRun(
  label: string,
  env: Record<string, string | undefined>,
): Promise<string[]> {
  const config = loadIngestConfig(env);
  const bigquery: BigQuery = bigQueryClient(config);
  const prefix = `${label}-`;
  const silver = `${config.silverTable.datasetId}.${config.silverTable.tableId}`;
  const quarantine = `${config.quarantineTable.datasetId}.${config.quarantineTable.tableId}`;
  const [s] = await bigquery.query({
    query: `SELECT source_message_id AS m, event_id AS v FROM ${silver} WHERE STARTS_WITH(source_message_id, @p)`,
    params: { p: prefix },
  });
  const [q] = await bigquery.query({
    query: `SELECT source_message_id AS m, error_stage AS v FROM ${quarantine} WHERE STARTS_WITH(source_message_id, @p)`,
    params: { p: prefix },
  });
  const strip = (m: unknown) => String(m).slice(prefix.length);
  return [
    ...(s as { m: unknown; v: unknown }[]).map((r) => `silver|${strip(r.m)}|${String(r.v)}`),
    ...(q as { m: unknown; v: unknown }[]).map((r) => `quarantine|${strip(r.m)}|${String(r.v)}`),
  ].sort();
}
