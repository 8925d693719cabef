// The telemetry simulator on a running local stack: seeds the device directory, publishes the planned stream phase by
// phase (plan.ts), reads back Silver, the dead-letter table and the latest panes, and checks them (check.ts).
import { BigQuery } from '@google-cloud/bigquery';
import { PubSub } from '@google-cloud/pubsub';
import Table from 'cli-table3';
import { cellText } from '../../../shared/ops/output';
import { pipelineNamed } from '../../../shared/pipelines';
import {
  TELEMETRY_STRATEGY,
  TELEMETRY_WATERMARK_POLICY,
  TOP_N,
} from '../../../shared/pipelines/telemetry/definition';
import { pollUntil, queryRows, stackBigQuery, stackEnv } from '../layers';
import { localReferenceRefreshMs } from '../resources';
import { primeDirectory, seedDirectory } from './directory';
import { type PushRelay, relayPushSubscription } from '../push-relay-loop';
import { checkTelemetryRun, type CheckResult, type Observed } from './check';
import { expectedOutcome } from './expected';
import {
  planTelemetryRun,
  publishPhases,
  SIM_DEVICE_PREFIX,
  SIM_REGIONS,
  type PlanOptions,
  type TelemetryPlan,
} from './plan';

/** What to simulate (plan.ts) and how to run it. */
export interface TelemetryDemoOptions extends Omit<PlanOptions, 'nowMs'> {
  /** Longest wait for the messages to land, and again for the panes, ms; default from the run size. */
  readonly timeoutMs?: number | undefined;
  /** Deliveries in flight through the push relay (push-relay-loop.ts); undefined: the emulator's push. */
  readonly pushRelayInFlight?: number | undefined;
  /** Progress lines (stderr by default). */
  readonly log?: (line: string) => void;
}

/** Wall-clock durations of the run's phases, ms. */
export interface TelemetryDemoTimings {
  /** Seeding the directory and priming the ingest function's snapshot of it (directory.ts). */
  readonly seedMs: number;
  readonly publishMs: number;
  /** From the first publish until every message was in Silver or the dead-letter table. */
  readonly routedMs: number;
  /** From then until the latest panes matched (or the wait ended). */
  readonly panesMs: number;
  readonly totalMs: number;
}

/** The outcome of a run: the checker's verdict and how long each phase took. */
export interface TelemetryDemoResult extends CheckResult {
  readonly plan: TelemetryPlan;
  readonly timings: TelemetryDemoTimings;
}

/** Seconds between polls: the BigQuery emulator is shared with the functions, so poll gently. */
const POLL_MS = 3_000;

/** The pipeline's names, from its definition. */
function names() {
  const p = pipelineNamed('telemetry');
  const [device, region] = p.aggregations;
  const ref = p.tables.reference[0];
  if (
    device === undefined ||
    region === undefined ||
    ref === undefined ||
    p.tables.bronze === null
  ) {
    throw new Error('the telemetry definition lacks its aggregations, reference table or Bronze');
  }
  const t = (r: { datasetId: string; tableId: string }) => `\`${r.datasetId}.${r.tableId}\``;
  return {
    topic: p.pubsub.topic,
    silver: t(p.tables.silver),
    deadLetter: t(p.tables.quarantine),
    bronze: t(p.tables.bronze),
    devices: ref,
    devicePanes: t(device.goldTable),
    regionPanes: t(region.goldTable),
  };
}

/** A BigQuery cell as text (NUMERIC in plain notation), or null for NULL. */
function textOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : cellText(value);
}

/** The topic of the pipeline, publishing with message ordering on (ordering key deviceId). */
function orderedTopic(pubsub: PubSub) {
  return pubsub.topic(names().topic, {
    messageOrdering: true,
    batching: { maxMessages: 500, maxMilliseconds: 20 },
  });
}

/** Publishes `messages` in order; resolves with their message ids, index by index. */
async function publish(
  topic: ReturnType<typeof orderedTopic>,
  messages: TelemetryPlan['messages'],
): Promise<string[]> {
  return Promise.all(
    messages.map((m) =>
      topic.publishMessage({
        data: Buffer.from(m.data, 'utf8'),
        attributes: { ...m.attributes },
        orderingKey: m.orderingKey,
      }),
    ),
  );
}

/** The query of `columns` of the latest pane per (`key`, window) of `table` where `where` holds, from `@fromMs`. */
function latestPaneSql(columns: string, table: string, key: string, where: string): string {
  return `SELECT ${columns}
     FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY ${key}, window_start
                                        ORDER BY pane_index DESC, emitted_at DESC, insert_id) AS pane_rank
           FROM ${table}
           WHERE ${where} AND UNIX_MILLIS(window_start) >= @fromMs)
     WHERE pane_rank = 1`;
}

