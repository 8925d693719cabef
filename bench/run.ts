// `npm run bench` (not a test): throughput and cost of the ingestion on this machine, in one go, on one generated
// stream. Runs inside a fresh local stack (bench/run.sh). Prints a table, writes bench/out/bench-<time>.json and
// bench/out/latest.json, and a PNG chart (bench/chart.py, matplotlib in .local/venv-bench).
//
//   npm run bench                                   # 10,000 events; 1,000 for the slow rows
//   OFFVIA_BENCH_EVENTS=2000 OFFVIA_BENCH_SLOW_EVENTS=500 npm run bench
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { BigQuery } from '@google-cloud/bigquery';
import { validateBooking } from '../shared/contract';
import { loadCoalescingConfig } from '../shared/config/coalescing-config';
import { loadIngestConfig } from '../shared/config/ingest-config';
import { bigQueryClient } from '../shared/sinks/bigquery-writer';
import { createAggregationFireDeps } from '../shared/pipeline/runtime/compose';
import { BOOKING_PIPELINE } from '../shared/pipelines/booking/definition';
import { fireWindows } from '../shared/state/fire-windows';
import { Logger } from '../shared/logging/logger';
import { dataflowCostPerMillion, functionsCostPerMillion, PRICES } from './lib/cost';
import { runInProcess, rowsOfRun, type InProcessResult } from './lib/in-process';
import { runStack, type InsertAllLog, type StackRunResult } from './lib/stack-run';
import { startBenchFunction } from './lib/stack-function';
import { startPushRelay } from './lib/push-relay';
import { BOOKING_TOPIC, projectIdFromEnv, pushEndpointFor } from '../deploy/local/resources';
import { defaultSpec, generateStream, type StreamEvent } from './lib/stream';
import { emulatorFirestore } from '../test/support/firestore-windows';
import { measureKeyCardinality, type KeyCardinalityReport } from './key-cardinality';
import { intEnv } from './lib/env';

const EVENTS = intEnv('OFFVIA_BENCH_EVENTS', 10_000);
/** Rows whose configuration is slow on the emulators (coalescing off, the whole stack) run this prefix. */
const SLOW_EVENTS = Math.min(EVENTS, intEnv('OFFVIA_BENCH_SLOW_EVENTS', 1_000));
/** Invocations in flight per instance: ingestBooking's deployed concurrency (deploy/gcloud/functions.ts). */
const CONCURRENCY = intEnv('OFFVIA_BENCH_CONCURRENCY', 80);
const OUT = 'bench/out';
/** Events per cardinality row (`OFFVIA_BENCH_KEYS_EVENTS`; the shape is 5,000). */
const KEYS_EVENTS = intEnv('OFFVIA_BENCH_KEYS_EVENTS', 5_000);
/** (key, window)s of the firing-rate row (`OFFVIA_BENCH_FIRING_KEYS`; the target is stated for 50,000). */
const FIRING_KEYS = intEnv('OFFVIA_BENCH_FIRING_KEYS', 50_000);
const VENV_PYTHON = `${process.env.OFFVIA_VENV_BENCH ?? '.local/venv-bench'}/bin/python`;

/** One row of the table. Numbers are per event unless named otherwise; absent: not measured for that row. */
interface Row {
  section: string;
  config: string;
  events: number;
  eventsPerSecond: number;
  bqCallsPerEvent?: number;
  fsReadsPerEvent?: number;
  fsWritesPerEvent?: number;
  fsTransactionsPerEvent?: number;
  p50Ms?: number;
  p95Ms?: number;
  p99Ms?: number;
  note?: string;
}

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** The in-process "coalescing on" row's label, from the coalescing configuration that run reads. */
function coalescingLabel(env: NodeJS.ProcessEnv): string {
  const c = loadCoalescingConfig(env);
  const calls = c.maxInFlight === 1 ? '1 call' : `${c.maxInFlight} calls`;
  return `coalescing on (≤ ${c.maxRows} rows, ${c.lingerMs} ms linger, ${calls} in flight per table)`;
}

// ---- 1. the validation core ----------------------------------------------------------------------------------------

/** Runs `fn` over all payloads until at least `minMs` passed; events/s. */
function loopRate(payloads: readonly Buffer[], fn: (p: Buffer) => unknown, minMs = 1500): number {
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < minMs) {
    for (const p of payloads) fn(p);
    n += payloads.length;
  }
  return (n * 1000) / (performance.now() - t0);
}

