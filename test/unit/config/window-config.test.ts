// Windowing configuration from the environment: the lab's values by default, every bad value named.
import assert from 'node:assert/strict';
import {
  loadWindowConfig,
  longestWindowLifetimeMs,
  MAX_WINDOWS_PER_EVENT,
} from '../../../shared/config/window-config';
import { ConfigError } from '../../../shared/errors';
import { labStrategy, labWatermarkPolicy } from '../windowing/lab-config';

/** Sliding 2-minute windows every minute, discarding, an early count trigger only, windows off. */
const SLIDING_DISCARDING = {
  OFFVIA_WINDOW_SIZE_MS: '120000',
  OFFVIA_WINDOW_PERIOD_MS: '60000',
  OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS: '0',
  OFFVIA_WINDOW_EARLY_FIRING_COUNT: '100',
  OFFVIA_WINDOW_LATE_FIRING_COUNT: '0',
  OFFVIA_WINDOW_ACCUMULATION_MODE: 'DISCARDING',
  OFFVIA_WATERMARK_MAX_FUTURE_SKEW_MS: '2000',
  // The contract's bound no longer drives the watermark's.
  OFFVIA_MAX_FUTURE_SKEW_MS: '60000',
  OFFVIA_WINDOWS_ENABLED: 'false',
};

