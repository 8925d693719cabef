// `offvia --pipeline telemetry` on the local stack: status, trace and quarantine list read the telemetry tables
// and replay and quarantine reprocess send Bronze and fixed dead-letter rows through the telemetry ingest path;
// (its DDL applied here), and the window state of each aggregation under the pipeline's own Firestore root, and
// their numbers equal what is read independently from BigQuery and Firestore. The readings are decoded by the
// telemetry contract and written with the functions' writer and the keyed window store, as its ingest path will.
import assert from 'node:assert/strict';
import type { BigQuery } from '@google-cloud/bigquery';
import type { Firestore } from '@google-cloud/firestore';

import { decodeVersioned } from '../../shared/pipeline/versioning';
import type { VersionAccepted } from '../../shared/pipeline/definition';
import { TELEMETRY_PIPELINE } from '../../shared/pipelines/telemetry/definition';
import { deadLetterRow } from '../../shared/pipelines/telemetry/rows';
import type {
  TelemetryElement,
  TelemetrySilverRow,
} from '../../shared/pipelines/telemetry/contract';
import { BigQueryRowWriter } from '../../shared/sinks/bigquery-writer';
import { COLLECTIONS } from '../../shared/state/firestore-window-store';
import {
  GroupedFirestoreWindowStore,
  GROUP_COLLECTIONS,
} from '../../shared/state/grouped-window-store';
import { KeyedWindows } from '../../shared/state/keyed-windows';
import { loadWindowConfig } from '../../shared/config/window-config';
import { WatermarkTracker } from '../../shared/state/watermark-tracker';
import { createReduceFnRunner, type JsonValue } from '../../shared/windowing';
import { EXIT } from '../../shared/ops/errors';
import type { StatusReport } from '../../shared/ops/status';
import type { TraceReport } from '../../shared/ops/trace';
import type { ReplayReport } from '../../shared/ops/replay';
import type { ReprocessReport } from '../../shared/ops/reprocess';
import { offvia, offviaJson } from '../support/offvia-cli';
import { telemetrySettings } from '../support/telemetry-settings';
import { applyPipelineDdl, requireStack, runTag, stackClients } from '../support/drift-stack';

const pipeline = TELEMETRY_PIPELINE;

