// The local stack iterates over the pipeline registry: every registered pipeline's functions (stack.sh's list),
// Pub/Sub resources (ordering where publishers use an ordering key), DDL files, scheduled jobs and Bronze route.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pipelineDdlFiles } from '../../../deploy/local/apply-sql';
import { bronzeRoutes } from '../../../deploy/local/bronze-standin';
import {
  INGEST_PUSH_SUBSCRIPTION,
  functionEnvName,
  localFunctionPort,
  localFunctionPorts,
  localFunctions,
  localPubSubPlan,
  ingestPushSubscriptionOptions,
  pushEndpointFor,
} from '../../../deploy/local/resources';
import { localJobs, localSchedules } from '../../../deploy/local/scheduler';
import { SCHEDULES } from '../../../deploy/schedules';
import { PIPELINES, pipelineNamed } from '../../../shared/pipelines';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** What deploy/local/stack-functions.ts prints (stack.sh's function list at `up`), `name|signature|port`. */
function stackFunctionLines(env: NodeJS.ProcessEnv = process.env): string[] {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', 'deploy/local/stack-functions.ts'],
    {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    },
  );
  return out.split('\n').filter((line) => line !== '');
}

/** Ports the local stack's functions must never take: the emulators', the BigQuery emulator's, the dashboard's. */
const RESERVED_PORTS = [8085, 8086, 8087, 8088, 8089, 8090, 9050, 9060];

