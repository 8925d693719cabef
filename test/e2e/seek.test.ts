// Snapshot and seek on the local stack (the Pub/Sub emulator implements both, and topic retention): after seeking
// the ingest subscription back, to a snapshot and then to a time, every message is delivered to ingestBooking
// again, and the Silver dedup view, the quarantine and bad-data open views and gold's latest pane end as if each
// message had been processed once.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { waitForLayers } from '../../deploy/local/layers';
import { bookingJson, bookingStackClients, testRoute } from '../support/booking-stack';
import { EXIT } from '../../shared/ops/errors';
import type { SeekReport, SnapshotInfo } from '../../shared/ops/snapshot';
import { fireWindowsOnce } from '../support/fire-windows-http';
import { offvia, offviaJson } from '../support/offvia-cli';

/** Cells as text (NUMERIC without trailing zeros, TIMESTAMP as its text) so rows compare with deepEqual. */
function plain(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (v !== null && typeof v === 'object' && 'value' in v) out[k] = String(v.value);
    else if (v !== null && typeof v === 'object' && 'toFixed' in v)
      out[k] = (v as { toFixed(): string }).toFixed();
    else out[k] = v;
  }
  return out;
}

describe('e2e: offvia snapshot and seek, then idempotent reprocessing', function () {
  this.timeout(600_000);
  const { env, topic, bq } = bookingStackClients();
  const p = env.projectId;
  const { origin, destination } = testRoute();
  const routeKey = `${origin}-${destination}-USD`;
  const tag = randomBytes(4).toString('hex');
  const snapshotName = `seek-test-${tag}`;
  // A minute back: within the allowed lateness whatever the stack's watermark, so the bookings are counted. Taken
  // when the publishing test starts, not when mocha loads the file (earlier files on the shared stack take minutes).
  let eventTime = '';
  const atEventTime = () =>
    new Date(Math.floor((Date.now() - 60_000) / 60_000) * 60_000 + 15_000).toISOString();
  const booking = (n: number, fare: string, extra: Record<string, unknown> = {}) =>
    bookingJson(tag, n, {
      flight_number: 'OF-3',
      origin,
      destination,
      fare,
      currency: 'USD',
      event_time: eventTime,
      ...extra,
    });
  let payloads: string[] = [];
  const makePayloads = () => [
    booking(1, '10.125'),
    booking(2, '20.250'),
    booking(3, '30.5'),
    booking(4, '-1'), // quarantine: BUSINESS_RULE_VALIDATION
    `{"booking_id":"BK-${tag}-5", "unclosed`, // quarantine: PARSE_JSON
    booking(6, '40', { 'loyalty-tier': 'gold' }), // bad data: a field name BigQuery refuses
  ];
  let ids: string[] = [];

  before(function () {
    if (!process.env.PUBSUB_EMULATOR_HOST || !process.env.OFFVIA_FIRE_WINDOWS_URL) {
      throw new Error('the local stack is not running: run through deploy/local/with-stack.sh');
    }
  });
  after(async () => {
    const r = await offvia('snapshot', 'delete', snapshotName);
    assert.ok(r.code === EXIT.ok || r.code === EXIT.notFound, r.err);
  });

  const q = async (sql: string) => {
    const [rows] = await bq.query({
      query: sql,
      params: { ids, k: routeKey },
      types: { ids: ['STRING'], k: 'STRING' },
    });
    return (rows as Record<string, unknown>[]).map(plain);
  };
  /** Everything a reader sees of these messages: the dedup view, the open views, gold's latest pane. */
  const readerView = async () => ({
    silverDedup: await q(
      `SELECT booking_id, fare_amount, event_id, source_message_id, ingestion_timestamp
       FROM \`${p}.offvia_silver.fact_bookings_dedup\` WHERE source_message_id IN UNNEST(@ids) ORDER BY booking_id`,
    ),
    // The open view keeps a message's latest row: its reason and stage, not its receive time, are what stay.
    quarantineOpen: await q(
      `SELECT message_key, error_stage, error_reason FROM \`${p}.offvia_quarantine.poisoned_events_open\`
       WHERE source_message_id IN UNNEST(@ids) ORDER BY message_key`,
    ),
    badDataOpen: await q(
      `SELECT row_key, target_dest FROM \`${p}.offvia_quarantine.bad_data_open\`
       WHERE source_message_id IN UNNEST(@ids) ORDER BY row_key`,
    ),
    gold: await q(
      `SELECT booking_count, fare_total FROM \`${p}.offvia_gold.route_panes_latest\` WHERE route_key = @k`,
    ),
  });
  const quarantineRows = async () =>
    Number(
      (
        await q(
          `SELECT COUNT(*) AS n FROM \`${p}.offvia_quarantine.poisoned_events\` WHERE source_message_id IN UNNEST(@ids)`,
        )
      )[0]?.n,
    );
  /** Until every quarantined message has `rows` rows in the table: proof that each was delivered again. */
  const redelivered = async (rows: number) => {
    const deadline = Date.now() + 120_000;
    while ((await quarantineRows()) < 2 * rows) {
      assert.ok(
        Date.now() < deadline,
        `not redelivered: ${await quarantineRows()} quarantine rows`,
      );
      await new Promise((r) => setTimeout(r, 1000));
    }
    // The other messages of the same redelivery: give ingestBooking a moment, then fire the windows.
    await new Promise((r) => setTimeout(r, 5000));
    await fireWindowsOnce(String(process.env.OFFVIA_FIRE_WINDOWS_URL));
  };

  it('creates, lists and refuses a duplicate snapshot; seek checks its flags', async () => {
    const created = await offviaJson<SnapshotInfo>('snapshot', 'create', snapshotName);
    assert.equal(created.name, `projects/${p}/snapshots/${snapshotName}`);
    assert.equal(created.topic, `projects/${p}/topics/booking-events`);
    assert.ok(created.expireTime !== null && Date.parse(created.expireTime) > Date.now());
    const list = await offviaJson<SnapshotInfo[]>('snapshot', 'list');
    assert.ok(list.some((s) => s.name === created.name));
    const again = await offvia('snapshot', 'create', snapshotName);
    assert.equal(again.code, EXIT.usage);
    assert.match(again.err, /^offvia: snapshot .* exists/);
    const unknown = await offvia('seek', '--snapshot', `no-such-${tag}`);
    assert.equal(unknown.code, EXIT.notFound, unknown.err);
  });

  it('after a seek to the snapshot, and then to a time, readers see each message once', async () => {
    const publishedAfterMs = Date.now() - 2000;
    ids = [];
    eventTime = atEventTime();
    payloads = makePayloads();
    for (const data of payloads) ids.push(await topic.publishMessage({ data: Buffer.from(data) }));
    const routed = await waitForLayers(bq, p, ids, 120_000);
    assert.ok(routed.complete, JSON.stringify(routed.layers));
    assert.deepEqual(
      [routed.layers.silver.length, routed.layers.quarantine.length, routed.layers.badData.length],
      [3, 2, 1],
    );
    // Gold: the four valid bookings (the one in bad data too: gold counts every contract-valid booking, wherever its
    // row is), in a pane (a LATE pane at once, or the window's next firing).
    const deadline = Date.now() + 180_000;
    let view = await readerView();
    while (view.gold[0]?.booking_count !== 4) {
      assert.ok(Date.now() < deadline, `gold never counted 4: ${JSON.stringify(view.gold)}`);
      await fireWindowsOnce(String(process.env.OFFVIA_FIRE_WINDOWS_URL));
      await new Promise((r) => setTimeout(r, 2000));
      view = await readerView();
    }
    const before = view;
    assert.deepEqual(before.gold, [{ booking_count: 4, fare_total: '100.875' }]);
    assert.equal(before.silverDedup.length, 3);
    assert.equal(before.quarantineOpen.length, 2);
    assert.equal(before.badDataOpen.length, 1);

    // Seek to the snapshot: every message published since is unacknowledged again and pushed again.
    const dry = await offviaJson<SeekReport>('seek', '--snapshot', snapshotName, '--dry-run');
    assert.equal(dry.subscription, 'booking-events-ingest');
    assert.equal(await quarantineRows(), 2, 'a dry run redelivers nothing');
    await offviaJson<SeekReport>('seek', '--snapshot', snapshotName);
    await redelivered(2);
    assert.deepEqual(await readerView(), before);

    // Seek to a time before the messages: the topic retains them (as the deploy's --topic-retention does).
    const byTime = await offviaJson<SeekReport>(
      'seek',
      '--time',
      new Date(publishedAfterMs).toISOString(),
    );
    assert.ok((byTime.topicRetentionSeconds ?? 0) >= 86_400, JSON.stringify(byTime));
    assert.ok((byTime.bronzeMessagesSince ?? 0) >= payloads.length);
    await redelivered(3);
    assert.deepEqual(await readerView(), before);
  });
});