describe('e2e: offvia --pipeline telemetry on the local stack (status, trace, quarantine list)', function () {
  let bigquery: BigQuery;
  let firestore: Firestore;
  let projectId: string;
  const tag = runTag();
  const now = Date.now();
  const goodId = `tm-ok-${tag}`;
  const lateId = `tm-ok2-${tag}`;
  const badId = `tm-bad-${tag}`;
  let accepted: VersionAccepted<TelemetrySilverRow, TelemetryElement>[] = [];
  /** Per aggregation, the outcome its watermark at processing time decides for the first reading, and that watermark. */
  const expectedOutcome = new Map<string, string>();
  const watermarkSeen = new Map<string, number>();

  const settings = telemetrySettings([
    [`dev-${tag}`, { region: `r-${tag.slice(0, 8)}`, site: 'Milano' }],
  ]);

  before(async function () {
    requireStack();
    ({ bigquery, firestore, projectId } = stackClients());
    await applyPipelineDdl(bigquery, projectId, pipeline);
    const message = (id: string, data: string, eventTs: string) => ({
      messageId: id,
      data: Buffer.from(data),
      attributes: { deviceId: `dev-${tag}`, eventTs, contractVersion: '2' },
      publishTimeMs: now - 1000,
    });
    const eventTs = (ms: number) => new Date(ms).toISOString();
    const minute = Math.floor(now / 60_000) * 60_000;
    const messages = [
      message(goodId, '{"temperatureC": 21.5, "humidityPct": 40}', eventTs(minute - 50_000)),
      message(lateId, '{"temperatureC": 23.25}', eventTs(minute - 40_000)),
      message(badId, '{"temperatureC": 400}', eventTs(minute - 30_000)),
    ];
    const writer = new BigQueryRowWriter(bigquery);
    accepted = [];
    for (const m of messages) {
      const outcome = decodeVersioned(pipeline.contract, m, { receivedAtMs: now, settings });
      if (outcome.ok) {
        accepted.push(outcome);
        const [written] = await writer.insertRows(pipeline.tables.silver, [
          { insertId: outcome.eventId, json: { ...outcome.row } },
        ]);
        assert.deepEqual(written, { ok: true });
      } else {
        const row = deadLetterRow(m, outcome, now);
        const [written] = await writer.insertRows(pipeline.tables.quarantine, [
          { insertId: m.messageId, json: { ...row } },
        ]);
        assert.deepEqual(written, { ok: true });
      }
    }
    assert.equal(accepted.length, 2, 'two readings accepted, one rejected');
    // Each aggregation counts the readings in its windows under the pipeline's Firestore root, and the watermark
    // observes their event times, through the keyed store the functions use.
    // Both aggregations in the key-groups layout, as the pipeline runtime builds their stores (dedup ids inside the
    // key-group documents).
    for (const aggregation of pipeline.aggregations) {
      const options = {
        root: pipeline.firestore.windowsRoot,
        pipeline: aggregation.name,
        parseAccumulator: (v: unknown) => aggregation.parseAccumulator(v),
      };
      const { earlyFirings, lateFirings } = aggregation.strategy.trigger;
      const store = new GroupedFirestoreWindowStore<JsonValue>(firestore, {
        ...options,
        keyGroups: loadWindowConfig({}).keyGroups,
        shards: aggregation.shards,
        earlyDelayMs: earlyFirings?.processingTimeDelayMs ?? null,
        lateDelayMs: lateFirings?.processingTimeDelayMs ?? null,
        dedupTtlMs: 86_400_000,
      });
      const tracker = new WatermarkTracker(store, {
        policy: aggregation.watermarkPolicy,
        cacheMs: 0,
        minWriteIntervalMs: 0,
      });
      const keyed = new KeyedWindows({
        pipeline: aggregation.name,
        runner: createReduceFnRunner(aggregation.strategy, aggregation.combineFn),
        combineFn: aggregation.combineFn,
        store,
        shardCount: aggregation.shards,
        droppedTtlMs: 86_400_000,
        paneRow: (pane, insertId) =>
          aggregation.goldRow(pane, insertId, aggregation.strategy.accumulationMode),
      });
      // What the store decides for the first reading, from the aggregation's watermark as this test found it
      // (Beam's drop rule: window end − 1 ms + allowed lateness behind the watermark): the watermark of a stack other
      // tests also drive may already be past a window of 50 s ago, and trace must report what was decided.
      const first = accepted[0];
      if (first !== undefined) {
        const wm = await tracker.watermarkMs(now, true);
        const end = (Math.floor(first.eventTimeMs / 60_000) + 1) * 60_000;
        expectedOutcome.set(
          aggregation.name,
          end - 1 + aggregation.strategy.allowedLatenessMs < wm ? 'dropped' : 'counted',
        );
        watermarkSeen.set(aggregation.name, wm);
      }
      for (const event of accepted) {
        const input = aggregation.input(event);
        assert.ok(input, `${aggregation.name} takes the reading`);
        await keyed.processBundle(
          input.key,
          [
            {
              eventId: event.eventId,
              messageId: event.row.source_message_id,
              value: input.value,
              timestampMs: event.eventTimeMs,
              receivedAtMs: now,
            },
          ],
          (t, fresh) => tracker.watermarkMs(t, fresh),
        );
        await tracker.observe(event.eventTimeMs, now);
      }
    }
  });

  it('status --json: counts by layer and stage equal the tables; watermark and open windows per aggregation equal Firestore', async function () {
    const report = await offviaJson<StatusReport>(
      '--pipeline',
      'telemetry',
      'status',
      '--since',
      '1h',
    );
    assert.equal(report.pipeline, 'telemetry');
    const since = `TIMESTAMP_MILLIS(${Date.parse(report.since)})`;
    const count = async (sql: string): Promise<number> => {
      const [rows] = await bigquery.query({ query: sql });
      return Number((rows as { n: unknown }[])[0]?.n);
    };
    const t = (ref: { datasetId: string; tableId: string }) =>
      `\`${projectId}.${ref.datasetId}.${ref.tableId}\``;
    assert.equal(
      report.layers.silverRows,
      await count(
        `SELECT COUNT(*) AS n FROM ${t(pipeline.tables.silver)} WHERE ingestion_timestamp >= ${since}`,
      ),
    );
    assert.ok(report.layers.silverRows >= 2);
    assert.equal(
      report.layers.quarantineRows,
      await count(
        `SELECT COUNT(*) AS n FROM ${t(pipeline.tables.quarantine)} WHERE parse_time >= ${since}`,
      ),
    );
    const [byStage] = await bigquery.query({
      query: `SELECT stage, COUNT(*) AS n FROM ${t(pipeline.tables.quarantine)} WHERE parse_time >= ${since}
              GROUP BY stage ORDER BY stage`,
    });
    assert.deepEqual(
      report.quarantineByStage.map((s) => ({ stage: s.stage, rows: s.rows })),
      (byStage as { stage: string; n: unknown }[]).map((r) => ({
        stage: r.stage,
        rows: Number(r.n),
      })),
    );
    assert.ok(report.quarantineByStage.some((s) => s.stage === 'RANGE_VALIDATION'));
    assert.deepEqual(
      report.aggregations.map((a) => a.name),
      pipeline.aggregations.map((a) => a.name),
    );
    for (const aggregation of report.aggregations) {
      const base = firestore.collection(pipeline.firestore.windowsRoot).doc(aggregation.name);
      const watermark = await base.collection(COLLECTIONS.meta).doc('watermark').get();
      const stored = watermark.get('watermark_ms') as unknown;
      assert.equal(typeof stored, 'number', `${aggregation.name}: watermark stored`);
      assert.equal(aggregation.watermark, new Date(stored as number).toISOString());
      // Open (key, window)s: the keys of key-group documents whose bookkeeping is early or late.
      const groups = await base.collection(GROUP_COLLECTIONS.groups).get();
      let keys = 0;
      for (const d of groups.docs) {
        const w = (d.get('w') ?? {}) as Record<string, { p?: unknown }>;
        keys += Object.values(w).filter((e) => e.p === 'EARLY' || e.p === 'LATE').length;
      }
      assert.equal(aggregation.openWindows, keys, aggregation.name);
      assert.ok(aggregation.openWindows >= 1, `${aggregation.name}: the readings' window is open`);
    }
  });

  it('trace of a message id: its Bronze-less Silver row, its dedup-view row and its windows in both aggregations', async function () {
    const report = await offviaJson<TraceReport>('--pipeline', 'telemetry', 'trace', goodId);
    const event = accepted[0];
    assert.ok(event);
    assert.deepEqual(report.messageIds, [goodId]);
    assert.deepEqual(report.eventIds, [event.eventId]);
    assert.equal(report.silver.length, 1);
    assert.equal(report.silver[0]?.device_id, `dev-${tag}`);
    assert.equal(report.silver[0]?.contract_version, '2');
    assert.equal(report.silverDedup.length, 1);
    assert.deepEqual(report.quarantine, []);
    assert.deepEqual(
      report.windows.map((w) => [w.aggregation, w.key, w.outcome]).sort(),
      [
        ['telemetry_device_1m', `dev-${tag}`, expectedOutcome.get('telemetry_device_1m')],
        [
          'telemetry_region_top_1m',
          `r-${tag.slice(0, 8)}`,
          expectedOutcome.get('telemetry_region_top_1m'),
        ],
      ],
      `watermarks found: ${JSON.stringify([...watermarkSeen])}`,
    );
    const windowStart = Math.floor(event.eventTimeMs / 60_000) * 60_000;
    for (const w of report.windows) {
      assert.deepEqual(
        w.windows.map((x) => x.windowId),
        [`${windowStart}_${windowStart + 60_000}`],
      );
    }
    // The same event by its event id.
    const byEvent = await offviaJson<TraceReport>(
      '--pipeline',
      'telemetry',
      'trace',
      event.eventId,
    );
    assert.deepEqual(byEvent.messageIds, [goodId]);
    assert.equal(byEvent.windows.length, 2);
  });

  it('trace of a rejected message: its dead-letter row with stage and reason, no windows', async function () {
    const report = await offviaJson<TraceReport>('--pipeline', 'telemetry', 'trace', badId);
    assert.equal(report.quarantine.length, 1);
    assert.equal(report.quarantine[0]?.stage, 'RANGE_VALIDATION');
    assert.equal(report.quarantine[0]?.device_id, `dev-${tag}`);
    assert.deepEqual(report.silver, []);
    assert.deepEqual(report.windows, []);
  });

  it('trace of an id no layer knows: exit 3, one line', async function () {
    const r = await offvia('--pipeline', 'telemetry', 'trace', `nobody-${tag}`);
    assert.equal(r.code, EXIT.notFound);
    assert.match(
      r.err,
      /^offvia: "nobody-\w+" is not a message id or event_id in any layer of pipeline telemetry/,
    );
  });

  it('quarantine list --stage RANGE_VALIDATION: the rejected reading, with its device and reason', async function () {
    const argv =
      '--pipeline telemetry quarantine list --stage RANGE_VALIDATION --since 1h --limit 1000';
    const report = await offviaJson<{ table: string; rows: Record<string, unknown>[] }>(
      ...argv.split(' '),
    );
    assert.equal(report.table, `${projectId}.offvia_telemetry_quarantine.dead_letter`);
    const row = report.rows.find((r) => r.source_message_id === badId);
    assert.ok(row, 'the rejected reading is listed');
    assert.equal(row.device_id, `dev-${tag}`);
    assert.match(String(row.reason), /400/);
    assert.ok(report.rows.every((r) => r.stage === 'RANGE_VALIDATION'));
  });
});

