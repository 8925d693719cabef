// Restating gold on the local stack: a booking quarantined for its fare, its window then closed by the watermark
// (end + allowed lateness) and fired, then fixed with `offvia quarantine reprocess`, reaches Silver but not gold;
// `offvia gold restate` of its window makes route_panes_latest equal an independent recomputation from the Silver
// dedup view (count and exact fare total), and a second restate changes nothing. Telemetry: a reading whose Silver
// row BigQuery refused (bad data) is counted by gold restate, which writes each of its two aggregations' panes once;
// `offvia bad-data redrive` then puts it in Silver, resolved, and gold still counts it once.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Firestore } from '@google-cloud/firestore';
import { waitForLayers } from '../../deploy/local/layers';
import { badDataRowOf } from '../../shared/drift/bad-data';
import { decodeVersioned } from '../../shared/pipeline/versioning';
import { TELEMETRY_PIPELINE } from '../../shared/pipelines/telemetry/definition';
import { StaticDeviceDirectory } from '../../shared/pipelines/telemetry/device-directory';
import { BigQueryRowWriter } from '../../shared/sinks/bigquery-writer';
import { requireStack, runTag, stackClients } from '../support/drift-stack';
import { GroupedFirestoreWindowStore } from '../../shared/state/grouped-window-store';
import { WatermarkTracker } from '../../shared/state/watermark-tracker';
import type { JsonValue } from '../../shared/windowing';
import { bookingJson, bookingStackClients, testAirport, testRoute } from '../support/booking-stack';
import { type BookingWindows, createBookingWindows } from '../support/booking-window-assembly';
import { loadWindowConfig } from '../../shared/config/window-config';
import { Logger } from '../../shared/logging/logger';
import { EXIT } from '../../shared/ops/errors';
import type { ReprocessReport } from '../../shared/ops/reprocess';
import type { RestateReport } from '../../shared/ops/restate';
import type { TraceReport } from '../../shared/ops/trace';
import { emulatorFirestore } from '../support/firestore-windows';
import { fireWindowsOnce } from '../support/fire-windows-http';
import { offvia, offviaJson } from '../support/offvia-cli';

/** NUMERIC as the emulator or BigQuery prints it, without trailing zeros: "107.480" → "107.48". */
function amount(v: unknown): string {
  const t =
    v !== null && typeof v === 'object' && 'toFixed' in v
      ? (v as { toFixed(): string }).toFixed()
      : String(v);
  return t.includes('.') ? t.replace(/0+$/, '').replace(/\.$/, '') : t;
}

