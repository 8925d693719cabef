// The telemetry pipeline's functions from its definition, in process, on the emulators with the real clients: pushed
// messages through the generic ingest (Silver, dead letter, the keyed windows of both aggregations), then the generic
// fireWindows past the window's end (device panes and the regional top-N in gold), with a redelivery counted once.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { BigQuery } from '@google-cloud/bigquery';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import '../../../functions';

import { DeliveryRefused, TransientError } from '../../../shared/errors';
import { Logger, type LogEntry } from '../../../shared/logging/logger';
import type { AnyPipelineDefinition } from '../../../shared/pipeline/definition';
import {
  createPipelineFireDeps,
  createPipelineIngestDeps,
} from '../../../shared/pipeline/runtime/compose';
import { firePipelineWindowsHttp } from '../../../shared/pipeline/runtime/fire';
import {
  ingestPipelinePushedEvent,
  type PipelineIngestDeps,
  type PipelineIngestOutcome,
} from '../../../shared/pipeline/runtime/ingest';
import { aggregationNamespace, aggregationPaths } from '../../../shared/pipeline/runtime/namespace';
import { TELEMETRY_PIPELINE } from '../../../shared/pipelines/telemetry/definition';
import { applyPipelineDdl, requireStack, runTag, stackClients } from '../../support/drift-stack';
import { closeServer, listenLocal, schedulerPost } from '../../support/fire-windows-http';
import { uniqueRoot } from '../../support/firestore-windows';

/**
 * A NUMERIC as its shortest decimal text: the emulator renders CAST(NUMERIC AS STRING) with all nine fraction
 * digits, BigQuery without trailing zeros. Exact for the few-digit values of this test.
 */
function decimal(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string' && typeof value !== 'number') {
    throw new TypeError(`not a NUMERIC value: ${JSON.stringify(value)}`);
  }
  return String(Number(value));
}
const MINUTE = 60_000;

