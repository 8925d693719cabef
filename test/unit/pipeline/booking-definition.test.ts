// The booking pipeline's definition names exactly what the code uses today (topic, subscriptions, tables, function
// names, windowing, Firestore roots, DDL files), so rewiring the entry points onto it changes no behaviour.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import {
  bookingAggregatesFn,
  parseBookingAccumulator,
} from '../../../shared/aggregates/booking-aggregates';
import { goldPaneRow } from '../../../shared/aggregates/gold-row';
import { tableName } from '../../../shared/config/env';
import { loadIngestConfig } from '../../../shared/config/ingest-config';
import { loadSchemaDriftConfig } from '../../../shared/config/schema-drift-config';
import { loadWindowConfig } from '../../../shared/config/window-config';
import { decodeVersioned } from '../../../shared/pipeline/versioning';
import { BOOKING_PIPELINE as booking } from '../../../shared/pipelines/booking/definition';
import { createdObjects } from '../../../deploy/local/apply-sql';
import * as local from '../../../deploy/local/resources';
import { FUNCTION_SPECS } from '../../../deploy/gcloud/functions';
import { pipelineSchedules } from '../../../deploy/schedules';
import { LAB_UNCLOSED, LAB_NEGATIVE_FARE, LAB_VALID, RECEIVED_AT_MS } from '../contract/fixtures';
import type { Pane } from '../../../shared/windowing';
import type { BookingAggregate } from '../../../shared/aggregates/booking-aggregates';
import { Logger } from '../../../shared/logging/logger';

const ROOT = path.resolve(__dirname, '../../..');

