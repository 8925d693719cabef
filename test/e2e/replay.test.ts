// offvia replay end to end on the local stack: 2,000 mixed messages (valid, quarantined at every stage, duplicates,
// too late for their window) go through Pub/Sub, Bronze and ingestBooking, each to Silver or quarantine at the stage
// its kind names (the lab's mixed-stream acceptance check, at this scale); replaying their whole Bronze range twice,
// and once more killed with SIGKILL halfway and resumed, leaves the Silver dedup view, the quarantine open view,
// gold's latest panes and the dropped-late counters identical, row by row.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { checkEveryMessageRouted } from '../../deploy/local/demo';
import { waitForLayers } from '../../deploy/local/layers';
import {
  bookingJson,
  bookingStackClients,
  stackBookingWindows,
  testAirport,
  testRoute,
} from '../support/booking-stack';
import { loadWindowConfig } from '../../shared/config/window-config';
import { EXIT } from '../../shared/ops/errors';
import { cellText } from '../../shared/ops/output';
import type { ReplayReport } from '../../shared/ops/replay';
import { REPLAY_COLLECTION, type ReplayRunRecord } from '../../shared/ops/replay-store';
import { fireWindowsOnce } from '../support/fire-windows-http';
import { mixedEvents, prng } from '../support/events';
import { offvia } from '../support/offvia-cli';

type Row = Record<string, unknown>;

/** A row as comparable text: NUMERIC, TIMESTAMP and JSON cells as their text, keys sorted. */
function canonical(row: Row): string {
  return JSON.stringify(
    Object.keys(row)
      .sort()
      .map((k) => [k, cellText(row[k])]),
  );
}

/** What the test compares before and after each replay. */
interface Capture {
  silverDedup: string[];
  quarantineOpen: string[];
  goldLatest: string[];
  dropped: string[];
  badDataOpen: number;
}