describe('local stack over the pipeline registry', () => {
  it("stack.sh serves exactly every registered pipeline's functions, with the same signatures and ports", function () {
    this.timeout(60_000);
    const expected = localFunctions(PIPELINES).map(
      (f) => `${f.entryPoint}|${f.signature}|${f.defaultPort}`,
    );
    assert.deepEqual(stackFunctionLines(), expected);
    assert.ok(expected.includes('ingestBooking|cloudevent|8080'));
    assert.ok(expected.includes('fireWindows|http|8081'));
    assert.ok(expected.includes('schemaSweep|http|8082'));
    assert.ok(expected.includes('ingestTelemetry|cloudevent|8083'));
    assert.ok(expected.includes('fireTelemetryWindows|http|8084'));
  });

  it('gives every function its own default port, away from the emulators and the dashboard, below 32768', () => {
    const ports = [...localFunctionPorts(PIPELINES).values()];
    assert.equal(ports.length, localFunctions(PIPELINES).length);
    assert.equal(new Set(ports).size, ports.length);
    for (const port of ports) {
      assert.ok(!RESERVED_PORTS.includes(port), String(port));
      assert.ok(port > 1024 && port < 32768, String(port));
    }
    assert.equal(functionEnvName('fireTelemetryWindows'), 'FIRE_TELEMETRY_WINDOWS');
    assert.equal(localFunctionPort('ingestTelemetry', {}), 8083);
    assert.equal(
      localFunctionPort('ingestTelemetry', { OFFVIA_INGEST_TELEMETRY_PORT: '8283' }),
      8283,
    );
    assert.throws(
      () => localFunctionPort('ingestTelemetry', { OFFVIA_INGEST_TELEMETRY_PORT: 'x' }),
      /OFFVIA_INGEST_TELEMETRY_PORT/,
    );
  });

  it('keeps the booking push subscription as before: no ordering, no retry or dead-letter policy', () => {
    const plan = localPubSubPlan(pipelineNamed('booking'), 'p', 8080);
    assert.equal(plan.ingest.name, INGEST_PUSH_SUBSCRIPTION);
    assert.deepEqual(
      plan.ingest.options,
      ingestPushSubscriptionOptions(pushEndpointFor('p', 'booking-events', 8080)),
    );
    assert.equal(plan.topic.name, 'booking-events');
    assert.deepEqual(
      plan.pullSubscriptions.map((s) => `${s.topic}/${s.name}`),
      ['booking-events-dlq/booking-events-dlq-hold', 'booking-events/booking-events-bronze'],
    );
  });

  it('orders the telemetry ingest subscription (publishers use deviceId as ordering key) and pushes to its port', () => {
    const plan = localPubSubPlan(pipelineNamed('telemetry'), 'p', 8283);
    assert.equal(plan.ingest.name, 'telemetry-events-ingest');
    assert.equal(plan.ingest.options.enableMessageOrdering, true);
    assert.equal(
      plan.ingest.options.pushConfig?.pushEndpoint,
      'http://127.0.0.1:8283/projects/p/topics/telemetry-events',
    );
    assert.equal(plan.ingest.options.retryPolicy, undefined);
    assert.equal(plan.ingest.options.deadLetterPolicy, undefined);
    assert.deepEqual(
      plan.pullSubscriptions.map((s) => `${s.topic}/${s.name}`),
      [
        'telemetry-events-dlq/telemetry-events-dlq-hold',
        'telemetry-events/telemetry-events-bronze',
      ],
    );
  });

  it("applies every pipeline's DDL files, booking first, each file existing", () => {
    const files = pipelineDdlFiles(PIPELINES);
    const booking = pipelineNamed('booking').tables.ddlFiles;
    const telemetry = pipelineNamed('telemetry').tables.ddlFiles;
    assert.deepEqual(
      files.map((f) => path.relative(ROOT, f)),
      PIPELINES.flatMap((p) => p.tables.ddlFiles),
    );
    assert.deepEqual(
      files.slice(0, booking.length).map((f) => path.relative(ROOT, f)),
      [...booking],
    );
    for (const f of files) assert.ok(readFileSync(f, 'utf8').trim().length > 0, f);
    assert.deepEqual(
      pipelineDdlFiles(PIPELINES, 'telemetry').map((f) => path.relative(ROOT, f)),
      [...telemetry],
    );
    assert.throws(
      () => pipelineDdlFiles(PIPELINES, 'nope'),
      new RegExp(`no pipeline "nope" \\(registered: ${PIPELINES.map((p) => p.name).join(', ')}\\)`),
    );
  });

  it("schedules each pipeline's fireWindows every minute, keeping the product's schedules first", () => {
    const schedules = localSchedules(SCHEDULES, PIPELINES);
    assert.deepEqual(schedules.slice(0, SCHEDULES.length), [...SCHEDULES]);
    assert.deepEqual(schedules.map((s) => s.functionName).slice(0, 3), [
      'schemaSweep',
      'fireWindows',
      'fireTelemetryWindows',
    ]);
    assert.deepEqual(
      [...schedules.map((s) => s.functionName)].sort(),
      PIPELINES.flatMap((p) => [
        p.functions.fireWindows.entryPoint,
        ...(p.functions.schemaSweep === null ? [] : [p.functions.schemaSweep.entryPoint]),
      ]).sort(),
    );
    const jobs = localJobs(schedules, {
      OFFVIA_SCHEMA_SWEEP_URL: 'http://h:1',
      OFFVIA_FIRE_WINDOWS_URL: 'http://h:2',
      OFFVIA_FIRE_TELEMETRY_WINDOWS_URL: 'http://h:3',
    });
    assert.deepEqual(jobs.at(-1), {
      functionName: 'fireTelemetryWindows',
      url: 'http://h:3',
      everySeconds: 60,
    });
  });

  it("routes each pipeline's Bronze subscription to its own Bronze table", () => {
    assert.deepEqual(
      bronzeRoutes(PIPELINES).map((r) => r.pipeline),
      PIPELINES.filter((p) => p.pubsub.subscriptions.bronze !== null).map((p) => p.name),
    );
    assert.deepEqual(bronzeRoutes(PIPELINES).slice(0, 2), [
      {
        pipeline: 'booking',
        subscription: 'booking-events-bronze',
        datasetId: 'offvia_bronze',
        tableId: 'raw_bookings',
      },
      {
        pipeline: 'telemetry',
        subscription: 'telemetry-events-bronze',
        datasetId: 'offvia_telemetry_bronze',
        tableId: 'raw_readings',
      },
    ]);
  });
});