describe('e2e: offvia gold restate of a window closed before its booking was fixed', function () {
  this.timeout(600_000);
  const { env, topic, bq } = bookingStackClients();
  const p = env.projectId;
  // Airports nobody else's test uses (Q + two letters), so the route's gold panes are this test's own.
  const { origin, destination } = testRoute('Q');
  const routeKey = `${origin}-${destination}-EUR`;
  const tag = randomBytes(4).toString('hex');
  // Nine minutes back: closed once the watermark follows current traffic (end + 300 s allowed lateness < now).
  const windowStartMs = Math.floor((Date.now() - 9 * 60_000) / 60_000) * 60_000;
  const windowStart = new Date(windowStartMs).toISOString();
  const booking = (n: number, fare: string, atMs: number, o = origin, d = destination) =>
    bookingJson(tag, n, {
      flight_number: 'OF-7',
      origin: o,
      destination: d,
      fare,
      currency: 'EUR',
      event_time: new Date(atMs).toISOString(),
    });
  let firestore: Firestore | undefined;
  let windows: BookingWindows;

  before(function () {
    if (!process.env.OFFVIA_FIRE_WINDOWS_URL || !process.env.FIRESTORE_EMULATOR_HOST) {
      throw new Error('the local stack is not running: run through deploy/local/with-stack.sh');
    }
    firestore = emulatorFirestore();
    windows = createBookingWindows(process.env, new Logger('gold-restate.test', () => undefined), {
      firestore,
    });
  });
  after(() => firestore?.terminate());

  const latest = async () => {
    const [rows] = await bq.query({
      query: `SELECT booking_count, fare_total, source FROM \`${p}.offvia_gold.route_panes_latest\`
              WHERE route_key = @k AND UNIX_MILLIS(window_start) = @s`,
      params: { k: routeKey, s: windowStartMs },
    });
    return (rows as Record<string, unknown>[]).map((r) => ({
      count: Number(r.booking_count),
      total: amount(r.fare_total),
      source: String(r.source),
    }));
  };
  const goldRows = async () => {
    const [rows] = await bq.query({
      query: `SELECT COUNT(*) AS n FROM \`${p}.offvia_gold.route_panes\`
              WHERE route_key = @k AND UNIX_MILLIS(window_start) = @s`,
      params: { k: routeKey, s: windowStartMs },
    });
    return Number((rows as { n: unknown }[])[0]?.n);
  };
  // The independent recomputation: the Silver dedup view, read directly.
  const fromDedupView = async () => {
    const [rows] = await bq.query({
      query: `SELECT COUNT(*) AS n, SUM(fare_amount) AS total FROM \`${p}.offvia_silver.fact_bookings_dedup\`
              WHERE origin_airport = @o AND destination_airport = @d AND currency = 'EUR'
                AND UNIX_MILLIS(event_timestamp) >= @s AND UNIX_MILLIS(event_timestamp) < @e`,
      params: { o: origin, d: destination, s: windowStartMs, e: windowStartMs + 60_000 },
    });
    const r = (rows as Record<string, unknown>[])[0];
    return { count: Number(r?.n), total: amount(r?.total) };
  };

  it('restates the window to the dedup view, exactly, and a second restate changes nothing', async () => {
    const ids = [
      await topic.publishMessage({
        data: Buffer.from(booking(1, '100.10', windowStartMs + 10_000)),
      }),
      await topic.publishMessage({
        data: Buffer.from(booking(2, '0.255', windowStartMs + 20_000)),
      }),
      // Quarantined (BUSINESS_RULE_VALIDATION): a negative fare.
      await topic.publishMessage({
        data: Buffer.from(booking(3, '-7.125', windowStartMs + 30_000)),
      }),
    ];
    const routed = await waitForLayers(bq, p, ids, 120_000);
    assert.ok(routed.complete, JSON.stringify(routed.layers));
    assert.equal(routed.layers.silver.length, 2);
    assert.equal(routed.layers.quarantine.length, 1);
    const quarantinedId = ids[2] ?? '';

    // Close the window: bookings of now (another route) move the watermark past end + allowed lateness, as live
    // traffic does; an instance writes the watermark at most once per OFFVIA_WATERMARK_WRITE_INTERVAL_MS.
    const config = loadWindowConfig(process.env);
    const closedAfterMs = windowStartMs + 60_000 - 1 + config.strategy.allowedLatenessMs;
    let watermarkMs = Number.NEGATIVE_INFINITY;
    for (let n = 10; watermarkMs <= closedAfterMs; n++) {
      assert.ok(n < 25, `the stored watermark (${watermarkMs}) never passed ${closedAfterMs}`);
      const clock = await topic.publishMessage({
        data: Buffer.from(booking(n, '1', Date.now(), destination, origin)),
      });
      assert.ok((await waitForLayers(bq, p, [clock], 60_000)).complete);
      const until = Date.now() + config.watermarkWriteIntervalMs + 1_000;
      for (;;) {
        watermarkMs = (await windows.store.readWatermark())?.state.watermarkMs ?? watermarkMs;
        if (watermarkMs > closedAfterMs || Date.now() > until) break;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    // fireWindows garbage-collects the window with its final pane (the stack's scheduler may hold the lease).
    await fireWindowsOnce(String(process.env.OFFVIA_FIRE_WINDOWS_URL));

    // The two valid bookings were counted when they arrived (the stack's first events set the watermark) or, on
    // a stack whose watermark already followed current traffic, dropped as too late: either way gold has them
    // all or none, never the quarantined one.
    const counted = (await offviaJson<TraceReport>('trace', `BK-${tag}-1`)).windows[0]?.outcome;
    const streamCount = counted === 'counted' ? 2 : 0;
    const deadline = Date.now() + 60_000;
    while (streamCount > 0 && (await latest())[0]?.count !== 2) {
      assert.ok(Date.now() < deadline, `no stream pane of 2: ${JSON.stringify(await latest())}`);
      await fireWindowsOnce(String(process.env.OFFVIA_FIRE_WINDOWS_URL));
      await new Promise((r) => setTimeout(r, 1000));
    }

    // The fix, after the window closed: the booking reaches Silver, but the stream drops it as too late.
    const fixed = await offviaJson<ReprocessReport>(
      'quarantine',
      'reprocess',
      '--ids',
      quarantinedId,
      '--set',
      'fare="7.125"',
    );
    assert.deepEqual(fixed.outcomes, { silver: 1 });
    const trace = await offviaJson<TraceReport>('trace', `BK-${tag}-3`);
    assert.equal(trace.silverDedup.length, 1);
    assert.equal(trace.windows[0]?.outcome, 'dropped');
    const independent = await fromDedupView();
    assert.deepEqual(independent, { count: 3, total: '107.48' });
    const before = await latest();
    assert.equal(before[0]?.count ?? 0, streamCount, 'gold does not count the fixed booking');

    // An open window is left alone without --force: a fresh booking of now on a third route, restated at once
    // (before the stream could have fired any pane for it, so its window differs from gold).
    const openAtMs = Date.now();
    let third = testAirport('Q');
    while (third === origin || third === destination) third = testAirport('Q');
    const openRoute = `${origin}-${third}-EUR`;
    const openId = await topic.publishMessage({
      data: Buffer.from(booking(30, '5', openAtMs, origin, third)),
    });
    assert.ok((await waitForLayers(bq, p, [openId], 60_000)).complete);
    const nowWindow = new Date(Math.floor(openAtMs / 60_000) * 60_000).toISOString();
    const refused = await offvia(
      'gold',
      'restate',
      '--from',
      nowWindow,
      '--to',
      nowWindow,
      '--key',
      openRoute,
      '--json',
    );
    assert.equal(refused.code, EXIT.failure, refused.err);
    const refusedReport = JSON.parse(refused.out) as RestateReport;
    assert.equal(refusedReport.written, 0);
    assert.ok(refusedReport.open >= 1, refused.out);

    const range = ['--from', windowStart, '--to', windowStart, '--key', routeKey];
    const rowsBefore = await goldRows();
    const dry = await offviaJson<RestateReport>('gold', 'restate', ...range, '--dry-run');
    assert.equal(dry.written, 0);
    assert.equal(dry.changes.length, 1);
    assert.equal(Number(dry.changes[0]?.current?.values.booking_count ?? 0), streamCount);
    assert.deepEqual(
      [Number(dry.changes[0]?.restated.booking_count), dry.changes[0]?.restated.fare_total],
      [3, '107.48'],
    );
    assert.equal(await goldRows(), rowsBefore, 'the dry run wrote nothing');

    const run = await offviaJson<RestateReport>('gold', 'restate', ...range);
    assert.equal(run.written, 1);
    assert.deepEqual(await latest(), [{ ...independent, source: 'restatement' }]);
    assert.equal(await goldRows(), rowsBefore + 1);
    // Mean and extremes as the stream computes them: 107.48 / 3 = 35.826666666… → 35.826666667 (half-even).
    const [pane] = (
      await bq.query({
        query: `SELECT fare_min, fare_max, fare_mean, pane_timing, is_final FROM \`${p}.offvia_gold.route_panes_latest\`
                WHERE route_key = @k AND UNIX_MILLIS(window_start) = @s`,
        params: { k: routeKey, s: windowStartMs },
      })
    )[0] as Record<string, unknown>[];
    assert.deepEqual(
      [
        amount(pane?.fare_min),
        amount(pane?.fare_max),
        amount(pane?.fare_mean),
        pane?.pane_timing,
        pane?.is_final,
      ],
      ['0.255', '100.1', '35.826666667', 'LATE', true],
    );

    // Again: nothing differs, nothing is written.
    const again = await offviaJson<RestateReport>('gold', 'restate', ...range);
    assert.equal(again.written, 0);
    assert.equal(again.changes.length, 0);
    assert.equal(again.unchanged, 1);
    assert.equal(await goldRows(), rowsBefore + 1);
    assert.deepEqual(await latest(), [{ ...independent, source: 'restatement' }]);
  });
});

describe('e2e: offvia --pipeline telemetry gold restate of a reading held in bad data', function () {
  this.timeout(600_000);
  const pipeline = TELEMETRY_PIPELINE;
  const tag = runTag();
  const device = `dev-${tag}`;
  const region = `r-${tag}`;
  // Fifteen minutes back: closed (end + 10 min allowed lateness) once the watermark follows current readings.
  const windowStartMs = Math.floor((Date.now() - 15 * 60_000) / 60_000) * 60_000;
  const windowStart = new Date(windowStartMs).toISOString();
  const messageId = `tm-bad-${tag}`;
  let eventId = '';
  const tel = (...argv: string[]) => ['--pipeline', 'telemetry', ...argv];
  const range = ['--from', windowStart, '--to', windowStart, '--key', `${device},${region}`];
  let bigquery: ReturnType<typeof stackClients>['bigquery'];
  let firestore: ReturnType<typeof stackClients>['firestore'] | undefined;
  let projectId = '';
  after(() => firestore?.terminate());

  before(async function () {
    requireStack();
    ({ bigquery, projectId, firestore } = stackClients());
    // The reading as the telemetry contract decodes it (its device in region `region`), and its Silver row written
    // to bad data as the runtime writes a row BigQuery refused: the fault this test starts from.
    const outcome = decodeVersioned(
      pipeline.contract,
      {
        messageId,
        data: Buffer.from('{"temperatureC": 21.375, "humidityPct": 40}'),
        attributes: {
          deviceId: device,
          eventTs: new Date(windowStartMs + 5_000).toISOString(),
          contractVersion: '2',
        },
        publishTimeMs: windowStartMs + 6_000,
      },
      {
        receivedAtMs: windowStartMs + 6_000,
        settings: {
          limits: {
            minTemperatureC: -55,
            maxTemperatureC: 125,
            maxFutureSkewMs: 300_000,
            maxEventAgeMs: 86_400_000,
          },
          devices: new StaticDeviceDirectory(new Map([[device, { region, site: 'Milano' }]])),
        },
      },
    );
    assert.ok(outcome.ok, JSON.stringify(outcome));
    eventId = outcome.eventId;
    const bad = badDataRowOf({
      rowJson: JSON.stringify(outcome.row),
      extraFieldsJson: '{}',
      targetDest: `${projectId}.${pipeline.tables.silver.datasetId}.${pipeline.tables.silver.tableId}`,
      error: 'invalid: the fault this test injects',
      nowMs: Date.now(),
      processedTimestampMs: windowStartMs + 6_000,
      retryCount: 0,
      sourceMessageId: messageId,
      insertId: eventId,
    });
    const [written] = await new BigQueryRowWriter(bigquery).insertRows(pipeline.tables.badData, [
      bad,
    ]);
    assert.deepEqual(written, { ok: true });
    // The watermarks of both aggregations at a current reading, as the ingest path's tracker writes them, so the
    // window is closed (end + 10 min allowed lateness behind them).
    for (const aggregation of pipeline.aggregations) {
      const store = new GroupedFirestoreWindowStore<JsonValue>(firestore, {
        root: pipeline.firestore.windowsRoot,
        pipeline: aggregation.name,
        parseAccumulator: (v: unknown) => aggregation.parseAccumulator(v),
        keyGroups: loadWindowConfig({}).keyGroups,
        shards: aggregation.shards,
        earlyDelayMs: null,
        lateDelayMs: null,
        dedupTtlMs: 86_400_000,
      });
      const tracker = new WatermarkTracker(store, {
        policy: aggregation.watermarkPolicy,
        cacheMs: 0,
        minWriteIntervalMs: 0,
      });
      await tracker.observe(Date.now(), Date.now());
    }
  });

  const count = async (sql: string, params: Record<string, unknown>) => {
    const [rows] = await bigquery.query({ query: sql, params });
    return Number((rows as { n: unknown }[])[0]?.n);
  };
  const goldRows = async () => {
    const p = projectId;
    return [
      await count(
        `SELECT COUNT(*) AS n FROM \`${p}.offvia_telemetry_gold.device_minute_panes\` WHERE device_id = @k AND UNIX_MILLIS(window_start) = @s`,
        { k: device, s: windowStartMs },
      ),
      await count(
        `SELECT COUNT(*) AS n FROM \`${p}.offvia_telemetry_gold.region_top_devices\` WHERE region = @k AND UNIX_MILLIS(window_start) = @s`,
        { k: region, s: windowStartMs },
      ),
    ];
  };

  it("counts the reading from bad data and writes each aggregation's pane once; a second restate changes nothing", async () => {
    // Both watermarks then close the window.
    let dry: RestateReport | undefined;
    const deadline = Date.now() + 120_000;
    for (;;) {
      // Exit 1 while the window is open (left alone without --force), with the report on stdout.
      const r = await offvia(...tel('gold', 'restate', ...range, '--dry-run', '--json'));
      assert.ok(r.code === EXIT.ok || r.code === EXIT.failure, r.err);
      dry = JSON.parse(r.out) as RestateReport;
      if (dry.open === 0 && dry.aggregations.every((a) => a.watermark !== null)) break;
      assert.ok(
        Date.now() < deadline,
        `the window never closed: ${JSON.stringify(dry.aggregations)}`,
      );
      await new Promise((r) => setTimeout(r, 2_000));
    }
    // Gold counts a reading wherever its row is: here, in bad data.
    assert.equal(dry.heldEvents, 1);
    assert.deepEqual(
      dry.changes.map((c) => [c.aggregation, c.key, c.current, c.action]),
      [
        ['telemetry_device_1m', device, null, 'restate'],
        ['telemetry_region_top_1m', region, null, 'restate'],
      ],
    );
    assert.deepEqual(
      [dry.changes[0]?.restated.reading_count, dry.changes[0]?.restated.temperature_max_c],
      ['1', '21.375'],
    );
    assert.deepEqual(dry.changes[1]?.restated.top_devices, [
      { device_id: device, max_temperature_c: '21.375', rank: '1' },
    ]);
    assert.deepEqual(await goldRows(), [0, 0], 'the dry run wrote nothing');

    // Restate: one pane per aggregation; a second run writes nothing.
    const run = await offviaJson<RestateReport>(...tel('gold', 'restate', ...range));
    assert.equal(run.heldEvents, 1);
    assert.equal(run.written, 2);
    assert.deepEqual(
      run.changes.map((c) => c.restated),
      dry.changes.map((c) => c.restated),
    );
    assert.deepEqual(await goldRows(), [1, 1]);
    const second = await offviaJson<RestateReport>(...tel('gold', 'restate', ...range));
    assert.deepEqual(
      [second.written, second.changes.length, second.unchanged],
      [0, 0, 2],
      JSON.stringify(second.changes),
    );
    assert.deepEqual(await goldRows(), [1, 1]);
  });

  it('bad-data redrive puts the reading in Silver once, resolved, and gold still counts it once', async () => {
    const p = projectId;
    const silverTable = `${p}.offvia_telemetry_silver.readings`;
    const redrive = tel('bad-data', 'redrive', '--ids', messageId);
    const dry = await offviaJson<ReprocessReport>(...redrive, '--dry-run');
    assert.deepEqual([dry.selected, dry.runId], [1, null]);
    const run = await offviaJson<ReprocessReport>(...redrive);
    assert.deepEqual(run.outcomes, { [silverTable]: 1 });
    assert.equal(run.resolutionsWritten, 1);
    const byMessage = async (table: string) => {
      const [rows] = await bigquery.query({
        query: `SELECT * FROM \`${p}.${table}\` WHERE source_message_id = @id`,
        params: { id: messageId },
      });
      return rows as Record<string, unknown>[];
    };
    // Silver: the reading once, with its event id, device, exact temperature and the run id.
    const silver = await byMessage('offvia_telemetry_silver.readings');
    assert.deepEqual(
      silver.map((r) => [r.event_id, r.device_id, amount(r.temperature_c), r.reprocess_run_id]),
      [[eventId, device, '21.375', run.runId]],
    );
    const resolved = await byMessage('offvia_telemetry_quarantine.resolutions');
    assert.deepEqual(
      resolved.map((r) => [r.layer, r.action, r.outcome, r.run_id]),
      [['bad_data', 'redrive', silverTable, run.runId]],
    );
    assert.deepEqual(await byMessage('offvia_telemetry_quarantine.bad_data_open'), []);
    // Resolved: the same command selects nothing and writes nothing.
    const again = await offviaJson<ReprocessReport>(...redrive);
    assert.equal(again.selected, 0);
    assert.equal((await byMessage('offvia_telemetry_silver.readings')).length, 1);
    // Gold counts the reading wherever its row is, once: now from Silver, the restated panes unchanged.
    const restate = await offviaJson<RestateReport>(...tel('gold', 'restate', ...range));
    assert.deepEqual(
      [restate.heldEvents, restate.written, restate.changes.length, restate.unchanged],
      [0, 0, 0, 2],
      JSON.stringify(restate.changes),
    );
    assert.deepEqual(await goldRows(), [1, 1]);
  });
});
