// The device directory's reload rules with a stubbed BigQuery client (the real client runs in the integration
// test): one reload at a time however many lookups ask, none before the interval, the last snapshot kept on failure.
import assert from 'node:assert/strict';
import sinon from 'sinon';
import type { BigQuery } from '@google-cloud/bigquery';

import { Logger, type LogEntry } from '../../../../shared/logging/logger';
import {
  BigQueryDeviceDirectory,
  toSnapshot,
} from '../../../../shared/pipelines/telemetry/device-directory';

function stubClient(results: (() => Promise<unknown>)[]) {
  const query = sinon.stub();
  results.forEach((r, i) => query.onCall(i).callsFake(r));
  const exists = sinon.stub().resolves([true]);
  const client = { query, dataset: () => ({ table: () => ({ exists }) }) } as unknown as BigQuery;
  return { client, query };
}

describe('telemetry device directory', () => {
  let now: number;
  let lines: LogEntry[];
  const make = (client: BigQuery) =>
    new BigQueryDeviceDirectory(client, {
      table: { datasetId: 'ref', tableId: 'devices' },
      projectId: 'p-1',
      refreshIntervalMs: 60_000,
      maxDevices: 10,
      logger: new Logger('test', (e) => lines.push(e)),
      now: () => now,
    });

  beforeEach(() => {
    now = 1_000_000;
    lines = [];
  });

  it('starts one reload however many lookups find it due, and none before the interval', async () => {
    let release: (rows: unknown) => void = () => undefined;
    const { client, query } = stubClient([
      () => Promise.resolve([[{ device_id: 'a', region: 'eu', site: 's' }]]),
      () => new Promise((resolve) => (release = resolve)),
    ]);
    const directory = make(client);
    await directory.load();
    assert.equal(
      (query.firstCall.args[0] as { query: string }).query,
      'SELECT device_id, region, site FROM `p-1.ref.devices` ORDER BY device_id, region, site LIMIT 11',
    );
    now += 59_999;
    directory.lookup('a');
    assert.equal(query.callCount, 1);
    now += 1;
    for (let i = 0; i < 100; i++)
      assert.deepEqual(directory.lookup('a'), { region: 'eu', site: 's' });
    const reloading = directory.reloadIfDue();
    assert.ok(reloading);
    assert.equal(directory.reloadIfDue(), reloading, 'a second reload started');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(query.callCount, 2);
    release([[{ device_id: 'b', region: 'us', site: 't' }]]);
    await reloading;
    assert.equal(directory.lookup('a'), undefined);
    assert.deepEqual(directory.lookup('b'), { region: 'us', site: 't' });
    assert.equal(query.callCount, 2);
  });

  it('keeps the last snapshot when a reload fails, logs it, and retries only after another interval', async () => {
    const { client, query } = stubClient([
      () => Promise.resolve([[{ device_id: 'a', region: 'eu', site: 's' }]]),
      () => Promise.reject(new Error('quota exceeded')),
      () => Promise.resolve([[{ device_id: 'c', region: 'eu', site: 's' }]]),
    ]);
    const directory = make(client);
    await directory.load();
    now += 60_000;
    await directory.reloadIfDue();
    assert.deepEqual(directory.lookup('a'), { region: 'eu', site: 's' });
    const failed = lines.find((l) => l.severity === 'ERROR');
    assert.match(String(failed?.error), /quota exceeded/);
    assert.equal(failed?.table, 'p-1.ref.devices');
    now += 59_999;
    assert.equal(directory.reloadIfDue(), undefined);
    now += 1;
    await directory.reloadIfDue();
    assert.equal(query.callCount, 3);
    assert.deepEqual(directory.lookup('c'), { region: 'eu', site: 's' });
  });

  it('refuses a lookup before the first load (the side input is loaded at cold start)', () => {
    const { client } = stubClient([]);
    assert.throws(() => make(client).lookup('a'), /used before load/);
  });

  it('counts malformed and repeated rows instead of keeping them', () => {
    const snapshot = toSnapshot(
      [
        { device_id: 'a', region: 'eu-west', site: 'x' },
        { device_id: 'a', region: 'us-east', site: 'y' },
        { device_id: 'b/1', region: 'eu-west', site: 'x' },
        { device_id: 'c', region: null, site: 'x' },
        { device_id: 'd', region: 'eu-west', site: 'x'.repeat(300) },
      ],
      5,
    );
    assert.deepEqual([...snapshot.devices.keys()], ['a']);
    assert.equal(snapshot.duplicateRows, 1);
    assert.equal(snapshot.invalidRows, 3);
    assert.equal(snapshot.loadedAtMs, 5);
  });
});