/** The latest pane per (device, window) and per (region, window) of the simulated devices and regions. */
async function latestPanes(
  bq: BigQuery,
  fromMs: number,
): Promise<Pick<Observed, 'devicePanes' | 'regionPanes'>> {
  const n = names();
  const device = await queryRows(
    bq,
    latestPaneSql(
      `device_id, UNIX_MILLIS(window_start) AS window_start_ms, reading_count, temperature_avg_c,
       temperature_min_c, temperature_max_c, pane_timing`,
      n.devicePanes,
      'device_id',
      'STARTS_WITH(device_id, @prefix)',
    ),
    { prefix: SIM_DEVICE_PREFIX, fromMs },
  );
  const region = await queryRows(
    bq,
    latestPaneSql(
      'region, UNIX_MILLIS(window_start) AS window_start_ms, top_devices',
      n.regionPanes,
      'region',
      'region IN UNNEST(@regions)',
    ),
    { regions: [...SIM_REGIONS], fromMs },
  );
  return {
    devicePanes: device.map((r) => ({
      device_id: String(r.device_id),
      window_start_ms: Number(r.window_start_ms),
      reading_count: Number(r.reading_count),
      temperature_avg_c: textOrNull(r.temperature_avg_c),
      temperature_min_c: textOrNull(r.temperature_min_c),
      temperature_max_c: textOrNull(r.temperature_max_c),
      pane_timing: String(r.pane_timing),
    })),
    regionPanes: region.map((r) => ({
      region: String(r.region),
      window_start_ms: Number(r.window_start_ms),
      top_devices: ((r.top_devices as Record<string, unknown>[] | null) ?? []).map((t) => ({
        rank: Number(t.rank),
        device_id: String(t.device_id),
        max_temperature_c: cellText(t.max_temperature_c),
      })),
    })),
  };
}

/**
 * Runs the simulator against the environment's stack; never throws for a mismatch: the result lists the failures.
 * @throws on an infrastructure failure (the stack is down, a query fails)
 */
