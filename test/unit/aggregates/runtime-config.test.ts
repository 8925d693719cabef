// Cold-start checks that need both the window and the ingest configuration.
import assert from 'node:assert/strict';
import { assertGoldTableIsOwn } from '../../../shared/aggregates/runtime';
import { loadIngestConfig } from '../../../shared/config/ingest-config';
import { loadWindowConfig } from '../../../shared/config/window-config';
import { ConfigError } from '../../../shared/errors';

describe('aggregates runtime: the gold table', () => {
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
    }
  });

  it('accepts the default gold table, and the same table name in another project', () => {
    const env = { OFFVIA_PROJECT_ID: 'my-project' };
    assertGoldTableIsOwn(loadWindowConfig(env).goldTable, loadIngestConfig(env));
    const other = { ...env, OFFVIA_GOLD_TABLE: 'other-project.offvia_silver.fact_bookings' };
    assertGoldTableIsOwn(loadWindowConfig(other).goldTable, loadIngestConfig(other));
  });
});
