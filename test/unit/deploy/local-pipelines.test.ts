// The local stack iterates over the pipeline registry: every registered pipeline's functions (stack.sh's list),
// Pub/Sub resources (ordering where publishers use an ordering key), DDL files, scheduled jobs and Bronze route.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pipelineDdlFiles } from '../../../deploy/local/apply-sql';
import { bronzeRoutes } from '../../../deploy/local/bronze-standin';
import {
  INGEST_PUSH_SUBSCRIPTION,
  LOCAL_FUNCTION_PORTS,
  functionEnvName,
  localFunctionPort,
  localFunctions,
  localPubSubPlan,
  ingestPushSubscriptionOptions,
  pushEndpointFor,
} from '../../../deploy/local/resources';
import { localJobs, localSchedules } from '../../../deploy/local/scheduler';
import { SCHEDULES } from '../../../deploy/schedules';
import { PIPELINES, pipelineNamed } from '../../../shared/pipelines';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** stack.sh's OFFVIA_FUNCTIONS entries, `name|signature|port`. */
function stackShFunctions(): string[] {
  const text = readFileSync(path.join(ROOT, 'deploy/local/stack.sh'), 'utf8');
  const block = /^OFFVIA_FUNCTIONS=\(\n([\s\S]*?)\n\)/m.exec(text);
  assert.ok(block, 'OFFVIA_FUNCTIONS=( … ) not found in stack.sh');
  return (block[1] ?? '')
    .split('\n')
    .map((line) => line.trim().replace(/^"|"$/g, ''))
    .filter((line) => line !== '');
}

describe('local stack over the pipeline registry', () => {
  it("stack.sh serves exactly every registered pipeline's functions, with the same signatures and ports", () => {
    const expected = localFunctions(PIPELINES).map(
      (f) => `${f.entryPoint}|${f.signature}|${f.defaultPort}`,
    );
    assert.deepEqual([...stackShFunctions()].sort(), [...expected].sort());
    assert.ok(expected.includes('ingestTelemetry|cloudevent|8083'));
    assert.ok(expected.includes('fireTelemetryWindows|http|8084'));
  });

  it('gives every function its own default port, away from the emulators (8085-8089, 9050, 9060)', () => {
    const ports = Object.values(LOCAL_FUNCTION_PORTS);
    assert.equal(new Set(ports).size, ports.length);
    for (const port of ports) assert.ok(![8085, 8086, 8087, 8088, 8089, 9050, 9060].includes(port));
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
      [...booking, ...telemetry],
    );
    for (const f of files) assert.ok(readFileSync(f, 'utf8').trim().length > 0, f);
    assert.deepEqual(
      pipelineDdlFiles(PIPELINES, 'telemetry').map((f) => path.relative(ROOT, f)),
      [...telemetry],
    );
    assert.throws(
      () => pipelineDdlFiles(PIPELINES, 'nope'),
      /no pipeline "nope" \(registered: booking, telemetry\)/,
    );
  });

  it("schedules each pipeline's fireWindows every minute, keeping the product's schedules first", () => {
    const schedules = localSchedules(SCHEDULES, PIPELINES);
    assert.deepEqual(schedules.slice(0, SCHEDULES.length), [...SCHEDULES]);
    assert.deepEqual(
      schedules.map((s) => s.functionName),
      ['schemaSweep', 'fireWindows', 'fireTelemetryWindows'],
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
    assert.deepEqual(bronzeRoutes(PIPELINES), [
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