describe('pipeline definitions: the booking pipeline as it runs today', () => {
  const windows = loadWindowConfig({});
  const ingest = loadIngestConfig({});
  const aggregation = booking.aggregations[0];

  it('names the topic and subscriptions the local stack and the deploy plan create', () => {
    assert.equal(booking.pubsub.topic, local.BOOKING_TOPIC);
    assert.equal(booking.pubsub.deadLetterTopic, local.BOOKING_DLQ_TOPIC);
    assert.equal(booking.pubsub.subscriptions.ingest, local.INGEST_PUSH_SUBSCRIPTION);
    assert.equal(booking.pubsub.subscriptions.bronze, local.BRONZE_SUBSCRIPTION);
    assert.equal(booking.pubsub.subscriptions.deadLetterHold, local.BOOKING_DLQ_SUBSCRIPTION);
    assert.equal(booking.pubsub.bronzeDeadLetterTopic, 'booking-events-bronze-dlq');
    assert.equal(
      booking.pubsub.subscriptions.bronzeDeadLetterHold,
      'booking-events-bronze-dlq-hold',
    );
  });

  it("names the tables the functions' configuration defaults to", () => {
    assert.deepEqual(booking.tables.bronze, {
      datasetId: local.BRONZE_DATASET,
      tableId: local.BRONZE_TABLE,
    });
    assert.deepEqual(booking.tables.silver, ingest.silverTable);
    assert.deepEqual(booking.tables.quarantine, ingest.quarantineTable);
    assert.deepEqual(booking.tables.badData, ingest.badDataTable);
    assert.deepEqual(aggregation?.goldTable, windows.goldTable);
    assert.equal(booking.schemaDrift.mode, 'sweep');
    const drift = loadSchemaDriftConfig({}, ingest.silverTable);
    if (booking.schemaDrift.mode === 'sweep') {
      assert.deepEqual(booking.schemaDrift.targetTables, drift.targetTables);
      assert.equal(booking.schemaDrift.windowMinutes, drift.windowMinutes);
      assert.equal(booking.schemaDrift.retryMinutes, drift.retryMinutes);
    }
  });

  it('lists every sql/ file the appliers run, in their order, and they create every table and view it names', () => {
    const files = readdirSync(path.join(ROOT, 'sql'))
      .filter((f) => f.endsWith('.sql'))
      .sort()
      .map((f) => `sql/${f}`);
    assert.deepEqual(booking.tables.ddlFiles, files);
    const created = new Set(
      booking.tables.ddlFiles.flatMap((f) =>
        createdObjects(readFileSync(path.join(ROOT, f), 'utf8'))
          .filter((o) => o.tableId !== undefined)
          .map((o) => `${o.datasetId}.${o.tableId ?? ''}`),
      ),
    );
    const named = [
      booking.tables.bronze,
      booking.tables.silver,
      booking.tables.quarantine,
      booking.tables.badData,
      ...booking.tables.views,
      ...booking.tables.operational,
      ...booking.aggregations.map((a) => a.goldTable),
    ].flatMap((t) => (t ? [tableName(t)] : []));
    assert.deepEqual(
      named.filter((t) => !created.has(t)),
      [],
    );
    assert.deepEqual(
      [...created].filter((t) => !named.includes(t)),
      [],
    );
  });

  it('names the functions the deploy plan deploys, with the specs and schedules of the earlier deployment', () => {
    const fns = [
      booking.functions.ingest,
      booking.functions.fireWindows,
      booking.functions.schemaSweep,
    ];
    for (const f of fns) {
      assert.ok(f);
      assert.equal(FUNCTION_SPECS.get(f.entryPoint)?.baseName, f.baseName, f.entryPoint);
    }
    assert.equal(FUNCTION_SPECS.get(booking.functions.ingest.entryPoint)?.trigger, 'topic');
    const scheduled = pipelineSchedules(booking)
      .map((s) => s.functionName)
      .sort();
    assert.deepEqual(
      scheduled,
      [booking.functions.fireWindows.entryPoint, booking.functions.schemaSweep?.entryPoint].sort(),
    );
  });

  it('runs the windowing, combine and Firestore roots the functions run with no variable set', () => {
    assert.equal(booking.aggregations.length, 1);
    assert.ok(aggregation);
    assert.equal(aggregation.name, windows.pipeline);
    assert.deepEqual(aggregation.strategy, windows.strategy);
    assert.deepEqual(aggregation.watermarkPolicy, windows.watermarkPolicy);
    // Shard documents per key group and window: the key-groups layout's (OFFVIA_WINDOW_GROUP_SHARDS).
    assert.equal(aggregation.shards, windows.groupShards);
    assert.equal(aggregation.combineFn, bookingAggregatesFn);
    const stored = { count: 1, total: '749.5', min: '749.5', max: '749.5' };
    assert.deepEqual(aggregation.parseAccumulator(stored), parseBookingAccumulator(stored));
    assert.throws(() => aggregation.parseAccumulator({ count: 1 }), /accumulator has keys/);
    assert.equal(booking.firestore.windowsRoot, windows.firestoreRoot);
    assert.equal(
      booking.firestore.schemaDriftRoot,
      loadSchemaDriftConfig({}, ingest.silverTable).firestoreRoot,
    );
  });

  it("writes the gold row the aggregates' composition root writes", () => {
    assert.ok(aggregation);
    const pane: Pane<BookingAggregate> = {
      key: 'JFK-LHR-USD',
      window: { startMs: RECEIVED_AT_MS - 60_000, endMs: RECEIVED_AT_MS },
      value: { count: 1, total: '749.5', min: '749.5', max: '749.5', mean: '749.5' },
      timing: 'ON_TIME',
      index: 1,
      onTimeIndex: 0,
      isFirst: false,
      isLast: false,
      firedAtProcessingTimeMs: RECEIVED_AT_MS + 1000,
      watermarkMs: RECEIVED_AT_MS,
    };
    assert.deepEqual(
      aggregation.goldRow(pane as Pane<unknown>, 'id-1', 'ACCUMULATING'),
      goldPaneRow(windows.pipeline, 'ACCUMULATING', pane, 'id-1'),
    );
  });

  it("decodes the lab's three messages as version 1, as validateBooking does", async () => {
    const settings = await booking.createSettings(
      {},
      {
        bigquery: undefined as never,
        logger: new Logger('unit', () => undefined),
        now: () => RECEIVED_AT_MS,
      },
    );
    assert.deepEqual(settings.passengerId, { mode: 'raw' });
    const decode = (data: string, attributes: Record<string, string> = {}) =>
      decodeVersioned(
        booking.contract,
        {
          data: Buffer.from(data),
          attributes,
          messageId: 'm-1',
          publishTimeMs: RECEIVED_AT_MS,
        },
        { receivedAtMs: RECEIVED_AT_MS, settings },
      );
    const valid = decode(LAB_VALID);
    assert.ok(valid.ok);
    assert.equal(valid.version, '1');
    assert.deepEqual(valid.keys, { route: 'JFK-LHR-USD' });
    assert.equal(valid.row.booking_id, 'BK-90210');
    assert.equal(valid.element.fareScaled, 749_500_000_000n);
    assert.equal(valid.eventTimeSource, 'PAYLOAD');
    assert.deepEqual(aggregation?.input(valid as never), {
      key: 'JFK-LHR-USD',
      value: 749_500_000_000n,
    });
    const negative = decode(LAB_NEGATIVE_FARE);
    assert.equal(negative.ok ? 'ok' : negative.stage, 'BUSINESS_RULE_VALIDATION');
    const broken = decode(LAB_UNCLOSED);
    assert.equal(broken.ok ? 'ok' : broken.stage, 'PARSE_JSON');
    assert.equal(decode(LAB_VALID, { contractVersion: '1' }).ok, true);
    const unknown = decode(LAB_VALID, { contractVersion: '2' });
    assert.ok(!unknown.ok);
    assert.equal(unknown.stage, 'SCHEMA_VALIDATION');
    assert.match(unknown.reason, /unknown contract version "2" \(accepted: 1\)/);
  });
});
