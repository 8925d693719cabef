// Benchmark (not a test): Firestore reads / writes / deletes per event and USD per million events of the keyed window
// store at 1, 100, 1,000 and 5,000 keys in the key-groups layout beside the retired per-window layout's recorded
// figures, with an independent count of every event; then the firing rate of 50,000 (key, window)s due at once. In-process ingest
// (the booking pipeline with the real Firestore client, 80 events in flight as one instance), fireWindows run until
// every window is closed, operations counted at the client. Uses FIRESTORE_EMULATOR_HOST when set, else starts a
// Firestore emulator of its own (port OFFVIA_BENCH_FIRESTORE_PORT).
//
//   npm run bench:keys                                   # the table and the firing-rate row
//   OFFVIA_BENCH_FIRING_KEYS=5000 npm run bench:keys     # a smaller firing-rate row
import * as os from 'node:os';
import type { Firestore } from '@google-cloud/firestore';
import { BookingWindowSink } from '../test/support/booking-window-assembly';
import { fireWindowsDepsOf, type BookingWindows } from '../test/support/booking-window-assembly';
import { formatScaled } from '../shared/contract';
import {
  COLLECTIONS,
  newStoreMetrics,
  type StoreMetrics,
} from '../shared/state/firestore-window-store';
import { fireWindows } from '../shared/state/fire-windows';
import { GROUP_COLLECTIONS } from '../shared/state/grouped-window-store';
import type { InsertRow, RowResult, RowWriter } from '../shared/sinks/row-writer';
import type { LogEntry } from '../shared/logging/logger';
import type { TableRef } from '../shared/config/env';
import { PRICES } from './lib/cost';
import { seedKeyGroups } from './lib/seed-key-groups';
import { opsLines } from './lib/firestore-ops';
import { measureTelemetryRate, telemetryLine } from './lib/telemetry-rate';
import { Clock, MIN, record, S, T, type BookingSpec } from '../test/support/booking-windows';
import {
  emulatorFirestore,
  firestoreBookingWindows,
  uniqueRoot,
} from '../test/support/firestore-windows';
import { ensureFirestoreEmulator, intEnv, loadAverage } from './lib/env';

const EVENTS = intEnv('OFFVIA_BENCH_EVENTS', 5000);
const IN_FLIGHT = intEnv('OFFVIA_BENCH_CONCURRENCY', 80);
const FIRING_KEYS = intEnv('OFFVIA_BENCH_FIRING_KEYS', 50_000);
/** Devices of the telemetry row (500 × 3 minutes, as the issue measured it); 0 would be refused: use SKIP. */
const TELEMETRY_DEVICES = intEnv('OFFVIA_BENCH_TELEMETRY_DEVICES', 500);
const PORT = intEnv('OFFVIA_BENCH_FIRESTORE_PORT', 8187);
const CARDINALITIES = (process.env.OFFVIA_BENCH_KEYS ?? '1,100,1000,5000')
  .split(',')
  .filter((k) => k.trim() !== '')
  .map((k) => {
    const n = Number(k);
    if (!Number.isSafeInteger(n) || n < 1)
      throw new Error(`OFFVIA_BENCH_KEYS: ${k} is not a key count >= 1`);
    return n;
  });
const LAYOUTS = ['key-groups'] as const;
/** Event time spanned by the stream (the issue's shape: 2 minutes). */
const SPAN_MS = 2 * MIN;
/** Processing time after event time at which each event is received. */
const DELAY_MS = 2 * S;

/** Route `i`: origin from 17,576 three-letter codes, destination `ZZZ`, `ZZY`, … beyond them (never the origin). */
function routeOf(i: number): [string, string, string] {
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  const code = (n: number) =>
    `${letters[Math.floor(n / 676) % 26] ?? 'A'}${letters[Math.floor(n / 26) % 26] ?? 'A'}${letters[n % 26] ?? 'A'}`;
  const origin = code(i % 17_576);
  const destination = code(17_575 - Math.floor(i / 17_576));
  return [origin, destination === origin ? 'AAB' : destination, 'USD'];
}

