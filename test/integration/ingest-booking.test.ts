// ingestBooking through the Functions Framework's real HTTP server, writing to the BigQuery emulator.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { createHash, randomUUID } from 'node:crypto';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import '../../functions';
import { stackBigQuery, stackEnv, waitForLayers } from '../../deploy/local/layers';
import { LAB_EVENTS } from '../../deploy/local/demo';
import { closeServer, listenLocal } from '../support/fire-windows-http';
import { ingestPipelineMessage } from '../../shared/pipeline/runtime/ingest';
import { createPipelineIngestDeps } from '../../shared/pipeline/runtime/compose';
import { BOOKING_PIPELINE } from '../../shared/pipelines/booking/definition';
import { TransientError } from '../../shared/errors';
import { Logger, type LogEntry } from '../../shared/logging/logger';

/** Posts a binary-mode CloudEvent like Eventarc's for one Pub/Sub message; returns the HTTP status. */
async function deliver(
  base: string,
  messageId: string,
  data: Buffer,
  attributes: Record<string, string> = {},
) {
  const res = await fetch(base, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'ce-id': messageId,
      'ce-specversion': '1.0',
      'ce-source': '//pubsub.googleapis.com/projects/offvia-local/topics/booking-events',
      'ce-type': 'google.cloud.pubsub.topic.v1.messagePublished',
    },
    body: JSON.stringify({
      message: {
        data: data.toString('base64'),
        attributes,
        messageId,
        publishTime: new Date().toISOString(),
      },
      subscription: 'projects/offvia-local/subscriptions/booking-events-ingest',
    }),
  });
  return res.status;
}

