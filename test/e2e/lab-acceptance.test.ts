// End to end on the local stack: the lab's acceptance events published to the Pub/Sub emulator, BigQuery (emulator)
// read back. A mixed stream, each message at its stage, is checked at scale by the replay test (replay.test.ts).
import assert from 'node:assert/strict';
import { checkLabOutcome, LAB_EVENTS } from '../../deploy/local/demo';
import { waitForLayers } from '../../deploy/local/layers';
import { bookingStackClients } from '../support/booking-stack';

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
});
