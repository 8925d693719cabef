// The reliability harness: drives the local stack through redelivery, crash and outage scenarios and prints
// one report: where every published message ended, what was lost or duplicated, and whether the aggregates counted
// each event once. A script, not a timed test: `npm run reliability` (deploy/local/reliability.sh checks the flags,
// then brings a stack up and down around this). Flags: `--help`, or parseArgs in deploy/local/reliability/args.ts.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Firestore } from '@google-cloud/firestore';
import { readFirestoreDatabase } from '../../shared/config/ingest-config';
import { firestoreClient } from '../../shared/drift/runtime';
import { PubSub, type Message } from '@google-cloud/pubsub';
import type { BigQuery } from '@google-cloud/bigquery';
import { createAggregationFireDeps } from '../../shared/pipeline/runtime/compose';
import { BOOKING_PIPELINE } from '../../shared/pipelines/booking/definition';
import type { BookingAccumulator } from '../../shared/aggregates/booking-aggregates';
import { loadWindowConfig, type WindowConfig } from '../../shared/config/window-config';
import { Logger } from '../../shared/logging/logger';
import { assignWindows } from '../../shared/windowing';
import { fireWindows, type FireWindowsSummary } from '../../shared/state/fire-windows';
import type { GroupedFirestoreWindowStore } from '../../shared/state/grouped-window-store';
import { queryRows, stackBigQuery, stackEnv, type Row } from './layers';
import {
  BOOKING_TOPIC,
  INGEST_PUSH_SUBSCRIPTION,
  ingestPushSubscriptionOptions,
  positiveIntFromEnv,
  pushEndpointFor,
  subscriptionPath,
  topicPath,
} from './resources';
import {
  accountScenario,
  formatReport,
  type Observed,
  type ScenarioReport,
  type PublishedMessage,
} from './reliability/accounting';
import { parseArgs, reportUsageError, USAGE, USAGE_EXIT, UsageError } from './reliability/args';
import { DeliveryDriver, snapshotStats, statsSince, type DriverStats } from './reliability/driver';
import { injectFault, type FaultOutcome } from './reliability/faults';
import { planEvent, type Scenario } from './reliability/scenarios';

const run = promisify(execFile);
/** The harness stops waiting for a scenario's acks after this long without any (ms). */
const STALL_MS = 10 * 60_000;
/** Pull subscription the harness delivers from (the push subscription is removed for the run). */
const HARNESS_SUBSCRIPTION = 'booking-events-reliability';
const SCHEMA_ROOT = process.env.OFFVIA_SCHEMA_FIRESTORE_ROOT ?? 'offviaSchemaDrift';
/**
 * Attribute marking a message of a push scenario (value `push`): the emulator's push subscription delivers it, so
 * the driver acks its own copy without delivering it.
 */
const DELIVERY_ATTRIBUTE = 'offvia_reliability_delivery';
/** How often a push scenario reads the layers to see whether every message has arrived, ms. */
const PUSH_POLL_MS = 15_000;

/** The window functions' logger: their lines would drown the harness's. */
const QUIET = new Logger('reliability', () => undefined);
const log = (text: string): void => {
  console.error(`[reliability ${new Date().toISOString().slice(11, 19)}] ${text}`);
};

/** Runs `stack.sh <command> <service>` on this harness's stack (the ports are in the environment). */
async function stack(command: string, service: string): Promise<void> {
  const { stderr } = await run('bash', ['deploy/local/stack.sh', command, service], {
    env: process.env,
  });
  for (const line of stderr.trim().split('\n')) if (line) log(`  ${line}`);
}

/** Reads `sql` with `ids` chunked into `@ids` parameters (the emulator is slow with very long arrays). */
async function queryByIds(
  bq: BigQuery,
  sql: string,
  ids: readonly string[],
  extra: Record<string, string> = {},
) {
  const out: Row[] = [];
  const types = {
    ids: ['STRING'],
    ...Object.fromEntries(Object.keys(extra).map((k) => [k, 'STRING'])),
  };
  for (let i = 0; i < ids.length; i += 2000) {
    out.push(...(await queryRows(bq, sql, { ids: ids.slice(i, i + 2000), ...extra }, types)));
  }
  return out;
}

