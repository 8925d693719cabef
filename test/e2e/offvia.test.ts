// offvia end to end on the local stack: a producer bug quarantines 3 bookings and a bad field sends 2 to bad data;
// trace finds messages in every place, status matches the tables, reprocess and redrive put each booking in the
// Silver dedup view and in gold exactly once, the open views empty, and a second identical run changes nothing.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readLayers, waitForLayers } from '../../deploy/local/layers';
import { bookingJson, bookingStackClients, testRoute } from '../support/booking-stack';
import { EXIT } from '../../shared/ops/errors';
import type { StatusReport } from '../../shared/ops/status';
import type { TraceReport } from '../../shared/ops/trace';
import type { ReprocessReport } from '../../shared/ops/reprocess';
import { offvia, offviaJson } from '../support/offvia-cli';

async function poll<T>(
  what: string,
  timeoutMs: number,
  read: () => Promise<T>,
  done: (v: T) => boolean,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      assert.fail(`${what}: not reached in ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

describe('e2e: offvia on the local stack (trace, status, reprocess, redrive)', function () {
  this.timeout(900_000);
  const { env, topic, bq } = bookingStackClients();
  const p = env.projectId;
  const { origin, destination } = testRoute();
  const tag = randomBytes(4).toString('hex');
  // One event time for all: one window, so the gold pane's values can be checked exactly. Taken when the suite's
  // first test starts, not when mocha loads the file: on a shared stack the files before this one can run longer
  // than the allowed lateness, and bookings stamped at load time would then be dropped as late.
  let eventTime = '';
  const booking = (
    n: number,
    fare: string,
    extra: Record<string, unknown> = {},
    o = origin,
    d = destination,
  ) =>
    bookingJson(tag, n, {
      flight_number: 'OF-1',
      origin: o,
      destination: d,
      fare,
      currency: 'USD',
      event_time: eventTime,
      ...extra,
    });
  // 1 valid; 3 with lower-case airports (the producer bug); 2 with an illegal field name (bad data at once);
  // 1 with a new legal field (held in the schema-retry store); 1 broken JSON.
  const makePayloads = () => [
    booking(1, '100.00'),
    booking(2, '10.10', {}, origin.toLowerCase(), destination.toLowerCase()),
    booking(3, '20.20', {}, origin.toLowerCase(), destination),
    booking(4, '30.30', {}, origin, destination.toLowerCase()),
    booking(5, '40.40', { 'loyalty-tier': 'gold' }),
    booking(6, '50.50', { 'loyalty-tier': 'silver' }),
    JSON.stringify({ ...JSON.parse(booking(7, '1.00')), [`new_field_${tag}`]: 1 }),
    `{"booking_id":"BK-${tag}-8", "unclosed`,
  ];
  let ids: string[] = [];
  // Gold counts every contract-valid booking wherever its row is: the one held for a schema change too (1.00).
  const expectedFareTotal = (100 + 10.1 + 20.2 + 30.3 + 40.4 + 50.5 + 1).toFixed(2);

  before(async function () {
    if (!process.env.PUBSUB_EMULATOR_HOST || !process.env.BIGQUERY_EMULATOR_HOST) {
      throw new Error('the local stack is not running: run through deploy/local/with-stack.sh');
    }
    ids = [];
    eventTime = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
    for (const data of makePayloads())
      ids.push(await topic.publishMessage({ data: Buffer.from(data) }));
    const { layers, complete } = await waitForLayers(bq, p, ids, 120_000);
    assert.ok(complete, `not every message routed: ${JSON.stringify(layers)}`);
    assert.equal(layers.silver.length, 1);
    assert.equal(layers.quarantine.length, 4);
    assert.equal(layers.badData.length, 2);
    assert.equal(layers.retryStore.length, 1);
  });

  const quarantined = () => ids.slice(1, 4);
  const bad = () => ids.slice(4, 6);

  it('trace finds a message in Bronze, Silver, quarantine, bad data, the retry store and gold', async () => {
    const places = async (id: string) => (await offviaJson<TraceReport>('trace', id)).gold.length;
    // Gold: the valid booking's window gets a pane from fireWindows (the stack's scheduler) within about a minute.
    await poll(
      'a gold pane of the valid booking',
      240_000,
      () => places(`BK-${tag}-1`),
      (n) => n > 0,
    );
    const valid = await offviaJson<TraceReport>('trace', `BK-${tag}-1`);
    assert.ok(
      valid.bronze.length === 1 && valid.silver.length === 1 && valid.silverDedup.length === 1,
    );
    assert.equal(valid.windows[0]?.outcome, 'counted');
    // The key-groups layout keeps no apply time per event, so a pane is tied to the event by its window and key
    // (what trace selects) and by counting it: the valid booking is the first of its route in this window.
    const [counted] = valid.windows;
    assert.ok(
      valid.gold.some(
        (g) =>
          g.event_id === counted?.eventId &&
          g.route_key === counted?.key &&
          Number(g.booking_count) >= 1,
      ),
      JSON.stringify(valid.gold),
    );
    const q = await offviaJson<TraceReport>('trace', ids[1] ?? '');
    assert.equal(q.quarantine.length, 1);
    assert.equal(q.quarantine[0]?.error_stage, 'BUSINESS_RULE_VALIDATION');
    assert.equal(q.bronze.length, 1);
    const b = await offviaJson<TraceReport>('trace', `BK-${tag}-5`);
    assert.equal(b.badData.length, 1);
    assert.match(String(b.badData[0]?.error), /ILLEGAL_CHARACTERS/);
    const held = await offviaJson<TraceReport>('trace', ids[6] ?? '');
    assert.equal(held.retryStore.length, 1);
    assert.equal(held.retryStore[0]?.source_message_id, ids[6]);
    const unknown = await offvia('trace', `no-such-${tag}`);
    assert.equal(unknown.code, EXIT.notFound);
    assert.match(unknown.err, /^offvia: .* is not a message id, event_id or booking_id/);
  });

  it('status --json equals counts read independently from the tables', async () => {
    const sinceMs = Date.now() - 3_600_000;
    const count = async (sql: string) => {
      const [rows] = await bq.query({ query: sql, params: { s: sinceMs }, types: { s: 'INT64' } });
      return Number((rows[0] as { n: unknown }).n);
    };
    const independent = async () => ({
      bronze: await count(
        `SELECT COUNT(*) n FROM \`${p}.offvia_bronze.raw_bookings\` WHERE publish_time >= TIMESTAMP_MILLIS(@s)`,
      ),
      silverRows: await count(
        `SELECT COUNT(*) n FROM \`${p}.offvia_silver.fact_bookings\` WHERE ingestion_timestamp >= TIMESTAMP_MILLIS(@s)`,
      ),
      silverEvents: await count(
        `SELECT COUNT(DISTINCT COALESCE(event_id, source_message_id)) n FROM \`${p}.offvia_silver.fact_bookings\` WHERE ingestion_timestamp >= TIMESTAMP_MILLIS(@s)`,
      ),
      quarantineRows: await count(
        `SELECT COUNT(*) n FROM \`${p}.offvia_quarantine.poisoned_events\` WHERE received_timestamp >= TIMESTAMP_MILLIS(@s)`,
      ),
      badDataRows: await count(
        `SELECT COUNT(*) n FROM \`${p}.offvia_quarantine.bad_data\` WHERE insert_time >= TIMESTAMP_MILLIS(@s)`,
      ),
      openQuarantine: await count(
        `SELECT COUNT(DISTINCT source_message_id) n FROM \`${p}.offvia_quarantine.poisoned_events\` WHERE source_message_id NOT IN (SELECT row_key FROM \`${p}.offvia_quarantine.resolutions\` WHERE layer = 'quarantine')`,
      ),
      openBadData: await count(
        `SELECT COUNT(DISTINCT insert_id) n FROM \`${p}.offvia_quarantine.bad_data\` WHERE insert_id NOT IN (SELECT row_key FROM \`${p}.offvia_quarantine.resolutions\` WHERE layer = 'bad_data')`,
      ),
    });
    const before = await independent();
    const status = await offviaJson<StatusReport>('status', '--since', '1h');
    const after = await independent();
    assert.deepEqual(after, before, 'the tables did not move while status ran');
    assert.deepEqual(
      {
        bronze: status.layers.bronze,
        silverRows: status.layers.silverRows,
        silverEvents: status.layers.silverEvents,
        quarantineRows: status.layers.quarantineRows,
        badDataRows: status.layers.badDataRows,
        openQuarantine: status.open.quarantine,
        openBadData: status.open.badData,
      },
      before,
    );
    assert.ok(before.quarantineRows >= 4 && before.badDataRows >= 2);
    const stages = Object.fromEntries(status.quarantineByStage.map((s) => [s.stage, s.rows]));
    assert.ok((stages.BUSINESS_RULE_VALIDATION ?? 0) >= 3 && (stages.PARSE_JSON ?? 0) >= 1);
    assert.equal(
      status.retryStore.reduce((s, r) => s + r.rows, 0),
      (await readLayers(bq, p, ids)).retryStore.length,
    );
    assert.notEqual(status.aggregations[0]?.watermark ?? null, null);
  });

  it('reprocess and redrive put every booking in the dedup view and gold exactly once; a second run changes nothing', async () => {
    const reprocessArgs = [
      'quarantine',
      'reprocess',
      '--ids',
      quarantined().join(','),
      '--upper',
      'origin',
      '--upper',
      'destination',
    ];
    const dry = await offviaJson<ReprocessReport>(...reprocessArgs, '--dry-run');
    assert.equal(dry.selected, 3);
    assert.deepEqual(dry.outcomes, { silver: 3 });
    assert.equal(dry.runId, null);
    const redriveArgs = ['bad-data', 'redrive', '--ids', bad().join(','), '--drop', 'loyalty-tier'];
    const rp = await offviaJson<ReprocessReport>(...reprocessArgs);
    assert.deepEqual(rp.outcomes, { silver: 3 });
    assert.equal(rp.resolutionsWritten, 3);
    const rd = await offviaJson<ReprocessReport>(...redriveArgs);
    assert.deepEqual(rd.outcomes, { [`${p}.offvia_silver.fact_bookings`]: 2 });
    assert.equal(rd.resolutionsWritten, 2);

    const bookings = [1, 2, 3, 4, 5, 6].map((n) => `BK-${tag}-${n}`);
    const dedup = async () => {
      const [rows] = await bq.query({
        query: `SELECT booking_id, origin_airport, destination_airport, source_message_id, reprocess_run_id
                FROM \`${p}.offvia_silver.fact_bookings_dedup\` WHERE booking_id IN UNNEST(@b) ORDER BY booking_id`,
        params: { b: bookings },
      });
      return rows as Record<string, unknown>[];
    };
    const silver = await dedup();
    assert.deepEqual(
      silver.map((r) => r.booking_id),
      bookings,
      'each booking once in the dedup view',
    );
    for (const r of silver)
      assert.deepEqual([r.origin_airport, r.destination_airport], [origin, destination]);
    // Lineage: the original message id and the run id.
    assert.deepEqual(
      silver.slice(1, 4).map((r) => r.source_message_id),
      quarantined(),
    );
    assert.ok(silver.slice(1, 4).every((r) => r.reprocess_run_id === rp.runId));
    assert.ok(silver.slice(4, 6).every((r) => r.reprocess_run_id === rd.runId));
    assert.equal(silver[0]?.reprocess_run_id, null);

    const latestPane = async () => {
      const [rows] = await bq.query({
        query: `SELECT booking_count, CAST(fare_total AS STRING) AS fare_total FROM \`${p}.offvia_gold.route_panes_latest\`
                WHERE route_key = @k`,
        params: { k: `${origin}-${destination}-USD` },
      });
      return rows as { booking_count: number; fare_total: string }[];
    };
    // The reprocessed bookings reach gold through the window state: a LATE pane at once, or the next firing.
    const gold = await poll(
      'gold counts all seven bookings (six fixed or valid, one held)',
      240_000,
      latestPane,
      (r) => r[0]?.booking_count === 7,
    );
    assert.equal(gold.length, 1, 'one window');
    assert.equal(Number(gold[0]?.fare_total).toFixed(2), expectedFareTotal);

    const open = async () => {
      const [q] = await bq.query({
        query: `SELECT source_message_id FROM \`${p}.offvia_quarantine.poisoned_events_open\` WHERE source_message_id IN UNNEST(@ids)`,
        params: { ids },
      });
      const [b] = await bq.query({
        query: `SELECT source_message_id FROM \`${p}.offvia_quarantine.bad_data_open\` WHERE source_message_id IN UNNEST(@ids)`,
        params: { ids },
      });
      return {
        quarantine: (q as { source_message_id: string }[]).map((r) => r.source_message_id).sort(),
        badData: (b as { source_message_id: string }[]).map((r) => r.source_message_id).sort(),
      };
    };
    const openAfter = await open();
    assert.deepEqual(
      openAfter,
      { quarantine: [ids[7]], badData: [] },
      'only the broken JSON is still open',
    );

    // A second identical run: nothing selected, nothing written.
    const again = await offviaJson<ReprocessReport>(...reprocessArgs);
    const againBad = await offviaJson<ReprocessReport>(...redriveArgs);
    assert.equal(again.selected + againBad.selected, 0);
    assert.deepEqual(await dedup(), silver);
    assert.deepEqual(await open(), openAfter);
    await new Promise((r) => setTimeout(r, 5000));
    assert.deepEqual(await latestPane(), gold);
  });
});
