// Configuration of the windowed booking aggregates (ingestBooking's window-state sink and fireWindows), read from
// the environment once at cold start. Defaults are the lab's values (design.md, "Windows, watermark, triggers").
import { ConfigError } from '../errors';
import {
  WindowingConfigError,
  validateWatermarkPolicy,
  validateWindowingStrategy,
  type AccumulationMode,
  type FiringSpec,
  type WatermarkPolicy,
  type WindowingStrategy,
} from '../windowing';
import { type Env, type TableRef, readBool, readInt, readString, readTable } from './env';

/** Everything the windowed pipeline needs. Durations in ms. */
export interface WindowConfig {
  /** The sink is wired into ingestBooking (`OFFVIA_WINDOWS_ENABLED`, default true). */
  enabled: boolean;
  /** Name of the windowed pipeline; namespaces its Firestore state and insertIds (`OFFVIA_WINDOW_PIPELINE`). */
  pipeline: string;
  /** Window function, allowed lateness, trigger and accumulation mode, validated by the windowing core. */
  strategy: WindowingStrategy;
  /** The heuristic watermark (`OFFVIA_WATERMARK_*`). */
  watermarkPolicy: WatermarkPolicy;
  /** Shard documents per new (key, window) (`OFFVIA_WINDOW_SHARDS`, default 4). */
  shards: number;
  /** Most events one Firestore transaction takes for one (key, window) (`OFFVIA_WINDOW_MAX_BUNDLE`, default 100). */
  maxBundle: number;
  /** Root collection of the window state (`OFFVIA_WINDOW_FIRESTORE_ROOT`, default `offviaWindows`). */
  firestoreRoot: string;
  /** Gold table the panes go to (`OFFVIA_GOLD_TABLE`, default `offvia_gold.route_panes`). */
  goldTable: TableRef;
  /** Dedup ledger entry lifetime; must cover Pub/Sub retention (`OFFVIA_WINDOW_LEDGER_TTL_MS`, default 8 days). */
  ledgerTtlMs: number;
  /** Lifetime of the dropped-late counters (`OFFVIA_WINDOW_DROPPED_TTL_MS`, default 30 days). */
  droppedTtlMs: number;
  /** How long an instance reuses the watermark it read (`OFFVIA_WATERMARK_CACHE_MS`, default 1000). */
  watermarkCacheMs: number;
  /** Least processing time between two watermark writes (`OFFVIA_WATERMARK_WRITE_INTERVAL_MS`, default 1000). */
  watermarkWriteIntervalMs: number;
  /** fireWindows lease (`OFFVIA_FIRE_WINDOWS_LEASE_MS`, default 120000). */
  fireLeaseMs: number;
  /** Windows fireWindows fires in parallel (`OFFVIA_FIRE_WINDOWS_CONCURRENCY`, default 8). */
  fireConcurrency: number;
  /** Due windows one fireWindows run handles; the rest wait a minute (`OFFVIA_FIRE_WINDOWS_MAX_WINDOWS`, 5000). */
  fireMaxWindows: number;
  /** Age at which fireWindows re-emits a pane still in the outbox (`OFFVIA_PANE_OUTBOX_GRACE_MS`, default 30000). */
  outboxGraceMs: number;
}

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/** The lab's windowing: one-minute fixed windows, 5 min allowed lateness, early every 30 s, late per element. */
export const WINDOW_DEFAULTS = {
  windowSizeMs: MINUTE_MS,
  allowedLatenessMs: 5 * MINUTE_MS,
  earlyFiringDelayMs: 30 * SECOND_MS,
  lateFiringCount: 1,
  accumulationMode: 'ACCUMULATING' as AccumulationMode,
  maxOutOfOrdernessMs: 10 * SECOND_MS,
  idleTimeoutMs: MINUTE_MS,
  watermarkMaxFutureSkewMs: 0,
  shards: 4,
  ledgerTtlMs: 8 * DAY_MS,
};

const PIPELINE = /^[a-z][a-z0-9_]{0,39}$/;
const COLLECTION = /^[A-Za-z][A-Za-z0-9_]{0,99}$/;

/** Strategy paths reported by the windowing core → the variable that sets them. */
const VARIABLE_OF_PATH: Record<string, string> = {
  'windowFn.sizeMs': 'OFFVIA_WINDOW_SIZE_MS',
  'windowFn.periodMs': 'OFFVIA_WINDOW_PERIOD_MS',
  'windowFn.offsetMs': 'OFFVIA_WINDOW_OFFSET_MS',
  allowedLatenessMs: 'OFFVIA_WINDOW_ALLOWED_LATENESS_MS',
  'trigger.earlyFirings': 'OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS',
  'trigger.lateFirings': 'OFFVIA_WINDOW_LATE_FIRING_COUNT',
  accumulationMode: 'OFFVIA_WINDOW_ACCUMULATION_MODE',
  'watermarkPolicy.maxOutOfOrdernessMs': 'OFFVIA_WATERMARK_MAX_OUT_OF_ORDERNESS_MS',
  'watermarkPolicy.idleTimeoutMs': 'OFFVIA_WATERMARK_IDLE_TIMEOUT_MS',
  'watermarkPolicy.maxFutureSkewMs': 'OFFVIA_WATERMARK_MAX_FUTURE_SKEW_MS',
};