describe('telemetry functions from the definition, on the emulators', function () {
  let bigquery: BigQuery;
  let projectId: string;
  const tag = runTag();
  const region = `r${tag}`;
  const d1 = `d1-${tag}`;
  const d2 = `d2-${tag}`;
  const unknown = `du-${tag}`;
  // A window 10 minutes back (event times must be within 7 days and not ahead of receipt).
  const T = Math.floor(Date.now() / MINUTE) * MINUTE - 10 * MINUTE;
  let nowMs = T + 45_000;
  const now = () => nowMs;
  // Its own Firestore root, so the run's watermark and windows are its own.
  const definition: AnyPipelineDefinition = {
    ...TELEMETRY_PIPELINE,
    firestore: { windowsRoot: uniqueRoot('itTelemetry'), schemaDriftRoot: null },
  };
  const logs: LogEntry[] = [];
  let deps: PipelineIngestDeps;

  before(async function () {
    requireStack();
    ({ bigquery, projectId } = stackClients());
    await applyPipelineDdl(bigquery, projectId, TELEMETRY_PIPELINE);
    await bigquery
      .dataset('offvia_telemetry_ref')
      .table('devices')
      .insert([
        { device_id: d1, region, site: 'Milano' },
        { device_id: d2, region, site: 'Torino' },
      ]);
    deps = await createPipelineIngestDeps(
      definition,
      process.env,
      new Logger('ingestTelemetry', (e) => logs.push(e)),
      { now },
    );
  });

  after(async function () {
    if (bigquery === undefined) return;
    await bigquery.query({
      query: `DELETE FROM \`${projectId}.offvia_telemetry_ref.devices\` WHERE device_id IN ('${d1}', '${d2}')`,
    });
  });

  let seq = 0;
  /** A CloudEvent as Eventarc pushes it (`messagePublished`), data base64. */
  function pushed(
    data: string | Buffer,
    attributes: Record<string, string>,
    publishTimeMs: number,
    messageId = `m${tag}-${++seq}`,
  ) {
    return {
      id: messageId,
      data: {
        message: {
          data: (typeof data === 'string' ? Buffer.from(data) : data).toString('base64'),
          attributes,
          messageId,
          publishTime: new Date(publishTimeMs).toISOString(),
        },
        subscription: 'projects/p/subscriptions/telemetry-events-ingest',
      },
    };
  }
  const ts = (ms: number) => new Date(ms).toISOString();

  const v1 = pushed('{"temp": 20.5}', { deviceId: d1, eventTs: ts(T + 5_000) }, T + 6_000);
  const v2 = pushed(
    '{"temperatureC": 22.25, "humidityPct": 40}',
    { deviceId: d1, eventTs: ts(T + 15_000), contractVersion: '2' },
    T + 16_000,
  );
  const noEventTs = pushed('{"temp": 30}', { deviceId: d2 }, T + 20_000);
  const unknownDevice = pushed(
    '{"temp": 25}',
    { deviceId: unknown, eventTs: ts(T + 25_000) },
    T + 26_000,
  );
  const rejected = {
    malformed: pushed('{"temp": ', { deviceId: d1, eventTs: ts(T + 30_000) }, T + 30_000),
    notUtf8: pushed(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { deviceId: d1 }, T + 30_000),
    retired: pushed(
      '{"tempF": 70.1}',
      { deviceId: d1, eventTs: ts(T + 30_000), contractVersion: '0' },
      T + 30_000,
    ),
    unknownVersion: pushed(
      '{"temp": 20}',
      { deviceId: d1, eventTs: ts(T + 30_000), contractVersion: '9' },
      T + 30_000,
    ),
    outOfRange: pushed('{"temp": 300}', { deviceId: d2, eventTs: ts(T + 30_000) }, T + 30_000),
  };
  const outcomes = new Map<string, PipelineIngestOutcome>();

  it('routes each pushed message to Silver or the dead-letter table, and counts a redelivery once', async function () {
    for (const [name, event] of Object.entries({
      v1,
      v2,
      noEventTs,
      unknownDevice,
      ...rejected,
    })) {
      outcomes.set(name, await ingestPipelinePushedEvent(event, deps));
    }
    const redelivered = await ingestPipelinePushedEvent(v1, deps);

    for (const name of ['v1', 'v2', 'noEventTs']) {
      const o = outcomes.get(name);
      assert.equal(o?.destination, 'silver', name);
      assert.deepEqual(
        o.windows,
        { telemetry_device_1m: 'counted', telemetry_region_top_1m: 'counted' },
        name,
      );
    }
    const u = outcomes.get('unknownDevice');
    assert.equal(u?.destination, 'silver');
    // No region: counted per device, ranked nowhere.
    assert.deepEqual(u.windows, {
      telemetry_device_1m: 'counted',
      telemetry_region_top_1m: 'skipped',
    });
    assert.equal(redelivered.destination, 'silver');
    assert.deepEqual(redelivered.windows, {
      telemetry_device_1m: 'duplicate',
      telemetry_region_top_1m: 'duplicate',
    });
    const stages = Object.fromEntries(
      Object.keys(rejected).map((name) => {
        const o = outcomes.get(name);
        assert.equal(o?.destination, 'quarantine', name);
        return [name, [o.stage, o.version]];
      }),
    );
    assert.deepEqual(stages, {
      malformed: ['PARSE_JSON', '1'],
      notUtf8: ['PARSE_JSON', '1'],
      retired: ['SCHEMA_VALIDATION', '0'],
      unknownVersion: ['SCHEMA_VALIDATION', null],
      outOfRange: ['RANGE_VALIDATION', '1'],
    });
    // The logs say where each message went.
    const quarantined = logs.filter((l) => l.message === 'message quarantined');
    assert.equal(quarantined.length, 5);
    assert.ok(quarantined.every((l) => l.pipeline === 'telemetry' && l.outcome === 'quarantine'));
    const silverLines = logs.filter((l) => l.message === 'silver row written');
    assert.equal(silverLines.length, 5); // four readings and the redelivery
  });

  it('wrote the Silver rows with contract_version and event_time_source', async function () {
    const [rows] = await bigquery.query({
      query: `SELECT device_id, event_id, CAST(temperature_c AS STRING) AS t, CAST(humidity_pct AS STRING) AS h,
                     contract_version, event_time_source, region, reference_status, source_message_id,
                     event_timestamp
              FROM \`${projectId}.offvia_telemetry_silver.readings_dedup\`
              WHERE device_id IN ('${d1}', '${d2}', '${unknown}') ORDER BY event_timestamp`,
    });
    const got = (rows as Record<string, unknown>[]).map((r) => [
      r.device_id,
      decimal(r.t),
      decimal(r.h),
      r.contract_version,
      r.event_time_source,
      r.region,
      r.reference_status,
    ]);
    assert.deepEqual(got, [
      [d1, '20.5', null, '1', 'ATTRIBUTE', region, 'KNOWN'],
      [d1, '22.25', '40', '2', 'ATTRIBUTE', region, 'KNOWN'],
      [d2, '30', null, '1', 'PUBLISH_TIME', region, 'KNOWN'],
      [unknown, '25', null, '1', 'ATTRIBUTE', null, 'UNKNOWN_DEVICE'],
    ]);
    // The event id is the insertId (and the Silver column).
    const v1Outcome = outcomes.get('v1');
    assert.equal(v1Outcome?.destination, 'silver');
    assert.equal((rows as Record<string, unknown>[])[0]?.event_id, v1Outcome.eventId);
  });

  it('wrote the dead-letter rows per sql/pipelines/telemetry/030', async function () {
    const ids = Object.values(rejected).map((e) => `'${e.id}'`);
    const [rows] = await bigquery.query({
      query: `SELECT source_message_id, stage, error, device_id, payload, payload_base64, contract_version,
                     parse_time, TO_JSON_STRING(attributes) AS attributes
              FROM \`${projectId}.offvia_telemetry_quarantine.dead_letter\`
              WHERE source_message_id IN (${ids.join(', ')})`,
    });
    const byId = new Map((rows as Record<string, unknown>[]).map((r) => [r.source_message_id, r]));
    assert.equal(byId.size, 5);
    const row = (name: keyof typeof rejected) => {
      const r = byId.get(rejected[name].id);
      assert.ok(r, name);
      return r;
    };
    assert.equal(row('malformed').stage, 'PARSE_JSON');
    assert.equal(row('malformed').payload, '{"temp": ');
    assert.equal(row('malformed').payload_base64, null);
    assert.equal(row('malformed').device_id, d1);
    assert.equal(
      row('notUtf8').payload_base64,
      Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString('base64'),
    );
    assert.match(String(row('retired').error), /contract version "0" is retired/);
    assert.equal(row('retired').contract_version, '0');
    assert.equal(row('unknownVersion').contract_version, null);
    assert.match(String(row('unknownVersion').error), /unknown contract version "9"/);
    assert.equal(row('outOfRange').stage, 'RANGE_VALIDATION');
    assert.equal(row('outOfRange').device_id, d2);
    assert.equal(row('outOfRange').contract_version, '1');
    assert.match(String(row('outOfRange').attributes), new RegExp(`"deviceId":"${d2}"`));
    const parseTime = row('outOfRange').parse_time as { value: string };
    assert.equal(Date.parse(parseTime.value), T + 45_000);
  });

  it('fires both aggregations past the window end: device panes and the regional top-N, redelivery counted once', async function () {
    nowMs = T + 4 * MINUTE;
    const fire = createPipelineFireDeps(
      definition,
      process.env,
      new Logger('fireTelemetryWindows', (e) => logs.push(e)),
      { now },
    );
    const answer = await firePipelineWindowsHttp(fire);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const summaries = answer.body.aggregations as Record<string, Record<string, unknown>>;
    assert.deepEqual(Object.keys(summaries).sort(), [
      'telemetry_device_1m',
      'telemetry_region_top_1m',
    ]);
    assert.ok(Number(summaries.telemetry_device_1m?.panesEmitted) >= 3);
    assert.ok(Number(summaries.telemetry_region_top_1m?.panesEmitted) >= 1);

    const [devices] = await bigquery.query({
      query: `SELECT device_id, reading_count, CAST(temperature_avg_c AS STRING) AS avg_c,
                     CAST(temperature_min_c AS STRING) AS min_c, CAST(temperature_max_c AS STRING) AS max_c,
                     pane_timing, window_start
              FROM \`${projectId}.offvia_telemetry_gold.device_minute_panes\`
              WHERE device_id IN ('${d1}', '${d2}', '${unknown}')
              QUALIFY ROW_NUMBER() OVER (PARTITION BY device_id ORDER BY pane_index DESC) = 1
              ORDER BY device_id`,
    });
    assert.deepEqual(
      (devices as Record<string, unknown>[]).map((r) => [
        r.device_id,
        r.reading_count,
        decimal(r.avg_c),
        decimal(r.min_c),
        decimal(r.max_c),
        r.pane_timing,
        Date.parse((r.window_start as { value: string }).value),
      ]),
      [
        // v1 delivered twice, counted once.
        [d1, 2, '21.375', '20.5', '22.25', 'ON_TIME', T],
        [d2, 1, '30', '30', '30', 'ON_TIME', T],
        [unknown, 1, '25', '25', '25', 'ON_TIME', T],
      ],
    );
    const [top] = await bigquery.query({
      query: `SELECT region, pane_timing, TO_JSON_STRING(top_devices) AS top
              FROM \`${projectId}.offvia_telemetry_gold.region_top_devices\`
              WHERE region = '${region}'
              QUALIFY ROW_NUMBER() OVER (PARTITION BY region ORDER BY pane_index DESC) = 1`,
    });
    assert.equal(top.length, 1);
    const ranking = JSON.parse(String((top[0] as Record<string, unknown>).top)) as {
      rank: number;
      device_id: string;
      max_temperature_c: string | number;
    }[];
    assert.deepEqual(
      ranking.map((d) => [d.rank, d.device_id, decimal(d.max_temperature_c)]),
      [
        [1, d2, '30'],
        [2, d1, '22.25'],
      ],
    );
  });

  it('keeps each aggregation in its own Firestore namespace (watermark and key groups)', async function () {
    const { firestore } = stackClients();
    for (const a of definition.aggregations) {
      const paths = aggregationPaths(aggregationNamespace(definition, a));
      const watermark = await firestore.doc(paths.watermark).get();
      assert.ok(watermark.exists, paths.watermark);
      const groups = await firestore.collection(paths.keyGroups).limit(1).get();
      assert.equal(groups.size, 1, paths.keyGroups);
    }
  });

  it('refuses the delivery (DeliveryRefused) when BigQuery is unreachable, and loses nothing', async function () {
    const broken: PipelineIngestDeps = {
      ...deps,
      writer: {
        insertRows: () => Promise.reject(new Error('connect ECONNREFUSED')),
      },
    };
    const event = pushed('{"temp": 21}', { deviceId: d1, eventTs: ts(T + 50_000) }, T + 50_000);
    await assert.rejects(ingestPipelinePushedEvent(event, broken), (err: unknown) => {
      assert.ok(err instanceof DeliveryRefused);
      assert.doesNotMatch(err.message, /ECONNREFUSED/);
      return true;
    });
    assert.ok(
      logs.some(
        (l) =>
          l.outcome === 'retry' &&
          l.message_id === event.id &&
          /ECONNREFUSED/.test(String(l.error)),
      ),
    );
    // Redelivered once BigQuery is back: in Silver.
    const again = await ingestPipelinePushedEvent(event, deps);
    assert.equal(again.destination, 'silver');
  });

  it('refuses the delivery when Firestore fails after Silver, and the redelivery counts the reading once', async function () {
    const unavailable = new TransientError('commit key group', '14 UNAVAILABLE: Firestore down');
    const broken: PipelineIngestDeps = {
      ...deps,
      aggregations: deps.aggregations.map((a) => ({
        ...a,
        pipeline: { record: () => Promise.reject(unavailable) },
      })),
    };
    const event = pushed('{"temp": 23}', { deviceId: d2, eventTs: ts(T + 55_000) }, T + 55_000);
    await assert.rejects(ingestPipelinePushedEvent(event, broken), DeliveryRefused);
    assert.ok(logs.some((l) => l.outcome === 'retry' && /Firestore down/.test(String(l.error))));
    const again = await ingestPipelinePushedEvent(event, deps);
    assert.equal(again.destination, 'silver');
    assert.deepEqual(again.windows, {
      telemetry_device_1m: 'counted',
      telemetry_region_top_1m: 'counted',
    });
    const third = await ingestPipelinePushedEvent(event, deps);
    assert.equal(third.destination, 'silver');
    assert.deepEqual(third.windows, {
      telemetry_device_1m: 'duplicate',
      telemetry_region_top_1m: 'duplicate',
    });
  });
});