describe('e2e: offvia --pipeline telemetry replay on the local stack (Bronze through the telemetry ingest path)', function () {
  let bigquery: BigQuery;
  let projectId: string;
  const tag = runTag();
  const okId = `tm-rp-ok-${tag}`;
  const badId = `tm-rp-bad-${tag}`;
  const publishMs = Date.now() - 5_000;
  const fromIso = new Date(publishMs - 60_000).toISOString();
  const toIso = new Date(publishMs + 60_000).toISOString();
  const ids = `${okId},${badId}`;
  const replayBoth = (): Promise<ReplayReport> =>
    offviaJson<ReplayReport>(
      '--pipeline',
      'telemetry',
      'replay',
      '--from',
      fromIso,
      '--to',
      toIso,
      '--message-ids',
      ids,
    );

  async function rows(table: string, id: string): Promise<Record<string, unknown>[]> {
    const [found] = await bigquery.query({
      query: `SELECT * FROM \`${projectId}.${table}\` WHERE source_message_id = @id`,
      params: { id },
    });
    return found as Record<string, unknown>[];
  }

  before(async function () {
    requireStack();
    // The stack applied every registered pipeline's DDL (tables.ddlFiles), telemetry's operator tables with it.
    ({ bigquery, projectId } = stackClients());
    const writer = new BigQueryRowWriter(bigquery);
    const eventTs = new Date(publishMs - 2_000).toISOString();
    const bronze = (id: string, data: string) => ({
      insertId: id,
      json: {
        subscription_name: `projects/${projectId}/subscriptions/telemetry-events-bronze`,
        message_id: id,
        publish_time: new Date(publishMs).toISOString(),
        data,
        attributes: JSON.stringify({ deviceId: `dev-${tag}`, eventTs, contractVersion: '2' }),
      },
    });
    const written = await writer.insertRows(pipeline.tables.bronze ?? assert.fail('Bronze'), [
      bronze(okId, '{"temperatureC": 20.5}'),
      bronze(badId, '{"temperatureC": 400}'),
    ]);
    assert.deepEqual(written, [{ ok: true }, { ok: true }]);
    // The valid reading was dead-lettered once (as by an older contract): the replay that lands it in Silver
    // resolves that row, so the open view no longer lists it.
    const [dead] = await writer.insertRows(pipeline.tables.quarantine, [
      {
        insertId: `old-${okId}`,
        json: {
          payload: '{"temperatureC": 20.5}',
          payload_truncated: false,
          error: 'rejected by an older contract',
          stage: 'SCHEMA_VALIDATION',
          device_id: `dev-${tag}`,
          parse_time: new Date(publishMs).toISOString(),
          source_message_id: okId,
        },
      },
    ]);
    assert.deepEqual(dead, { ok: true });
  });

  it('lands the valid reading in Silver and the rejected one in the dead letter, both with the run id, and resolves the old row', async function () {
    const report = await replayBoth();
    assert.ok(report.runId, 'a run id');
    assert.equal(report.totals?.rows, 2);
    assert.deepEqual(report.totals?.outcomes, {
      silver: 1,
      quarantine: 1,
      schema_retry: 0,
      bad_data: 0,
    });
    const silver = await rows('offvia_telemetry_silver.readings', okId);
    assert.equal(silver.length, 1);
    assert.equal(silver[0]?.reprocess_run_id, report.runId);
    assert.equal(silver[0]?.device_id, `dev-${tag}`);
    const dead = (await rows('offvia_telemetry_quarantine.dead_letter', badId)).map((r) => [
      r.stage,
      r.reprocess_run_id,
    ]);
    assert.deepEqual(dead, [['RANGE_VALIDATION', report.runId]]);
    const resolved = await rows('offvia_telemetry_quarantine.resolutions', okId);
    assert.deepEqual(
      resolved.map((r) => [r.layer, r.action, r.outcome, r.run_id]),
      [['quarantine', 'replay', 'silver', report.runId]],
    );
    assert.deepEqual(await rows('offvia_telemetry_quarantine.dead_letter_open', okId), []);
    assert.equal((await rows('offvia_telemetry_quarantine.dead_letter_open', badId)).length, 1);
  });

  it('a second replay of the same range writes no second dead-letter row', async function () {
    const report = await replayBoth();
    assert.equal(report.totals?.rows, 2);
    assert.equal(report.totals?.alreadyPresent.quarantine, 1);
    assert.equal((await rows('offvia_telemetry_quarantine.dead_letter', badId)).length, 1);
  });

  it('quarantine reprocess --set fixes the dead-lettered reading: Silver with the run id, a resolution, the open view empty', async function () {
    const flags = ['--pipeline', 'telemetry', 'quarantine', 'reprocess', '--ids', badId];
    const dry = await offviaJson<ReprocessReport>(
      ...flags,
      '--set',
      'temperatureC=19.5',
      '--dry-run',
    );
    assert.deepEqual(dry.outcomes, { silver: 1 });
    const report = await offviaJson<ReprocessReport>(...flags, '--set', 'temperatureC=19.5');
    assert.deepEqual(report.outcomes, { silver: 1 });
    assert.equal(report.resolutionsWritten, 1);
    const silver = await rows('offvia_telemetry_silver.readings', badId);
    assert.deepEqual(
      silver.map((r) => [r.reprocess_run_id, r.device_id]),
      [[report.runId, `dev-${tag}`]],
    );
    const resolved = await rows('offvia_telemetry_quarantine.resolutions', badId);
    assert.deepEqual(
      resolved.map((r) => [r.layer, r.action, r.outcome, r.run_id]),
      [['quarantine', 'reprocess', 'silver', report.runId]],
    );
    assert.deepEqual(await rows('offvia_telemetry_quarantine.dead_letter_open', badId), []);
    // Resolved: the same command again selects nothing and writes nothing.
    const again = await offviaJson<ReprocessReport>(...flags, '--set', 'temperatureC=19.5');
    assert.equal(again.selected, 0);
  });
});
