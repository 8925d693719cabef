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
import { type Env, readOptionalString, readString } from './env';
import {
  type IntVarSpec,
  type VarGroup,
  type VarValues,
  boolVar,
  choiceVar,
  nameVar,
  readChoiceVar,
  readIntVar,
  readVars,
  tableVar,
  textVar,
  countVar,
  msVar,
} from './spec';

/**
 * Everything the windowed pipeline needs; durations in ms. The fields named in `PLAIN_WINDOW_KEYS` are the
 * variables of `WINDOW_VARS` as read (meaning, default and range there); the rest are derived from several.
 */
export interface WindowConfig extends VarValues<typeof WINDOW_VARS, PlainWindowKey> {
  /** Window function, allowed lateness, trigger and accumulation mode, validated by the windowing core. */
  strategy: WindowingStrategy;
  /** The heuristic watermark (`OFFVIA_WATERMARK_*`). */
  watermarkPolicy: WatermarkPolicy;
  /** Where fireWindows' watermark hold comes from (`OFFVIA_WATERMARK_HOLD_SOURCE`). */
  holdSource: WatermarkHoldSource;
  /** The subscription whose backlog holds the watermark (`OFFVIA_WATERMARK_HOLD_SUBSCRIPTION`; `monitoring` only). */
  holdSubscription: string | undefined;
}

/** Where the watermark hold comes from: failing deliveries (`local`) or also the subscription backlog (`monitoring`). */
export type WatermarkHoldSource = 'local' | 'monitoring';