describe('ingestTelemetry and fireTelemetryWindows on the Functions Framework', function () {
  let ingestServer: Server;
  let fireServer: Server;
  const tag = runTag();
  const loopBefore = process.env.OFFVIA_FIRE_WINDOWS_LOOP_MS;

  before(async function () {
    requireStack();
    const { bigquery, projectId } = stackClients();
    await applyPipelineDdl(bigquery, projectId, TELEMETRY_PIPELINE);
    // A 2 s timer loop instead of 58 s for the Cloud Scheduler call: read once, at the first call.
    process.env.OFFVIA_FIRE_WINDOWS_LOOP_MS = '2000';
    ingestServer = getTestServer('ingestTelemetry');
    fireServer = getTestServer('fireTelemetryWindows');
  });
  after(async function () {
    if (loopBefore === undefined) delete process.env.OFFVIA_FIRE_WINDOWS_LOOP_MS;
    else process.env.OFFVIA_FIRE_WINDOWS_LOOP_MS = loopBefore;
    for (const server of [ingestServer, fireServer]) await closeServer(server);
  });

  it('acks a binary-mode CloudEvent (Eventarc) once the reading is in Silver or the dead-letter table', async function () {
    const base = await listenLocal(ingestServer);
    const deliver = async (messageId: string, data: string, attributes: Record<string, string>) =>
      fetch(base, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'ce-id': messageId,
          'ce-specversion': '1.0',
          'ce-source': '//pubsub.googleapis.com/projects/offvia-local/topics/telemetry-events',
          'ce-type': 'google.cloud.pubsub.topic.v1.messagePublished',
        },
        body: JSON.stringify({
          message: {
            data: Buffer.from(data).toString('base64'),
            attributes,
            messageId,
            publishTime: new Date().toISOString(),
          },
          subscription: 'projects/offvia-local/subscriptions/telemetry-events-ingest',
        }),
      });
    const good = await deliver(`ok-${tag}`, '{"temp": 19.5}', {
      deviceId: `fw-${tag}`,
      eventTs: new Date().toISOString(),
    });
    assert.equal(good.status, 204, await good.text());
    const bad = await deliver(`bad-${tag}`, 'not json', { deviceId: `fw-${tag}` });
    assert.equal(bad.status, 204, await bad.text());
    const { bigquery, projectId } = stackClients();
    const [silver] = await bigquery.query({
      query: `SELECT reference_status FROM \`${projectId}.offvia_telemetry_silver.readings\` WHERE source_message_id = 'ok-${tag}'`,
    });
    assert.deepEqual(silver, [{ reference_status: 'UNKNOWN_DEVICE' }]);
    const [dead] = await bigquery.query({
      query: `SELECT stage FROM \`${projectId}.offvia_telemetry_quarantine.dead_letter\` WHERE source_message_id = 'bad-${tag}'`,
    });
    assert.deepEqual(dead, [{ stage: 'PARSE_JSON' }]);
  });

  it('fireTelemetryWindows takes POST only and answers one summary per aggregation', async function () {
    const base = await listenLocal(fireServer);
    const get = await fetch(base);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    const scheduled = await schedulerPost(base);
    const body = (await scheduled.json()) as {
      pipeline: string;
      aggregations: Record<string, { status: string; loop?: { loopMs: number } }>;
    };
    assert.equal(scheduled.status, 200, JSON.stringify(body));
    assert.equal(body.pipeline, 'telemetry');
    for (const name of ['telemetry_device_1m', 'telemetry_region_top_1m']) {
      const summary = body.aggregations[name];
      assert.ok(summary, name);
      assert.ok(['done', 'busy'].includes(summary.status), JSON.stringify(summary));
      assert.equal(summary.loop?.loopMs, 2000);
    }
  });
});
