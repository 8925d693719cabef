// The delivery driver's counters are the whole run's; a scenario's log lines subtract a snapshot taken when it began.
// A message another path delivers (a push scenario's) is acked without a POST and left out of the counters.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Message, Subscription } from '@google-cloud/pubsub';
import sinon from 'sinon';
import {
  DeliveryDriver,
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

describe('reliability harness: messages the driver does not deliver', () => {
  afterEach(() => sinon.restore());

  it('acks a message with 0 wanted deliveries at once, without a POST, and counts nothing', async () => {
    const fetch = sinon.stub(globalThis, 'fetch').rejects(new Error('no POST expected'));
    const subscription = Object.assign(new EventEmitter(), {
      close: () => Promise.resolve(),
    }) as unknown as Subscription;
    const onAcked = sinon.spy();
    const driver = new DeliveryDriver(
      subscription,
      {
        functionUrl: 'http://127.0.0.1:9',
        topicPath: 'projects/p/topics/t',
        subscriptionPath: 'projects/p/subscriptions/s',
        concurrency: 1,
        minBackoffMs: 1,
        maxBackoffMs: 1,
        requestTimeoutMs: 1_000,
      },
      () => 0,
      onAcked,
    );
    driver.start();
    const ack = sinon.spy();
    const message = {
      id: 'm-1',
      data: Buffer.from('{}'),
      attributes: { offvia_reliability_delivery: 'push' },
      publishTime: new Date(),
      ack,
    } as unknown as Message;
    subscription.emit('message', message);
    await driver.stop();
    assert.equal(ack.callCount, 1);
    assert.equal(fetch.callCount, 0);
    assert.equal(onAcked.callCount, 0);
    assert.deepEqual(driver.stats, {
      acked: 0,
      deliveries: 0,
      failedDeliveries: 0,
      failures: new Map(),
    });
  });
});