/** The clients and window settings the harness reads the layers with. */
interface Reader {
  bq: BigQuery;
  firestore: Firestore;
  store: GroupedFirestoreWindowStore<BookingAccumulator>;
  projectId: string;
  config: WindowConfig;
}

/** Reads where a scenario's messages ended (BigQuery and Firestore) and accounts for each of them. */
async function account(
  { bq, firestore, store, projectId: p, config }: Reader,
  { scenario, prefix, published }: Pick<ScenarioRun, 'scenario' | 'prefix' | 'published'>,
): Promise<ScenarioReport> {
  const ids = published.map((m) => m.messageId);
  const [bronze, quarantine, badData, silverRows, dedup, gold] = await Promise.all([
    queryByIds(
      bq,
      `SELECT message_id FROM \`${p}.offvia_bronze.raw_bookings\` WHERE message_id IN UNNEST(@ids)`,
      ids,
    ),
    queryByIds(
      bq,
      `SELECT source_message_id, error_stage FROM \`${p}.offvia_quarantine.poisoned_events\` WHERE source_message_id IN UNNEST(@ids)`,
      ids,
    ),
    queryByIds(
      bq,
      `SELECT source_message_id FROM \`${p}.offvia_quarantine.bad_data\` WHERE source_message_id IN UNNEST(@ids)`,
      ids,
    ),
    queryRows(
      bq,
      `SELECT source_message_id, event_id FROM \`${p}.offvia_silver.fact_bookings\` WHERE STARTS_WITH(booking_id, @prefix)`,
      { prefix },
    ),
    queryRows(
      bq,
      `SELECT event_id, COUNT(*) AS n FROM \`${p}.offvia_silver.fact_bookings_dedup\` WHERE STARTS_WITH(booking_id, @prefix) GROUP BY event_id`,
      { prefix },
    ),
    queryRows(
      bq,
      `SELECT route_key, UNIX_MILLIS(window_start) AS start_ms, booking_count
       FROM \`${p}.offvia_gold.route_panes_latest\` WHERE pipeline = @pipeline AND ENDS_WITH(route_key, @currency)`,
      { pipeline: config.pipeline, currency: `-${scenario.currency}` },
    ),
  ]);
  const retryDocs = await firestore.collectionGroup('rows').get();
  const retryStore = retryDocs.docs
    .filter((d) => d.ref.path.startsWith(`${SCHEMA_ROOT}/`))
    .map((d) => String(d.get('source_message_id')));
  // The window state's dedup record of each valid event (the dedup ids of its key group), read through the store.
  const ledger = new Map<string, string>();
  const { windowFn } = config.strategy;
  const valid = new Map<string, { routeKey: string; eventTimeMs: number }>();
  for (const m of published) {
    if (m.expectation.kind === 'valid') valid.set(m.expectation.eventId, m.expectation);
  }
  const entries = [...valid];
  for (let i = 0; i < entries.length; i += 50) {
    const outcomes = await Promise.all(
      entries
        .slice(i, i + 50)
        .map(([id, e]) =>
          store.eventOutcome(id, e.routeKey, assignWindows(windowFn, e.eventTimeMs)),
        ),
    );
    outcomes.forEach((outcome, j) => {
      const id = entries[i + j]?.[0];
      if (outcome !== null && id !== undefined) ledger.set(id, outcome);
    });
  }
  const observed: Observed = {
    bronze: new Set(bronze.map((r) => String(r.message_id))),
    silverRows: silverRows.map((r) => ({
      messageId: String(r.source_message_id),
      eventId: String(r.event_id),
    })),
    dedupViewRowsPerEvent: new Map(dedup.map((r) => [String(r.event_id), Number(r.n)])),
    quarantine: quarantine.map((r) => String(r.source_message_id)),
    retryStore,
    badData: badData.map((r) => String(r.source_message_id)),
    ledger,
    goldCounts: new Map(
      gold.map((r) => [`${String(r.route_key)}|${Number(r.start_ms)}`, Number(r.booking_count)]),
    ),
  };
  const stages = new Map(
    quarantine.map((r) => [String(r.source_message_id), String(r.error_stage)]),
  );
  return accountScenario(scenario.name, published, observed, windowSizeOf(config), stages);
}

