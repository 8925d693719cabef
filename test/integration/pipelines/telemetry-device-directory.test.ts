// The telemetry pipeline on the BigQuery emulator: its DDL applies and creates every table and view; the device
// directory (side input) loads its reference table at cold start, reloads it on the interval, and keeps serving the
// last snapshot when a reload fails.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';

import { createdObjects, fillPlaceholders } from '../../../deploy/local/apply-sql';
import { TransientError } from '../../../shared/errors';
import { Logger, type LogEntry } from '../../../shared/logging/logger';
import {
  BigQueryDeviceDirectory,
  DeviceDirectoryTooLargeError,
} from '../../../shared/pipelines/telemetry/device-directory';
import { TELEMETRY_PIPELINE } from '../../../shared/pipelines/telemetry/definition';
import { requireStack, runTag, stackClients } from '../../support/drift-stack';

const ROOT = path.resolve(__dirname, '../../..');
const REF_DATASET = 'offvia_telemetry_ref';

describe('telemetry pipeline on the BigQuery emulator', function () {
  let bigquery: BigQuery;
  let projectId: string;

  before(async function () {
    requireStack();
    ({ bigquery, projectId } = stackClients());
    // The pipeline's own DDL, file by file, as the appliers will run it once they read sql/pipelines/.
    for (const file of TELEMETRY_PIPELINE.tables.ddlFiles) {
      const sql = fillPlaceholders(await readFile(path.join(ROOT, file), 'utf8'), {
        project: projectId,
        location: 'US',
      });
      await bigquery.query({ query: sql });
    }
  });

  it('creates every dataset, table and view of the definition', async function () {
    const missing: string[] = [];
    for (const file of TELEMETRY_PIPELINE.tables.ddlFiles) {
      const sql = await readFile(path.join(ROOT, file), 'utf8');
      for (const o of createdObjects(sql)) {
        const dataset = bigquery.dataset(o.datasetId);
        const [exists] = o.tableId
          ? await dataset.table(o.tableId).exists()
          : await dataset.exists();
        if (!exists) missing.push(`${o.kind} ${o.datasetId}.${o.tableId ?? ''}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  describe('the device directory (side input)', function () {
    let tableId: string;
    let now: number;
    let lines: LogEntry[];
    const directory = (maxDevices = 100) =>
      new BigQueryDeviceDirectory(bigquery, {
        table: { datasetId: REF_DATASET, tableId },
        projectId,
        refreshIntervalMs: 60_000,
        maxDevices,
        logger: new Logger('it-telemetry', (e) => lines.push(e)),
        now: () => now,
      });

    async function insert(rows: Record<string, unknown>[]): Promise<void> {
      await bigquery.dataset(REF_DATASET).table(tableId).insert(rows);
    }

    beforeEach(async function () {
      tableId = `devices_${runTag()}`;
      now = Date.UTC(2026, 9, 7, 14, 0);
      lines = [];
      const ddl = fillPlaceholders(
        await readFile(
          path.join(ROOT, 'sql/pipelines/telemetry/050_reference_devices.sql'),
          'utf8',
        ),
        { project: projectId, location: 'US' },
      ).replace(`${REF_DATASET}.devices\``, `${REF_DATASET}.${tableId}\``);
      await bigquery.query({ query: ddl });
      await insert([
        { device_id: 'dev-1', region: 'eu-west', site: 'Milano Nord' },
        { device_id: 'dev-2', region: 'us-east', site: 'Newark' },
        { device_id: 'dev-2', region: 'us-west', site: 'Oakland' },
        { device_id: 'dev-3', region: 'EU WEST', site: 'bad region' },
      ]);
    });

    it('loads the table at cold start: devices known, malformed and repeated rows counted and logged', async function () {
      const devices = directory();
      const snapshot = await devices.load();
      assert.equal(snapshot.devices.size, 2);
      assert.equal(snapshot.invalidRows, 1);
      assert.equal(snapshot.duplicateRows, 1);
      assert.deepEqual(devices.lookup('dev-1'), { region: 'eu-west', site: 'Milano Nord' });
      // ORDER BY device_id, region, site: the first of the repeated rows wins on every instance.
      assert.deepEqual(devices.lookup('dev-2'), { region: 'us-east', site: 'Newark' });
      assert.equal(devices.lookup('dev-3'), undefined);
      const loaded = lines.find((l) => l.message === 'device directory loaded');
      assert.equal(loaded?.severity, 'WARNING');
      assert.equal(loaded?.invalid_rows, 1);
    });

    it('reloads in the background once the interval has passed, not before', async function () {
      const devices = directory();
      await devices.load();
      await insert([{ device_id: 'dev-9', region: 'ap-south', site: 'Pune' }]);
      now += 59_999;
      assert.equal(devices.lookup('dev-9'), undefined);
      assert.equal(devices.reloadIfDue(), undefined);
      now += 1;
      assert.equal(
        devices.lookup('dev-9'),
        undefined,
        'the lookup that starts a reload answers from the old snapshot',
      );
      await devices.reloadIfDue();
      assert.deepEqual(devices.lookup('dev-9'), { region: 'ap-south', site: 'Pune' });
      assert.equal(devices.current?.loadedAtMs, now);
    });

    it('keeps serving the last snapshot when a reload fails, and says so', async function () {
      const devices = directory();
      await devices.load();
      await bigquery.dataset(REF_DATASET).table(tableId).delete();
      now += 60_000;
      await devices.reloadIfDue();
      assert.deepEqual(devices.lookup('dev-1'), { region: 'eu-west', site: 'Milano Nord' });
      const failed = lines.find((l) => l.message.startsWith('device directory reload failed'));
      assert.equal(failed?.severity, 'ERROR');
      assert.equal(failed?.snapshot_age_ms, 60_000);
    });

    it('fails the cold start on a missing table (transient: Pub/Sub holds the readings back)', async function () {
      await bigquery.dataset(REF_DATASET).table(tableId).delete();
      await assert.rejects(directory().load(), TransientError);
    });

    it('refuses a reference table with more devices than the cap', async function () {
      await assert.rejects(directory(1).load(), DeviceDirectoryTooLargeError);
    });
  });
});