export async function runTelemetryDemo(
  options: TelemetryDemoOptions,
): Promise<TelemetryDemoResult> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const env = stackEnv();
  const bq = stackBigQuery(env);
  const pubsub = new PubSub({ projectId: env.projectId });
  const n = names();
  const startedMs = Date.now();
  // Rows of this run are the ones written after this instant (the emulator compares INT64, not TIMESTAMP, params).
  const runParams = { sinceMs: startedMs - 1_000, prefix: SIM_DEVICE_PREFIX };
  const silverOfRun = `${n.silver} WHERE UNIX_MILLIS(ingestion_timestamp) >= @sinceMs AND STARTS_WITH(device_id, @prefix)`;
  const deadOfRun = `${n.deadLetter} WHERE UNIX_MILLIS(parse_time) >= @sinceMs AND STARTS_WITH(device_id, @prefix)`;
  let relay: PushRelay | undefined;
  try {
    const plan = planTelemetryRun({ ...options, nowMs: startedMs });
    const seeded = await seedDirectory(bq, n.devices, plan);
    if (options.pushRelayInFlight !== undefined) {
      relay = await relayPushSubscription(
        pubsub,
        env.projectId,
        pipelineNamed('telemetry').pubsub.subscriptions.ingest,
        options.pushRelayInFlight,
      );
      log(
        `relaying the ingest subscription with up to ${options.pushRelayInFlight} deliveries in flight`,
      );
    }
    await primeDirectory(
      bq,
      pubsub,
      n,
      Date.now(),
      localReferenceRefreshMs(),
      120_000,
      plan.firstWindowStartMs - 60_000,
    );
    const seedMs = Date.now() - startedMs;
    log(
      `seeded ${seeded} devices into the directory (${plan.directory.length} known, ${plan.unknownDevices.length} left out); ` +
        `windows ${new Date(plan.firstWindowStartMs).toISOString()} to ${new Date(plan.lastWindowEndMs).toISOString()}`,
    );

    // Published phase by phase (plan.ts, publishPhases): each event-time minute once the minutes before it are
    // routed, so the watermark does not jump ahead of the readings still in flight.
    const phases = publishPhases(plan.messages, TELEMETRY_WATERMARK_POLICY.maxOutOfOrdernessMs);
    const timeoutMs = options.timeoutMs ?? 120_000 + plan.messages.length * 60;
    const topic = orderedTopic(pubsub);
    const publishStartMs = Date.now();
    const deadlineMs = publishStartMs + timeoutMs;
    const ids: string[] = [];
    let publishMs = 0;
    let routed = 0;
    let allRouted = true;
    for (const [p, end] of phases.entries()) {
      const t0 = Date.now();
      ids.push(...(await publish(topic, plan.messages.slice(ids.length, end))));
      publishMs += Date.now() - t0;
      log(
        `published phase ${p + 1}/${phases.length}: messages ${ids.length}/${plan.messages.length} to ${n.topic}`,
      );
      allRouted = await pollUntil(deadlineMs, POLL_MS, async () => {
        const [r] = await queryRows(
          bq,
          `SELECT (SELECT COUNT(DISTINCT source_message_id) FROM ${silverOfRun}) AS silver,
                  (SELECT COUNT(DISTINCT source_message_id) FROM ${deadOfRun}) AS dead`,
          runParams,
        );
        const now = Number(r?.silver ?? 0) + Number(r?.dead ?? 0);
        if (now !== routed) {
          const s = (Date.now() - publishStartMs) / 1000;
          log(
            `routed ${now}/${plan.messages.length} (Silver ${Number(r?.silver)}, dead letter ${Number(r?.dead)}) after ${s.toFixed(0)} s, ${(now / s).toFixed(1)} msg/s`,
          );
        }
        routed = now;
        return now >= end;
      });
      if (!allRouted) break;
    }
    if (!allRouted && ids.length < plan.messages.length) {
      // The check needs every message id; the rest is published unpaced and reported as not routed in time.
      ids.push(...(await publish(topic, plan.messages.slice(ids.length))));
    }
    const routedMs = Date.now() - publishStartMs;

    // Readings without eventTs count at their publish time: Pub/Sub's, read from Bronze (independent of the pipeline).
    const noTs = plan.messages
      .map((m, i) => ({ m, i }))
      .filter(({ m }) => m.expect.kind === 'reading' && m.expect.eventTsMs === null);
    const publishTimes = new Map<string, number>();
    await pollUntil(Date.now() + 60_000, POLL_MS, async () => {
      const found = await queryRows(
        bq,
        `SELECT message_id, UNIX_MILLIS(publish_time) AS ms FROM ${n.bronze} WHERE message_id IN UNNEST(@ids)`,
        { ids: noTs.map(({ i }) => ids[i] as string) },
      );
      for (const r of found) publishTimes.set(String(r.message_id), Number(r.ms));
      return noTs.every(({ i }) => publishTimes.has(ids[i] as string));
    });
    const publishTimeOf = (i: number) => publishTimes.get(ids[i] as string);
    const eventTimeOf = (i: number) => {
      const e = plan.messages[i]?.expect;
      return e?.kind === 'reading' ? (e.eventTsMs ?? publishTimeOf(i)) : undefined;
    };
    // Readings without a publish time cannot be placed: left out of the expectation, and the failure says so.
    const missingPublishTimes = noTs.filter(({ i }) => publishTimeOf(i) === undefined);
    const expected =
      missingPublishTimes.length > 0
        ? expectedOutcome(
            plan.messages.filter((_, i) => !missingPublishTimes.some((x) => x.i === i)),
            () => undefined,
            TOP_N,
          )
        : expectedOutcome(plan.messages, publishTimeOf, TOP_N);
    const fromMs = Math.min(
      plan.firstWindowStartMs - 60_000,
      ...[...expected.devicePanes.values()].map((p) => p.windowStartMs),
    );

    // Accumulating panes: count in SQL until the totals match, then read and compare.
    const panesStartMs = Date.now();
    let result: CheckResult | undefined;
    let lastCount = '';
    await pollUntil(panesStartMs + timeoutMs, POLL_MS, async () => {
      const [c] = await queryRows(
        bq,
        latestPaneSql(
          'COUNT(*) AS panes, IFNULL(SUM(reading_count), 0) AS readings',
          n.devicePanes,
          'device_id',
          'STARTS_WITH(device_id, @prefix)',
        ),
        { prefix: SIM_DEVICE_PREFIX, fromMs },
      );
      const count = `${Number(c?.panes)} device panes counting ${Number(c?.readings)} readings`;
      if (count !== lastCount) {
        log(
          `${count} (expected ${expected.devicePanes.size} panes, ${expected.readings} readings)`,
        );
        lastCount = count;
      }
      if (Number(c?.panes) < expected.devicePanes.size || Number(c?.readings) < expected.readings) {
        return false;
      }
      result = await readAndCheck();
      return result.failures.length === 0;
    });
    result ??= await readAndCheck();
    const panesMs = Date.now() - panesStartMs;

    async function readAndCheck(): Promise<CheckResult> {
      const silver = await queryRows(
        bq,
        `SELECT source_message_id, event_id, reference_status, UNIX_MILLIS(ingestion_timestamp) AS ingestion_ms
         FROM ${silverOfRun}`,
        runParams,
      );
      const dead = await queryRows(
        bq,
        `SELECT source_message_id, stage FROM ${deadOfRun}`,
        runParams,
      );
      const panes = await latestPanes(bq, fromMs);
      const checked = checkTelemetryRun(
        plan.messages,
        ids,
        expected,
        {
          silver: silver.map((r) => ({
            source_message_id: String(r.source_message_id),
            event_id: String(r.event_id),
            reference_status: String(r.reference_status),
            ingestion_ms: Number(r.ingestion_ms),
          })),
          deadLetter: dead.map((r) => ({
            source_message_id: String(r.source_message_id),
            stage: String(r.stage),
          })),
          ...panes,
        },
        {
          allowedLatenessMs: TELEMETRY_STRATEGY.allowedLatenessMs,
          maxOutOfOrdernessMs: TELEMETRY_WATERMARK_POLICY.maxOutOfOrdernessMs,
          idleTimeoutMs: TELEMETRY_WATERMARK_POLICY.idleTimeoutMs,
        },
        eventTimeOf,
      );
      const extra = [
        ...(allRouted
          ? []
          : [`not every message reached Silver or the dead-letter table within ${timeoutMs} ms`]),
        ...(missingPublishTimes.length > 0
          ? [
              `${missingPublishTimes.length} readings without eventTs have no publish time in Bronze; left out of the expectation`,
            ]
          : []),
      ];
      return { failures: [...extra, ...checked.failures], summary: checked.summary };
    }

    return {
      ...result,
      plan,
      timings: { seedMs, publishMs, routedMs, panesMs, totalMs: Date.now() - startedMs },
    };
  } finally {
    if (relay !== undefined) {
      log(`push relay: ${relay.failures()} deliveries refused or failed (each redelivered)`);
      await relay.stop();
    }
    await pubsub.close();
  }
}