/** Re-throws the core's validation error as a ConfigError naming the variable behind its first issue. */
function asConfigError(err: unknown): never {
  if (!(err instanceof WindowingConfigError)) throw err;
  const issue = err.issues[0];
  const path = issue?.path ?? '';
  const variable =
    Object.entries(VARIABLE_OF_PATH).find(([prefix]) => path.startsWith(prefix))?.[1] ??
    'OFFVIA_WINDOW_*';
  throw new ConfigError(variable, err.message);
}

function firing(delayMs: number, count: number): FiringSpec | undefined {
  if (delayMs === 0 && count === 0) return undefined;
  return {
    ...(delayMs > 0 && { processingTimeDelayMs: delayMs }),
    ...(count > 0 && { elementCount: count }),
  };
}

function readMode(env: Env): AccumulationMode {
  const mode = readString(env, 'OFFVIA_WINDOW_ACCUMULATION_MODE', WINDOW_DEFAULTS.accumulationMode);
  if (mode !== 'ACCUMULATING' && mode !== 'DISCARDING') {
    throw new ConfigError(
      'OFFVIA_WINDOW_ACCUMULATION_MODE',
      `expected ACCUMULATING or DISCARDING, got ${JSON.stringify(mode)}`,
    );
  }
  return mode;
}

