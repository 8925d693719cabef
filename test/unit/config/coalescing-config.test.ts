// Coalesced-write configuration: defaults within BigQuery's request limits, and a bad value names its variable.
import assert from 'node:assert/strict';
import { loadCoalescingConfig } from '../../../shared/config/coalescing-config';
import { ConfigError } from '../../../shared/errors';

/** Every coalescing variable set to a non-default value. */
const EVERY_VARIABLE = {
  OFFVIA_BQ_COALESCE: 'false',
  OFFVIA_BQ_COALESCE_MAX_ROWS: '50',
  OFFVIA_BQ_COALESCE_MAX_BYTES: '2048',
  OFFVIA_BQ_COALESCE_LINGER_MS: '0',
  OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT: '4',
  OFFVIA_BQ_COALESCE_MAX_HOLD_MS: '250',
};

describe('loadCoalescingConfig', () => {
  it('defaults to coalescing on, 500 rows, 5 MiB, 5 ms, 1 call in flight per table, 1000 ms hold', () => {
    assert.deepEqual(loadCoalescingConfig({}), {
      enabled: true,
      maxRows: 500,
      maxBytes: 5 * 1024 * 1024,
      lingerMs: 5,
      maxInFlight: 1,
      maxHoldMs: 1000,
    });
  });

  it('reads every variable', () => {
    const config = loadCoalescingConfig(EVERY_VARIABLE);
    assert.deepEqual(config, {
      enabled: false,
      maxRows: 50,
      maxBytes: 2048,
      lingerMs: 0,
      maxInFlight: 4,
      maxHoldMs: 250,
    });
  });

  it('accepts a hold equal to the linger, and the largest in-flight cap and hold', () => {
    const config = loadCoalescingConfig({
      OFFVIA_BQ_COALESCE_LINGER_MS: '20',
      OFFVIA_BQ_COALESCE_MAX_HOLD_MS: '20',
      OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT: '100',
    });
    assert.equal(config.maxHoldMs, 20);
    assert.equal(config.maxInFlight, 100);
    assert.equal(
      loadCoalescingConfig({ OFFVIA_BQ_COALESCE_MAX_HOLD_MS: '60000' }).maxHoldMs,
      60_000,
    );
  });

  it('refuses a hold shorter than the linger, naming OFFVIA_BQ_COALESCE_MAX_HOLD_MS', () => {
    assert.throws(
      () =>
        loadCoalescingConfig({
          OFFVIA_BQ_COALESCE_LINGER_MS: '20',
          OFFVIA_BQ_COALESCE_MAX_HOLD_MS: '19',
        }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.variable === 'OFFVIA_BQ_COALESCE_MAX_HOLD_MS' &&
        /OFFVIA_BQ_COALESCE_LINGER_MS/.test(err.message),
    );
  });

  for (const [env, name] of [
    [{ OFFVIA_BQ_COALESCE: 'sometimes' }, 'OFFVIA_BQ_COALESCE'],
    [{ OFFVIA_BQ_COALESCE_MAX_ROWS: '501' }, 'OFFVIA_BQ_COALESCE_MAX_ROWS'],
    [{ OFFVIA_BQ_COALESCE_MAX_BYTES: String(10 * 1024 * 1024) }, 'OFFVIA_BQ_COALESCE_MAX_BYTES'],
    [{ OFFVIA_BQ_COALESCE_LINGER_MS: '-1' }, 'OFFVIA_BQ_COALESCE_LINGER_MS'],
    [{ OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT: '0' }, 'OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT'],
    [{ OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT: '101' }, 'OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT'],
    [{ OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT: '1.5' }, 'OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT'],
    [{ OFFVIA_BQ_COALESCE_MAX_HOLD_MS: '60001' }, 'OFFVIA_BQ_COALESCE_MAX_HOLD_MS'],
    [{ OFFVIA_BQ_COALESCE_MAX_HOLD_MS: 'soon' }, 'OFFVIA_BQ_COALESCE_MAX_HOLD_MS'],
    [{ OFFVIA_BQ_COALESCE_MAX_HOLD_MS: '4' }, 'OFFVIA_BQ_COALESCE_MAX_HOLD_MS'],
  ] as const) {
    it(`refuses a bad ${name} (${JSON.stringify(env)})`, () => {
      assert.throws(
        () => loadCoalescingConfig(env),
        (err: unknown) => err instanceof ConfigError && err.variable === name,
      );
    });
  }
});