describe('config: windows', () => {
  it("defaults to the lab's windowing: 1-minute fixed windows, 5 min lateness, early 30 s, late per element", () => {
    const c = loadWindowConfig({});
    assert.deepEqual(c.strategy, labStrategy());
    assert.deepEqual(c.watermarkPolicy, labWatermarkPolicy());
    assert.equal(c.enabled, true);
    assert.equal(c.keyGroups, 16);
    assert.equal(c.pipeline, 'booking_routes_1m');
    assert.deepEqual(c.goldTable, { datasetId: 'offvia_gold', tableId: 'route_panes' });
    assert.ok(
      c.ledgerTtlMs >= 7 * 24 * 3600 * 1000,
      'ledger TTL covers Pub/Sub retention (7 days)',
    );
  });

  it('builds sliding windows, discarding panes, no early or late firings from the variables', () => {
    const c = loadWindowConfig(SLIDING_DISCARDING);
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
    assert.equal(c.watermarkPolicy.maxFutureSkewMs, 2000);
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
      [{ OFFVIA_WINDOW_GROUP_SHARDS: '0' }, 'OFFVIA_WINDOW_GROUP_SHARDS'],
      [{ OFFVIA_WINDOW_GROUP_SHARDS: '17' }, 'OFFVIA_WINDOW_GROUP_SHARDS'],
      [{ OFFVIA_WINDOW_PIPELINE: 'Has Spaces' }, 'OFFVIA_WINDOW_PIPELINE'],
      [{ OFFVIA_WINDOW_FIRESTORE_ROOT: 'a/b' }, 'OFFVIA_WINDOW_FIRESTORE_ROOT'],
      [{ OFFVIA_GOLD_TABLE: 'nodataset' }, 'OFFVIA_GOLD_TABLE'],
      [{ OFFVIA_WINDOW_LEDGER_TTL_MS: '1000' }, 'OFFVIA_WINDOW_LEDGER_TTL_MS'],
      [{ OFFVIA_WINDOWS_ENABLED: 'maybe' }, 'OFFVIA_WINDOWS_ENABLED'],
      // 86,400 sliding windows per event (a day every second): refused, not a stack overflow per event later.
      [
        { OFFVIA_WINDOW_SIZE_MS: '86400000', OFFVIA_WINDOW_PERIOD_MS: '1000' },
        'OFFVIA_WINDOW_PERIOD_MS',
      ],
      // A ledger shorter than a window's life would let a redelivery be counted twice.
      [
        { OFFVIA_WINDOW_LEDGER_TTL_MS: '60000', OFFVIA_WINDOW_ALLOWED_LATENESS_MS: '604800000' },
        'OFFVIA_WINDOW_LEDGER_TTL_MS',
      ],
      [{ OFFVIA_WATERMARK_MAX_FUTURE_SKEW_MS: '-5' }, 'OFFVIA_WATERMARK_MAX_FUTURE_SKEW_MS'],
    ];
    for (const [env, variable] of cases) {
      assert.throws(
        () => loadWindowConfig(env),
        (err: unknown) => err instanceof ConfigError && err.variable === variable,
        `${JSON.stringify(env)} should name ${variable}`,
      );
    }
  });

  it('accepts the most sliding windows per event and a ledger exactly as long as a window can live', () => {
    const c = loadWindowConfig({
      OFFVIA_WINDOW_SIZE_MS: String(MAX_WINDOWS_PER_EVENT * 1000),
      OFFVIA_WINDOW_PERIOD_MS: '1000',
    });
    assert.equal(c.strategy.windowFn.kind, 'sliding');
    const lifetime = longestWindowLifetimeMs(loadWindowConfig({}));
    // 1 min size + 5 min lateness + 10 s out-of-orderness + 1 min idle + 0 skew.
    assert.equal(lifetime, 60_000 + 300_000 + 10_000 + 60_000);
    assert.equal(
      loadWindowConfig({ OFFVIA_WINDOW_LEDGER_TTL_MS: String(lifetime) }).ledgerTtlMs,
      lifetime,
    );
    assert.throws(
      () => loadWindowConfig({ OFFVIA_WINDOW_LEDGER_TTL_MS: String(lifetime - 1) }),
      (err: unknown) =>
        err instanceof ConfigError && err.variable === 'OFFVIA_WINDOW_LEDGER_TTL_MS',
    );
  });
  it('refuses the retired per-window layout in one line naming the drain procedure; key-groups is accepted', () => {
    assert.equal(loadWindowConfig({ OFFVIA_WINDOW_LAYOUT: 'key-groups' }).keyGroups, 16);
    assert.throws(
      () => loadWindowConfig({ OFFVIA_WINDOW_LAYOUT: 'per-window' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.variable === 'OFFVIA_WINDOW_LAYOUT' &&
        err.message.includes('docs/windows.md#draining-the-per-window-layout') &&
        !err.message.includes('\n'),
    );
  });
  it('builds session windows from OFFVIA_WINDOW_SESSION_GAP_MS, and refuses what sessions do not support in one line', () => {
    const c = loadWindowConfig({ OFFVIA_WINDOW_SESSION_GAP_MS: '30000' });
    assert.deepEqual(c.strategy.windowFn, { kind: 'sessions', gapMs: 30_000 });
    assert.equal(
      loadWindowConfig({}).strategy.windowFn.kind,
      'fixed',
      'gap 0 (default): fixed windows',
    );
    const refused: [Record<string, string>, string, RegExp][] = [
      [
        { OFFVIA_WINDOW_SIZE_MS: '60000' },
        'OFFVIA_WINDOW_SIZE_MS',
        /must be unset with session windows/,
      ],
      [{ OFFVIA_WINDOW_PERIOD_MS: '30000' }, 'OFFVIA_WINDOW_PERIOD_MS', /sessions have no size/],
      [{ OFFVIA_WINDOW_OFFSET_MS: '1' }, 'OFFVIA_WINDOW_OFFSET_MS', /must be unset/],
      [{ OFFVIA_WINDOW_LAYOUT: 'per-window' }, 'OFFVIA_WINDOW_LAYOUT', /is retired/],
      [{ OFFVIA_WINDOW_GROUP_SHARDS: '2' }, 'OFFVIA_WINDOW_GROUP_SHARDS', /must be 1/],
      [{ OFFVIA_WINDOW_SESSION_GAP_MS: '-1' }, 'OFFVIA_WINDOW_SESSION_GAP_MS', /./],
    ];
    for (const [env, variable, message] of refused) {
      assert.throws(
        () => loadWindowConfig({ OFFVIA_WINDOW_SESSION_GAP_MS: '30000', ...env }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.variable === variable &&
          message.test(err.message) &&
          !err.message.includes('\n'),
        JSON.stringify(env),
      );
    }
  });

  it('reads the watermark hold source: local by default, monitoring with its subscription', () => {
    const local = loadWindowConfig({});
    assert.equal(local.holdSource, 'local');
    assert.equal(local.holdSubscription, undefined);
    assert.equal(local.holdMinBacklogAgeMs, 60_000);
    const cloud = loadWindowConfig({
      OFFVIA_WATERMARK_HOLD_SOURCE: 'monitoring',
      OFFVIA_WATERMARK_HOLD_SUBSCRIPTION: 'eventarc-europe-west1-ingest-booking-123',
      OFFVIA_WATERMARK_HOLD_MIN_BACKLOG_AGE_MS: '120000',
    });
    assert.equal(cloud.holdSource, 'monitoring');
    assert.equal(cloud.holdSubscription, 'eventarc-europe-west1-ingest-booking-123');
    assert.equal(cloud.holdMinBacklogAgeMs, 120_000);
    const refused: [Record<string, string>, string, RegExp][] = [
      [
        { OFFVIA_WATERMARK_HOLD_SOURCE: 'pubsub' },
        'OFFVIA_WATERMARK_HOLD_SOURCE',
        /expected local or monitoring/,
      ],
      [
        { OFFVIA_WATERMARK_HOLD_SOURCE: 'monitoring' },
        'OFFVIA_WATERMARK_HOLD_SUBSCRIPTION',
        /required/,
      ],
      [
        { OFFVIA_WATERMARK_HOLD_SOURCE: 'monitoring', OFFVIA_WATERMARK_HOLD_SUBSCRIPTION: 'a/b' },
        'OFFVIA_WATERMARK_HOLD_SUBSCRIPTION',
        /not a Pub\/Sub subscription id/,
      ],
    ];
    for (const [env, variable, message] of refused) {
      assert.throws(
        () => loadWindowConfig(env),
        (err: unknown) =>
          err instanceof ConfigError && err.variable === variable && message.test(err.message),
        JSON.stringify(env),
      );
    }
  });
});
