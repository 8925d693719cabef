// The delivery driver's counters are the whole run's; a scenario's log lines subtract a snapshot taken when it began.
import assert from 'node:assert/strict';
import {
  snapshotStats,
  statsSince,
  type DriverStats,
} from '../../../deploy/local/reliability/driver';

describe('reliability harness: per-scenario driver counters', () => {
  it('gives what happened since the snapshot, not since the run began', () => {
    const stats: DriverStats = {
      acked: 10,
      deliveries: 30,
      failedDeliveries: 4,
      failures: new Map([
        ['HTTP 500', 3],
        ['ECONNREFUSED', 1],
      ]),
    };
    const before = snapshotStats(stats);
    // The driver mutates its counters in place: the snapshot must not follow them.
    stats.acked += 5;
    stats.deliveries += 8;
    stats.failedDeliveries += 3;
    stats.failures.set('ECONNREFUSED', 3);
    stats.failures.set('TimeoutError', 1);
    assert.deepEqual(
      before.failures,
      new Map([
        ['HTTP 500', 3],
        ['ECONNREFUSED', 1],
      ]),
    );
    assert.equal(before.deliveries, 30);
    const since = statsSince(stats, before);
    assert.equal(since.acked, 5);
    assert.equal(since.deliveries, 8);
    assert.equal(since.failedDeliveries, 3);
    // HTTP 500 did not happen again: left out.
    assert.deepEqual(
      [...since.failures],
      [
        ['ECONNREFUSED', 2],
        ['TimeoutError', 1],
      ],
    );
  });

  it('gives zeros for a scenario without deliveries', () => {
    const stats: DriverStats = {
      acked: 1,
      deliveries: 2,
      failedDeliveries: 1,
      failures: new Map([['HTTP 503', 1]]),
    };
    const since = statsSince(stats, snapshotStats(stats));
    assert.deepEqual(since, { acked: 0, deliveries: 0, failedDeliveries: 0, failures: new Map() });
  });
});