function readName(env: Env, name: string, fallback: string, pattern: RegExp): string {
  const value = readString(env, name, fallback);
  if (!pattern.test(value)) {
    throw new ConfigError(name, `expected ${pattern.source}, got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * Reads and validates the windowing configuration. Fixed windows by default; `OFFVIA_WINDOW_PERIOD_MS` below the
 * size gives sliding windows. Session windows are not offered: merging needs all of a key's windows in one
 * transaction, which the sharded Firestore layout does not give. A firing is off when both its delay and count
 * are 0; without late firings the ON_TIME pane is final and later data is dropped (Beam).
 * @throws ConfigError naming the first bad variable
 */
export function loadWindowConfig(env: Env): WindowConfig {
  const sizeMs = readInt(
    env,
    'OFFVIA_WINDOW_SIZE_MS',
    WINDOW_DEFAULTS.windowSizeMs,
    SECOND_MS,
    DAY_MS,
  );
  const periodMs = readInt(env, 'OFFVIA_WINDOW_PERIOD_MS', sizeMs, SECOND_MS, sizeMs);
  const windowsPerEvent = Math.ceil(sizeMs / periodMs);
  if (windowsPerEvent > MAX_WINDOWS_PER_EVENT) {
    throw new ConfigError(
      'OFFVIA_WINDOW_PERIOD_MS',
      `sliding windows of ${sizeMs} ms every ${periodMs} ms put each event in ${windowsPerEvent} windows; at ` +
        `most ${MAX_WINDOWS_PER_EVENT} are allowed (each window is a Firestore state update in the event's ` +
        `transaction): raise the period or shorten the size`,
    );
  }
  const offsetMs = readInt(env, 'OFFVIA_WINDOW_OFFSET_MS', 0, 0, periodMs - 1);
  const earlyFirings = firing(
    readInt(
      env,
      'OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS',
      WINDOW_DEFAULTS.earlyFiringDelayMs,
      0,
      DAY_MS,
    ),
    readInt(env, 'OFFVIA_WINDOW_EARLY_FIRING_COUNT', 0, 0, 1_000_000),
  );
  const lateFirings = firing(
    readInt(env, 'OFFVIA_WINDOW_LATE_FIRING_DELAY_MS', 0, 0, DAY_MS),
    readInt(env, 'OFFVIA_WINDOW_LATE_FIRING_COUNT', WINDOW_DEFAULTS.lateFiringCount, 0, 1_000_000),
  );
  let strategy: WindowingStrategy;
  let watermarkPolicy: WatermarkPolicy;
  try {
    strategy = validateWindowingStrategy({
      windowFn:
        periodMs === sizeMs
          ? { kind: 'fixed', sizeMs, offsetMs }
          : { kind: 'sliding', sizeMs, periodMs, offsetMs },
      allowedLatenessMs: readInt(
        env,
        'OFFVIA_WINDOW_ALLOWED_LATENESS_MS',
        WINDOW_DEFAULTS.allowedLatenessMs,
        0,
        7 * DAY_MS,
      ),
      trigger: { ...(earlyFirings && { earlyFirings }), lateFirings: lateFirings ?? null },
      accumulationMode: readMode(env),
    });
    watermarkPolicy = validateWatermarkPolicy({
      maxOutOfOrdernessMs: readInt(
        env,
        'OFFVIA_WATERMARK_MAX_OUT_OF_ORDERNESS_MS',
        WINDOW_DEFAULTS.maxOutOfOrdernessMs,
        0,
        DAY_MS,
      ),
      idleTimeoutMs: readInt(
        env,
        'OFFVIA_WATERMARK_IDLE_TIMEOUT_MS',
        WINDOW_DEFAULTS.idleTimeoutMs,
        SECOND_MS,
        DAY_MS,
      ),
      // Not the contract's OFFVIA_MAX_FUTURE_SKEW_MS (5 min): an event the contract accepts a few minutes ahead of
      // the clock must not drag the watermark ahead of it, or on-time data of the current minute is dropped as
      // late. Default 0: an event stamped after its receipt is counted in its window but never moves the watermark.
      maxFutureSkewMs: readInt(
        env,
        'OFFVIA_WATERMARK_MAX_FUTURE_SKEW_MS',
        WINDOW_DEFAULTS.watermarkMaxFutureSkewMs,
        0,
        HOUR_MS,
      ),
    });
  } catch (err) {
    asConfigError(err);
  }
  const config: WindowConfig = {
    enabled: readBool(env, 'OFFVIA_WINDOWS_ENABLED', true),
    pipeline: readName(env, 'OFFVIA_WINDOW_PIPELINE', 'booking_routes_1m', PIPELINE),
    strategy,
    watermarkPolicy,
    // Firestore: at most 500 writes per transaction; closing a window deletes every shard in one.
    shards: readInt(env, 'OFFVIA_WINDOW_SHARDS', WINDOW_DEFAULTS.shards, 1, 100),
    maxBundle: readInt(env, 'OFFVIA_WINDOW_MAX_BUNDLE', 100, 1, 200),
    firestoreRoot: readName(env, 'OFFVIA_WINDOW_FIRESTORE_ROOT', 'offviaWindows', COLLECTION),
    goldTable: readTable(env, 'OFFVIA_GOLD_TABLE', 'offvia_gold.route_panes'),
    ledgerTtlMs: readInt(
      env,
      'OFFVIA_WINDOW_LEDGER_TTL_MS',
      WINDOW_DEFAULTS.ledgerTtlMs,
      MINUTE_MS,
      400 * DAY_MS,
    ),
    droppedTtlMs: readInt(
      env,
      'OFFVIA_WINDOW_DROPPED_TTL_MS',
      30 * DAY_MS,
      MINUTE_MS,
      400 * DAY_MS,
    ),
    watermarkCacheMs: readInt(env, 'OFFVIA_WATERMARK_CACHE_MS', SECOND_MS, 0, MINUTE_MS),
    watermarkWriteIntervalMs: readInt(
      env,
      'OFFVIA_WATERMARK_WRITE_INTERVAL_MS',
      SECOND_MS,
      0,
      MINUTE_MS,
    ),
    fireLeaseMs: readInt(
      env,
      'OFFVIA_FIRE_WINDOWS_LEASE_MS',
      2 * MINUTE_MS,
      10 * SECOND_MS,
      30 * MINUTE_MS,
    ),
    fireConcurrency: readInt(env, 'OFFVIA_FIRE_WINDOWS_CONCURRENCY', 8, 1, 64),
    fireMaxWindows: readInt(env, 'OFFVIA_FIRE_WINDOWS_MAX_WINDOWS', 5000, 1, 100_000),
    outboxGraceMs: readInt(env, 'OFFVIA_PANE_OUTBOX_GRACE_MS', 30 * SECOND_MS, 0, 10 * MINUTE_MS),
  };
  const lifetimeMs = longestWindowLifetimeMs(config);
  if (config.ledgerTtlMs < lifetimeMs) {
    throw new ConfigError(
      'OFFVIA_WINDOW_LEDGER_TTL_MS',
      `${config.ledgerTtlMs} ms is shorter than the longest a window can stay open after it counted an event ` +
        `(${lifetimeMs} ms = size + allowed lateness + watermark out-of-orderness + idle timeout + watermark ` +
        `future skew); a redelivery after the ledger entry expired would be counted twice`,
    );
  }
  return config;
}

/** Most windows one event may fall in (sliding windows: ceil(size / period)); each is a state write. */
export const MAX_WINDOWS_PER_EVENT = 60;

/**
 * Upper bound, in ms of processing time, on how long a window stays open after its first counted event: the
 * event is at most `maxFutureSkewMs` ahead of the clock, the window ends at most `sizeMs` after it, and it is
 * closed once the watermark, which trails the clock by at most the out-of-orderness bound plus the idle timeout,
 * passes its end + allowed lateness. The dedup ledger must outlive this (see `OFFVIA_WINDOW_LEDGER_TTL_MS`).
 */
export function longestWindowLifetimeMs(
  config: Pick<WindowConfig, 'strategy' | 'watermarkPolicy'>,
): number {
  const { strategy, watermarkPolicy: wm } = config;
  // Sessions (not offered by this configuration) would grow with every event; the gap is a lower bound there.
  const sizeMs =
    strategy.windowFn.kind === 'sessions' ? strategy.windowFn.gapMs : strategy.windowFn.sizeMs;
  return (
    sizeMs +
    strategy.allowedLatenessMs +
    wm.maxOutOfOrdernessMs +
    wm.idleTimeoutMs +
    wm.maxFutureSkewMs
  );
}
