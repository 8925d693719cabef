// Where the telemetry ingest's time goes, without the push: the simulator's planned messages through the generic
// ingest (ingestPipelineMessage) in process on a running local stack, at a fixed concurrency, in the planned order or
// shuffled (as the emulator delivers an ordered subscription's keys among each other), with their own Firestore
// windows root. Prints the rate and, per message, the Firestore transactions (and attempts), the gold rows (element-
// driven panes: ON_TIME or LATE fired at ingest) and the insertAll calls per table under the coalescing writer.
// `source .local/stack/env && npx tsx bench/telemetry-ingest-rate.ts --devices 300 --concurrency 16`
// (or through deploy/local/with-stack.sh).
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadCoalescingConfig } from '../shared/config/coalescing-config';
import type { TableRef } from '../shared/config/env';
import { Logger } from '../shared/logging/logger';
import type { AnyPipelineDefinition } from '../shared/pipeline/definition';
import { createPipelineIngestDeps } from '../shared/pipeline/runtime/compose';
import { ingestPipelineMessage } from '../shared/pipeline/runtime/ingest';
import { pipelineNamed } from '../shared/pipelines';
import { BigQueryRowWriter } from '../shared/sinks/bigquery-writer';
import { CoalescingRowWriter } from '../shared/sinks/coalescing-writer';
import type { InsertRow, RowResult, RowWriter } from '../shared/sinks/row-writer';
import { newStoreMetrics } from '../shared/state/firestore-window-store';
import { firestoreClient } from '../shared/drift/runtime';
import { loadIngestConfig } from '../shared/config/ingest-config';
import { countFirestoreOps, opsLines } from './lib/firestore-ops';
import { stackBigQuery, stackEnv } from '../deploy/local/layers';
import { seedDirectory } from '../deploy/local/telemetry-demo/directory';
import { prng } from '../test/support/events';
import { planTelemetryRun, publishPhases } from '../deploy/local/telemetry-demo/plan';
import { plannedDeliveries } from './lib/telemetry-rate';
import { pool } from '../shared/ops/run';

const USAGE =
  'usage: telemetry-ingest-rate.ts [--devices N (300)] [--minutes M (3)] [--concurrency C (16)] [--order planned|shuffled|phased]';

/** insertAll calls and rows per table, counted under the coalescing writer (the calls BigQuery sees). */
class CountingWriter implements RowWriter {
  readonly calls = new Map<string, { calls: number; rows: number }>();
  constructor(private readonly inner: RowWriter) {}
  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    const c = this.calls.get(table.tableId) ?? { calls: 0, rows: 0 };
    c.calls++;
    c.rows += rows.length;
    this.calls.set(table.tableId, c);
    return this.inner.insertRows(table, rows);
  }
}

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) {
    process.stderr.write(`--${name} must be a positive integer, got ${JSON.stringify(text)}\n`);
    process.exit(2);
  }
  return n;
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        devices: { type: 'string' },
        minutes: { type: 'string' },
        concurrency: { type: 'string' },
        order: { type: 'string' },
      },
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  const devices = positive('devices', values.devices, 300);
  const minutes = positive('minutes', values.minutes, 3);
  const concurrency = positive('concurrency', values.concurrency, 16);
  const order = values.order ?? 'planned';
  if (!['planned', 'shuffled', 'phased'].includes(order)) {
    process.stderr.write(`--order must be planned, shuffled or phased, got ${order}\n${USAGE}\n`);
    process.exit(2);
  }
  const env = stackEnv();
  const bq = stackBigQuery(env);
  const base = pipelineNamed('telemetry');
  // Its own windows root: the run's watermark and windows are its own, whatever the stack holds.
  const definition: AnyPipelineDefinition = {
    ...base,
    firestore: { windowsRoot: `rate${randomUUID().slice(0, 8)}`, schemaDriftRoot: null },
  };
  const plan = planTelemetryRun({
    devices,
    minutes,
    readingsPerMinute: 1,
    seed: 7,
    nowMs: Date.now(),
  });
  const ref = base.tables.reference[0];
  if (ref === undefined) throw new Error('the telemetry definition names no reference table');
  await seedDirectory(bq, ref, plan);
  const counting = new CountingWriter(new BigQueryRowWriter(bq));
  const metrics = newStoreMetrics();
  const ingestConfig = loadIngestConfig(process.env);
  const firestore = firestoreClient(ingestConfig.projectId, ingestConfig.firestoreDatabase);
  const ops = countFirestoreOps(firestore);
  const deps = await createPipelineIngestDeps(
    definition,
    process.env,
    new Logger('ingestRate', () => undefined),
    {
      bigquery: bq,
      writer: new CoalescingRowWriter(counting, loadCoalescingConfig(process.env)),
      metrics,
      firestore,
    },
  );
  const messages = plannedDeliveries(plan, 'rate');
  const random = prng(11);
  const shuffle = <T>(xs: T[]): T[] => {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [xs[i], xs[j]] = [xs[j] as T, xs[i] as T];
    }
    return xs;
  };
  // planned: one stream in publish order; shuffled: the whole run in random order; phased: each of the simulator's
  // phases in random order, one after the other.
  const batches =
    order === 'planned'
      ? [messages]
      : order === 'shuffled'
        ? [shuffle([...messages])]
        : publishPhases(plan.messages, 10_000).map((end, p, ends) =>
            shuffle(messages.slice(p === 0 ? 0 : ends[p - 1], end)),
          );
  const kinds = new Map<string, number>();
  const startMs = Date.now();
  for (const batch of batches) {
    await pool(
      batch,
      concurrency,
      async (m) => {
        const outcome = await ingestPipelineMessage(m, deps);
        const kind =
          outcome.destination === 'silver'
            ? `silver ${Object.values(outcome.windows).join('/')}`
            : outcome.destination;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      },
      () => undefined,
    );
  }
  const seconds = (Date.now() - startMs) / 1000;
  const n = messages.length;
  const per = (x: number) => (x / n).toFixed(3);
  const out = [
    `${n} messages (${devices} devices × ${minutes} min), order ${order}, concurrency ${concurrency}: ${seconds.toFixed(1)} s, ${(n / seconds).toFixed(1)} msg/s`,
    `per message: Firestore transactions ${per(metrics.transactions)} (attempts ${per(metrics.attempts)}), reads ${per(metrics.reads)}, writes ${per(metrics.writes)}`,
    ...opsLines(ops, n),
    ...[...counting.calls].map(
      ([table, c]) =>
        `  ${table}: ${per(c.calls)} insertAll calls, ${per(c.rows)} rows per message`,
    ),
    `outcomes: ${[...kinds].map(([k, v]) => `${k} ${v}`).join(', ')}`,
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `ingest-rate failed: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exit(1);
  },
);