describe('e2e: offvia replay of Bronze is idempotent', function () {
  this.timeout(1_800_000);
  const { env, pubsub, bq } = bookingStackClients();
  const p = env.projectId;
  const origins = [testAirport(), testAirport()];
  const destinations = [testAirport(), testAirport()];
  const ids: string[] = [];
  const routeKeys = new Set<string>();
  const state = stackBookingWindows('replay.test');
  let fromIso = '';
  let toIso = '';
  const expected = { silver: 0, quarantine: 0, late: 0, duplicates: 0 };
  let baseline: Capture;

  const query = async (sql: string, params: Record<string, unknown> = {}): Promise<Row[]> => {
    const [rows] = await bq.query({ query: sql, params });
    return rows as Row[];
  };

  async function capture(): Promise<Capture> {
    const silverDedup = await query(
      `SELECT * FROM \`${p}.offvia_silver.fact_bookings_dedup\` WHERE source_message_id IN UNNEST(@ids)`,
      { ids },
    );
    const quarantineOpen = await query(
      `SELECT * FROM \`${p}.offvia_quarantine.poisoned_events_open\` WHERE source_message_id IN UNNEST(@ids)`,
      { ids },
    );
    const goldLatest = await query(
      `SELECT * FROM \`${p}.offvia_gold.route_panes_latest\` WHERE route_key IN UNNEST(@keys)`,
      { keys: [...routeKeys] },
    );
    const badDataOpen = await query(
      `SELECT COUNT(*) AS n FROM \`${p}.offvia_quarantine.bad_data_open\` WHERE source_message_id IN UNNEST(@ids)`,
      { ids },
    );
    const dropped = (await state().windows.store.readDropped()).map((c) => JSON.stringify(c));
    return {
      silverDedup: silverDedup.map(canonical).sort(),
      quarantineOpen: quarantineOpen.map(canonical).sort(),
      goldLatest: goldLatest.map(canonical).sort(),
      dropped: dropped.sort(),
      badDataOpen: Number(badDataOpen[0]?.n),
    };
  }

  /**
   * Polls (every 3 s, two light count queries: the shared layers helper's four row reads of 2,000 ids every 300 ms
   * slowed the emulator and the functions down) until every message is in Bronze and in Silver, quarantine or bad
   * data. A failed poll (the emulator dropping a connection under load) is logged and polled again.
   */
  async function waitRouted(batch: readonly string[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      try {
        const [bronze] = await query(
          `SELECT COUNT(DISTINCT message_id) AS n FROM \`${p}.offvia_bronze.raw_bookings\`
           WHERE message_id IN UNNEST(@ids)`,
          { ids: [...batch] },
        );
        const [routed] = await query(
          `SELECT COUNT(DISTINCT id) AS n FROM (
             SELECT source_message_id AS id FROM \`${p}.offvia_silver.fact_bookings\` WHERE source_message_id IN UNNEST(@ids)
             UNION ALL
             SELECT source_message_id FROM \`${p}.offvia_quarantine.poisoned_events\` WHERE source_message_id IN UNNEST(@ids)
             UNION ALL
             SELECT source_message_id FROM \`${p}.offvia_quarantine.bad_data\` WHERE source_message_id IN UNNEST(@ids))`,
          { ids: [...batch] },
        );
        last = `${Number(bronze?.n)} in Bronze, ${Number(routed?.n)} routed of ${batch.length}`;
        if (Number(bronze?.n) === batch.length && Number(routed?.n) === batch.length) return;
      } catch (err) {
        last = `poll failed: ${err instanceof Error ? err.message : String(err)}`;
        console.log(`      ${last}; polling again`);
      }
      assert.ok(Date.now() < deadline, `not every message routed in ${timeoutMs} ms: ${last}`);
      await new Promise((r) => setTimeout(r, 3_000));
    }
  }

  function assertSame(after: Capture, what: string): void {
    // Row by row: deepStrictEqual names the first differing row.
    assert.deepStrictEqual(after.silverDedup, baseline.silverDedup, `${what}: Silver dedup view`);
    assert.deepStrictEqual(
      after.quarantineOpen,
      baseline.quarantineOpen,
      `${what}: quarantine open view`,
    );
    assert.deepStrictEqual(after.goldLatest, baseline.goldLatest, `${what}: route_panes_latest`);
    assert.deepStrictEqual(after.dropped, baseline.dropped, `${what}: dropped-late counters`);
    assert.equal(after.badDataOpen, baseline.badDataOpen, `${what}: bad-data open view`);
  }

  async function replayJson(...argv: string[]): Promise<ReplayReport> {
    const r = await offvia('replay', ...argv, '--json');
    assert.equal(r.code, EXIT.ok, `offvia replay ${argv.join(' ')}: ${r.err}`);
    return JSON.parse(r.out) as ReplayReport;
  }

  before(async function () {
    const { windows } = state();
    const config = loadWindowConfig(process.env);
    const t0 = Date.now();
    fromIso = new Date(Math.floor(t0 / 1000) * 1000 - 1000).toISOString();

    // 1,800 generated events (about 30 % invalid, over the four stages), the valid ones retimed (below) and
    // onto this test's routes; 100 copies of valid ones re-published (new message id, same event_id); 100 valid
    // events 20 minutes old, whose windows are past the allowed lateness: dropped and counted as late.
    const rnd = prng(17);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const payloads: string[] = [];
    /** Per message in publish order, where it must end: `silver` or the quarantine stage. */
    const endsIn: string[] = [];
    let lastEventTimeMs = Number.NEGATIVE_INFINITY;
    const valid: string[] = [];
    const route = (event: Record<string, unknown>) => {
      event.origin = pick(origins);
      event.destination = pick(destinations);
      routeKeys.add(
        `${String(event.origin)}-${String(event.destination)}-${String(event.currency)}`,
      );
    };
    for (const g of mixedEvents(1800, 17, t0)) {
      endsIn.push(g.expected);
      if (g.expected !== 'silver') {
        payloads.push(g.payload);
        expected.quarantine++;
        continue;
      }
      const event = JSON.parse(g.payload) as Record<string, unknown>;
      route(event);
      // 240 to 290 s old: inside the allowed lateness (300 s) of a watermark at about now, so they are counted
      // (or, on a loaded machine that delivers some after their window closed, dropped as late: either way the
      // replays below must leave it as the stream did), and their windows close at most 120 s after t0 (when the
      // watermark is the clock), so the wait below for them to close is about the routing time, not minutes more.
      const eventTimeMs = t0 - 240_000 - Math.floor(rnd() * 50_000);
      lastEventTimeMs = Math.max(lastEventTimeMs, eventTimeMs);
      event.event_time = new Date(eventTimeMs).toISOString();
      const text = JSON.stringify(event);
      payloads.push(text);
      valid.push(text);
      expected.silver++;
    }
    for (let i = 0; i < 100; i++) {
      payloads.push(pick(valid));
      endsIn.push('silver');
      expected.duplicates++;
    }
    const late: string[] = [];
    for (let i = 0; i < 100; i++) {
      const event = JSON.parse(pick(valid)) as Record<string, unknown>;
      event.booking_id = `LATE-${origins[0]}-${i}`;
      event.event_time = new Date(t0 - 20 * 60_000 - i * 1000).toISOString();
      late.push(JSON.stringify(event));
      endsIn.push('silver');
      expected.late++;
    }
    assert.equal(payloads.length + late.length, 2000);
    const topic = pubsub.topic('booking-events', { batching: { maxMessages: 100 } });
    const publish = async (batch: readonly string[]) => {
      const published = await Promise.all(
        batch.map((data, i) =>
          topic.publishMessage({
            data: Buffer.from(data),
            attributes: { test: 'replay', n: String(ids.length + i) },
          }),
        ),
      );
      ids.push(...published);
      await waitRouted(published, 1_200_000);
    };
    await publish(payloads);
    // The late ones after the others moved the watermark to about now: 20 minutes old is then past their windows'
    // end + allowed lateness, whatever order Pub/Sub delivers in.
    await publish(late);
    const routedMs = Date.now();
    toIso = new Date(routedMs + 1000).toISOString();
    // Each message once in Bronze and once in Silver or quarantine, at the stage its kind names; none in bad data.
    const { layers, complete } = await waitForLayers(bq, p, ids, 120_000);
    assert.ok(complete, `not every message routed: ${layers.silver.length} in Silver`);
    assert.deepEqual(checkEveryMessageRouted(layers, ids), []);
    assert.equal(layers.bronze.length, ids.length);
    assert.equal(layers.badData.length, 0);
    const landed = new Map<string, string>();
    for (const r of layers.silver) landed.set(String(r.source_message_id), 'silver');
    for (const r of layers.quarantine)
      landed.set(String(r.source_message_id), String(r.error_stage));
    const wrong = ids.flatMap((id, i) =>
      landed.get(id) === endsIn[i] ? [] : [`${id} → ${landed.get(id)}, expected ${endsIn[i]}`],
    );
    assert.deepEqual(wrong, []);

    // One booking stamped now, on a route of its own and published after the replayed range (so no capture or
    // replay sees it): the watermark follows it at once, as live traffic moves it, instead of gliding on from these
    // events' times by the idle rule (minutes more). Their windows are closed only once every message is routed.
    while (Date.now() <= Date.parse(toIso)) await new Promise((r) => setTimeout(r, 200));
    await topic.publishMessage({
      data: Buffer.from(
        bookingJson(`clock-${origins[0]}`, 1, {
          flight_number: 'OF-9',
          ...testRoute(),
          fare: '10',
          currency: 'USD',
          event_time: new Date().toISOString(),
        }),
      ),
    });
    // Let every window of these routes close (watermark past end + allowed lateness), so the scheduler's own
    // fireWindows runs cannot change gold between two captures: only a replay could.
    const lastWindowEndMs = (Math.floor(lastEventTimeMs / 60_000) + 1) * 60_000;
    const closedAtMs = lastWindowEndMs + config.strategy.allowedLatenessMs + 1;
    for (;;) {
      await fireWindowsOnce(String(process.env.OFFVIA_FIRE_WINDOWS_URL));
      const watermark = (await windows.store.readWatermark())?.state.watermarkMs ?? 0;
      if (watermark > closedAtMs) break;
      await new Promise((r) => setTimeout(r, 5_000));
    }
    // Two more runs: the first garbage-collects the windows, the second re-emits anything left in the outbox.
    await fireWindowsOnce(String(process.env.OFFVIA_FIRE_WINDOWS_URL));
    await fireWindowsOnce(String(process.env.OFFVIA_FIRE_WINDOWS_URL));
    const closedMs = Date.now();
    console.log(
      `      routed 2000 messages in ${((routedMs - t0) / 1000).toFixed(1)} s; their windows closed ` +
        `${((closedMs - routedMs) / 1000).toFixed(1)} s later`,
    );
    baseline = await capture();
    // The capture is the data this test published: a replay that changed nothing would show nothing otherwise.
    assert.equal(baseline.silverDedup.length, expected.silver + expected.late);
    assert.equal(baseline.quarantineOpen.length, expected.quarantine);
    assert.ok(baseline.goldLatest.length > 0, 'gold has panes of the test routes');
    const droppedTotal = (await windows.store.readDropped()).reduce((s, c) => s + c.count, 0);
    assert.ok(
      droppedTotal >= expected.late,
      `dropped-late counters hold the late events (${droppedTotal})`,
    );
  });

  it('--dry-run counts the range and estimates its scan, writing nothing', async () => {
    const r = await replayJson('--from', fromIso, '--to', toIso, '--dry-run');
    assert.equal(r.dryRun, true);
    // At least once: the Bronze subscription may write a message twice (the replay reads it once).
    assert.ok(r.bronzeRows >= 2000, String(r.bronzeRows));
    assert.equal(r.scan?.method, 'estimate');
    assert.ok((r.scan?.bytes ?? 0) > 100_000, JSON.stringify(r.scan));
    assert.ok((r.scan?.partitionedBytes ?? 0) <= (r.scan?.unpartitionedBytes ?? 0));
    assert.equal(r.totals, null);
    assertSame(await capture(), 'after a dry run');
  });

  it('replaying the whole Bronze range twice changes nothing readers see', async () => {
    for (const pass of [1, 2]) {
      const r = await replayJson('--from', fromIso, '--to', toIso);
      assert.equal(r.status, 'done');
      assert.equal(r.totals?.rows, 2000);
      assert.equal(r.totals?.failed, 0);
      assert.equal(
        r.totals?.outcomes.silver,
        expected.silver + expected.late + expected.duplicates,
      );
      assert.equal(r.totals?.outcomes.quarantine, expected.quarantine);
      // Every quarantined message already had its row at that stage: none is written again.
      assert.equal(r.totals?.alreadyPresent.quarantine, expected.quarantine);
      console.log(
        `      replay pass ${pass}: ${r.totals?.rows} rows in ${(r.elapsedMs / 1000).toFixed(1)} s = ${r.rowsPerSecond} rows/s`,
      );
      assertSame(await capture(), `after replay ${pass}`);
    }
  });

  it('a replay killed with SIGKILL halfway and resumed gives the same result', async () => {
    const bin = path.join(__dirname, '..', '..', 'bin', 'offvia.cjs');
    const child = spawn(
      process.execPath,
      [bin, 'replay', '--from', fromIso, '--to', toIso, '--chunk-minutes', '1', '--rate', '150'],
      { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stdout.resume();
    const killedAt = await new Promise<number>((resolve, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        // The progress bar (stderr is not a terminal: a line every 2 s) `| 812/2000 |`.
        const done = [...stderr.matchAll(/\| (\d+)\/\d+ \|/g)].map((m) => Number(m[1]));
        const last = done.at(-1) ?? 0;
        if (last >= 700 && child.exitCode === null && !child.killed) {
          child.kill('SIGKILL');
          resolve(last);
        }
      });
      child.on('exit', (c, signal) => {
        if (signal !== 'SIGKILL')
          reject(new Error(`replay ended before the kill (${c}): ${stderr}`));
      });
    });
    await new Promise((r) => child.once('close', r));
    const runId = /run (offvia-replay-\S+) started/.exec(stderr)?.[1];
    assert.ok(runId, stderr);
    const killed = (
      await state().firestore.collection(REPLAY_COLLECTION).doc(runId).get()
    ).data() as ReplayRunRecord | undefined;
    // Killed mid-run: the run record says it is still running, and no final status was written.
    assert.equal(killed?.status, 'running');
    assert.ok(killedAt < 2000);

    const resumed = await replayJson('--resume', runId);
    assert.equal(resumed.resumed, true);
    assert.equal(resumed.status, 'done');
    assert.ok(
      resumed.chunksRun >= 1 && resumed.chunksRun <= resumed.chunks,
      JSON.stringify(resumed),
    );
    assert.equal(resumed.totals?.rows, 2000);
    assert.equal(resumed.totals?.failed, 0);
    assertSame(await capture(), 'after a killed and resumed replay');
    // A finished run resumed again has nothing left to do.
    const again = await replayJson('--resume', runId);
    assert.equal(again.chunksRun, 0);
    assert.equal(again.status, 'done');
  });
});
