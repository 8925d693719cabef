// The telemetry pipeline on the BigQuery emulator: its DDL applies and creates every table and view, its rows fit
// its tables, the settled views read behind the watermark; the device directory (side input) loads its reference
// table at cold start, reloads it on the interval, and keeps serving the last snapshot when a reload fails.
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
import { TELEMETRY_CONTRACT } from '../../../shared/pipelines/telemetry/contract';
import { deviceStatsFn, regionTopNFn } from '../../../shared/pipelines/telemetry/combine';
import { deadLetterRow } from '../../../shared/pipelines/telemetry/rows';
import { decodeVersioned } from '../../../shared/pipeline/versioning';
import { BigQueryRowWriter } from '../../../shared/sinks/bigquery-writer';
import { paneInsertId } from '../../../shared/state/ids';
import type { Pane } from '../../../shared/windowing';
import { telemetrySettings } from '../../support/telemetry-settings';
import { applyPipelineDdl, requireStack, runTag, stackClients } from '../../support/drift-stack';

const ROOT = path.resolve(__dirname, '../../..');
const REF_DATASET = 'offvia_telemetry_ref';

describe('telemetry pipeline on the BigQuery emulator', function () {
  let bigquery: BigQuery;
  let projectId: string;

  before(async function () {
    requireStack();
    ({ bigquery, projectId } = stackClients());
    await applyPipelineDdl(bigquery, projectId, TELEMETRY_PIPELINE);
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

  describe("the pipeline's rows fit its tables (the writer the functions use)", function () {
    const MINUTE = 60_000;
    // Recent times: the settled views look two days back from CURRENT_TIMESTAMP().
    const windowStart = Math.floor(Date.now() / MINUTE) * MINUTE - 10 * MINUTE;
    const settings = telemetrySettings([['dev-1', { region: 'eu-west', site: 'Milano' }]]);
    const [device, region] = TELEMETRY_PIPELINE.aggregations;

    function pane<T>(
      key: string,
      startMs: number,
      value: T,
      index: number,
      watermarkMs: number,
    ): Pane<T> {
      return {
        key,
        window: { startMs, endMs: startMs + MINUTE },
        value,
        timing: index === 0 ? 'ON_TIME' : 'LATE',
        index,
        onTimeIndex: index,
        isFirst: index === 0,
        isLast: false,
        firedAtProcessingTimeMs: watermarkMs + 1000,
        watermarkMs,
      };
    }

    async function rows(table: { datasetId: string; tableId: string }, where: string) {
      const [found] = await bigquery.query({
        query: `SELECT * FROM \`${projectId}.${table.datasetId}.${table.tableId}\` WHERE ${where}`,
      });
      return found as Record<string, unknown>[];
    }

    it('writes a Silver row and a dead-letter row as decoded', async function () {
      const writer = new BigQueryRowWriter(bigquery);
      const tag = runTag();
      const message = (data: string, attributes: Record<string, string>, id: string) => ({
        data: Buffer.from(data),
        attributes,
        messageId: id,
        publishTimeMs: windowStart + 5000,
      });
      const good = message(
        '{"temperatureC": 21.125, "humidityPct": 40}',
        { deviceId: 'dev-1', contractVersion: '2' },
        `ok-${tag}`,
      );
      const accepted = decodeVersioned(TELEMETRY_CONTRACT, good, {
        receivedAtMs: windowStart + 6000,
        settings,
      });
      assert.ok(accepted.ok);
      const bad = message(
        '{"temperatureC": 300}',
        { deviceId: 'dev-1', eventTs: 'soon', contractVersion: '2' },
        `bad-${tag}`,
      );
      const rejected = decodeVersioned(TELEMETRY_CONTRACT, bad, {
        receivedAtMs: windowStart + 6000,
        settings,
      });
      assert.ok(!rejected.ok);
      const { silver, quarantine } = TELEMETRY_PIPELINE.tables;
      assert.deepEqual(
        await writer.insertRows(silver, [
          { insertId: accepted.eventId, json: { ...accepted.row } },
        ]),
        [{ ok: true }],
      );
      const dead = deadLetterRow(bad, rejected, windowStart + 6000);
      assert.deepEqual(
        await writer.insertRows(quarantine, [{ insertId: bad.messageId, json: { ...dead } }]),
        [{ ok: true }],
      );
      const [row] = await rows(silver, `source_message_id = 'ok-${tag}'`);
      assert.equal(String(row?.temperature_c), '21.125');
      assert.equal(row?.event_time_source, 'PUBLISH_TIME');
      assert.equal(row?.region, 'eu-west');
      const [deadRow] = await rows(quarantine, `source_message_id = 'bad-${tag}'`);
      assert.equal(deadRow?.stage, 'RANGE_VALIDATION');
      assert.equal(deadRow?.device_id, 'dev-1');
    });

    it('writes gold rows of both aggregations; the settled views keep only windows 2 min behind the watermark', async function () {
      assert.ok(device && region);
      const writer = new BigQueryRowWriter(bigquery);
      const stats = deviceStatsFn.extractOutput(
        [21_500, 22_000, 20_125].reduce(
          (a, m) => deviceStatsFn.addInput(a, m),
          deviceStatsFn.createAccumulator(),
        ),
      );
      const top = regionTopNFn(10);
      const ranking = top.extractOutput(
        top.addInput(
          top.addInput(top.createAccumulator(), { deviceId: 'dev-1', temperatureMilliC: 22_000 }),
          {
            deviceId: 'dev-2',
            temperatureMilliC: 23_500,
          },
        ),
      );
      // Window A ends 7 min before the newest watermark, window B 1 min before it: only A is settled.
      const watermark = windowStart + 8 * MINUTE;
      const a = windowStart;
      const b = windowStart + 6 * MINUTE;
      for (const [agg, key, value] of [
        [device, 'dev-1', stats],
        [region, 'eu-west', ranking],
      ] as const) {
        const written = await writer.insertRows(
          agg.goldTable,
          [
            pane(key, a, value, 0, a + MINUTE),
            pane(key, a, value, 1, watermark),
            pane(key, b, value, 0, watermark),
          ].map((p) => {
            const insertId = paneInsertId(agg.name, key, p.window, p.index);
            return { insertId, json: agg.goldRow(p, insertId, 'ACCUMULATING') };
          }),
        );
        assert.deepEqual(written, [{ ok: true }, { ok: true }, { ok: true }]);
      }
      const [deviceRow] = await rows(device.goldTable, `device_id = 'dev-1' AND pane_index = 1`);
      assert.equal(String(deviceRow?.temperature_avg_c), '21.208333333');
      assert.equal(deviceRow?.reading_count, 3);
      const [regionRow] = await rows(region.goldTable, `region = 'eu-west' AND pane_index = 1`);
      const ranked = regionRow?.top_devices as { rank: number; device_id: string }[];
      assert.deepEqual(
        ranked.map((d) => [d.rank, d.device_id]),
        [
          [1, 'dev-2'],
          [2, 'dev-1'],
        ],
      );

      for (const [view, where] of [
        ['device_minute_settled', `device_id = 'dev-1'`],
        ['region_top_settled', `region = 'eu-west'`],
      ] as const) {
        const settled = await rows({ datasetId: 'offvia_telemetry_gold', tableId: view }, where);
        assert.deepEqual(
          settled.map((r) => [
            new Date((r.window_start as { value: string }).value).getTime(),
            r.pane_index,
          ]),
          [[a, 1]],
          view,
        );
      }
    });
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
