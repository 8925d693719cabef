// The timer loop's and the watermark holds' Firestore seams on the emulator (real client): the earliest pending
// timer query, the hold store, and a fireWindows pass that keeps the watermark behind a failing delivery.
import assert from 'node:assert/strict';
import { fireWindowsDepsOf } from '../../support/booking-window-assembly';
import { fireWindows } from '../../../shared/state/fire-windows';
import { nextTimerQuery } from '../../../shared/state/timer-loop';
import {
  FirestoreWatermarkHoldStore,
  heartbeatWatermarkHold,
} from '../../../shared/state/watermark-holds';
import { NO_HOLD } from '../../../shared/state/backlog-hold';
import { Logger } from '../../../shared/logging/logger';
import { MIN, record, S, T } from '../../support/booking-windows';
import {
  suiteFirestore,
  firestoreBookingWindows,
  uniqueRoot,
} from '../../support/firestore-windows';

describe('integration: timer query and watermark holds on the Firestore emulator', function () {
  this.timeout(120_000);
  const db = suiteFirestore();

  it('answers the earliest pending timer: none, then first element + the early delay, none again once fired', async () => {
    const { windows, sink, clock } = firestoreBookingWindows(db());
    const deps = fireWindowsDepsOf(windows);
    const next = nextTimerQuery(deps);
    assert.equal(await next(), null);
    await record(sink, { id: 'a', fare: '10', at: T + 5 * S }, T + 20 * S);
    await record(sink, { id: 'b', fare: '20', at: T + 6 * S }, T + 25 * S);
    assert.equal(await next(), T + 20 * S + 30 * S);
    // The early pane fires at its deadline; the pane is then empty, so nothing is pending.
    clock.nowMs = T + 50 * S;
    const summary = await fireWindows(deps);
    assert.equal(summary.panesEmitted, 1);
    assert.equal(await next(), null);
  });

  it('keeps, lists, releases and deletes holds', async () => {
    const store = new FirestoreWatermarkHoldStore(db(), uniqueRoot(), 'p');
    await store.recordFailure('m-2', T + 2 * S, T + 3 * S, 11 * MIN);
    await store.recordFailure('m-1', T + S, T + 4 * S, 11 * MIN);
    // A second failure renews the lease.
    await store.recordFailure('m-1', T + S, T + 9 * S, 11 * MIN);
    const held = await store.oldest(10);
    assert.deepEqual(
      held.map((h) => [h.messageId, h.publishTimeMs, h.expiresAtMs]),
      [
        ['m-1', T + S, T + 9 * S + 11 * MIN],
        ['m-2', T + 2 * S, T + 3 * S + 11 * MIN],
      ],
    );
    await store.release('m-1');
    await store.release('never-held');
    await store.deleteLapsed(['m-2']);
    assert.deepEqual(await store.oldest(10), []);
  });

  it('keeps the newest processed heartbeat, whatever the order of deliveries, and caps the hold at it', async () => {
    const store = new FirestoreWatermarkHoldStore(db(), uniqueRoot(), 'p');
    assert.equal(await store.newestHeartbeat(), null);
    await store.recordHeartbeat(T + 2 * MIN, T + 2 * MIN + S);
    // A redelivered older heartbeat does not move it back.
    await store.recordHeartbeat(T + MIN, T + 3 * MIN);
    assert.equal(await store.newestHeartbeat(), T + 2 * MIN);
    await store.recordHeartbeat(T + 3 * MIN, T + 3 * MIN + S);
    assert.equal(await store.newestHeartbeat(), T + 3 * MIN);
    const policy = { maxOutOfOrdernessMs: 10 * S, idleTimeoutMs: MIN, maxFutureSkewMs: 0 };
    const hold = heartbeatWatermarkHold(store, () => Promise.resolve(NO_HOLD), {
      policy,
      maxHoldMs: 60 * MIN,
      pipeline: 'p',
      logger: new Logger('test', () => undefined),
    });
    assert.equal((await hold(T + 20 * MIN)).capMs, T + 3 * MIN - 10 * S);
  });

  it('fireWindows holds the watermark behind a failing delivery, then lets the idle rule go on', async () => {
    const { windows, sink, clock } = firestoreBookingWindows(db());
    assert.ok(windows.holds !== undefined, 'holds are on by default');
    const deps = fireWindowsDepsOf(windows);
    await record(sink, { id: 'a', fare: '10', at: T }, T);
    // A message published at T + 5 s keeps failing; five minutes pass with no delivered event.
    await windows.holds.recordFailure('m-held', T + 5 * S, T + 5 * MIN, 11 * MIN);
    clock.nowMs = T + 5 * MIN;
    const held = await fireWindows(deps);
    assert.equal(held.watermarkMs, T + 5 * S - 10 * S);
    assert.deepEqual(held.watermarkHold, {
      oldestPublishTimeMs: T + 5 * S,
      capMs: T - 5 * S,
      active: 1,
      stuck: 0,
    });
    // Its window [T, T + 1 min) is still open: no ON_TIME pane yet.
    assert.equal(held.windowsClosed, 0);
    await windows.holds.release('m-held');
    clock.nowMs = T + 6 * MIN;
    const free = await fireWindows(deps);
    assert.equal(free.watermarkMs, T + 6 * MIN - MIN - 10 * S);
    assert.equal(free.watermarkHold?.active, 0);
  });
});
