// The session layout on the Firestore emulator (real client), through the booking pipeline's composition root: one
// document per key holding its open sessions, merging in the event's transaction, once-only counting by dedup ids in
// the sessions, fireWindows' session path (ON_TIME, LATE, garbage collection) and the late-drop rule.
import assert from 'node:assert/strict';
import { SESSION_COLLECTION } from '../../../shared/state/firestore-session-store';
import { keyGroupOf } from '../../../shared/state/ids';
import { fire, paneSummary, record, routesOf, S, T } from '../../support/booking-windows';
import { firestoreBookingWindows, suiteFirestore } from '../../support/firestore-windows';

const JFK: [string, string, string] = ['JFK', 'LHR', 'USD'];
const SFO: [string, string, string] = ['SFO', 'HND', 'USD'];

describe('integration: session windows on the Firestore emulator', function () {
  this.timeout(180_000);
  const db = suiteFirestore();

  it('merges sessions in one document per key, counts each booking once, fires ON_TIME and LATE panes and collects the key', async () => {
    const { windows, store, writer, clock, sink } = firestoreBookingWindows(db(), {
      OFFVIA_WINDOW_SESSION_GAP_MS: String(30 * S),
      OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS: '0',
    });
    assert.equal(windows.config.strategy.windowFn.kind, 'sessions');
    const kinds: string[] = [];
    // The clock follows the receipt times: the watermark tracker spaces its writes by processing time.
    const add = async (id: string, atS: number, fare: string, recvS: number, route = JFK) => {
      clock.nowMs = T + recvS * S;
      kinds.push(
        (
          await record(
            sink,
            { id, route, fare, at: T + atS * S },
            T + recvS * S,
            `m-${id}-${recvS}`,
          )
        ).kind,
      );
    };
    await add('s1', 0, '10', 5);
    await add('s2', 20, '20', 25);
    await add('s3', 45, '30', 50);
    await add('s2', 20, '20', 55); // a redelivery: its id is in the merged session
    const docs = (await store.collection(SESSION_COLLECTION).get()).docs;
    assert.equal(docs.length, 1, 'one key, one document');
    const state = JSON.parse(String(docs[0]?.get('state_json'))) as {
      windows: { window: { startMs: number; endMs: number } }[];
    };
    assert.deepEqual(
      state.windows.map((w) => [w.window.startMs - T, w.window.endMs - T]),
      [[0, 75 * S]],
      'three overlapping proto-sessions merged into one',
    );
    assert.equal(Object.values(docs[0]?.get('seen') as Record<string, string>)[0]?.length, 3 * 16);

    await add('s4', 200, '40', 205); // a later session; moves the watermark to T + 190 s
    const summary = await fire(windows, clock, T + 206 * S);
    assert.equal(summary.status, 'done');
    assert.ok(summary.panesEmitted >= 1, JSON.stringify(summary));
    await add('s5', 10, '50', 207); // late, within the allowed lateness: a LATE pane for the same session
    await add('s6', 700, '1', 705, SFO); // another route moves the watermark to T + 690 s: both sessions expire
    await fire(windows, clock, T + 706 * S);
    await add('s1', 0, '10', 710); // redelivered after garbage collection: behind the watermark
    assert.deepEqual(kinds, [
      'counted',
      'counted',
      'counted',
      'duplicate',
      'counted',
      'counted',
      'counted',
      'dropped',
    ]);
    assert.deepEqual(
      paneSummary(writer.gold(), 'JFK-LHR-USD').map((p) => p.slice(0, 5)),
      [
        ['14:10:00', 'ON_TIME', 0, 0, 3],
        ['14:10:00', 'LATE', 1, 1, 4],
        ['14:13:20', 'ON_TIME', 0, 0, 1],
      ],
    );
    const rows = writer.gold().filter((r) => r.route_key === 'JFK-LHR-USD');
    assert.equal(
      String(rows[1]?.window_end).slice(11, 19),
      '14:11:15',
      'the merged session ends at 14:11:15',
    );
    assert.equal(String(rows[1]?.fare_total), '110');
    const left = (await store.collection(SESSION_COLLECTION).get()).docs.map((d) =>
      String(d.get('key')),
    );
    assert.deepEqual(left, ['SFO-HND-USD'], 'the collected key has no document');
    assert.equal((await store.listOutbox(Number.MAX_SAFE_INTEGER, 10)).length, 0, 'outbox empty');
    assert.deepEqual(
      (await store.readDropped()).map((d) => [d.windowStartMs - T, d.count, d.expiredWindow]),
      [[0, 1, 1]],
    );
  });

  it('fires an EARLY pane from the processing-time timer query, without a new element', async () => {
    const { windows, store, writer, clock, sink } = firestoreBookingWindows(db(), {
      OFFVIA_WINDOW_SESSION_GAP_MS: String(30 * S),
    });
    await record(sink, { id: 'p1', route: JFK, fare: '5', at: T }, T + 1 * S);
    const timer = await (
      store as unknown as { earliestSessionTimerMs(): Promise<number | null> }
    ).earliestSessionTimerMs();
    assert.equal(timer, T + 31 * S, 'first element received at T + 1 s, early delay 30 s');
    const before = await fire(windows, clock, T + 30 * S);
    assert.equal(before.panesEmitted, 0);
    await fire(windows, clock, T + 31 * S);
    assert.deepEqual(
      paneSummary(writer.gold(), 'JFK-LHR-USD').map((p) => p.slice(0, 5)),
      [['14:10:00', 'EARLY', 0, -1, 1]],
    );
  });

  it('fires session keys partition by partition (key group mod partitions), skipping a partition another run holds', async () => {
    const { windows, store, writer, clock, sink } = firestoreBookingWindows(db(), {
      OFFVIA_WINDOW_SESSION_GAP_MS: String(30 * S),
      OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS: '0',
      OFFVIA_FIRE_WINDOWS_PARTITIONS: '4',
    });
    const { keyGroups, firePartitions } = windows.config;
    const routes = [
      JFK,
      SFO,
      ...routesOf('CDG-JFK-EUR LHR-SIN-GBP FRA-ORD-EUR SYD-AKL-AUD NRT-LAX-JPY MAD-BOG-EUR'),
    ];
    const partitionOf = (route: [string, string, string]) =>
      keyGroupOf(route.join('-'), keyGroups) % firePartitions;
    const held = partitionOf(JFK);
    const inHeld = routes.filter((r) => partitionOf(r) === held);
    assert.ok(inHeld.length < routes.length, 'the routes span more than one partition');
    for (const [i, route] of routes.entries()) {
      clock.nowMs = T + 2 * S;
      await record(sink, { id: `q${i}`, route, fare: '1', at: T + S }, T + 2 * S);
    }
    clock.nowMs = T + 100 * S;
    await record(
      sink,
      { id: 'clock', route: ['ZRH', 'BOS', 'CHF'], fare: '1', at: T + 90 * S },
      T + 100 * S,
    );
    const other = await store.acquireLease(
      'another-run',
      T + 101 * S,
      60_000,
      `fireWindowsLease~p${held}`,
    );
    assert.ok(other !== null);
    const first = await fire(windows, clock, T + 101 * S);
    assert.equal(first.status, 'done');
    assert.equal(first.partitionsFired, firePartitions - 1);
    const onTime = (route: [string, string, string]) =>
      paneSummary(writer.gold(), route.join('-')).filter((p) => p[1] === 'ON_TIME').length;
    for (const route of routes) {
      assert.equal(onTime(route), partitionOf(route) === held ? 0 : 1, route.join('-'));
    }
    // Once the other run's lease ran out, the skipped partition fires.
    const second = await fire(windows, clock, T + 162 * S);
    assert.equal(second.partitionsFired, firePartitions);
    for (const route of routes) assert.equal(onTime(route), 1, route.join('-'));
  });
});
