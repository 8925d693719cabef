// Benchmark (not a test): window-state updates per second on the Firestore emulator for one hot route window, with 1
// and N shards, bundled and unbundled, and the Firestore reads/writes each event costs. Writer processes are forked
// like function instances. Uses FIRESTORE_EMULATOR_HOST when set, else starts a Firestore emulator of its own.
//
//   npm run bench:state                       # 4 processes × 2,000 events, shards 1 and 4
//   OFFVIA_BENCH_EVENTS=4000 OFFVIA_BENCH_SHARDS=8 OFFVIA_BENCH_PROCESSES=8 npm run bench:state
import { spawn, type ChildProcess } from 'node:child_process';
import * as os from 'node:os';
import { formatScaled } from '../shared/contract';
import { runWriterProcesses } from '../test/support/fork-writers';
import { S, T, type BookingSpec } from '../test/support/booking-windows';
import { uniqueRoot } from '../test/support/firestore-windows';
import type { WriterJob, WriterReport } from '../test/support/hot-window-writer';

function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`${name} must be an integer >= 1, got ${raw}`);
  return value;
}

const EVENTS = intEnv('OFFVIA_BENCH_EVENTS', 2000);
const PROCESSES = intEnv('OFFVIA_BENCH_PROCESSES', 4);
const CONCURRENCY = intEnv('OFFVIA_BENCH_CONCURRENCY', 32);
const SHARDS = intEnv('OFFVIA_BENCH_SHARDS', 4);
const PORT = intEnv('OFFVIA_BENCH_FIRESTORE_PORT', 8187);

/** The 1, 5 and 15 minute load averages, e.g. "1.20 0.95 0.80". */
function loadAverage(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

interface Run {
  shards: number;
  maxBundle: number;
  events: number;
}

/** Starts a Firestore emulator in its own process group; resolves once it answers. */
async function startEmulator(): Promise<ChildProcess> {
  const child = spawn(
    'gcloud',
    ['emulators', 'firestore', 'start', `--host-port=127.0.0.1:${PORT}`],
    {
      detached: true,
      stdio: 'ignore',
    },
  );
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${PORT}/`)).ok) return child;
    } catch {
      // Not listening yet: keep polling until the deadline.
      if (Date.now() > deadline)
        throw new Error(`Firestore emulator not up on port ${PORT} after 60 s`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** One hot window: `events` distinct bookings plus 10% duplicates, split over the processes. */
function jobs(run: Run): WriterJob[] {
  const env = {
    OFFVIA_WINDOW_FIRESTORE_ROOT: uniqueRoot('bench'),
    OFFVIA_WINDOW_SHARDS: String(run.shards),
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
  let emulator: ChildProcess | undefined;
  // The writers run outside Google Cloud: skip the metadata-server probe (and its warning in every child).
  process.env.METADATA_SERVER_DETECTION ??= 'none';
  if (!process.env.FIRESTORE_EMULATOR_HOST) {
    emulator = await startEmulator();
    process.env.FIRESTORE_EMULATOR_HOST = `127.0.0.1:${PORT}`;
  }
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
    if (emulator?.pid !== undefined) process.kill(-emulator.pid, 'SIGTERM');
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exitCode = 1;
});
