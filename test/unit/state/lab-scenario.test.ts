// The lab's windowing through the keyed store (in memory): EARLY, ON_TIME and LATE panes in the gold rows, the
// window closed and deleted past allowed lateness, a too-late event dropped and counted once.
import assert from 'node:assert/strict';
import {
  LAB_SCENARIO_PANES,
  memoryBookingWindows,
  MIN,
  paneSummary,
  record,
  runLabWindowScenario,
  S,
  T,
} from '../../support/booking-windows';

describe('state: the lab scenario on the in-memory store', () => {
  it('emits EARLY, ON_TIME, LATE panes, closes the window and counts the too-late event once', async () => {
    const { windows, store, writer, clock, sink } = memoryBookingWindows();
    const run = await runLabWindowScenario(sink, windows, clock);
    assert.deepEqual(paneSummary(writer.gold(), 'JFK-LHR-USD'), LAB_SCENARIO_PANES);
    assert.deepEqual(run.outcomes, {
      e1: 'counted',
      e2: 'counted',
      e3: 'counted',
      'e2-redelivered': 'duplicate',
      c1: 'counted',
      e4: 'counted',
      e5: 'counted',
      c2: 'counted',
      e6: 'dropped',
      'e6-redelivered': 'duplicate',
    });
    const dropped = await store.readDropped();
    assert.deepEqual(
      dropped.map((d) => [d.windowStartMs, d.count, d.expiredWindow]),
      [[T, 1, 1]],
    );
    const jfk = [...store.state.windows.keys(), ...store.state.shards.keys()].filter((k) =>
      k.startsWith('JFK'),
    );
    assert.deepEqual(jfk, [], 'the closed window left no state');
    assert.equal(store.state.outbox.size, 0, 'every pane left the outbox');
    assert.equal(run.fires[1]?.windowsClosed, 1);
  });
});

describe('state: an event stamped ahead of the clock (default configuration)', () => {
  it('does not move the watermark, so an on-time event 90 s old is still counted', async () => {
    const { windows, sink, clock } = memoryBookingWindows();
    const now = T + 10 * MIN;
    clock.nowMs = now;
    // Accepted by the contract (within its 5-minute future skew), stamped 290 s ahead of its receipt.
    assert.equal(
      (await record(sink, { id: 'ahead', fare: '10.00', at: now + 290 * S }, now)).kind,
      'counted',
    );
    clock.nowMs = now + 4 * S;
    assert.equal(
      (await record(sink, { id: 'old', fare: '20.00', at: now - 90 * S }, now + 4 * S)).kind,
      'counted',
    );
    assert.equal(
      (await record(sink, { id: 'recent', fare: '30.00', at: now - 40 * S }, now + 4 * S)).kind,
      'counted',
    );
    const watermarkMs = await windows.tracker.watermarkMs(now + 4 * S, true);
    assert.ok(
      watermarkMs <= now + 4 * S - 10 * S,
      `watermark ${new Date(watermarkMs).toISOString()} ran ahead of the clock`,
    );
  });
});
