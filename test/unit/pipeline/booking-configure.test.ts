// Booking's `configure`: the OFFVIA_* overrides of tables, windowing, schema drift and Firestore roots a deployment
// sets, applied to the definition at cold start, and the cold-start checks that need both configurations.
import assert from 'node:assert/strict';
import { Firestore } from '@google-cloud/firestore';
import { tableName } from '../../../shared/config/env';
import { loadIngestConfig } from '../../../shared/config/ingest-config';
import { loadWindowConfig } from '../../../shared/config/window-config';
import { ConfigError } from '../../../shared/errors';
import { configuredDefinition } from '../../../shared/pipeline/definition';
import {
  aggregationNamespace,
  pipelineNamespaces,
} from '../../../shared/pipeline/runtime/namespace';
import {
  assertGoldTableIsOwn,
  BOOKING_PIPELINE,
} from '../../../shared/pipelines/booking/definition';
import { TELEMETRY_PIPELINE } from '../../../shared/pipelines/telemetry/definition';
import { Logger } from '../../../shared/logging/logger';
import { sharedWindowKnobs } from '../../../shared/pipeline/runtime/compose';
import { createAggregationWindows } from '../../../shared/pipeline/runtime/windows';
import { FirestoreSessionStore } from '../../../shared/state/firestore-session-store';
import { GroupedFirestoreWindowStore } from '../../../shared/state/grouped-window-store';
import { SessionPipeline } from '../../../shared/state/session-pipeline';

describe('booking configure: the gold table', () => {
  it('refuses a gold table that is Silver, quarantine or bad data (case-insensitive)', () => {
    for (const gold of [
      'offvia_silver.fact_bookings',
      'OFFVIA_QUARANTINE.poisoned_events',
      'offvia_quarantine.BAD_DATA',
    ]) {
      const env = { OFFVIA_GOLD_TABLE: gold, OFFVIA_PROJECT_ID: 'my-project' };
      assert.throws(
        () => assertGoldTableIsOwn(loadWindowConfig(env).goldTable, loadIngestConfig(env)),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.variable === 'OFFVIA_GOLD_TABLE' &&
          /needs a table of their own|panes need a table/.test(err.message),
        gold,
      );
      // At cold start: configure refuses it too.
      assert.throws(() => configuredDefinition(BOOKING_PIPELINE, env), ConfigError, gold);
    }
  });

  it('accepts the default gold table, and the same table name in another project', () => {
    const env = { OFFVIA_PROJECT_ID: 'my-project' };
    assertGoldTableIsOwn(loadWindowConfig(env).goldTable, loadIngestConfig(env));
    const other = { ...env, OFFVIA_GOLD_TABLE: 'other-project.offvia_silver.fact_bookings' };
    assertGoldTableIsOwn(loadWindowConfig(other).goldTable, loadIngestConfig(other));
  });
});