/** The stream: `events` bookings over 2 minutes of event time, round-robin over `keys` routes. */
function stream(keys: number, events: number): BookingSpec[] {
  return Array.from({ length: events }, (_, i) => ({
    id: `card-${keys}-${i}`,
    route: routeOf(i % keys),
    fare: formatScaled(BigInt(1 + (i % 997)) * 1_000_000_007n),
    at: T + Math.floor((i * SPAN_MS) / events),
  }));
}

/** Expected booking count per `route~windowStart`, computed without the code under test. */
function expectedCounts(specs: readonly BookingSpec[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const s of specs) {
    const id = `${(s.route ?? []).join('-')}~${Math.floor(s.at / MIN) * MIN}`;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Documents still holding a TTL field at the end: Firestore's TTL deletes them later (billed as deletes). */
async function ttlDocuments(db: Firestore, root: string, pipeline: string): Promise<number> {
  const base = db.collection(root).doc(pipeline);
  const collections = [
    COLLECTIONS.ledger,
    COLLECTIONS.dropped,
    GROUP_COLLECTIONS.groups,
    GROUP_COLLECTIONS.spills,
  ];
  let n = 0;
  for (const c of collections) n += (await base.collection(c).count().get()).data().count;
  return n;
}

/** One cardinality row. */
export interface Row {
  layout: string;
  keys: number;
  events: number;
  reads: number;
  writes: number;
  deletes: number;
  ttlDeletes: number;
  ingestMs: number;
  fireMs: number;
  fireRuns: number;
  countedOnce: boolean;
  /** Operations of the ingest alone (the rest is fireWindows). */
  ingestOps: { reads: number; writes: number; deletes: number };
  note: string;
}

function usdPerMillion(r: Row): number {
  const perEvent = (n: number) => n / r.events;
  return (
    perEvent(r.reads) * PRICES.firestoreReadsPer100k * 10 +
    perEvent(r.writes) * PRICES.firestoreWritesPer100k * 10 +
    perEvent(r.deletes + r.ttlDeletes) * PRICES.firestoreDeletesPer100k * 10
  );
}

/** Records `specs` with `IN_FLIGHT` in flight, each received `DELAY_MS` after its event time. */
async function ingest(
  windows: BookingWindows,
  specs: readonly BookingSpec[],
  clock: Clock,
): Promise<number> {
  const bookingSink = new BookingWindowSink(windows.pipeline, windows.logger);
  let next = 0;
  let counted = 0;
  const worker = async (): Promise<void> => {
    while (next < specs.length) {
      const spec = specs[next++];
      if (spec === undefined) return;
      clock.nowMs = Math.max(clock.nowMs, spec.at + DELAY_MS);
      const outcome = await record(bookingSink, spec, spec.at + DELAY_MS, `m-${spec.id}`);
      if (outcome.kind === 'counted') counted++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return counted;
}

/**
 * One scheduled fireWindows run at `atMs` (one call fires every partition it can lease), repeated only while a run
 * ends `partial` or `busy` or hit its per-run maximum, as the next scheduler minute would.
 */
async function scheduledRun(windows: BookingWindows, clock: Clock, atMs: number): Promise<number> {
  clock.nowMs = atMs;
  for (let runs = 1; runs <= 50; runs++) {
    const s = await fireWindows(fireWindowsDepsOf(windows));
    if (s.status === 'done' && s.windowsDue < windows.config.fireMaxWindows) return runs;
  }
  throw new Error('fireWindows still busy or partial after 50 runs');
}

async function cardinalityRow(
  db: Firestore,
  layout: (typeof LAYOUTS)[number],
  keys: number,
  events: number,
): Promise<Row> {
  const metrics: StoreMetrics = newStoreMetrics();
  const root = uniqueRoot('benchKeys');
  const clock = new Clock(T);
  const { windows, writer } = firestoreBookingWindows(
    db,
    { OFFVIA_WINDOW_FIRESTORE_ROOT: root },
    { clock, metrics },
  );
  const specs = stream(keys, events);
  const started = Date.now();
  const counted = await ingest(windows, specs, clock);
  const ingestMs = Date.now() - started;
  // As Cloud Scheduler would: a run every minute of processing time while the windows close (early panes, on-time
  // panes once the idle rule moves the watermark, garbage collection after the allowed lateness).
  const fireStarted = Date.now();
  let fireRuns = 0;
  const ingestOps = { reads: metrics.reads, writes: metrics.writes, deletes: metrics.deletes };
  const end = T + SPAN_MS + DELAY_MS;
  for (let at = end + 30 * S; at <= end + 10 * MIN; at += MIN) {
    fireRuns += await scheduledRun(windows, clock, at);
  }
  const fireMs = Date.now() - fireStarted;
  // The independent count: the last pane of each (route, window) against the stream's own tally.
  const last = new Map<string, { index: number; count: number }>();
  for (const row of writer.gold()) {
    const id = `${String(row.route_key)}~${Date.parse(String(row.window_start))}`;
    const index = Number(row.pane_index);
    if ((last.get(id)?.index ?? -1) < index)
      last.set(id, { index, count: Number(row.booking_count) });
  }
  const expected = expectedCounts(specs);
  const countedOnce =
    counted === events &&
    last.size === expected.size &&
    [...expected].every(([id, n]) => last.get(id)?.count === n);
  const left = await windows.store.listOutbox(Number.MAX_SAFE_INTEGER, 10);
  return {
    layout,
    keys,
    events,
    reads: metrics.reads,
    writes: metrics.writes,
    deletes: metrics.deletes,
    ttlDeletes: await ttlDocuments(db, root, windows.config.pipeline),
    ingestMs,
    fireMs,
    fireRuns,
    countedOnce,
    ingestOps,
    note: `${last.size} (route, window)s; ${writer.gold().length} panes${left.length > 0 ? '; OUTBOX NOT EMPTY' : ''}`,
  };
}

/** The firing-rate row. */
export interface FiringRow {
  keys: number;
  /** How the state was set up: `seeded` (BulkWriter, `seedKeyGroups`) or `ingested` (the booking pipeline). */
  setup: 'seeded' | 'ingested';
  setupMs: number;
  onTimeMs: number;
  collectedMs: number;
  runs: number;
  transactions: number;
  reads: number;
  writes: number;
  deletes: number;
  /**
   * Every key has exactly one pane in gold (by insertId): its on-time pane, with a booking count of 1, and gold holds
   * no other pane.
   */
  exactlyOnce: boolean;
  /**
   * What the fireWindows summaries reported: units failed transiently (fired again next round), panes left in the
   * outbox by a failed gold write, panes re-emitted from the outbox, runs stopped early (`partial`).
   */
  trouble: { failed: number; deferred: number; reemitted: number; partial: number };
  /** The first failure the firing logged (message and error), `null` when none. */
  firstFailure: string | null;
  /** Rows the firing wrote to gold (a pane written again under its insertId counts again here). */
  goldRows: number;
  /** Distinct panes in gold (insertIds), as BigQuery's insertId dedup leaves them. */
  goldPanes: number;
  /** CPU time of this process (the fireWindows calls and the gold tally) until every on-time pane was in gold, ms. */
  clientCpuMs: number;
  /** The 1, 5 and 15 minute load averages before the firing and after the collection. */
  loadStart: string;
  loadEnd: string;
  /** Whether every firing setting was the product's default (no `OFFVIA_BENCH_FIRING_*` setting). */
  defaults: boolean;
  keyGroups: number;
  partitions: number;
  calls: number;
  concurrency: number;
}

/**
 * A gold writer that tallies the panes per key as they arrive (a pane written again under the same insertId, as a
 * re-emission would, is BigQuery's dedup: one pane, and one more row in `rows`), sharing no code with the pipeline.
 */
class OnTimeTally implements RowWriter {
  readonly onTime = new Map<string, { insertId: string; count: number }[]>();
  /** Distinct panes (insertIds) in gold, of every timing. */
  readonly ids = new Set<string>();
  /** Rows written to gold, re-sent ones included. */
  rows = 0;
  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    for (const r of rows) {
      if (table.tableId !== 'route_panes') continue;
      this.rows++;
      if (this.ids.has(r.insertId)) continue;
      this.ids.add(r.insertId);
      if (r.json.pane_timing !== 'ON_TIME') continue;
      const key = String(r.json.route_key);
      const list = this.onTime.get(key) ?? [];
      list.push({ insertId: r.insertId, count: Number(r.json.booking_count) });
      this.onTime.set(key, list);
    }
    return Promise.resolve(rows.map(() => ({ ok: true as const })));
  }
}

/** Log outcomes of a firing that went wrong (the rest, one line per pane, is not kept). */
const FAILURE_OUTCOMES = new Set([
  'window_firing_failed',
  'fire_windows_failed',
  'fire_windows_lease_lost',
  'pane_emission_deferred',
]);

/** A log sink that keeps only the firing's failure lines, in `into`. */
function failureLog(into: LogEntry[]): LogEntry[] {
  const keep = (e: LogEntry) => (FAILURE_OUTCOMES.has(String(e.outcome)) ? into.push(e) : 0);
  return { push: keep } as unknown as LogEntry[];
}

/** Firing-rate configuration (`OFFVIA_BENCH_FIRING_*`): the product's defaults unless set. */
const FIRING_ENV: Record<string, string> = {};
for (const [name, from] of [
  ['OFFVIA_WINDOW_KEY_GROUPS', 'OFFVIA_BENCH_FIRING_KEY_GROUPS'],
  ['OFFVIA_FIRE_WINDOWS_PARTITIONS', 'OFFVIA_BENCH_FIRING_PARTITIONS'],
  ['OFFVIA_FIRE_WINDOWS_CONCURRENCY', 'OFFVIA_BENCH_FIRING_CONCURRENCY'],
] as const) {
  const value = process.env[from];
  if (value !== undefined && value !== '') FIRING_ENV[name] = value;
}
/** fireWindows calls at once, as that many invocations would (default: one per partition). */
const FIRING_CALLS = process.env.OFFVIA_BENCH_FIRING_CALLS;
/** Whether the firing row runs at settings other than the product's defaults (then the defaults' row runs too). */
const FIRING_CUSTOM =
  Object.keys(FIRING_ENV).length > 0 || (FIRING_CALLS !== undefined && FIRING_CALLS !== '');

/**
 * `keys` (key, window)s of one window due at once: time to every on-time pane in gold, then to every state deleted.
 * The state is seeded directly (`seedKeyGroups`) unless `OFFVIA_BENCH_FIRING_SETUP=ingest` (the booking pipeline,
 * 40 minutes for 50,000 keys on this machine kind).
 */
async function firingRow(db: Firestore, keys: number, defaults: boolean): Promise<FiringRow> {
  const metrics: StoreMetrics = newStoreMetrics();
  const root = uniqueRoot('benchFire');
  const clock = new Clock(T);
  const tally = new OnTimeTally();
  const failures: LogEntry[] = [];
  const { windows } = firestoreBookingWindows(
    db,
    {
      OFFVIA_WINDOW_FIRESTORE_ROOT: root,
      OFFVIA_WINDOW_LAYOUT: 'key-groups',
      OFFVIA_FIRE_WINDOWS_MAX_WINDOWS: '100000',
      ...(defaults ? {} : FIRING_ENV),
    },
    { clock, metrics, writer: tally, logs: failureLog(failures) },
  );
  // One event per key, all in the window [T, T + 1 min).
  const specs = Array.from({ length: keys }, (_, i) => ({
    id: `fire-${i}`,
    route: routeOf(i),
    fare: '10',
    at: T + Math.floor((i * 50 * S) / keys),
  }));
  const setup = process.env.OFFVIA_BENCH_FIRING_SETUP === 'ingest' ? 'ingested' : 'seeded';
  const started = Date.now();
  if (setup === 'ingested') await ingest(windows, specs, clock);
  else {
    clock.nowMs = T + 50 * S + DELAY_MS;
    const seeded = await seedKeyGroups(windows, specs, (s) => s.at + DELAY_MS);
    process.stdout.write(
      `  seeded ${seeded.keyWindows} (key, window)s in ${seeded.buckets} key-group documents: ` +
        `${seeded.seedMs} ms, read back and checked in ${seeded.verifyMs} ms\n`,
    );
  }
  const setupMs = Date.now() - started;
  const onTime = () => tally.onTime.size;
  const before = { ...metrics };
  // The idle rule moves the watermark past the window's end; the early panes are due too (30 s after their first
  // element): every (key, window) is due at once.
  const calls =
    defaults || FIRING_CALLS === undefined || FIRING_CALLS === ''
      ? windows.config.firePartitions
      : intEnv('OFFVIA_BENCH_FIRING_CALLS', 1);
  let runs = 0;
  const loadStart = loadAverage();
  const cpu0 = process.cpuUsage();
  const t0 = Date.now();
  const trouble = { failed: 0, deferred: 0, reemitted: 0, partial: 0 };
  const round = async (): Promise<void> => {
    const summaries = await Promise.all(
      Array.from({ length: calls }, () => fireWindows(fireWindowsDepsOf(windows))),
    );
    runs += calls;
    for (const s of summaries) {
      trouble.failed += s.windowsFailed;
      trouble.deferred += s.panesDeferred;
      trouble.reemitted += s.outboxReemitted;
      if (s.status === 'partial') trouble.partial++;
    }
  };
  // Each round of calls is the next scheduler minute: a unit that failed transiently is fired again, and panes left
  // in the outbox are re-emitted once they are older than the outbox grace, as in the product.
  clock.nowMs = T + 3 * MIN;
  while (onTime() < keys && runs < 400) {
    await round();
    clock.nowMs += MIN;
  }
  const onTimeMs = Date.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const t1 = Date.now();
  clock.nowMs = Math.max(clock.nowMs, T + 10 * MIN);
  const groups = windows.groups;
  const open = async () => (groups === undefined ? 0 : (await groups.nextTimers()).eventTimeMs);
  while ((await open()) !== null && runs < 800) {
    await round();
    clock.nowMs += MIN;
  }
  const collectedMs = Date.now() - t1;
  const expectedKeys = new Set(specs.map((s) => (s.route ?? []).join('-')));
  const exactlyOnce =
    tally.onTime.size === expectedKeys.size &&
    tally.ids.size === expectedKeys.size &&
    [...expectedKeys].every((k) => {
      const panes = tally.onTime.get(k);
      return panes?.length === 1 && panes[0]?.count === 1;
    });
  return {
    keys,
    setup,
    setupMs,
    onTimeMs,
    collectedMs,
    runs,
    transactions: metrics.transactions - before.transactions,
    reads: metrics.reads - before.reads,
    writes: metrics.writes - before.writes,
    deletes: metrics.deletes - before.deletes,
    exactlyOnce,
    trouble,
    firstFailure:
      failures[0] === undefined ? null : `${failures[0].message}: ${String(failures[0].error)}`,
    goldRows: tally.rows,
    goldPanes: tally.ids.size,
    clientCpuMs: Math.round((cpu.user + cpu.system) / 1000),
    loadStart,
    loadEnd: loadAverage(),
    defaults,
    keyGroups: windows.config.keyGroups,
    partitions: windows.config.firePartitions,
    calls,
    concurrency: windows.config.fireConcurrency,
  };
}

/** The firing-rate row as one line. */
function firingLine(f: FiringRow): string {
  return (
    `firing rate (key-groups, ${f.defaults ? 'the product defaults: ' : 'NOT the defaults: '}${f.keyGroups} groups, ` +
    `${f.partitions} partitions, ${f.calls} concurrent fireWindows ` +
    `calls, ${f.concurrency} groups in flight each): ${f.keys.toLocaleString('en-US')} (key, window)s due at once ` +
    `(${f.setup} in ${(f.setupMs / 1000).toFixed(1)} s): all on-time panes in gold after ` +
    `${(f.onTimeMs / 1000).toFixed(1)} s (target 60 s), all state collected ${(f.collectedMs / 1000).toFixed(1)} s ` +
    `later (target 60 s); ${f.runs} fireWindows calls; Firestore ${f.transactions} transactions, ${f.reads} reads, ` +
    `${f.writes} writes, ${f.deletes} deletes for the firing; ${f.trouble.failed} key groups failed transiently, ` +
    `${f.trouble.deferred} panes deferred, ${f.trouble.reemitted} re-emitted from the outbox, ${f.trouble.partial} ` +
    `runs partial${f.firstFailure === null ? '' : ` (first: ${f.firstFailure})`}; client CPU ${(f.clientCpuMs / 1000).toFixed(1)} s ` +
    `until on time; gold tallied apart: ${f.goldPanes.toLocaleString('en-US')} panes ` +
    `(${f.goldRows.toLocaleString('en-US')} rows written), every key's on-time pane in gold exactly once with its ` +
    `count and no other pane: ${f.exactlyOnce ? 'yes' : 'NO'}; load average ${f.loadStart} before, ${f.loadEnd} after`
  );
}

/**
 * The issue's measurement of the per-window layout (the baseline the key-groups rows are compared with): 5,000
 * events over 2 minutes of event time per row, Firestore emulator, 2026-12; reads / writes / deletes per event and USD
 * per million events at list prices, TTL deletes included.
 */
export const PER_WINDOW_BASELINE: ReadonlyMap<number, { ops: string; usd: number }> = new Map([
  [1, { ops: '0.11 / 1.06 / 1.00', usd: 1.09 }],
  [100, { ops: '2.74 / 2.23 / 1.18', usd: 2.95 }],
  [1000, { ops: '9.54 / 4.30 / 2.50', usd: 6.98 }],
  [5000, { ops: '21.53 / 7.51 / 4.74', usd: 13.69 }],
]);

/** Target: Firestore USD per million events at every cardinality. */
export const USD_PER_MILLION_TARGET = 0.6;

/** What to measure (`measureKeyCardinality`). */
export interface KeyCardinalityOptions {
  /** Key counts, one row per layout each. */
  readonly cardinalities: readonly number[];
  readonly layouts: readonly (typeof LAYOUTS)[number][];
  /** Events per row (the issue's shape: 5,000). */
  readonly events: number;
  /** (key, window)s of the firing-rate row; 0: no firing row. */
  readonly firingKeys: number;
  /** Progress lines (stdout by default). */
  readonly log?: (line: string) => void;
}

/** The table and the firing-rate line as markdown lines, and whether an independent count failed. */
export interface KeyCardinalityReport {
  readonly rows: readonly Row[];
  /** The firing-rate row at the `OFFVIA_BENCH_FIRING_*` settings (the product's defaults when none is set). */
  readonly firing: FiringRow | undefined;
  /** The same row at the product's defaults, measured beside `firing` when that one is not at the defaults. */
  readonly firingAtDefaults: FiringRow | undefined;
  readonly lines: readonly string[];
  readonly failed: boolean;
}

/**
 * Measures the cardinality rows and the firing-rate row on `db` (the Firestore emulator) and formats them, each
 * key-groups row beside the retired per-window layout's baseline (the issue's figures, not measured by this run).
 * @throws when Firestore fails or the seeded state does not read back as seeded
 */
export async function measureKeyCardinality(
  db: Firestore,
  options: KeyCardinalityOptions,
): Promise<KeyCardinalityReport> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const rows: Row[] = [];
  for (const keys of options.cardinalities) {
    for (const layout of options.layouts) {
      const row = await cardinalityRow(db, layout, keys, options.events);
      rows.push(row);
      log(`  done: ${layout} ${keys} keys (${row.ingestMs} ms ingest, ${row.fireMs} ms firing)`);
    }
  }
  const per = (n: number, r: Row) => (n / r.events).toFixed(2);
  const lines: string[] = [
    '| keys | layout | reads / writes / deletes per event (TTL deletes) | of which ingest | USD per million ' +
      `events (target ≤ ${USD_PER_MILLION_TARGET.toFixed(2)}) | counted once | ingest ms | fireWindows ms (runs) | note |`,
    '|---:|---|---|---|---:|---|---:|---:|---|',
  ];
  for (const keys of options.cardinalities) {
    const measured = rows.filter((r) => r.keys === keys);
    const baseline = PER_WINDOW_BASELINE.get(keys);
    if (baseline !== undefined) {
      lines.push(
        `| ${keys.toLocaleString('en-US')} | per-window (baseline: the issue's measurement, not this run) | ` +
          `${baseline.ops} |  | ${baseline.usd.toFixed(2)} |  |  |  |  |`,
      );
    }
    for (const r of measured) {
      const usd = usdPerMillion(r);
      const verdict =
        r.layout === 'key-groups' ? (usd <= USD_PER_MILLION_TARGET ? ' (met)' : ' (MISSED)') : '';
      lines.push(
        `| ${r.keys.toLocaleString('en-US')} | ${r.layout} | ${per(r.reads, r)} / ${per(r.writes, r)} / ` +
          `${per(r.deletes + r.ttlDeletes, r)} (${per(r.ttlDeletes, r)}) | ${per(r.ingestOps.reads, r)} / ` +
          `${per(r.ingestOps.writes, r)} / ${per(r.ingestOps.deletes, r)} | ${usd.toFixed(2)}${verdict} | ` +
          `${r.countedOnce ? 'yes' : 'NO'} | ${r.ingestMs} | ${r.fireMs} (${r.fireRuns}) | ${r.note} |`,
      );
    }
  }
  let firing: FiringRow | undefined;
  let firingAtDefaults: FiringRow | undefined;
  if (options.firingKeys > 0) {
    // Figures at other settings are printed beside the defaults' (what ships), measured in the same run.
    if (FIRING_CUSTOM) {
      firingAtDefaults = await firingRow(db, options.firingKeys, true);
      lines.push('', firingLine(firingAtDefaults));
    }
    firing = await firingRow(db, options.firingKeys, !FIRING_CUSTOM);
    lines.push(...(FIRING_CUSTOM ? [] : ['']), firingLine(firing));
  }
  const failedRows = rows.filter((r) => !r.countedOnce);
  const firings = [firingAtDefaults, firing].filter((f) => f !== undefined);
  if (firings.some((f) => !f.exactlyOnce)) {
    lines.push(
      'firing rate: an on-time pane is missing, repeated or miscounted, or another pane is in gold',
    );
  }
  if (failedRows.length > 0) {
    lines.push(
      `independent count FAILED for ${failedRows.map((r) => `${r.layout}/${r.keys}`).join(', ')}`,
    );
  }
  return {
    rows,
    firing,
    firingAtDefaults,
    lines,
    failed: failedRows.length > 0 || firings.some((f) => !f.exactlyOnce),
  };
}

async function main(): Promise<void> {
  const stopEmulator = await ensureFirestoreEmulator(PORT);
  const db = emulatorFirestore();
  try {
    process.stdout.write(
      `Firestore emulator ${process.env.FIRESTORE_EMULATOR_HOST}; ${EVENTS} events over 2 minutes of event time per ` +
        `row, ${IN_FLIGHT} in flight (one instance), fireWindows every minute of processing time until every window ` +
        `closed.\nmachine: ${os.cpus().length} cores, load average ${loadAverage()} at start.\n`,
    );
    const report = await measureKeyCardinality(db, {
      cardinalities: CARDINALITIES,
      layouts: LAYOUTS,
      events: EVENTS,
      firingKeys: process.env.OFFVIA_BENCH_SKIP_FIRING === '1' ? 0 : FIRING_KEYS,
    });
    process.stdout.write(`\n${report.lines.join('\n')}\n`);
    if (report.failed) process.exitCode = 1;
    if (process.env.OFFVIA_BENCH_SKIP_TELEMETRY !== '1') {
      // A client of its own: its operations are counted at the SDK, apart from the booking rows'.
      const telemetryDb = emulatorFirestore();
      try {
        const telemetry = await measureTelemetryRate(telemetryDb, {
          devices: TELEMETRY_DEVICES,
          minutes: 3,
          inFlight: IN_FLIGHT,
        });
        const row = [...report.rows].reverse().find((r) => r.layout === 'key-groups');
        const booking =
          row === undefined
            ? undefined
            : {
                usdPerMillion: usdPerMillion(row),
                perSecond: row.events / (row.ingestMs / 1000),
                label: `key-groups, ${row.keys.toLocaleString('en-US')} keys, ingest and firing`,
              };
        // The per-collection lines name which aggregation's documents the reads and writes went to.
        const byCollection = opsLines(telemetry.ops, telemetry.messages).slice(1);
        process.stdout.write(
          `\n${telemetryLine(telemetry, booking)}\n${byCollection.join('\n')}\n`,
        );
        if (!telemetry.allRouted) process.exitCode = 1;
      } finally {
        await telemetryDb.terminate();
      }
    }
    process.stdout.write(`\nload average at end: ${loadAverage()}\n`);
  } finally {
    await db.terminate();
    stopEmulator();
  }
}

// Run as a command (`npm run bench:keys`); imported by `bench/run.ts` for `npm run bench`.
if (/key-cardinality\.ts$/.test(process.argv[1] ?? '')) {
  main().catch((err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exitCode = 1;
  });
}