function validationRows(events: readonly StreamEvent[]): Row[] {
  const config = loadIngestConfig({});
  const payloads = events.map((e) => Buffer.from(e.payload, 'utf8'));
  const now = Date.now();
  const options = {
    messageId: 'bench',
    receivedAtMs: now,
    maxFutureSkewMs: config.maxFutureSkewMs,
    maxEventAgeMs: config.maxEventAgeMs,
  };
  const parse = (p: Buffer): unknown => {
    try {
      return JSON.parse(p.toString('utf8'));
    } catch (err) {
      return err;
    }
  };
  // Warm both up (JIT), then measure.
  loopRate(payloads, parse, 300);
  loopRate(payloads, (p) => validateBooking(p, options), 300);
  const floor = loopRate(payloads, parse);
  const core = loopRate(payloads, (p) => validateBooking(p, options));
  return [
    {
      section: 'validation core (1 core)',
      config: 'JSON.parse of the same payloads (floor)',
      events: events.length,
      eventsPerSecond: floor,
    },
    {
      section: 'validation core (1 core)',
      config: 'validateBooking (decode, parse, 4 stages, event_id)',
      events: events.length,
      eventsPerSecond: core,
      note: `${((core / floor) * 100).toFixed(0)} % of the JSON.parse floor`,
    },
  ];
}

// ---- 2. ingestBooking in-process -----------------------------------------------------------------------------------

function inProcessRow(r: InProcessResult, config: string): Row {
  return {
    section: 'ingestBooking in-process',
    config,
    events: r.events,
    eventsPerSecond: r.eventsPerSecond,
    bqCallsPerEvent: r.bigQuery.calls / r.events,
    fsReadsPerEvent: r.firestore.reads / r.events,
    fsWritesPerEvent: r.firestore.writes / r.events,
    fsTransactionsPerEvent: r.firestore.transactions / r.events,
    p50Ms: r.latencyMs.p50,
    p95Ms: r.latencyMs.p95,
    p99Ms: r.latencyMs.p99,
    ...(r.redeliveries > 0 && { note: `${r.redeliveries} redeliveries` }),
  };
}

/** Distinct rows as sets; the differences both ways. */
function setDiff(a: readonly string[], b: readonly string[]): { onlyA: string[]; onlyB: string[] } {
  const sa = new Set(a);
  const sb = new Set(b);
  return { onlyA: [...sa].filter((x) => !sb.has(x)), onlyB: [...sb].filter((x) => !sa.has(x)) };
}

// ---- 3. the whole local stack --------------------------------------------------------------------------------------

async function goldRows(pipeline: string): Promise<number> {
  const config = loadIngestConfig(process.env);
  const bigquery: BigQuery = bigQueryClient(config);
  const [rows] = await bigquery.query({
    query: 'SELECT COUNT(*) AS n FROM offvia_gold.route_panes WHERE pipeline = @p',
    params: { p: pipeline },
  });
  return Number((rows as { n: unknown }[])[0]?.n ?? 0);
}

/** The stack's BigQuery emulator request log, and the tables ingestBooking writes (Silver, quarantine, bad data). */
function insertAllLog(): InsertAllLog {
  const config = loadIngestConfig(process.env);
  const name = (t: { datasetId: string; tableId: string }): string => `${t.datasetId}.${t.tableId}`;
  return {
    path: `${process.env.OFFVIA_STACK_DIR ?? '.local/stack'}/logs/bigquery-emulator.log`,
    tables: [config.silverTable, config.quarantineTable, config.badDataTable].map(name),
  };
}

