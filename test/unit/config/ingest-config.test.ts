// loadIngestConfig: defaults, overrides, and fail-fast errors naming the variable.
import assert from 'node:assert/strict';
import { loadIngestConfig } from '../../../shared/config/ingest-config';
import { ConfigError } from '../../../shared/errors';

/** Table, skew and project overrides, with the BigQuery emulator's host. */
const OVERRIDES = {
  GOOGLE_CLOUD_PROJECT: 'my-proj',
  BIGQUERY_EMULATOR_HOST: '127.0.0.1:9050',
  OFFVIA_SILVER_TABLE: 'other-proj.ds.t',
  OFFVIA_MAX_FUTURE_SKEW_MS: '1000',
};

describe('loadIngestConfig', () => {
  it('has the documented defaults', () => {
    const c = loadIngestConfig({});
    assert.deepEqual(c.silverTable, { datasetId: 'offvia_silver', tableId: 'fact_bookings' });
    assert.deepEqual(c.quarantineTable, {
      datasetId: 'offvia_quarantine',
      tableId: 'poisoned_events',
    });
    assert.deepEqual(c.badDataTable, { datasetId: 'offvia_quarantine', tableId: 'bad_data' });
    assert.equal(c.maxFutureSkewMs, 300_000);
    assert.equal(c.projectId, undefined);
    assert.equal(c.bigQueryEndpoint, undefined);
    assert.equal(c.firestoreDatabase, 'offvia');
  });

  it('reads the named Firestore database, and refuses (default) and ids Firestore refuses', () => {
    assert.equal(
      loadIngestConfig({ OFFVIA_FIRESTORE_DATABASE: 'offvia-staging' }).firestoreDatabase,
      'offvia-staging',
    );
    for (const bad of ['(default)', 'abc', 'Offvia', '9offvia', 'offvia-', 'a'.repeat(64)]) {
      assert.throws(
        () => loadIngestConfig({ OFFVIA_FIRESTORE_DATABASE: bad }),
        (e: unknown) => e instanceof ConfigError && e.variable === 'OFFVIA_FIRESTORE_DATABASE',
        bad,
      );
    }
  });

  it('reads overrides, project fallbacks and the emulator host', () => {
    const c = loadIngestConfig(OVERRIDES);
    assert.equal(c.projectId, 'my-proj');
    assert.equal(c.bigQueryEndpoint, 'http://127.0.0.1:9050');
    assert.deepEqual(c.silverTable, { projectId: 'other-proj', datasetId: 'ds', tableId: 't' });
    assert.equal(c.maxFutureSkewMs, 1000);
    assert.equal(
      loadIngestConfig({ OFFVIA_PROJECT_ID: 'a-proj', GOOGLE_CLOUD_PROJECT: 'b-proj' }).projectId,
      'a-proj',
    );
  });

  it("keeps event times inside BigQuery's streaming window for a column-partitioned table", () => {
    const day = 86_400_000;
    const c = loadIngestConfig({});
    assert.equal(c.maxEventAgeMs, 730 * day, 'default maximum age: 730 days');
    assert.ok(c.maxEventAgeMs < 5 * 365 * day, 'the default is inside the 5 years in the past');
    assert.equal(
      loadIngestConfig({ OFFVIA_MAX_EVENT_AGE_MS: String(1800 * day) }).maxEventAgeMs,
      1800 * day,
    );
    assert.equal(
      loadIngestConfig({ OFFVIA_MAX_FUTURE_SKEW_MS: String(365 * day) }).maxFutureSkewMs,
      365 * day,
    );
    for (const [name, value] of [
      ['OFFVIA_MAX_EVENT_AGE_MS', 1800 * day + 1],
      ['OFFVIA_MAX_EVENT_AGE_MS', 3650 * day],
      ['OFFVIA_MAX_FUTURE_SKEW_MS', 365 * day + 1],
    ] as const) {
      assert.throws(
        () => loadIngestConfig({ [name]: String(value) }),
        (e: unknown) => e instanceof ConfigError && e.variable === name,
        `${name}=${value}`,
      );
    }
  });

  it('the retry-age guard defaults to 45 min and the attempt deadline to 45 s; out-of-range values are refused', () => {
    for (const [name, field, fallback, good, bad] of [
      ['OFFVIA_MAX_RETRY_AGE_MS', 'maxRetryAgeMs', 45 * 60_000, 120_000, '1000'],
      ['OFFVIA_ATTEMPT_DEADLINE_MS', 'attemptDeadlineMs', 45_000, 20_000, '10'],
    ] as const) {
      assert.equal(loadIngestConfig({})[field], fallback, name);
      assert.equal(loadIngestConfig({ [name]: String(good) })[field], good, name);
      assert.throws(() => loadIngestConfig({ [name]: bad }), new RegExp(name));
    }
  });

  for (const [name, value] of [
    ['OFFVIA_MAX_FUTURE_SKEW_MS', 'soon'],
    ['OFFVIA_MAX_FUTURE_SKEW_MS', '-1'],
    ['OFFVIA_MAX_EVENT_AGE_MS', '1.5'],
    ['OFFVIA_SILVER_TABLE', 'just_a_table'],
    ['OFFVIA_QUARANTINE_TABLE', 'ds.t; DROP TABLE x'],
    ['OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES', '10'],
  ] as const) {
    it(`fails fast on ${name}=${JSON.stringify(value)}, naming the variable`, () => {
      assert.throws(
        () => loadIngestConfig({ [name]: value }),
        (e: unknown) =>
          e instanceof ConfigError && e.variable === name && e.message.startsWith(name),
      );
    });
  }
});
