// fireWindows over the in-memory key-groups store: the partition leases (busy, lost), a key group's failure, the HTTP mapping, the outbox
// re-emission after a failed emission, the pane emitter's bad-data routing, and the schedule.
import assert from 'node:assert/strict';
import sinon from 'sinon';
import { SCHEDULES } from '../../../deploy/schedules';
import { fireWindowsDepsOf } from '../../support/booking-window-assembly';
import { TransientError } from '../../../shared/errors';
import type { LogEntry } from '../../../shared/logging/logger';
import { fireWindows, fireWindowsHttp } from '../../../shared/state/fire-windows';
import { LeaseLostError } from '../../../shared/state/window-store';
import { memoryBookingWindows, record, S, T } from '../../support/booking-windows';

/** Two JFK-LHR-USD windows with an event each, and the watermark past both (no pane fired yet). */
async function twoDueWindows(logs: LogEntry[] = []) {
  const built = memoryBookingWindows({}, { logs });
  await record(built.sink, { id: 'a', fare: '1', at: T + S }, T + 2 * S);
  await record(built.sink, { id: 'b', fare: '2', at: T + 61 * S }, T + 62 * S);
  await record(
    built.sink,
    { id: 'c', route: ['SFO', 'HND', 'USD'], fare: '3', at: T + 135 * S },
    T + 136 * S,
  );
  built.clock.nowMs = T + 140 * S;
  return built;
}

afterEach(() => sinon.restore());

describe('state: fireWindows', () => {
  it('does nothing while other runs hold every partition lease, and answers 200 busy', async () => {
    const { windows, store, clock } = await twoDueWindows();
    for (let p = 0; p < windows.config.firePartitions; p++) {
      await store.acquireLease('someone-else', clock.nowMs, 60_000, `fireWindowsLease~p${p}`);
    }
    const answer = await fireWindowsHttp(fireWindowsDepsOf(windows));
    assert.equal(answer.status, 200);
    assert.equal(answer.body.status, 'busy');
    assert.equal(store.state.outbox.size, 0);
  });

  it('stops when its lease is taken over, leaving the rest to the new holder (partial)', async () => {
    const logs: LogEntry[] = [];
    const { windows } = await twoDueWindows(logs);
    const fired = sinon.stub(windows.keyed, 'fireGroup').rejects(new LeaseLostError('fence moved'));
    const summary = await fireWindows({ ...fireWindowsDepsOf(windows), concurrency: 1 });
    assert.equal(summary.status, 'partial');
    assert.equal(fired.callCount, 1);
    assert.ok(logs.some((l) => l.outcome === 'fire_windows_lease_lost'));
  });

  it('counts a window that fails transiently, fires the others, and answers 503 so Scheduler retries', async () => {
    const logs: LogEntry[] = [];
    const { windows, writer } = await twoDueWindows(logs);
    const real = windows.keyed.fireGroup.bind(windows.keyed);
    sinon
      .stub(windows.keyed, 'fireGroup')
      .callsFake((window, ...rest) =>
        window.startMs === T
          ? Promise.reject(new TransientError('firestore fire key group', 'UNAVAILABLE'))
          : real(window, ...rest),
      );
    const answer = await fireWindowsHttp(fireWindowsDepsOf(windows));
    assert.equal(answer.status, 503);
    assert.equal(answer.body.windowsFailed, 1);
    assert.equal(writer.gold().length, 1, 'the other window fired');
    assert.ok(logs.some((l) => l.outcome === 'window_firing_failed'));
  });

  it('answers 500 and logs an unexpected error', async () => {
    const logs: LogEntry[] = [];
    const { windows, store } = await twoDueWindows(logs);
    sinon.stub(store, 'findGroupsDue').rejects(new Error('bug'));
    const answer = await fireWindowsHttp(fireWindowsDepsOf(windows));
    assert.equal(answer.status, 500);
    assert.ok(logs.some((l) => l.outcome === 'fire_windows_failed'));
    const leases = [...store.state.leases.values()];
    assert.ok(
      leases.length > 0 && leases.every((l) => l.expiresAtMs === 0),
      'the lease was given back',
    );
  });

  it('keeps panes BigQuery could not take in the outbox and writes them on a later run', async () => {
    const logs: LogEntry[] = [];
    const { windows, writer, store, clock } = await twoDueWindows(logs);
    const insert = sinon
      .stub(writer, 'insertRows')
      .rejects(new TransientError('insertAll gold', '503'));
    const first = await fireWindows(fireWindowsDepsOf(windows));
    assert.equal(first.panesDeferred, 2);
    assert.equal(store.state.outbox.size, 2);
    assert.ok(logs.some((l) => l.outcome === 'pane_deferred'));
    insert.restore();
    clock.nowMs += 60 * S;
    const second = await fireWindows(fireWindowsDepsOf(windows));
    assert.equal(second.outboxReemitted, 2);
    assert.equal(store.state.outbox.size, 0);
    assert.deepEqual(
      writer
        .gold()
        .filter((r) => r.route_key === 'JFK-LHR-USD')
        .map((r) => r.pane_timing),
      ['ON_TIME', 'ON_TIME'],
    );
  });

  it('routes a pane row BigQuery refuses to the bad-data table and clears it from the outbox', async () => {
    const logs: LogEntry[] = [];
    const { windows, writer, store } = await twoDueWindows(logs);
    writer.refuse.add('offvia_gold.route_panes');
    const summary = await fireWindows(fireWindowsDepsOf(windows));
    assert.equal(summary.panesToBadData, 2);
    const bad = writer.rows.get('offvia_quarantine.bad_data') ?? [];
    assert.equal(bad.length, 2);
    assert.equal(bad[0]?.json.target_dest, 'offvia-test.offvia_gold.route_panes');
    assert.equal(store.state.outbox.size, 0);
    assert.ok(logs.some((l) => l.outcome === 'bad_data' && l.message.includes('pane row')));
  });

  it('is scheduled every minute, like schemaSweep', () => {
    assert.deepEqual(
      SCHEDULES.find((s) => s.functionName === 'fireWindows'),
      { functionName: 'fireWindows', cron: '* * * * *', everySeconds: 60 },
    );
  });
});