async function stackRun(
  label: string,
  coalesce: boolean,
  events: readonly StreamEvent[],
  relay: boolean,
): Promise<{
  result: StackRunResult;
  pipeline: string;
  goldPanes: number;
  firedPanes: number;
  relayFailures: number;
}> {
  const pipeline = `bench_stack_${label}_${Date.now()}`;
  const port = intEnv(
    'OFFVIA_BENCH_FUNCTION_PORT',
    intEnv('OFFVIA_INGEST_BOOKING_PORT', 8080) + 100,
  );
  const fn = await startBenchFunction(
    port,
    {
      OFFVIA_BQ_COALESCE: String(coalesce),
      OFFVIA_WINDOW_PIPELINE: pipeline,
      FUNCTION_TARGET: 'ingestBooking',
    },
    `${OUT}/fn-${label}.log`,
  );
  let result: StackRunResult;
  let relayFailures = 0;
  try {
    const pushRelay = relay
      ? await startPushRelay(pushEndpointFor(projectIdFromEnv(), BOOKING_TOPIC, port), CONCURRENCY)
      : undefined;
    try {
      result = await runStack(events, fn.logPath, 30 * 60_000, insertAllLog());
    } finally {
      relayFailures = pushRelay?.failures() ?? 0;
      await pushRelay?.stop();
    }
  } finally {
    await fn.stop();
  }
  // fireWindows once, as Cloud Scheduler would after the traffic stopped (clock past end + lateness + idle).
  const logger = new Logger('fireWindows', (entry) =>
    appendFileSync(`${OUT}/fire-windows.log`, JSON.stringify(entry) + '\n'),
  );
  const deps = createAggregationFireDeps(
    BOOKING_PIPELINE,
    { ...process.env, OFFVIA_WINDOW_PIPELINE: pipeline },
    logger,
    {
      now: () => Date.now() + 10 * 60_000,
    },
  );
  const summary = await fireWindows(deps);
  return {
    result,
    pipeline,
    goldPanes: await goldRows(pipeline),
    firedPanes: summary.panesEmitted,
    relayFailures,
  };
}

// ---- 4. the lab's Beam pipeline ------------------------------------------------------------------------------------

interface BeamResult {
  events: number;
  seconds: number;
  /** Per stream position: `silver` or the quarantine stage. */
  outcomes: string[];
}

