// End to end on the local stack: publish to the Pub/Sub emulator, read BigQuery (emulator) back.
import assert from 'node:assert/strict';
import { checkEveryMessageRouted, checkLabOutcome, LAB_EVENTS } from '../../deploy/local/demo';
import { waitForLayers } from '../../deploy/local/layers';
import { bookingStackClients } from '../support/booking-stack';
import { mixedEvents } from '../support/events';

describe('e2e: local stack (Pub/Sub → ingestBooking → BigQuery)', function () {
  // The emulator push delivers ~5-12 messages/s (window state adds a Firestore transaction per event): be patient.
  this.timeout(600_000);
  const { env, topic, bq } = bookingStackClients();

  before(function () {
    if (!process.env.PUBSUB_EMULATOR_HOST || !process.env.BIGQUERY_EMULATOR_HOST) {
      throw new Error(
        'the local stack is not running: run through `npm test` (deploy/local/with-stack.sh)',
      );
    }
  });

  it("passes the lab's acceptance test: Bronze 3, Silver BK-90210, quarantine by stage", async () => {
    const ids = await Promise.all(
      LAB_EVENTS.map((e) => topic.publishMessage({ data: Buffer.from(e) })),
    );
    const { layers, complete } = await waitForLayers(bq, env.projectId, ids, 60_000);
    assert.ok(complete, `not every message landed: ${JSON.stringify(layers)}`);
    assert.deepEqual(checkLabOutcome(layers, ids), []);
    const [silver] = layers.silver;
    assert.equal(silver?.fare_amount !== undefined && Number(silver.fare_amount), 749.5);
    assert.match(String(silver?.event_id), /^bk1-[0-9a-f]{32}$/);
  });

  it('routes 1,000 mixed events: all in Bronze, each in exactly one of Silver or quarantine, at its stage', async () => {
    const events = mixedEvents(1000, 7, Date.now());
    const ids = await Promise.all(
      events.map((e) => topic.publishMessage({ data: Buffer.from(e.payload) })),
    );
    const { layers, complete } = await waitForLayers(bq, env.projectId, ids, 480_000);
    assert.ok(complete, `only ${layers.silver.length + layers.quarantine.length} of 1000 routed`);
    assert.deepEqual(checkEveryMessageRouted(layers, ids), []);
    assert.equal(layers.bronze.length, 1000);
    assert.equal(layers.badData.length, 0);
    const where = new Map<string, string>();
    for (const r of layers.silver) where.set(String(r.source_message_id), 'silver');
    for (const r of layers.quarantine)
      where.set(String(r.source_message_id), String(r.error_stage));
    const wrong = events.flatMap((e, i) =>
      where.get(ids[i] ?? '') === e.expected
        ? []
        : [`${e.payload} → ${where.get(ids[i] ?? '')}, expected ${e.expected}`],
    );
    assert.deepEqual(wrong, []);
    assert.ok(
      layers.silver.length > 500 && layers.quarantine.length > 200,
      'the mix has both kinds',
    );
  });
});