/** The size of the configured windows, ms (a minute for windows without one). */
function windowSizeOf(config: WindowConfig): number {
  return 'sizeMs' in config.strategy.windowFn ? config.strategy.windowFn.sizeMs : 60_000;
}

/**
 * Runs fireWindows in-process with the processing clock moved past the idle timeout, as Cloud Scheduler would once
 * the traffic stopped, until a run completes with nothing failed or deferred: every window's ON_TIME pane (and any
 * pane left in the outbox) is then in gold.
 */
async function flushWindows(
  firestore: Firestore,
  config: WindowConfig,
): Promise<FireWindowsSummary> {
  const policy = config.watermarkPolicy;
  for (let attempt = 1; ; attempt++) {
    const processingTimeMs =
      Date.now() +
      policy.idleTimeoutMs +
      policy.maxOutOfOrdernessMs +
      windowSizeOf(config) +
      60_000;
    const deps = createAggregationFireDeps(BOOKING_PIPELINE, process.env, QUIET, {
      firestore,
      now: () => processingTimeMs,
    });
    const summary = await fireWindows(deps);
    log(
      `fireWindows (clock +${Math.round((processingTimeMs - Date.now()) / 1000)} s): ${summary.status}, ` +
        `${summary.windowsFired} fired, ${summary.panesEmitted} panes, ${summary.outboxReemitted} re-emitted, ` +
        `${summary.windowsFailed} failed, ${summary.panesDeferred} deferred`,
    );
    if (summary.status === 'done' && summary.windowsFailed === 0 && summary.panesDeferred === 0)
      return summary;
    if (attempt >= 20) throw new Error(`fireWindows did not complete: ${JSON.stringify(summary)}`);
    await sleep(5_000);
  }
}

/** A scenario that ran: its messages, the prefix of its booking ids and how its fault went. */
interface ScenarioRun {
  scenario: Scenario;
  published: PublishedMessage[];
  prefix: string;
  fault: FaultOutcome;
}

/** `deliveries (failed, with their labels)` of a scenario, for its log lines. */
function describeStats(stats: DriverStats): string {
  const labels = [...stats.failures].map(([k, v]) => `${k} ×${v}`).join(', ');
  return `${stats.deliveries} deliveries, ${stats.failedDeliveries} failed${labels ? ` (${labels})` : ''}`;
}