function runBeam(events: readonly StreamEvent[]): BeamResult {
  const dir = `${OUT}/beam`;
  mkdirSync(dir, { recursive: true });
  const input = `${dir}/input.jsonl`;
  writeFileSync(
    input,
    events.map((e) => JSON.stringify({ message_id: `beam-${e.seq}`, data: e.payload })).join('\n') +
      '\n',
  );
  const stdout = execFileSync(VENV_PYTHON, ['bench/lab_pipeline.py', input, dir], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const summary = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as {
    events: number;
    seconds: number;
  };
  const outcomes = new Array<string>(events.length).fill('missing');
  const seqOf = (id: unknown) => Number(String(id).slice('beam-'.length));
  for (const line of readFileSync(`${dir}/silver`, 'utf8').split('\n')) {
    if (line.trim())
      outcomes[seqOf((JSON.parse(line) as { source_message_id: unknown }).source_message_id)] =
        'silver';
  }
  for (const line of readFileSync(`${dir}/quarantine`, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const q = JSON.parse(line) as { source_message_id: unknown; error_stage: string };
    outcomes[seqOf(q.source_message_id)] = q.error_stage;
  }
  return { events: summary.events, seconds: summary.seconds, outcomes };
}

interface Disagreement {
  kind: string;
  count: number;
  ours: string;
  beam: string;
  contract: string;
  right: string;
  exampleSeq: number;
}

function disagreements(
  events: readonly StreamEvent[],
  ours: readonly string[],
  beam: readonly string[],
): Disagreement[] {
  const byKey = new Map<string, Disagreement>();
  events.forEach((e, i) => {
    const o = ours[i] ?? 'missing';
    const b = beam[i] ?? 'missing';
    if (o === b) return;
    const key = `${e.kind}|${o}|${b}`;
    const current = byKey.get(key);
    if (current) {
      current.count++;
      return;
    }
    const right = o === e.expected ? 'ours' : b === e.expected ? 'Beam' : 'neither';
    byKey.set(key, {
      kind: e.kind,
      count: 1,
      ours: o,
      beam: b,
      contract: e.expected,
      right,
      exampleSeq: e.seq,
    });
  });
  return [...byKey.values()].sort((a, b) => b.count - a.count);
}

// ---- table ---------------------------------------------------------------------------------------------------------

function fmt(n: number | undefined, digits = 1): string {
  if (n === undefined || Number.isNaN(n)) return '';
  return n.toLocaleString('en-US', {
    maximumFractionDigits: digits,
    minimumFractionDigits: digits,
  });
}

function table(rows: readonly Row[]): string {
  const head =
    '| section | configuration | events | events/s | BQ calls/event | FS reads/event | FS writes/event | FS tx/event | p50 ms | p95 ms | p99 ms | note |';
  const sep = '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|';
  const lines = rows.map(
    (r) =>
      `| ${r.section} | ${r.config} | ${r.events.toLocaleString('en-US')} | ${fmt(r.eventsPerSecond)} | ` +
      `${fmt(r.bqCallsPerEvent, 3)} | ${fmt(r.fsReadsPerEvent, 2)} | ${fmt(r.fsWritesPerEvent, 2)} | ` +
      `${fmt(r.fsTransactionsPerEvent, 2)} | ${fmt(r.p50Ms, 0)} | ${fmt(r.p95Ms, 0)} | ${fmt(r.p99Ms, 0)} | ${r.note ?? ''} |`,
  );
  return [head, sep, ...lines].join('\n');
}

// ---- main ----------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const startedAt = new Date();
  const load = { start: os.loadavg() };
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
  const events = generateStream(defaultSpec(Date.now() - EVENTS * 20, EVENTS));
  const slow = events.slice(0, SLOW_EVENTS);
  const rows: Row[] = [];
  const checks: string[] = [];
  let failed = false;

  log(
    `stream: ${EVENTS} events (slow rows: ${SLOW_EVENTS}); concurrency ${CONCURRENCY}; load ${load.start.map((x) => x.toFixed(1)).join(' ')}`,
  );
  log('1/4 validation core');
  rows.push(...validationRows(events));

  log('2/4 ingestBooking in-process: coalescing off');
  const env = { ...process.env, OFFVIA_WINDOWS_ENABLED: 'true' };
  const tag = Date.now().toString(36);
  const onEnv = { ...env, OFFVIA_BQ_COALESCE: 'true' };
  const inProcess = (label: string, stream: typeof events, coalesce: boolean) =>
    runInProcess(
      `${label}${tag}`,
      stream,
      coalesce ? onEnv : { ...env, OFFVIA_BQ_COALESCE: 'false' },
      CONCURRENCY,
      `${OUT}/in-process.log`,
    );
  const off = await inProcess('off', slow, false);
  rows.push(inProcessRow(off, 'coalescing off (one insertAll per row)'));
  log('2/4 ingestBooking in-process: coalescing on');
  const on = await inProcess('on', slow, true);
  rows.push(inProcessRow(on, coalescingLabel(onEnv)));
  const [rowsOff, rowsOn] = await Promise.all([
    rowsOfRun(off.label, env),
    rowsOfRun(on.label, env),
  ]);
  const diff = setDiff(rowsOff, rowsOn);
  const sameRows = diff.onlyA.length === 0 && diff.onlyB.length === 0 && rowsOff.length > 0;
  checks.push(
    `in-process, ${SLOW_EVENTS} events: Silver + quarantine rows read back from BigQuery, coalescing off vs on: ` +
      (sameRows
        ? `the same ${new Set(rowsOn).size} distinct rows (message, event_id or stage)`
        : `DIFFERENT: only off ${diff.onlyA.slice(0, 5).join(', ')}; only on ${diff.onlyB.slice(0, 5).join(', ')}`),
  );
  failed ||= !sameRows;
  let full = on;
  if (EVENTS > SLOW_EVENTS) {
    log(`2/4 ingestBooking in-process: coalescing on, all ${EVENTS} events`);
    full = await inProcess('full', events, true);
    rows.push(inProcessRow(full, 'coalescing on, whole stream'));
  }
  // ≥ 10× fewer insertAll calls with coalescing on, measured on the largest "on" run (the whole stream when it ran):
  // with a few hundred events a handful of calls decides the ratio, so below 1,000 events it is reported only.
  const offPerEvent = off.bigQuery.calls / off.events;
  const onPerEvent = full.bigQuery.calls / full.events;
  const callDrop = offPerEvent / Math.max(onPerEvent, 1 / full.events);
  const enforced = full.events >= 1_000;
  checks.push(
    `BigQuery insertAll calls per event: ${offPerEvent.toFixed(3)} off (${off.events} events) → ` +
      `${onPerEvent.toFixed(3)} on (${full.events} events): ${callDrop.toFixed(1)}× fewer; goal ≥ 10×` +
      (enforced ? '' : ' (not enforced below 1,000 events: too few calls to compare)'),
  );
  failed ||= enforced && callDrop < 10;

  log("3/4 the lab's Beam pipeline on the DirectRunner");
  const beam = runBeam(events);
  rows.push({
    section: "lab's Beam pipeline (DirectRunner, Python)",
    config: 'ValidateAndEnrichBookingFn + WindowInto, outputs to local files',
    events: beam.events,
    eventsPerSecond: beam.events / beam.seconds,
    note: `wall clock incl. pipeline start (${beam.seconds.toFixed(1)} s)`,
  });
  const ours = full.outcomes;
  const disagree = disagreements(events, ours, beam.outcomes);
  const disagreeCount = disagree.reduce((n, d) => n + d.count, 0);

  log('4/4 whole local stack: coalescing off');
  const stackOff = await stackRun('off', false, slow, false);
  log('4/4 whole local stack: coalescing on');
  const stackOn = await stackRun('on', true, slow, false);
  log(`4/4 whole local stack, push relay (${CONCURRENCY} in flight): coalescing off`);
  const relayOff = await stackRun('relayoff', false, slow, true);
  log(`4/4 whole local stack, push relay (${CONCURRENCY} in flight): coalescing on`);
  const relayOn = await stackRun('relayon', true, slow, true);
  for (const [s, config] of [
    [stackOff, "emulator's push (~2 in flight), coalescing off"],
    [stackOn, "emulator's push (~2 in flight), coalescing on"],
    [relayOff, `push relay (${CONCURRENCY} in flight), coalescing off`],
    [relayOn, `push relay (${CONCURRENCY} in flight), coalescing on`],
  ] as const) {
    rows.push({
      section: 'whole stack: publish → push → Silver + window state',
      config,
      events: s.result.messages,
      eventsPerSecond: s.result.eventsPerSecond,
      ...(s.result.bigQueryInsertCalls === undefined
        ? {}
        : { bqCallsPerEvent: s.result.bigQueryInsertCalls / s.result.messages }),
      p50Ms: s.result.latencyMs.p50,
      p95Ms: s.result.latencyMs.p95,
      p99Ms: s.result.latencyMs.p99,
      note:
        `publish-to-Silver latency; ${s.goldPanes} gold panes (${s.firedPanes} by fireWindows)` +
        (s.relayFailures > 0 ? `; ${s.relayFailures} relay redeliveries` : ''),
    });
  }
  const outcomeOf = (s: StackRunResult) =>
    s.messageIds.map((id) => s.outcomes.get(id) ?? 'missing');
  // Every whole-stack run against the first: the same outcome per stream position.
  const reference = outcomeOf(stackOff.result);
  const stackMismatch = [stackOn, relayOff, relayOn]
    .map((s) => outcomeOf(s.result).filter((o, i) => o !== reference[i]).length)
    .reduce((a, b) => a + b, 0);
  checks.push(
    `whole stack, ${SLOW_EVENTS} events: per-message outcome (Silver / quarantine) of the four runs: ` +
      (stackMismatch === 0 ? 'identical' : `${stackMismatch} messages DIFFER`),
  );
  failed ||= stackMismatch > 0;
  // End to end under load (the relay's 80 in flight), from the emulator's request log: reported, not a pass/fail
  // check (the in-process rows are the controlled measurement; this one also counts the relay's retried calls).
  const relayCalls = [relayOff, relayOn].map((s) =>
    s.result.bigQueryInsertCalls === undefined
      ? undefined
      : s.result.bigQueryInsertCalls / s.result.messages,
  );
  if (relayCalls[0] !== undefined && relayCalls[1] !== undefined && relayCalls[1] > 0) {
    checks.push(
      `whole stack through the push relay (${CONCURRENCY} in flight), ${SLOW_EVENTS} events: insertAll calls per ` +
        `event ${relayCalls[0].toFixed(3)} off → ${relayCalls[1].toFixed(3)} on ` +
        `(${(relayCalls[0] / relayCalls[1]).toFixed(1)}× fewer; from the BigQuery emulator's request log)`,
    );
  }

  // Window state at 1 to 5,000 keys (key-groups layout; the per-window baseline is the measurement) and the
  // firing rate of many (key, window)s due at once, on the stack's Firestore emulator.
  const keyCardinalities = (process.env.OFFVIA_BENCH_KEYS ?? '1,100,1000,5000')
    .split(',')
    .filter((k) => k.trim() !== '')
    .map(Number);
  log(
    `5/5 window state at ${keyCardinalities.join(', ')} keys (${KEYS_EVENTS} events each), then ` +
      `${FIRING_KEYS} (key, window)s due at once`,
  );
  const firestore = emulatorFirestore();
  let keyReport: KeyCardinalityReport;
  try {
    keyReport = await measureKeyCardinality(firestore, {
      cardinalities: keyCardinalities,
      layouts: ['key-groups'],
      events: KEYS_EVENTS,
      firingKeys: FIRING_KEYS,
      log,
    });
  } finally {
    await firestore.terminate();
  }
  failed ||= keyReport.failed;

  // Cost, from the whole-stream coalesced in-process run.
  const messageBytes = events.reduce((n, e) => n + Buffer.byteLength(e.payload), 0) / events.length;
  const usage = {
    instanceSeconds: full.elapsedMs / 1000 / full.events,
    bigQueryBillableBytes: full.bigQuery.billableBytes / full.events,
    firestoreReads: full.firestore.reads / full.events,
    firestoreWrites: full.firestore.writes / full.events,
    messageBytes,
  };
  const costLines = functionsCostPerMillion(usage);
  const costTotal = costLines.reduce((n, c) => n + c.usdPerMillion, 0);
  const dataflow = [1, 10, 100].map((eps) => ({
    eventsPerSecond: eps,
    usdPerMillion: dataflowCostPerMillion(eps, messageBytes),
  }));
  load.start = load.start.map((x) => Number(x.toFixed(2)));
  const loadEnd = os.loadavg().map((x) => Number(x.toFixed(2)));

  const report = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    loadavg: { start: load.start, end: loadEnd },
    config: {
      events: EVENTS,
      slowEvents: SLOW_EVENTS,
      concurrency: CONCURRENCY,
      spec: defaultSpec(0, EVENTS),
    },
    rows,
    checks,
    beam: { disagreements: disagree, total: disagreeCount },
    cost: { prices: PRICES, usage, lines: costLines, totalUsdPerMillion: costTotal, dataflow },
    keyCardinality: {
      rows: keyReport.rows,
      firing: keyReport.firing,
      firingAtDefaults: keyReport.firingAtDefaults,
    },
  };
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const json = JSON.stringify(report, null, 2);
  writeFileSync(`${OUT}/bench-${stamp}.json`, json);
  writeFileSync(`${OUT}/latest.json`, json);
  let chart = `${OUT}/bench.png`;
  try {
    execFileSync(VENV_PYTHON, ['bench/chart.py', `${OUT}/latest.json`, chart], {
      stdio: 'inherit',
    });
  } catch (err) {
    chart = `(chart failed: ${String(err)})`;
    failed = true;
  }

  const out: string[] = [];
  out.push(`## Benchmark ${startedAt.toISOString()}`);
  out.push('');
  out.push(
    `machine: ${machine}; load average (1/5/15 min) at start ${load.start.join(' / ')}, at end ${loadEnd.join(' / ')}`,
  );
  out.push(
    `stream: ${EVENTS.toLocaleString('en-US')} events, seed ${defaultSpec(0).seed}, ~5 % invalid, ~5 % late, ~3 % duplicates, 4 hot routes (80 %); ` +
      `slow rows on the first ${SLOW_EVENTS.toLocaleString('en-US')}; ${CONCURRENCY} invocations in flight; window state on`,
  );
  out.push('');
  out.push(table(rows));
  out.push('');
  out.push('Checks:');
  for (const c of checks) out.push(`- ${c}`);
  out.push('');
  out.push(
    `Silver/quarantine split, ours vs the lab's Beam pipeline, event by event: ${disagreeCount} of ${events.length} disagree`,
  );
  if (disagree.length > 0) {
    out.push('');
    out.push('| kind | events | ours | Beam | booking contract | who is right | example seq |');
    out.push('|---|---:|---|---|---|---|---:|');
    for (const d of disagree) {
      out.push(
        `| ${d.kind} | ${d.count} | ${d.ours} | ${d.beam} | ${d.contract} | ${d.right} | ${d.exampleSeq} |`,
      );
    }
  }
  out.push('');
  out.push(`Cost per million events (prices: ${PRICES.source}; ${PRICES.asOf}):`);
  out.push('');
  out.push('| item | USD per million events |');
  out.push('|---|---:|');
  for (const c of costLines) out.push(`| ${c.item} | ${c.usdPerMillion.toFixed(3)} |`);
  out.push(`| **total, this system** | **${costTotal.toFixed(2)}** |`);
  for (const d of dataflow) {
    out.push(
      `| Dataflow, 1 × n1-standard-1 always on, at ${d.eventsPerSecond} event/s | ${d.usdPerMillion.toFixed(2)} |`,
    );
  }
  out.push('');
  out.push(
    `Window state per cardinality (${KEYS_EVENTS.toLocaleString('en-US')} events over 2 minutes of event time per ` +
      'row; Firestore operations counted at the client, USD per million events at list prices):',
  );
  out.push('');
  out.push(...keyReport.lines);
  out.push('');
  out.push(`JSON: ${OUT}/bench-${stamp}.json (and ${OUT}/latest.json); chart: ${chart}`);
  process.stdout.write(out.join('\n') + '\n');
  if (failed) {
    log('a check failed (see Checks above)');
    process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
});
