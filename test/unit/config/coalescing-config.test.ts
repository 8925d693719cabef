// Coalesced-write configuration: defaults within BigQuery's request limits, and a bad value names its variable.
import assert from 'node:assert/strict';
import { loadCoalescingConfig } from '../../../shared/config/coalescing-config';
import { ConfigError } from '../../../shared/errors';

describe('loadCoalescingConfig', () => {
  it('defaults to coalescing on, 500 rows, 5 MiB, 5 ms', () => {
    assert.deepEqual(loadCoalescingConfig({}), {
      enabled: true,
      maxRows: 500,
      maxBytes: 5 * 1024 * 1024,
      lingerMs: 5,
    });
  });

  it('reads every variable', () => {
    const config = loadCoalescingConfig({
      OFFVIA_BQ_COALESCE: 'false',
      OFFVIA_BQ_COALESCE_MAX_ROWS: '50',
      OFFVIA_BQ_COALESCE_MAX_BYTES: '2048',
      OFFVIA_BQ_COALESCE_LINGER_MS: '0',
    });
    assert.deepEqual(config, { enabled: false, maxRows: 50, maxBytes: 2048, lingerMs: 0 });
  });

  for (const [env, name] of [
    [{ OFFVIA_BQ_COALESCE: 'sometimes' }, 'OFFVIA_BQ_COALESCE'],
    [{ OFFVIA_BQ_COALESCE_MAX_ROWS: '501' }, 'OFFVIA_BQ_COALESCE_MAX_ROWS'],
    [{ OFFVIA_BQ_COALESCE_MAX_BYTES: String(10 * 1024 * 1024) }, 'OFFVIA_BQ_COALESCE_MAX_BYTES'],
    [{ OFFVIA_BQ_COALESCE_LINGER_MS: '-1' }, 'OFFVIA_BQ_COALESCE_LINGER_MS'],
  ] as const) {
    it(`refuses a bad ${name}`, () => {
      assert.throws(
        () => loadCoalescingConfig(env),
        (err: unknown) => err instanceof ConfigError && err.variable === name,
      );
    });
  }
});