/** The summary table the demo prints. */
export function formatTelemetrySummary(result: TelemetryDemoResult): string {
  const s = result.summary;
  const t = result.timings;
  const table = new Table({
    head: ['check', 'expected', 'observed'],
    style: { head: [], border: [] },
  });
  const stages = Object.entries(s.deadLetterByStage)
    .sort()
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  table.push(
    ['messages published', String(s.published), ''],
    ['in Silver (readings)', String(s.expectedSilver), String(s.inSilver)],
    [
      'in the dead-letter table',
      String(s.expectedDeadLetter),
      `${s.inDeadLetter}${stages ? ` (${stages})` : ''}`,
    ],
    ['readings of unknown devices (Silver, UNKNOWN_DEVICE)', '', String(s.unknownDeviceReadings)],
    ['Silver duplicate rows (insertId repeats)', '', String(s.silverDuplicateRows)],
    [
      'device panes (latest = expected)',
      String(s.devicePanesExpected),
      String(s.devicePanesMatching),
    ],
    ['  of them closed (ON_TIME or LATE)', '', String(s.devicePanesClosed)],
    [
      'regional top-10 (latest = expected)',
      String(s.regionPanesExpected),
      String(s.regionPanesMatching),
    ],
    ['readings past the allowed lateness', '0', String(s.readingsPastLateness)],
    [
      'time (s): seed, publish, routed, panes, total',
      '',
      [t.seedMs, t.publishMs, t.routedMs, t.panesMs, t.totalMs]
        .map((ms) => (ms / 1000).toFixed(1))
        .join(', '),
    ],
  );
  return `${table.toString()}\n`;
}

/** The demo's telemetry branch: run, print the table and the failures; 0 when the check passed, 1 otherwise. */
export async function runTelemetryDemoMain(options: TelemetryDemoOptions): Promise<number> {
  const result = await runTelemetryDemo(options);
  process.stdout.write(
    `telemetry demo: ${options.devices} devices × ${options.minutes} min × ${options.readingsPerMinute}/min, seed ${options.seed}\n`,
  );
  process.stdout.write(formatTelemetrySummary(result));
  if (result.failures.length > 0) {
    process.stdout.write(`FAILED:\n${result.failures.map((f) => `  - ${f}`).join('\n')}\n`);
    return 1;
  }
  process.stdout.write(
    'OK: every message in exactly one of Silver or the dead-letter table, as planned; every device pane and ' +
      'regional top-10 equal to the independent computation\n',
  );
  return 0;
}
