// Benchmark (not a test): window-state updates per second on the Firestore emulator for one hot route window, with 1
// and N shards, bundled and unbundled, and the Firestore reads/writes each event costs. Writer processes are forked
// like function instances. Uses FIRESTORE_EMULATOR_HOST when set, else starts a Firestore emulator of its own.
//
//   npm run bench:state                       # 4 processes × 2,000 events, shards 1 and 4
//   OFFVIA_BENCH_EVENTS=4000 OFFVIA_BENCH_SHARDS=8 OFFVIA_BENCH_PROCESSES=8 npm run bench:state
import * as os from 'node:os';
import { formatScaled } from '../shared/contract';
import { runWriterProcesses } from '../test/support/fork-writers';
import { S, T, type BookingSpec } from '../test/support/booking-windows';
import { uniqueRoot } from '../test/support/firestore-windows';
import type { WriterJob, WriterReport } from '../test/support/hot-window-writer';
import { ensureFirestoreEmulator, intEnv, loadAverage } from './lib/env';

const EVENTS = intEnv('OFFVIA_BENCH_EVENTS', 2000);
const PROCESSES = intEnv('OFFVIA_BENCH_PROCESSES', 4);
const CONCURRENCY = intEnv('OFFVIA_BENCH_CONCURRENCY', 32);
const SHARDS = intEnv('OFFVIA_BENCH_SHARDS', 4);
const PORT = intEnv('OFFVIA_BENCH_FIRESTORE_PORT', 8187);

interface Run {
  shards: number;
  maxBundle: number;
  events: number;
}

/** One hot window: `events` distinct bookings plus 10% duplicates, split over the processes. */
function jobs(run: Run): WriterJob[] {
  const env = {
    OFFVIA_WINDOW_FIRESTORE_ROOT: uniqueRoot('bench'),
    OFFVIA_WINDOW_GROUP_SHARDS: String(run.shards),
    OFFVIA_WINDOW_MAX_BUNDLE: String(run.maxBundle),
  };
  const specs: BookingSpec[] = Array.from({ length: run.events }, (_, i) => ({
    id: `bench-${i}`,
    fare: formatScaled(BigInt(1 + (i % 997)) * 1_000_000_007n),
    at: T + Math.floor((i * 59_000) / run.events),
  }));
  return Array.from({ length: PROCESSES }, (_, p) => {
    const own = specs.filter((_, i) => i % PROCESSES === p);
    const mine = [...own, ...own.filter((_, i) => i % 10 === 0)];
    return {
      env,
      concurrency: CONCURRENCY,
      deliveries: mine.map((spec, i) => ({
        spec,
        receivedAtMs: T + 2 * S + Math.floor((i * 55_000) / mine.length),
        messageId: `b${p}-${i}`,
      })),
    };
  });
}

function row(run: Run, reports: WriterReport[]): string[] {
  const sum = (f: (r: WriterReport) => number) => reports.reduce((n, r) => n + f(r), 0);
  const elapsed = Math.max(...reports.map((r) => r.elapsedMs));
  const counted = sum((r) => r.counted);
  const deliveries = sum((r) => r.counted + r.duplicates + r.dropped);
  return [
    String(run.shards),
    run.maxBundle === 1 ? 'off' : `≤${run.maxBundle}`,
    String(deliveries),
    String(counted),
    String(elapsed),
    ((counted / elapsed) * 1000).toFixed(0),
    String(sum((r) => r.metrics.transactions)),
    (
      sum((r) => r.metrics.attempts) /
      Math.max(
        1,
        sum((r) => r.metrics.transactions),
      )
    ).toFixed(2),
    String(sum((r) => r.redeliveries)),
    (sum((r) => r.metrics.reads) / deliveries).toFixed(2),
    (sum((r) => r.metrics.writes) / deliveries).toFixed(2),
  ];
}

async function main(): Promise<void> {
  const stopEmulator = await ensureFirestoreEmulator(PORT);
  try {
    const header = [
      'shards',
      'bundle',
      'deliveries',
      'counted',
      'ms',
      'updates/s',
      'tx',
      'attempts/tx',
      'redeliv.',
      'reads/delivery',
      'writes/delivery',
    ];
    const rows: string[][] = [];
    const runs: Run[] = [
      { shards: 1, maxBundle: 100, events: EVENTS },
      { shards: SHARDS, maxBundle: 100, events: EVENTS },
      { shards: 1, maxBundle: 1, events: Math.min(EVENTS, 400) },
      { shards: SHARDS, maxBundle: 1, events: Math.min(EVENTS, 400) },
    ];
    process.stdout.write(
      `Firestore emulator ${process.env.FIRESTORE_EMULATOR_HOST}; one hot route window; ${PROCESSES} writer ` +
        `processes × ${CONCURRENCY} deliveries in flight; +10% duplicate deliveries.\n` +
        `machine: ${os.cpus().length} cores, load average ${loadAverage()} at start (numbers are noisy when busy).\n`,
    );
    for (const run of runs) {
      const reports = await runWriterProcesses(jobs(run), 600_000);
      rows.push(row(run, reports));
      process.stdout.write(`  done: ${rows[rows.length - 1]?.join(' ')}\n`);
    }
    const widths = header.map((h, i) =>
      Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)),
    );
    const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
    process.stdout.write(`\n${line(header)}\n${rows.map(line).join('\n')}\n`);
    process.stdout.write(
      '\nreads/writes are Firestore documents per delivery as the adapter counts them (reads of missing documents ' +
        'included, as Firestore bills them); watermark reads/writes included; the final fireWindows is not.\n' +
        `load average at end: ${loadAverage()}\n`,
    );
  } finally {
    stopEmulator();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exitCode = 1;
});