describe('booking configure: the deployment overrides', () => {
  it('with no variable set, runs the definition as written', () => {
    const configured = configuredDefinition(BOOKING_PIPELINE, {});
    assert.deepEqual(configured.tables, BOOKING_PIPELINE.tables);
    assert.deepEqual(configured.firestore, BOOKING_PIPELINE.firestore);
    assert.deepEqual(configured.schemaDrift, BOOKING_PIPELINE.schemaDrift);
    assert.equal(configured.aggregations.length, 1);
    const [a, b] = [configured.aggregations[0], BOOKING_PIPELINE.aggregations[0]];
    assert.ok(a && b);
    assert.equal(a.name, b.name);
    assert.deepEqual(a.strategy, b.strategy);
    assert.deepEqual(a.watermarkPolicy, b.watermarkPolicy);
    assert.equal(a.shards, b.shards);
    assert.deepEqual(a.goldTable, b.goldTable);
    // Idempotent: configuring the configured definition changes nothing.
    assert.deepEqual(configuredDefinition(configured, {}).tables, configured.tables);
  });

  it('keys the key-groups state at the Firestore root and pipeline document booking has always used', () => {
    const window = loadWindowConfig({});
    const [namespace] = pipelineNamespaces(configuredDefinition(BOOKING_PIPELINE, {}));
    assert.equal(window.firestoreRoot, 'offviaWindows');
    assert.equal(window.pipeline, 'booking_routes_1m');
    assert.equal(namespace?.paths.namespace, 'offviaWindows/booking_routes_1m');
    assert.equal(namespace?.paths.keyGroups, 'offviaWindows/booking_routes_1m/keyGroups');
    assert.equal(namespace?.paths.watermark, 'offviaWindows/booking_routes_1m/meta/watermark');
    // And wherever a deployment moved it with OFFVIA_WINDOW_FIRESTORE_ROOT / OFFVIA_WINDOW_PIPELINE.
    const env = { OFFVIA_WINDOW_FIRESTORE_ROOT: 'myWindows', OFFVIA_WINDOW_PIPELINE: 'routes_5m' };
    const moved = configuredDefinition(BOOKING_PIPELINE, env);
    const aggregation = moved.aggregations[0];
    assert.ok(aggregation);
    assert.deepEqual(aggregationNamespace(moved, aggregation), {
      root: 'myWindows',
      pipeline: 'routes_5m',
      path: 'myWindows/routes_5m',
    });
  });

  it('applies the table, window, gold and schema-drift variables', () => {
    const env = {
      OFFVIA_SILVER_TABLE: 'my_silver.bookings',
      OFFVIA_QUARANTINE_TABLE: 'my_q.poisoned',
      OFFVIA_BAD_DATA_TABLE: 'my_q.bad',
      OFFVIA_GOLD_TABLE: 'my_gold.panes',
      OFFVIA_WINDOW_SIZE_MS: '300000',
      OFFVIA_WINDOW_ALLOWED_LATENESS_MS: '60000',
      OFFVIA_WINDOW_ACCUMULATION_MODE: 'DISCARDING',
      OFFVIA_WINDOW_GROUP_SHARDS: '3',
      OFFVIA_SCHEMA_WINDOW_MINUTES: '5',
      OFFVIA_SCHEMA_RETRY_MINUTES: '20',
      OFFVIA_SCHEMA_FIRESTORE_ROOT: 'myDrift',
    };
    const configured = configuredDefinition(BOOKING_PIPELINE, env);
    assert.equal(tableName(configured.tables.silver), 'my_silver.bookings');
    assert.equal(tableName(configured.tables.quarantine), 'my_q.poisoned');
    assert.equal(tableName(configured.tables.badData), 'my_q.bad');
    const [aggregation] = configured.aggregations;
    assert.ok(aggregation);
    assert.equal(tableName(aggregation.goldTable), 'my_gold.panes');
    assert.deepEqual(aggregation.strategy, loadWindowConfig(env).strategy);
    assert.equal(aggregation.strategy.accumulationMode, 'DISCARDING');
    assert.equal(aggregation.shards, 3);
    assert.deepEqual(configured.schemaDrift, {
      mode: 'sweep',
      targetTables: [{ datasetId: 'my_silver', tableId: 'bookings' }],
      windowMinutes: 5,
      retryMinutes: 20,
    });
    assert.equal(configured.firestore.schemaDriftRoot, 'myDrift');
    // Deployed names never change with the environment.
    assert.deepEqual(configured.functions, BOOKING_PIPELINE.functions);
    assert.deepEqual(configured.pubsub, BOOKING_PIPELINE.pubsub);
  });

  it('runs no aggregation with OFFVIA_WINDOWS_ENABLED=false and no drift gate with OFFVIA_SCHEMA_DRIFT=false', () => {
    const configured = configuredDefinition(BOOKING_PIPELINE, {
      OFFVIA_WINDOWS_ENABLED: 'false',
      OFFVIA_SCHEMA_DRIFT: 'false',
    });
    assert.deepEqual(configured.aggregations, []);
    assert.equal(configured.schemaDrift.mode, 'off');
  });

  it('telemetry has no configure hook: it runs as written', () => {
    assert.equal('configure' in TELEMETRY_PIPELINE, false);
    assert.equal(
      configuredDefinition(TELEMETRY_PIPELINE, { OFFVIA_GOLD_TABLE: 'x.y' }),
      TELEMETRY_PIPELINE,
    );
  });
});

describe('booking configure: the layouts the generic runtime builds for it', () => {
  function built(env: Record<string, string>) {
    const definition = configuredDefinition(BOOKING_PIPELINE, env);
    const aggregation = definition.aggregations[0];
    assert.ok(aggregation);
    return createAggregationWindows(definition, aggregation, {
      firestore: new Firestore({ projectId: 'unit' }),
      writer: { insertRows: () => Promise.resolve([]) },
      badDataTable: definition.tables.badData,
      projectId: 'unit',
      knobs: sharedWindowKnobs(env),
      logger: new Logger('unit', () => undefined),
      now: () => 0,
    });
  }

  it('fixed windows: the key-groups layout, fired by partitions (OFFVIA_FIRE_WINDOWS_PARTITIONS_IN_FLIGHT)', () => {
    const windows = built({ OFFVIA_FIRE_WINDOWS_PARTITIONS_IN_FLIGHT: '2' });
    assert.ok(windows.store instanceof GroupedFirestoreWindowStore);
    assert.equal(windows.fire.groups?.partitionsInFlight, 2);
    assert.equal(windows.fire.sessions, undefined);
  });

  it('OFFVIA_WINDOW_SESSION_GAP_MS: the session layout, fired by keys', () => {
    const windows = built({ OFFVIA_WINDOW_SESSION_GAP_MS: '30000' });
    assert.ok(windows.store instanceof FirestoreSessionStore);
    assert.ok(windows.pipeline instanceof SessionPipeline);
    assert.equal(windows.fire.sessions?.store, windows.store);
    assert.equal(windows.fire.groups, undefined);
  });
});
