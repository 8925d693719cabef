// Windowing configuration from the environment: the lab's values by default, every bad value named.
import assert from 'node:assert/strict';
import { loadWindowConfig } from '../../../shared/config/window-config';
import { ConfigError } from '../../../shared/errors';

describe('config: windows', () => {
  it("defaults to the lab's windowing: 1-minute fixed windows, 5 min lateness, early 30 s, late per element", () => {
    const c = loadWindowConfig({});
    assert.deepEqual(c.strategy, {
      windowFn: { kind: 'fixed', sizeMs: 60_000, offsetMs: 0 },
      allowedLatenessMs: 300_000,
      trigger: {
        earlyFirings: { processingTimeDelayMs: 30_000 },
        lateFirings: { elementCount: 1 },
      },
      accumulationMode: 'ACCUMULATING',
    });
    assert.deepEqual(c.watermarkPolicy, {
      maxOutOfOrdernessMs: 10_000,
      idleTimeoutMs: 60_000,
      maxFutureSkewMs: 300_000,
    });
    assert.equal(c.enabled, true);
    assert.equal(c.shards, 4);
    assert.equal(c.pipeline, 'booking_routes_1m');
    assert.deepEqual(c.goldTable, { datasetId: 'offvia_gold', tableId: 'route_panes' });
    assert.ok(
      c.ledgerTtlMs >= 7 * 24 * 3600 * 1000,
      'ledger TTL covers Pub/Sub retention (7 days)',
    );
  });

  it('builds sliding windows, discarding panes, no early or late firings from the variables', () => {
    const c = loadWindowConfig({
      OFFVIA_WINDOW_SIZE_MS: '120000',
      OFFVIA_WINDOW_PERIOD_MS: '60000',
      OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS: '0',
      OFFVIA_WINDOW_EARLY_FIRING_COUNT: '100',
      OFFVIA_WINDOW_LATE_FIRING_COUNT: '0',
      OFFVIA_WINDOW_ACCUMULATION_MODE: 'DISCARDING',
      OFFVIA_MAX_FUTURE_SKEW_MS: '60000',
      OFFVIA_WINDOWS_ENABLED: 'false',
    });
    assert.deepEqual(c.strategy.windowFn, {
      kind: 'sliding',
      sizeMs: 120_000,
      periodMs: 60_000,
      offsetMs: 0,
    });
    assert.deepEqual(c.strategy.trigger, {
      earlyFirings: { elementCount: 100 },
      lateFirings: null,
    });
    assert.equal(c.strategy.accumulationMode, 'DISCARDING');
    assert.equal(c.watermarkPolicy.maxFutureSkewMs, 60_000);
    assert.equal(c.enabled, false);
  });

  it('fails fast naming the variable', () => {
    const cases: [Record<string, string>, string][] = [
      [{ OFFVIA_WINDOW_SIZE_MS: 'a minute' }, 'OFFVIA_WINDOW_SIZE_MS'],
      [
        { OFFVIA_WINDOW_SIZE_MS: '60000', OFFVIA_WINDOW_PERIOD_MS: '90000' },
        'OFFVIA_WINDOW_PERIOD_MS',
      ],
      [{ OFFVIA_WINDOW_OFFSET_MS: '60000' }, 'OFFVIA_WINDOW_OFFSET_MS'],
      [{ OFFVIA_WINDOW_ALLOWED_LATENESS_MS: '-1' }, 'OFFVIA_WINDOW_ALLOWED_LATENESS_MS'],
      [{ OFFVIA_WINDOW_ACCUMULATION_MODE: 'accumulate' }, 'OFFVIA_WINDOW_ACCUMULATION_MODE'],
      [{ OFFVIA_WATERMARK_IDLE_TIMEOUT_MS: '0' }, 'OFFVIA_WATERMARK_IDLE_TIMEOUT_MS'],
      [{ OFFVIA_WINDOW_SHARDS: '0' }, 'OFFVIA_WINDOW_SHARDS'],
      [{ OFFVIA_WINDOW_SHARDS: '101' }, 'OFFVIA_WINDOW_SHARDS'],
      [{ OFFVIA_WINDOW_PIPELINE: 'Has Spaces' }, 'OFFVIA_WINDOW_PIPELINE'],
      [{ OFFVIA_WINDOW_FIRESTORE_ROOT: 'a/b' }, 'OFFVIA_WINDOW_FIRESTORE_ROOT'],
      [{ OFFVIA_GOLD_TABLE: 'nodataset' }, 'OFFVIA_GOLD_TABLE'],
      [{ OFFVIA_WINDOW_LEDGER_TTL_MS: '1000' }, 'OFFVIA_WINDOW_LEDGER_TTL_MS'],
      [{ OFFVIA_WINDOWS_ENABLED: 'maybe' }, 'OFFVIA_WINDOWS_ENABLED'],
    ];
    for (const [env, variable] of cases) {
      assert.throws(
        () => loadWindowConfig(env),
        (err: unknown) => err instanceof ConfigError && err.variable === variable,
        `${JSON.stringify(env)} should name ${variable}`,
      );
    }
  });
});
