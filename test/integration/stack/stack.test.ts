// The local stack itself: sql/ applied to the BigQuery emulator, the Bronze stand-in writing raw_bookings like a
// BigQuery subscription with --write-metadata, and the push subscription pointing at the Functions Framework.
// Runs inside deploy/local/with-stack.sh, which exports the stack's environment.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { BigQuery, type TableMetadata } from '@google-cloud/bigquery';
import { PubSub } from '@google-cloud/pubsub';
import {
  BOOKING_DLQ_TOPIC,
  BOOKING_TOPIC,
  BRONZE_DATASET,
  BRONZE_SUBSCRIPTION,
  BRONZE_TABLE,
  INGEST_PUSH_SUBSCRIPTION,
  projectIdFromEnv,
  pushEndpointFor,
  subscriptionPath,
  topicPath,
} from '../../../deploy/local/resources';

const EXPECTED_TABLES: Record<string, string[]> = {
  offvia_bronze: ['raw_bookings'],
  offvia_silver: ['fact_bookings', 'fact_bookings_dedup'],
  offvia_quarantine: ['poisoned_events', 'bad_data'],
};

async function poll<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('local stack', function () {
  const projectId = projectIdFromEnv();
  let bigquery: BigQuery;
  let pubsub: PubSub;

  before(function () {
    for (const name of [
      'BIGQUERY_EMULATOR_HOST',
      'PUBSUB_EMULATOR_HOST',
      'OFFVIA_INGEST_BOOKING_PORT',
    ]) {
      assert.ok(
        process.env[name],
        `${name} is not set: run inside bash deploy/local/with-stack.sh`,
      );
    }
    bigquery = new BigQuery({ projectId, autoRetry: false });
    pubsub = new PubSub({ projectId });
  });

  after(async function () {
    await pubsub?.close();
  });

  it('has the datasets, tables and view from sql/ in the BigQuery emulator', async function () {
    for (const [datasetId, tableIds] of Object.entries(EXPECTED_TABLES)) {
      const [datasetExists] = await bigquery.dataset(datasetId).exists();
      assert.ok(datasetExists, `dataset ${datasetId} is missing`);
      for (const tableId of tableIds) {
        const [tableExists] = await bigquery.dataset(datasetId).table(tableId).exists();
        assert.ok(tableExists, `table ${datasetId}.${tableId} is missing`);
      }
    }
    const response = await bigquery.dataset(BRONZE_DATASET).table(BRONZE_TABLE).getMetadata();
    const { schema } = response[0] as TableMetadata;
    const columns = (schema?.fields ?? []).map((field) => [field.name, field.type]);
    // bqemulator reports a JSON column as STRING (BigQuery says JSON): accept either, as the emulator doc advises.
    assert.deepEqual(
      columns.map(([name, type]) => [
        name,
        name === 'attributes' && type === 'STRING' ? 'JSON' : type,
      ]),
      [
        ['subscription_name', 'STRING'],
        ['message_id', 'STRING'],
        ['publish_time', 'TIMESTAMP'],
        ['data', 'STRING'],
        ['attributes', 'JSON'],
      ],
    );
  });

  it('writes a message published to booking-events to Bronze with the metadata columns', async function () {
    const data = JSON.stringify({
      stack_test: randomUUID(),
      note: 'not a booking; quarantined by ingestBooking',
    });
    const attributes = { origin: 'stack-test', 'content-type': 'application/json' };
    const publishedAt = Date.now();
    const messageId = await pubsub
      .topic(BOOKING_TOPIC)
      .publishMessage({ data: Buffer.from(data), attributes });

    const row = await poll('the Bronze row', 20_000, async () => {
      const [rows] = await bigquery.query({
        query: `SELECT * FROM \`${projectId}.${BRONZE_DATASET}.${BRONZE_TABLE}\` WHERE message_id = @messageId`,
        params: { messageId },
      });
      return (rows as Record<string, unknown>[])[0];
    });

    assert.equal(row.subscription_name, subscriptionPath(projectId, BRONZE_SUBSCRIPTION));
    assert.equal(row.message_id, messageId);
    assert.equal(row.data, data);
    const attributesValue = row.attributes;
    assert.deepEqual(
      typeof attributesValue === 'string' ? JSON.parse(attributesValue) : attributesValue,
      attributes,
    );
    const publishTime = (row.publish_time as { value?: string } | null)?.value;
    assert.ok(publishTime, 'publish_time is empty');
    const publishMs = Date.parse(publishTime);
    assert.ok(
      Math.abs(publishMs - publishedAt) < 60_000,
      `publish_time ${publishTime} is not near the publish (${new Date(publishedAt).toISOString()})`,
    );
  });

  it('has the push subscription delivering to ingestBooking on the Functions Framework', async function () {
    const [metadata] = await pubsub.subscription(INGEST_PUSH_SUBSCRIPTION).getMetadata();
    const port = Number(process.env.OFFVIA_INGEST_BOOKING_PORT);
    assert.equal(metadata.topic, topicPath(projectId, BOOKING_TOPIC));
    assert.equal(
      metadata.pushConfig?.pushEndpoint,
      pushEndpointFor(projectId, BOOKING_TOPIC, port),
    );
    assert.equal(
      metadata.pushConfig?.pushEndpoint,
      `http://127.0.0.1:${port}/projects/${projectId}/topics/booking-events`,
    );
    assert.equal(metadata.ackDeadlineSeconds, 60);
    // The emulator's backoff loses messages and its dead-lettering would end a long outage in the dead-letter
    // topic: locally, immediate redelivery for as long as it takes (see ingestPushSubscriptionOptions).
    assert.equal(
      metadata.retryPolicy ?? null,
      null,
      'the local push subscription has a retry policy',
    );
    assert.equal(
      metadata.deadLetterPolicy ?? null,
      null,
      'the local push subscription has a dead-letter policy',
    );
    const [dlqExists] = await pubsub.topic(BOOKING_DLQ_TOPIC).exists();
    assert.ok(dlqExists, `topic ${topicPath(projectId, BOOKING_DLQ_TOPIC)} is missing`);

    const [bronze] = await pubsub.subscription(BRONZE_SUBSCRIPTION).getMetadata();
    assert.equal(bronze.topic, topicPath(projectId, BOOKING_TOPIC));
    assert.ok(
      !bronze.pushConfig?.pushEndpoint,
      'the Bronze subscription must be a pull subscription',
    );
  });
});