describe('integration: ingestBooking on the Functions Framework → BigQuery emulator', function () {
  this.timeout(60_000);
  const env = stackEnv();
  const bq = stackBigQuery(env);
  let server: Server;
  let base: string;

  before(async function () {
    if (!process.env.BIGQUERY_EMULATOR_HOST)
      throw new Error('run through `npm test`: the local stack is not up');
    server = getTestServer('ingestBooking');
    base = await listenLocal(server);
  });
  after(() => closeServer(server));

  it('writes the valid lab event to Silver and quarantines the others, acking all three', async () => {
    const ids = LAB_EVENTS.map(() => `it-${randomUUID()}`);
    const statuses = await Promise.all(
      LAB_EVENTS.map((e, i) => deliver(base, ids[i] ?? '', Buffer.from(e))),
    );
    assert.deepEqual(
      statuses.map((s) => s >= 200 && s < 300),
      [true, true, true],
    );
    const layers = (await waitForLayers(bq, env.projectId, ids, 10_000, { requireBronze: false }))
      .layers;
    assert.deepEqual(
      layers.silver.map((r) => [r.booking_id, r.source_message_id]),
      [['BK-90210', ids[0]]],
    );
    // Silver records the contract version the booking was validated as (sql/046).
    const [versions] = await bq.query({
      query: `SELECT contract_version FROM \`${env.projectId}.offvia_silver.fact_bookings\`
              WHERE source_message_id = @id`,
      params: { id: ids[0] },
    });
    assert.deepEqual(versions, [{ contract_version: '1' }]);
    assert.deepEqual(
      layers.quarantine.map((r) => [r.source_message_id, r.error_stage]).sort(),
      [
        [ids[1], 'BUSINESS_RULE_VALIDATION'],
        [ids[2], 'PARSE_JSON'],
      ].sort(),
    );
  });

  it('quarantines attributes-only, invalid UTF-8 and non-object messages without failing the delivery', async () => {
    const cases = [
      Buffer.alloc(0),
      Buffer.from([0xc3, 0x28, 0x7b]),
      Buffer.from('[1,2,3]'),
      Buffer.from('null'),
    ];
    const ids = cases.map(() => `it-${randomUUID()}`);
    const statuses = await Promise.all(
      cases.map((c, i) => deliver(base, ids[i] ?? '', c, { k: 'v' })),
    );
    assert.ok(
      statuses.every((s) => s >= 200 && s < 300),
      `statuses ${statuses.join(',')}`,
    );
    const layers = (await waitForLayers(bq, env.projectId, ids, 10_000, { requireBronze: false }))
      .layers;
    const stages = new Map(layers.quarantine.map((r) => [r.source_message_id, r.error_stage]));
    assert.deepEqual(
      ids.map((id) => stages.get(id)),
      ['PARSE_JSON', 'PARSE_JSON', 'SCHEMA_VALIDATION', 'SCHEMA_VALIDATION'],
    );
  });

  it('quarantines pushes without CloudEvent headers (attributes only, {}, empty data) and acks them', async () => {
    const nonce = randomUUID();
    const bodies = [
      { message: { attributes: { source: 'checkout' }, messageId: `it-att-${nonce}` } },
      { nonce },
      { message: { data: '', messageId: `it-5b-${nonce}` } },
    ];
    const ids = [
      `it-att-${nonce}`,
      `body-sha256:${createHash('sha256').update(JSON.stringify(bodies[1])).digest('hex')}`,
      `it-5b-${nonce}`,
    ];
    const answers = await Promise.all(
      bodies.map(async (body) => {
        const res = await fetch(base, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return `${res.status} ${await res.text()}`;
      }),
    );
    assert.ok(
      answers.every((a) => /^2\d\d/.test(a)),
      `answers ${answers.join(' | ')}`,
    );
    const layers = (await waitForLayers(bq, env.projectId, ids, 10_000, { requireBronze: false }))
      .layers;
    assert.deepEqual(
      ids.map((id) =>
        layers.quarantine.filter((r) => r.source_message_id === id).map((r) => r.error_stage),
      ),
      [['PARSE_JSON'], ['PARSE_JSON'], ['PARSE_JSON']],
    );
    const [rows] = await bq.query({
      query: `SELECT source_message_id, attributes FROM \`${env.projectId}.offvia_quarantine.poisoned_events\`
              WHERE source_message_id = @id`,
      params: { id: ids[0] },
    });
    assert.deepEqual(
      (rows as { attributes: unknown }[]).map((r) => JSON.parse(String(r.attributes)) as unknown),
      [{ source: 'checkout' }],
    );
  });

  it('keeps fares beyond double precision exactly in Silver, as JSON numbers and as strings', async () => {
    const fares = [
      '12345678901234567.89',
      '"99999999999999999999999999999.999999999"',
      '0.000000001',
      '"1234567890.123456789"',
    ];
    const ids = fares.map(() => `it-fare-${randomUUID()}`);
    const statuses = await Promise.all(
      fares.map((fare, i) =>
        deliver(
          base,
          ids[i] ?? '',
          Buffer.from(
            `{"booking_id":"BK-FARE-${i}","passenger_id":"PAX-1","flight_number":"OF-1","origin":"JFK",` +
              `"destination":"LHR","fare":${fare},"event_time":"${new Date().toISOString()}"}`,
          ),
        ),
      ),
    );
    assert.deepEqual(statuses, [204, 204, 204, 204]);
    const layers = (await waitForLayers(bq, env.projectId, ids, 10_000, { requireBronze: false }))
      .layers;
    const fareOf = new Map(layers.silver.map((r) => [r.source_message_id, r.fare_amount]));
    assert.deepEqual(
      ids.map((id) => fareOf.get(id)),
      fares.map((f) => f.replaceAll('"', '')),
    );
  });

  it('answers 5xx (redelivery) when BigQuery cannot take the row, and logs why', async () => {
    const lines: LogEntry[] = [];
    const deps = await createPipelineIngestDeps(
      BOOKING_PIPELINE,
      { ...process.env, OFFVIA_SILVER_TABLE: 'offvia_silver.no_such_table' },
      new Logger('test', (e) => lines.push(e)),
    );
    const message = {
      messageId: `it-${randomUUID()}`,
      publishTime: undefined,
      publishTimeMs: undefined,
      attributes: {},
      data: Buffer.from(LAB_EVENTS[0] ?? ''),
      subscription: undefined,
    };
    await assert.rejects(ingestPipelineMessage({ ok: true, message }, deps), TransientError);
    assert.ok(lines.some((l) => l.outcome === 'retry' && l.severity === 'ERROR'));
  });
});