/** Pub/Sub's resource-id rule for a subscription id. */
const SUBSCRIPTION_ID = /^(?!goog)[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$/;

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

const PIPELINE = /^[a-z][a-z0-9_]{0,39}$/;
const COLLECTION = /^[A-Za-z][A-Za-z0-9_]{0,99}$/;

/** The variable of the retired per-window layout: only `key-groups` is accepted (docs/windows.md). */
const RETIRED_LAYOUT_VAR = 'OFFVIA_WINDOW_LAYOUT';

/** Most windows one event may fall in (sliding windows: ceil(size / period)); each is a state write. */
export const MAX_WINDOWS_PER_EVENT = 60;

/**
 * The variables `loadWindowConfig` reads; docs/configuration.md is generated from these specs. Defaults: the lab's
 * one-minute fixed windows, 5 min lateness, early firings every 30 s, a late firing per element, accumulating.
 */
export const WINDOW_VARS = {
  enabled: boolVar({
    name: 'OFFVIA_WINDOWS_ENABLED',
    default: true,
    meaning: 'the window-state sink in `ingestBooking` (booking aggregates per route and window)',
  }),
  pipeline: nameVar({
    name: 'OFFVIA_WINDOW_PIPELINE',
    default: 'booking_routes_1m',
    pattern: PIPELINE,
    patternText: 'a lowercase letter, then up to 39 lowercase letters, digits or `_`',
    meaning: 'pipeline name: Firestore namespace, gold `pipeline` column, insertId prefix',
  }),
  sizeMs: msVar([SECOND_MS, DAY_MS], {
    name: 'OFFVIA_WINDOW_SIZE_MS',
    default: MINUTE_MS,
    meaning: 'window length',
  }),
  periodMs: msVar([SECOND_MS, DAY_MS], {
    name: 'OFFVIA_WINDOW_PERIOD_MS',
    default: MINUTE_MS,
    defaultText: '`OFFVIA_WINDOW_SIZE_MS` (fixed windows)',
    rangeText: `at most \`OFFVIA_WINDOW_SIZE_MS\`, and size / period ≤ ${MAX_WINDOWS_PER_EVENT}`,
    meaning:
      'below the size: sliding windows. Each event is in size / period windows, each a state write in its transaction',
  }),
  sessionGapMs: msVar([0, DAY_MS], {
    name: 'OFFVIA_WINDOW_SESSION_GAP_MS',
    default: 0,
    rangeText:
      'with it, `OFFVIA_WINDOW_SIZE_MS`, `OFFVIA_WINDOW_PERIOD_MS`, `OFFVIA_WINDOW_OFFSET_MS` must be unset, ' +
      'and `OFFVIA_WINDOW_GROUP_SHARDS` 1',
    meaning:
      "above 0: session windows with this gap (Beam's `Sessions.withGapDuration`) instead of fixed or sliding " +
      "windows, kept in the session layout (one Firestore document per key holding the key's open sessions, see " +
      '[windows](windows.md#session-windows)); 0: fixed or sliding windows',
  }),
  offsetMs: msVar([0, DAY_MS - 1], {
    name: 'OFFVIA_WINDOW_OFFSET_MS',
    default: 0,
    rangeText: 'below the period',
    meaning: 'shifts window starts from the epoch',
  }),
  allowedLatenessMs: msVar([0, 7 * DAY_MS], {
    name: 'OFFVIA_WINDOW_ALLOWED_LATENESS_MS',
    default: 5 * MINUTE_MS,
    meaning:
      "Beam's allowed lateness: data later than window end + this (by the watermark) is dropped and counted",
  }),
  earlyFiringDelayMs: msVar([0, DAY_MS], {
    name: 'OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS',
    default: 30 * SECOND_MS,
    meaning:
      "early firings: processing time after the pane's first element (0 = off; with a count too: `AfterFirst`)",
  }),
  earlyFiringCount: countVar([0, 1_000_000], {
    name: 'OFFVIA_WINDOW_EARLY_FIRING_COUNT',
    default: 0,
    meaning: 'early firings: elements in the pane (0 = off)',
  }),
  lateFiringDelayMs: msVar([0, DAY_MS], {
    name: 'OFFVIA_WINDOW_LATE_FIRING_DELAY_MS',
    default: 0,
    meaning: "late firings: processing time after the late pane's first element (0 = off)",
  }),
  lateFiringCount: countVar([0, 1_000_000], {
    name: 'OFFVIA_WINDOW_LATE_FIRING_COUNT',
    default: 1,
    meaning:
      'late firings: late elements per LATE pane. With the delay also 0 there are none: the ON_TIME pane is final ' +
      'and later data is dropped (`CLOSED_WINDOW`)',
  }),
  accumulationMode: choiceVar<AccumulationMode>({
    name: 'OFFVIA_WINDOW_ACCUMULATION_MODE',
    choices: ['ACCUMULATING', 'DISCARDING'],
    default: 'ACCUMULATING',
    meaning:
      'whether a pane carries everything so far (`ACCUMULATING`) or only what came since the last pane',
  }),
  maxOutOfOrdernessMs: msVar([0, DAY_MS], {
    name: 'OFFVIA_WATERMARK_MAX_OUT_OF_ORDERNESS_MS',
    default: 10 * SECOND_MS,
    meaning: 'watermark = largest event time seen − this',
  }),
  idleTimeoutMs: msVar([SECOND_MS, DAY_MS], {
    name: 'OFFVIA_WATERMARK_IDLE_TIMEOUT_MS',
    default: MINUTE_MS,
    meaning:
      'no new largest event time for this long: the watermark glides on with processing time',
  }),
  // Not the contract's OFFVIA_MAX_FUTURE_SKEW_MS (5 min): an event the contract accepts a few minutes ahead of
  // the clock must not drag the watermark ahead of it, or on-time data of the current minute is dropped as late.
  watermarkMaxFutureSkewMs: msVar([0, HOUR_MS], {
    name: 'OFFVIA_WATERMARK_MAX_FUTURE_SKEW_MS',
    default: 0,
    meaning:
      'events stamped later than their receipt + this are counted in their windows but never move the watermark. ' +
      "Not the contract's `OFFVIA_MAX_FUTURE_SKEW_MS`: one event stamped minutes ahead would drag the watermark " +
      'ahead of the clock and current data would be dropped as late',
  }),
  // Sized for Firestore's sustained write rate per document (about 1 write/s) and its 1 MiB document limit: 16
  // groups keep a 50,000-key window at about 3,100 keys (~500 KiB) per document.
  keyGroups: countVar([1, 1024], {
    name: 'OFFVIA_WINDOW_KEY_GROUPS',
    default: 16,
    meaning:
      'key groups per window (the keys of a window hashed into key-group documents, dedup ids kept in the state, ' +
      'docs/windows.md): hash(key) mod this picks the document a key lives in. Fewer ' +
      'groups bundle more events per transaction; more groups spread writes and keep documents under 1 MiB. ' +
      'Change it only while no window is open (a key would move to another group)',
  }),
  groupShards: countVar([1, 16], {
    name: 'OFFVIA_WINDOW_GROUP_SHARDS',
    default: 1,
    meaning:
      'shard documents per key group and window: events go to hash(event id) mod this. 1 keeps a group in one ' +
      'document (one read and one write ' +
      'per transaction); raise it when one key takes more writes than one document sustains (a hot key written by ' +
      'many instances). Change it only while no window is open',
  }),
  maxBundle: countVar([1, 200], {
    name: 'OFFVIA_WINDOW_MAX_BUNDLE',
    default: 100,
    meaning: 'most events of one (key, window) an instance applies in one Firestore transaction',
  }),
  firestoreRoot: nameVar({
    name: 'OFFVIA_WINDOW_FIRESTORE_ROOT',
    default: 'offviaWindows',
    pattern: COLLECTION,
    patternText: 'a Firestore collection id: a letter, then up to 99 letters, digits or `_`',
    meaning: 'root collection of the window state',
  }),
  goldTable: tableVar({
    name: 'OFFVIA_GOLD_TABLE',
    default: 'offvia_gold.route_panes',
    meaning:
      'where panes go; refused at cold start when it is the Silver, quarantine or bad-data table',
  }),
  ledgerTtlMs: msVar([MINUTE_MS, 400 * DAY_MS], {
    name: 'OFFVIA_WINDOW_LEDGER_TTL_MS',
    default: 8 * DAY_MS,
    rangeText:
      'at least size + allowed lateness + out-of-orderness + idle timeout + watermark future skew (checked at ' +
      'cold start)',
    meaning:
      "dedup ledger lifetime; must also cover the subscription's retention (7 days; the deploy plan checks)",
  }),
  droppedTtlMs: msVar([MINUTE_MS, 400 * DAY_MS], {
    name: 'OFFVIA_WINDOW_DROPPED_TTL_MS',
    default: 30 * DAY_MS,
    meaning: 'lifetime of the dropped-late counters',
  }),
  watermarkCacheMs: msVar([0, MINUTE_MS], {
    name: 'OFFVIA_WATERMARK_CACHE_MS',
    default: SECOND_MS,
    meaning: 'how long an instance reuses a watermark it read (0: read every time)',
  }),
  watermarkWriteIntervalMs: msVar([0, MINUTE_MS], {
    name: 'OFFVIA_WATERMARK_WRITE_INTERVAL_MS',
    default: SECOND_MS,
    meaning: 'least processing time between two watermark writes of an instance',
  }),
  fireLeaseMs: msVar([10 * SECOND_MS, 30 * MINUTE_MS], {
    name: 'OFFVIA_FIRE_WINDOWS_LEASE_MS',
    default: 2 * MINUTE_MS,
    meaning: "`fireWindows`' lease per pipeline (one run at a time)",
  }),
  fireConcurrency: countVar([1, 64], {
    name: 'OFFVIA_FIRE_WINDOWS_CONCURRENCY',
    default: 8,
    meaning: 'windows `fireWindows` fires in parallel',
  }),
  fireMaxWindows: countVar([1, 100_000], {
    name: 'OFFVIA_FIRE_WINDOWS_MAX_WINDOWS',
    default: 5000,
    meaning: 'due windows one `fireWindows` run handles; the rest wait for the next run',
  }),
  firePartitions: countVar([1, 64], {
    name: 'OFFVIA_FIRE_WINDOWS_PARTITIONS',
    default: 4,
    meaning:
      '`key-groups` layout: partitions of the key groups, each with its own lease, so several `fireWindows` ' +
      'invocations fire due windows in parallel',
  }),
  firePartitionsInFlight: countVar([1, 64], {
    name: 'OFFVIA_FIRE_WINDOWS_PARTITIONS_IN_FLIGHT',
    default: 4,
    meaning:
      '`key-groups` layout: partitions one `fireWindows` run leases and fires at a time (each with ' +
      '`OFFVIA_FIRE_WINDOWS_CONCURRENCY` key groups in flight), so a lone run keeps several partitions going',
  }),
  outboxGraceMs: msVar([0, 10 * MINUTE_MS], {
    name: 'OFFVIA_PANE_OUTBOX_GRACE_MS',
    default: 30 * SECOND_MS,
    meaning: 'outbox panes older than this are re-emitted to gold by `fireWindows`',
  }),
  // Cloud Scheduler runs fireWindows once a minute and never starts a run before the previous one ended (Cloud
  // Scheduler API, Job.schedule): a loop of just under a minute hands over to the next run with a gap of ~2 s.
  fireLoopMs: msVar([0, 30 * MINUTE_MS], {
    name: 'OFFVIA_FIRE_WINDOWS_LOOP_MS',
    default: 58 * SECOND_MS,
    rangeText:
      'below the schedule (60 s), so a run ends before the next; the deploy plan sets the function timeout to ' +
      'this + `OFFVIA_FIRE_WINDOWS_LEASE_MS` + 30 s',
    meaning:
      "a scheduled `fireWindows` run (the call carrying Cloud Scheduler's `X-CloudScheduler` header) keeps firing " +
      'processing-time timers (early/late panes) this long after its first pass, sleeping until the earliest one; ' +
      '0: one pass per run (timers then wait for the next run)',
  }),
  firePollMs: msVar([500, MINUTE_MS], {
    name: 'OFFVIA_FIRE_WINDOWS_POLL_MS',
    default: 5 * SECOND_MS,
    meaning:
      "longest sleep of `fireWindows`' timer loop between two queries for the earliest pending timer (one " +
      'Firestore read each): bounds how late a timer of a pane that began while the loop slept can fire',
  }),
  // The cloud subscription retries a failed push after 10 s to 600 s (deploy/gcloud/deploy-plan.ts DELIVERY): a
  // hold must outlive the longest backoff, or it lapses while its message still waits for redelivery.
  holdLeaseMs: msVar([0, DAY_MS], {
    name: 'OFFVIA_WATERMARK_HOLD_LEASE_MS',
    default: 11 * MINUTE_MS,
    rangeText: "above the push subscription's maximum retry delay (600 s in the cloud)",
    meaning:
      'a delivery `ingestBooking` refuses holds the watermark at its publish time − out-of-orderness until the ' +
      'message is processed, or this long after its last failed delivery (it was acked elsewhere or dead-lettered); ' +
      '0: no holds',
  }),
  // One cap for every hold (failing deliveries, the backlog, the heartbeat): 1 h outlasts the cloud push
  // subscription's 10-min maximum backoff and a 15-minute ingest outage several times over, and bounds how long a
  // stall (or heartbeats stopped for good) keeps windows open.
  holdMaxMs: msVar([MINUTE_MS, 7 * DAY_MS], {
    name: 'OFFVIA_WATERMARK_HOLD_MAX_MS',
    default: HOUR_MS,
    meaning:
      'a message failing for longer than this (since its publish time) stops holding the watermark and is logged as ' +
      'a stuck hold (`watermark_hold_stuck`, alerted): one poison message must not stop every window from closing. ' +
      'The same cap bounds the heartbeat rule: a newest processed heartbeat older than this (heartbeats stopped for ' +
      'good: scheduler job paused, topic deleted) no longer holds, logged at ERROR (`watermark_hold_stuck`, ' +
      '`source: heartbeat`). See [windows](windows.md#heartbeats)',
  }),
  // A text spec rather than a choice: `monitoring` is valid only together with its subscription.
  holdSource: textVar({
    name: 'OFFVIA_WATERMARK_HOLD_SOURCE',
    defaultText: '`local`',
    allowedText: '`local`, or `monitoring` (with `OFFVIA_WATERMARK_HOLD_SUBSCRIPTION`)',
    meaning:
      "where `fireWindows`' watermark hold comes from: `local`, the holds recorded by failing deliveries; " +
      "`monitoring`, also the ingest subscription's oldest unacknowledged message (Cloud Monitoring's " +
      '`pubsub.googleapis.com/subscription/oldest_unacked_message_age`, read at most every 30 s; needs ' +
      "`roles/monitoring.viewer` for `fireWindows`' service account; a failed read is logged and the pass uses the " +
      'local holds). See [windows](windows.md#the-cloud-source-the-subscription-backlog)',
  }),
  holdSubscription: textVar({
    name: 'OFFVIA_WATERMARK_HOLD_SUBSCRIPTION',
    defaultText: 'none (required with `OFFVIA_WATERMARK_HOLD_SOURCE=monitoring`)',
    allowedText: 'a Pub/Sub subscription id (the `eventarc-*` subscription the deploy prints)',
    meaning: 'the push subscription feeding `ingestBooking` whose backlog holds the watermark',
  }),
  holdMinBacklogAgeMs: msVar([0, DAY_MS], {
    name: 'OFFVIA_WATERMARK_HOLD_MIN_BACKLOG_AGE_MS',
    default: MINUTE_MS,
    meaning:
      '`monitoring` source: a backlog whose oldest message is younger than this does not hold (deliveries in flight, ' +
      'covered by the out-of-orderness bound; holding behind them would keep the watermark a metric delay behind ' +
      'the clock)',
  }),
} as const;

/** The reference section of the windowing variables. */
export const WINDOW_VAR_GROUP: VarGroup = {
  title: 'Windows, watermark and panes',
  intro:
    "Read by `ingestBooking` (the window-state sink) and `fireWindows`; defaults are the lab's windowing. See " +
    '[windows](windows.md).',
  vars: Object.values(WINDOW_VARS),
};

/**
 * The operational knobs of the keyed store and fireWindows shared by every aggregation of a function instance
 * (`OFFVIA_WINDOW_*`, `OFFVIA_FIRE_WINDOWS_*`, `OFFVIA_WATERMARK_*`). The strategy, watermark policy, shards, gold
 * table and namespace come from the aggregation's definition instead.
 */
export const SHARED_WINDOW_KNOBS = [
  'keyGroups',
  'firePartitions',
  'firePartitionsInFlight',
  'maxBundle',
  'ledgerTtlMs',
  'droppedTtlMs',
  'watermarkCacheMs',
  'watermarkWriteIntervalMs',
  'fireLeaseMs',
  'fireConcurrency',
  'fireMaxWindows',
  'outboxGraceMs',
  'holdLeaseMs',
  'holdMaxMs',
  'holdMinBacklogAgeMs',
] as const;

/** The variables a `WindowConfig` carries as read: the definition-level ones, then the shared knobs. */
const PLAIN_WINDOW_KEYS = [
  'enabled',
  'pipeline',
  'groupShards',
  'firestoreRoot',
  'goldTable',
  'fireLoopMs',
  'firePollMs',
  ...SHARED_WINDOW_KNOBS,
] as const;
type PlainWindowKey = (typeof PLAIN_WINDOW_KEYS)[number];

/** Strategy paths reported by the windowing core → the variable that sets them. */
const VARIABLE_OF_PATH: Record<string, string> = {
  'windowFn.sizeMs': 'OFFVIA_WINDOW_SIZE_MS',
  'windowFn.periodMs': 'OFFVIA_WINDOW_PERIOD_MS',
  'windowFn.offsetMs': 'OFFVIA_WINDOW_OFFSET_MS',
  'windowFn.gapMs': 'OFFVIA_WINDOW_SESSION_GAP_MS',
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

/** The firing of a delay and a count variable; `undefined` (off) when both are 0. */
function firing(env: Env, delay: IntVarSpec, elements: IntVarSpec): FiringSpec | undefined {
  const delayMs = readIntVar(env, delay);
  const count = readIntVar(env, elements);
  if (delayMs === 0 && count === 0) return undefined;
  return {
    ...(delayMs > 0 && { processingTimeDelayMs: delayMs }),
    ...(count > 0 && { elementCount: count }),
  };
}

/**
 * Refuses the retired per-window layout, naming the drain procedure: its windows would otherwise never fire.
 * @throws ConfigError when `OFFVIA_WINDOW_LAYOUT` is set to anything but `key-groups`
 */
function refuseRetiredLayout(env: Env): void {
  const layout = readOptionalString(env, RETIRED_LAYOUT_VAR);
  if (layout !== undefined && layout !== 'key-groups') {
    throw new ConfigError(
      RETIRED_LAYOUT_VAR,
      `${JSON.stringify(layout)} is retired, key groups are the only layout: drain per-window windows with the previous release first (docs/windows.md#draining-the-per-window-layout), then unset it`,
    );
  }
}

/**
 * The watermark hold's source and, for `monitoring`, its subscription.
 * @throws ConfigError for an unknown source, or `monitoring` without a valid subscription id
 */
function readHoldSource(env: Env): Pick<WindowConfig, 'holdSource' | 'holdSubscription'> {
  const v = WINDOW_VARS;
  const source = readString(env, v.holdSource.name, 'local');
  if (source !== 'local' && source !== 'monitoring') {
    throw new ConfigError(
      v.holdSource.name,
      `expected local or monitoring, got ${JSON.stringify(source)}`,
    );
  }
  const subscription = readOptionalString(env, v.holdSubscription.name);
  if (source === 'monitoring' && subscription === undefined) {
    throw new ConfigError(
      v.holdSubscription.name,
      'required with OFFVIA_WATERMARK_HOLD_SOURCE=monitoring: the subscription whose backlog holds the watermark',
    );
  }
  if (subscription !== undefined && !SUBSCRIPTION_ID.test(subscription)) {
    throw new ConfigError(
      v.holdSubscription.name,
      `not a Pub/Sub subscription id: ${JSON.stringify(subscription)}`,
    );
  }
  return { holdSource: source, holdSubscription: subscription };
}

/**
 * The session gap (`OFFVIA_WINDOW_SESSION_GAP_MS` > 0), or `null` when sessions are off. Refuses window size, period,
 * offset and group shards with sessions (a key's sessions are one document, merged in one transaction).
 * @throws ConfigError naming the variable that conflicts
 */
function readSessionGap(env: Env): number | null {
  const v = WINDOW_VARS;
  const gapMs = readIntVar(env, v.sessionGapMs);
  if (gapMs === 0) return null;
  for (const spec of [v.sizeMs, v.periodMs, v.offsetMs]) {
    if (readOptionalString(env, spec.name) !== undefined) {
      throw new ConfigError(
        spec.name,
        `must be unset with session windows (OFFVIA_WINDOW_SESSION_GAP_MS=${gapMs}): sessions have no size, period or offset`,
      );
    }
  }
  if (readIntVar(env, v.groupShards) !== 1) {
    throw new ConfigError(
      v.groupShards.name,
      "must be 1 with session windows (OFFVIA_WINDOW_SESSION_GAP_MS): a key's sessions are one document",
    );
  }
  return gapMs;
}

/**
 * Reads and validates the windowing configuration: fixed windows by default, sliding with a period below the size,
 * sessions with a gap above 0. A firing is off when both its delay and count are 0.
 * @throws ConfigError naming the first bad variable
 */
export function loadWindowConfig(env: Env): WindowConfig {
  const v = WINDOW_VARS;
  refuseRetiredLayout(env);
  const sessionGapMs = readSessionGap(env);
  const sizeMs = readIntVar(env, v.sizeMs);
  const periodMs = readIntVar(env, v.periodMs, { fallback: sizeMs, max: sizeMs });
  const windowsPerEvent = Math.ceil(sizeMs / periodMs);
  if (windowsPerEvent > MAX_WINDOWS_PER_EVENT) {
    throw new ConfigError(
      'OFFVIA_WINDOW_PERIOD_MS',
      `sliding windows of ${sizeMs} ms every ${periodMs} ms put each event in ${windowsPerEvent} windows; at ` +
        `most ${MAX_WINDOWS_PER_EVENT} are allowed (each window is a Firestore state update in the event's ` +
        `transaction): raise the period or shorten the size`,
    );
  }
  const offsetMs = readIntVar(env, v.offsetMs, { max: periodMs - 1 });
  const earlyFirings = firing(env, v.earlyFiringDelayMs, v.earlyFiringCount);
  const lateFirings = firing(env, v.lateFiringDelayMs, v.lateFiringCount);
  let strategy: WindowingStrategy;
  let watermarkPolicy: WatermarkPolicy;
  try {
    strategy = validateWindowingStrategy({
      windowFn:
        sessionGapMs !== null
          ? { kind: 'sessions', gapMs: sessionGapMs }
          : periodMs === sizeMs
            ? { kind: 'fixed', sizeMs, offsetMs }
            : { kind: 'sliding', sizeMs, periodMs, offsetMs },
      allowedLatenessMs: readIntVar(env, v.allowedLatenessMs),
      trigger: { ...(earlyFirings && { earlyFirings }), lateFirings: lateFirings ?? null },
      accumulationMode: readChoiceVar(env, v.accumulationMode),
    });
    watermarkPolicy = validateWatermarkPolicy({
      maxOutOfOrdernessMs: readIntVar(env, v.maxOutOfOrdernessMs),
      idleTimeoutMs: readIntVar(env, v.idleTimeoutMs),
      maxFutureSkewMs: readIntVar(env, v.watermarkMaxFutureSkewMs),
    });
  } catch (err) {
    asConfigError(err);
  }
  const config: WindowConfig = {
    ...readVars(env, v, PLAIN_WINDOW_KEYS),
    strategy,
    watermarkPolicy,
    ...readHoldSource(env),
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

/**
 * Upper bound, in ms of processing time, on how long a window stays open after its first counted event: future
 * skew + size + allowed lateness + the watermark's lag behind the clock (out-of-orderness + idle timeout). The
 * dedup ledger must outlive this (`OFFVIA_WINDOW_LEDGER_TTL_MS`).
 */
export function longestWindowLifetimeMs(
  config: Pick<WindowConfig, 'strategy' | 'watermarkPolicy'>,
): number {
  const { strategy, watermarkPolicy: wm } = config;
  // A session grows with every event; the gap is a lower bound (a session keeps its own dedup ids).
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
