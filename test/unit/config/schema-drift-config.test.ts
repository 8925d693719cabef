// loadSchemaDriftConfig: the documented defaults, overrides, and fail-fast errors naming the variable.
import assert from 'node:assert/strict';
import { loadSchemaDriftConfig } from '../../../shared/config/schema-drift-config';
import { ConfigError } from '../../../shared/errors';

const SILVER = { datasetId: 'offvia_silver', tableId: 'fact_bookings' };

describe('loadSchemaDriftConfig', () => {
  it('has the documented defaults', () => {
    const c = loadSchemaDriftConfig({}, SILVER);
    assert.equal(c.enabled, true);
    assert.equal(c.mode, 'apply');
    assert.equal(c.windowMinutes, 3);
    assert.equal(c.retryMinutes, 30);
    assert.equal(c.windowGraceMs, 10_000);
    assert.equal(c.maxNewColumnsPerWindow, 10);
    assert.equal(c.maxColumnsPerTable, 1000);
    assert.equal(c.maxNewFieldsPerEvent, 20);
    assert.equal(c.maxProposedFieldsPerWindow, 200);
    assert.deepEqual(c.targetTables, [SILVER]);
    assert.equal(c.schemaCacheTtlMs, 60_000);
    assert.equal(c.ddlStyle, 'single');
    assert.equal(c.leaseMs, 120_000);
    assert.equal(c.minUpdateIntervalMs, 10_000);
    assert.equal(c.sweepMaxRows, 5000);
    assert.equal(c.firestoreRoot, 'offviaSchemaDrift');
  });

  it('reads overrides; one ALTER per column on the local emulator', () => {
    const c = loadSchemaDriftConfig(
      {
        OFFVIA_SCHEMA_MODE: 'PROPOSE',
        OFFVIA_SCHEMA_WINDOW_MINUTES: '1',
        OFFVIA_SCHEMA_RETRY_MINUTES: '0',
        OFFVIA_SCHEMA_TARGET_TABLES: 'offvia_silver.fact_bookings, p-proj.ds.other',
        BIGQUERY_EMULATOR_HOST: 'http://127.0.0.1:9050',
      },
      SILVER,
    );
    assert.equal(c.mode, 'propose');
    assert.equal(c.windowMinutes, 1);
    assert.equal(c.retryMinutes, 0);
    assert.deepEqual(c.targetTables, [
      SILVER,
      { projectId: 'p-proj', datasetId: 'ds', tableId: 'other' },
    ]);
    assert.equal(c.ddlStyle, 'per_column');
    assert.equal(
      loadSchemaDriftConfig(
        { BIGQUERY_EMULATOR_HOST: 'x', OFFVIA_SCHEMA_DDL_STYLE: 'single' },
        SILVER,
      ).ddlStyle,
      'single',
    );
  });

  for (const [name, value] of [
    ['OFFVIA_SCHEMA_MODE', 'yolo'],
    ['OFFVIA_SCHEMA_WINDOW_MINUTES', '0'],
    ['OFFVIA_SCHEMA_WINDOW_MINUTES', '2.5'],
    ['OFFVIA_SCHEMA_RETRY_MINUTES', '-1'],
    // Under two 3-minute windows: rows would reach bad data before their column could exist.
    ['OFFVIA_SCHEMA_RETRY_MINUTES', '5'],
    ['OFFVIA_SCHEMA_MAX_NEW_COLUMNS_PER_WINDOW', 'many'],
    ['OFFVIA_SCHEMA_MAX_COLUMNS_PER_TABLE', '10001'],
    ['OFFVIA_SCHEMA_TARGET_TABLES', 'not a table'],
    ['OFFVIA_SCHEMA_TARGET_TABLES', 'offvia_silver.fact_bookings,,x.y'],
    ['OFFVIA_SCHEMA_TARGET_TABLES', 'offvia_silver.fact_bookings,offvia_silver.fact_bookings'],
    ['OFFVIA_SCHEMA_TARGET_TABLES', 'other.table'],
    ['OFFVIA_SCHEMA_DDL_STYLE', 'batch'],
    ['OFFVIA_SCHEMA_FIRESTORE_ROOT', 'a/b'],
    ['OFFVIA_SCHEMA_DRIFT', 'maybe'],
  ] as const) {
    it(`rejects ${name}=${JSON.stringify(value)} with a ConfigError naming it`, () => {
      assert.throws(
        () => loadSchemaDriftConfig({ [name]: value }, SILVER),
        (err: unknown) => err instanceof ConfigError && err.variable === name,
      );
    });
  }

  it('lets drift be turned off, then Silver need not be a target', () => {
    const c = loadSchemaDriftConfig(
      { OFFVIA_SCHEMA_DRIFT: 'false', OFFVIA_SCHEMA_TARGET_TABLES: 'other.table' },
      SILVER,
    );
    assert.equal(c.enabled, false);
  });

  it('accepts a retry budget of exactly two windows, or 0 for no retries', () => {
    const two = loadSchemaDriftConfig(
      { OFFVIA_SCHEMA_WINDOW_MINUTES: '5', OFFVIA_SCHEMA_RETRY_MINUTES: '10' },
      SILVER,
    );
    assert.equal(two.retryMinutes, 10);
    assert.throws(
      () =>
        loadSchemaDriftConfig(
          { OFFVIA_SCHEMA_WINDOW_MINUTES: '5', OFFVIA_SCHEMA_RETRY_MINUTES: '9' },
          SILVER,
        ),
      /less than two schema windows/,
    );
    assert.equal(
      loadSchemaDriftConfig({ OFFVIA_SCHEMA_RETRY_MINUTES: '0' }, SILVER).retryMinutes,
      0,
    );
  });
});