async function main(): Promise<void> {
  const parsed = parseArgs(process.argv.slice(2));
  if (parsed.kind === 'help') {
    console.log(USAGE);
    return;
  }
  const settings = parsed.settings;
  for (const name of [
    'PUBSUB_EMULATOR_HOST',
    'BIGQUERY_EMULATOR_HOST',
    'FIRESTORE_EMULATOR_HOST',
    'OFFVIA_INGEST_BOOKING_URL',
  ]) {
    if (!process.env[name])
      throw new UsageError(
        `${name} is not set: run the harness through npm run reliability, which starts the stack`,
        { showUsage: false },
      );
  }
  // What each outage needs from the stack, checked before anything runs.
  for (const [service, variable, what] of [
    [
      'bigquery-emulator',
      'OFFVIA_BQ_PERSISTENT',
      'the BigQuery outage needs a persistent emulator',
    ],
    // Without the gate, a commit acknowledged between the export and the stop is lost: the emulator's loss.
    ['firestore-emulator', 'OFFVIA_FIRESTORE_GATE', 'the Firestore outage needs the TCP gate'],
  ] as const) {
    const planned = settings.scenarios.some(
      (s) => s.fault.kind === 'outage' && s.fault.service === service,
    );
    if (planned && process.env[variable] !== '1') {
      throw new UsageError(`${what}: start the stack with ${variable}=1`, { showUsage: false });
    }
  }
  const env = stackEnv();
  const projectId = env.projectId;
  const bq = stackBigQuery(env);
  const pubsub = new PubSub({ projectId });
  const firestore = firestoreClient(projectId, readFirestoreDatabase(process.env));
  const windows = createAggregationFireDeps(BOOKING_PIPELINE, process.env, QUIET, { firestore });
  const store = windows.store as GroupedFirestoreWindowStore<BookingAccumulator>;
  const windowConfig = loadWindowConfig(process.env);
  const reader: Reader = { bq, firestore, store, projectId, config: windowConfig };
  const runId = randomBytes(3).toString('hex');

  // The harness is the delivery path: the emulator's push subscription would deliver every message a fourth way.
  const push = pubsub.subscription(INGEST_PUSH_SUBSCRIPTION);
  if ((await push.exists())[0]) await push.delete();
  // A fresh pull subscription per run, so nothing of an earlier run is delivered (or counted) again.
  const stale = pubsub.subscription(HARNESS_SUBSCRIPTION);
  if ((await stale.exists())[0]) await stale.delete();
  await pubsub
    .topic(BOOKING_TOPIC)
    .createSubscription(HARNESS_SUBSCRIPTION, { ackDeadlineSeconds: 60 });
  const pull = pubsub.subscription(HARNESS_SUBSCRIPTION, {
    flowControl: { maxMessages: settings.concurrency, allowExcessMessages: false },
  });

  let current: Scenario | undefined;
  // When the driver last acked a message: the wait below gives up only after STALL_MS without any progress.
  let lastAckAtMs = Date.now();
  // Message ids the driver acked. Pub/Sub may deliver a message again after its ack (at-least-once), so the wait
  // below checks ids, not a count.
  const acked = new Set<string>();
  const driver = new DeliveryDriver(
    pull,
    {
      functionUrl: String(process.env.OFFVIA_INGEST_BOOKING_URL),
      topicPath: topicPath(projectId, BOOKING_TOPIC),
      subscriptionPath: subscriptionPath(projectId, HARNESS_SUBSCRIPTION),
      concurrency: settings.concurrency,
      minBackoffMs: positiveIntFromEnv('OFFVIA_RELIABILITY_MIN_BACKOFF_MS', 1_000),
      maxBackoffMs: positiveIntFromEnv('OFFVIA_RELIABILITY_MAX_BACKOFF_MS', 10_000),
      requestTimeoutMs: 70_000,
    },
    (message: Message) =>
      message.attributes?.[DELIVERY_ATTRIBUTE] === 'push' ? 0 : (current?.deliveries ?? 1),
    (message: Message) => {
      acked.add(message.id);
      lastAckAtMs = Date.now();
    },
  );
  driver.start();
  log(
    `run ${runId}: ${settings.events} events per scenario at ${settings.ratePerS}/s, ` +
      `${settings.concurrency} deliveries in flight, scenarios ${settings.scenarios.map((s) => s.name).join(', ')}`,
  );

  const runs: ScenarioRun[] = [];
  const topic = pubsub.topic(BOOKING_TOPIC);
  for (const scenario of settings.scenarios) {
    current = scenario;
    const published: PublishedMessage[] = [];
    const prefix = `REL-${runId}-${scenario.name}-`;
    const publishMs = (settings.events / settings.ratePerS) * 1000;
    let publishing = true;
    log(`${scenario.name}: ${scenario.description}`);
    if (scenario.delivery === 'push') {
      // Created now, so it holds only this scenario's messages; with the settings `stack.sh up` gives it.
      const port = positiveIntFromEnv('OFFVIA_INGEST_BOOKING_PORT', 8080);
      await pubsub
        .topic(BOOKING_TOPIC)
        .createSubscription(
          INGEST_PUSH_SUBSCRIPTION,
          ingestPushSubscriptionOptions(pushEndpointFor(projectId, BOOKING_TOPIC, port)),
        );
    }
    const started = Date.now();
    // The driver's counters are the run's; the scenario's lines give what happened since it began.
    const statsBefore = snapshotStats(driver.stats);
    const allAcked = (): boolean => published.every((m) => acked.has(m.messageId));
    const ackedCount = (): number => published.filter((m) => acked.has(m.messageId)).length;
    // The fault stops once every message is acked, or when the wait below gives up (else the kills never end).
    let gaveUp = false;
    const fault = injectFault(scenario, publishMs, () => gaveUp || (!publishing && allAcked()), {
      stack,
      sleep,
      log,
    });
    let faultOverAtMs: number | undefined;
    void fault.then(() => {
      faultOverAtMs = Date.now();
    });
    // A progress line every 30 s: a 10,000-event scenario runs for many minutes.
    const progress = setInterval(() => {
      log(
        scenario.delivery === 'push'
          ? `${scenario.name}: ${published.length} published (delivered by the push subscription)`
          : `${scenario.name}: ${published.length} published, ${ackedCount()} acked, ` +
              `${describeStats(statsSince(driver.stats, statsBefore))} so far`,
      );
    }, 30_000);
    progress.unref();
    const copies: Promise<void>[] = [];
    for (let i = 0; i < settings.events; i++) {
      const due = started + (i / settings.ratePerS) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
      const planned = planEvent(scenario, runId, i, Date.now(), settings.seed);
      const attributes: Record<string, string> =
        scenario.delivery === 'push' ? { [DELIVERY_ATTRIBUTE]: 'push' } : {};
      const send = async (): Promise<void> => {
        const messageId = await topic.publishMessage({
          data: Buffer.from(planned.payload),
          attributes,
        });
        published.push({ messageId, expectation: planned.expectation });
      };
      await send();
      if (Math.random() < scenario.republishShare) {
        // A producer retry: the same event again, with a new message id, a few seconds later.
        copies.push(sleep(1_000 + Math.random() * 5_000).then(send));
      }
    }
    await Promise.all(copies);
    publishing = false;
    log(
      `${scenario.name}: published ${published.length} messages in ${Math.round((Date.now() - started) / 1000)} s`,
    );
    // Wait while the stack makes progress (a 10,000-event scenario under SIGKILL takes the better part of an hour);
    // give up only after STALL_MS without a single ack, and say so: un-acked messages are then still in the
    // subscription, so the report's LOST column would count them although nothing lost them.
    lastAckAtMs = Math.max(lastAckAtMs, Date.now());
    let arrived = 0;
    if (scenario.delivery === 'push') {
      // No acks to watch: read the layers until every message is in its place. A stall counts only once the
      // fault is over (nothing can arrive while ingestBooking is down).
      let lastProgressAtMs = Date.now();
      for (;;) {
        const report = await account(reader, { scenario, prefix, published });
        const now = published.length - report.lost;
        if (now > arrived || faultOverAtMs === undefined) lastProgressAtMs = Date.now();
        arrived = now;
        if (report.lost === 0) break;
        if (faultOverAtMs !== undefined && Date.now() - lastProgressAtMs >= STALL_MS) {
          log(
            `${scenario.name}: GAVE UP waiting: nothing arrived for ${STALL_MS / 60_000} min after the fault; ` +
              `${report.lost} messages in no layer (the report counts them as LOST)`,
          );
          break;
        }
        log(
          `${scenario.name}: ${arrived} of ${published.length} in their layer` +
            `${faultOverAtMs === undefined ? ' (fault in progress)' : ''}`,
        );
        await sleep(PUSH_POLL_MS);
      }
    } else {
      while (!allAcked() && Date.now() - lastAckAtMs < STALL_MS) await sleep(1_000);
      const unacked = published.length - ackedCount();
      if (unacked > 0) {
        log(
          `${scenario.name}: GAVE UP waiting: no ack for ${STALL_MS / 60_000} min, ${unacked} messages never acked ` +
            '(still in the subscription; the report counts them as LOST)',
        );
      }
    }
    gaveUp = true;
    const faultOutcome = await fault;
    clearInterval(progress);
    if (scenario.delivery === 'push') {
      // Deleted so it does not deliver the next scenarios' messages a second way.
      await pubsub.subscription(INGEST_PUSH_SUBSCRIPTION).delete();
      log(
        `${scenario.name}: ${arrived} of ${published.length} delivered by the push subscription after ` +
          `${Math.round((Date.now() - started) / 1000)} s`,
      );
    } else {
      log(
        `${scenario.name}: ${ackedCount()} of ${published.length} acked after ${Math.round((Date.now() - started) / 1000)} s; ` +
          `${describeStats(statsSince(driver.stats, statsBefore))} in this scenario`,
      );
    }
    runs.push({ scenario, published, prefix, fault: faultOutcome });
  }
  current = undefined;
  await driver.stop();
  await pubsub.close();

  // Bronze (the stand-in) and the ledger may trail the acks by a moment: poll until every message is accounted for
  // or two minutes pass, then report what is there.
  await flushWindows(firestore, windowConfig);
  const reports = [];
  for (const r of runs) {
    let report = await account(reader, r);
    const settleBy = Date.now() + 120_000;
    while ((report.lost > 0 || report.missingFromAggregates > 0) && Date.now() < settleBy) {
      await sleep(5_000);
      report = await account(reader, r);
    }
    reports.push(report);
  }
  await firestore.terminate();
  const pushNames = runs.filter((r) => r.scenario.delivery === 'push').map((r) => r.scenario.name);
  console.log(
    `\nReliability report (run ${runId}; ${settings.events} events per scenario published at ${settings.ratePerS}/s; ` +
      `delivered by the harness's driver, ${settings.concurrency} in flight; ` +
      `${driver.stats.deliveries} deliveries, ${driver.stats.failedDeliveries} failed and retried` +
      `${pushNames.length > 0 ? `; ${pushNames.join(', ')}: by the emulator's push subscription instead` : ''})\n`,
  );
  console.log(formatReport(reports));
  console.log('\nFaults injected:');
  for (const r of runs) {
    console.log(
      `- ${r.scenario.name}: ${r.fault.summary}${r.fault.error ? ` (ERROR ${r.fault.error})` : ''}`,
    );
  }
  const faultFailed = runs.filter((r) => r.fault.error !== undefined).map((r) => r.scenario.name);
  const noneDroppedLate = new Set(
    runs.filter((r) => r.scenario.noneDroppedLate === true).map((r) => r.scenario.name),
  );
  const bad = reports.filter(
    (r) =>
      (noneDroppedLate.has(r.scenario) && r.droppedLate > 0) ||
      r.lost > 0 ||
      r.inSeveralPlaces > 0 ||
      r.duplicatedInDedupView > 0 ||
      r.doubleCounted > 0 ||
      r.missingFromAggregates > 0 ||
      r.wrongStage > 0,
  );
  console.log(
    bad.length === 0
      ? '\nOK: 0 lost, 0 duplicated, 0 double-counted in every scenario' +
          (noneDroppedLate.size > 0 ? `; 0 dropped late in ${[...noneDroppedLate].join(', ')}` : '')
      : `\nFAILED: ${bad.map((r) => r.scenario).join(', ')}`,
  );
  if (faultFailed.length > 0) {
    console.log(
      `FAILED: the fault of ${faultFailed.join(', ')} could not be injected as planned (see above): ` +
        'those rows do not show the scenario the issue asks for',
    );
  }
  process.exitCode = bad.length === 0 && faultFailed.length === 0 ? 0 : 1;
}

main().catch((error: unknown) => {
  if (error instanceof UsageError) {
    reportUsageError(error, (text) => console.error(text));
    process.exitCode = USAGE_EXIT;
    return;
  }
  console.error(
    'reliability harness failed:',
    error instanceof Error ? (error.stack ?? error.message) : error,
  );
  process.exitCode = 1;
});
