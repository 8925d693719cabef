// Composition root of the booking aggregates: Firestore store, watermark, pane emitter, the ingest sink and the
// fireWindows dependencies, built once per instance from the environment.
import { randomUUID } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import type { Firestore } from '@google-cloud/firestore';
import { type IngestConfig, loadIngestConfig } from '../config/ingest-config';
import type { Env, TableRef } from '../config/env';
import { loadWindowConfig, type WindowConfig } from '../config/window-config';
import { firestoreClient } from '../drift/runtime';
import { Logger } from '../logging/logger';
import { ConfigError } from '../errors';
import * as logs from '../logging/logs';
import { BigQueryRowWriter } from '../sinks/bigquery-writer';
import type { RowWriter } from '../sinks/row-writer';
import { FirestoreWindowStore, type StoreMetrics } from '../state/firestore-window-store';
import { GroupedFirestoreWindowStore } from '../state/grouped-window-store';
import type { WindowStore } from '../state/window-store';
import type { FireWindowsDeps } from '../state/fire-windows';
import type { TimerLoopOptions } from '../state/timer-loop';
import { KeyedWindows, minProcessingTimeDelayMs } from '../state/keyed-windows';
import { PaneEmitter } from '../state/pane-emitter';
import { WatermarkTracker } from '../state/watermark-tracker';
import { WindowedPipeline } from '../state/windowed-pipeline';
import { FirestoreSessionStore } from '../state/firestore-session-store';
import {
  BACKLOG_CACHE_MS,
  backlogWatermarkHold,
  monitoringBacklogReader,
  NO_HOLD,
  type BacklogSampleReader,
} from '../state/backlog-hold';
import type { SessionFiring } from '../state/fire-sessions';
import { SessionPipeline, type ElementRecorder } from '../state/session-pipeline';
import type { SessionStore } from '../state/session-store';
import { SessionWindows } from '../state/session-windows';
import { createReduceFnRunner, type WatermarkHold } from '../windowing';
import {
  DeliveryHolds,
  FirestoreWatermarkHoldStore,
  readWatermarkHold,
  type WatermarkHoldStore,
} from '../state/watermark-holds';
import {
  bookingAggregatesFn,
  parseBookingAccumulator,
  type BookingAccumulator,
  type BookingAggregate,
} from './booking-aggregates';
import { BookingWindowSink } from './booking-window-sink';
import { goldPaneRow } from './gold-row';

/** Everything the booking pipeline is made of; tests build it over an emulator or in-memory store. */
export interface BookingWindows {
  readonly config: WindowConfig;
  readonly store: WindowStore<BookingAccumulator>;
  readonly keyed: KeyedWindows<bigint, BookingAccumulator, BookingAggregate>;
  readonly tracker: WatermarkTracker;
  readonly emitter: PaneEmitter;
  /** The per-event path: the fixed/sliding pipeline, or the session pipeline with session windows. */
  readonly pipeline: ElementRecorder<bigint>;
  /** Session windows: the session layout's store and code path (fireWindows fires it instead of `store`). */
  readonly sessions?: SessionFiring<bigint, BookingAccumulator, BookingAggregate>;
  readonly logger: Logger;
  readonly now: () => number;
  /** Watermark holds of failing deliveries; `undefined` when `OFFVIA_WATERMARK_HOLD_LEASE_MS` is 0. */
  readonly holds: WatermarkHoldStore | undefined;
  /** The subscription backlog's reader (`OFFVIA_WATERMARK_HOLD_SOURCE=monitoring`); absent with the `local` source. */
  readonly backlog?: BacklogSampleReader;
  /** Key-groups layout: the store's group queries, and the per-window layout's code path for windows still open. */
  readonly groups?: GroupedFirestoreWindowStore<BookingAccumulator>;
  readonly legacy?: {
    readonly store: WindowStore<BookingAccumulator>;
    readonly keyed: KeyedWindows<bigint, BookingAccumulator, BookingAggregate>;
  };
}

/**
 * How far ahead of the first key-groups instance's clock the migration cutover is placed, ms: longer than a rollout
 * of the functions takes (gen2 rollouts replace instances within minutes), so no instance of the previous version
 * writes a window that starts after it.
 */
export const LAYOUT_ROLLOUT_MARGIN_MS = 15 * 60_000;

/** What `createBookingWindows` may be given instead of building it. */
export interface BookingWindowsOverrides {
  readonly firestore?: Firestore;
  readonly writer?: RowWriter;
  readonly now?: () => number;
  readonly metrics?: StoreMetrics;
  readonly pickShard?: (shardCount: number) => number;
  /** The subscription backlog's reader (tests stub Cloud Monitoring with it). */
  readonly backlog?: BacklogSampleReader;
}

/** The parts `assembleBookingWindows` wires together. */
export interface BookingWindowsParts {
  readonly store: WindowStore<BookingAccumulator>;
  readonly writer: RowWriter;
  /** Bad-data table for refused pane rows, and the project for its `target_dest`. */
  readonly badDataTable: TableRef;
  readonly projectId: string | undefined;
  readonly logger: Logger;
  /** Epoch ms. */
  readonly now: () => number;
  readonly pickShard?: (shardCount: number) => number;
  /** Where failing deliveries record their watermark holds (none: no holds). */
  readonly holds?: WatermarkHoldStore;
  /** The per-window layout's store over the same root, when `store` is a key-groups store (migration). */
  readonly legacyStore?: WindowStore<BookingAccumulator>;
  /** The subscription backlog's reader, for the `monitoring` hold source. */
  readonly backlog?: BacklogSampleReader;
  /** Session windows: the session layout's store (usually `store` itself, a FirestoreSessionStore). */
  readonly sessionStore?: SessionStore<BookingAccumulator>;
}

/** Wires the booking pipeline (combiner, core, keyed windows, watermark, emitter) over any WindowStore. */
export function assembleBookingWindows(
  config: WindowConfig,
  parts: BookingWindowsParts,
): BookingWindows {
  const { store, logger, now } = parts;
  const runner = createReduceFnRunner(config.strategy, bookingAggregatesFn);
  const keyedOver = (over: WindowStore<BookingAccumulator>) =>
    new KeyedWindows({
      pipeline: config.pipeline,
      runner,
      combineFn: bookingAggregatesFn,
      store: over,
      shardCount: over.dedup === 'in-state' ? config.groupShards : config.shards,
      ledgerTtlMs: config.ledgerTtlMs,
      droppedTtlMs: config.droppedTtlMs,
      paneRow: (pane, insertId) => ({
        ...goldPaneRow(config.pipeline, config.strategy.accumulationMode, pane, insertId),
      }),
      ...(parts.pickShard && { pickShard: parts.pickShard }),
    });
  const keyed = keyedOver(store);
  const groups =
    store instanceof GroupedFirestoreWindowStore
      ? (store as GroupedFirestoreWindowStore<BookingAccumulator>)
      : undefined;
  const legacy =
    parts.legacyStore === undefined
      ? undefined
      : { store: parts.legacyStore, keyed: keyedOver(parts.legacyStore) };
  const tracker = new WatermarkTracker(store, {
    policy: config.watermarkPolicy,
    cacheMs: config.watermarkCacheMs,
    minWriteIntervalMs: config.watermarkWriteIntervalMs,
  });
  const emitter = new PaneEmitter({
    pipeline: config.pipeline,
    writer: parts.writer,
    goldTable: config.goldTable,
    badDataTable: parts.badDataTable,
    projectId: parts.projectId,
    store,
    logger,
    now,
  });
  const paneRow = (pane: Parameters<typeof goldPaneRow>[2], insertId: string) => ({
    ...goldPaneRow(config.pipeline, config.strategy.accumulationMode, pane, insertId),
  });
  const sessions =
    parts.sessionStore === undefined
      ? undefined
      : {
          store: parts.sessionStore,
          sessions: new SessionWindows({
            pipeline: config.pipeline,
            runner,
            combineFn: bookingAggregatesFn,
            store: parts.sessionStore,
            droppedTtlMs: config.droppedTtlMs,
            paneRow,
          }),
        };
  const windowed = new WindowedPipeline({
    pipeline: config.pipeline,
    keyed,
    tracker,
    emitter,
    logger,
    maxBundle: config.maxBundle,
    ...(legacy !== undefined &&
      groups !== undefined && {
        legacy: {
          keyed: legacy.keyed,
          cutoverMs: () => groups.layoutCutoverMs(LAYOUT_ROLLOUT_MARGIN_MS),
        },
      }),
  });
  const pipeline: ElementRecorder<bigint> =
    sessions === undefined
      ? windowed
      : new SessionPipeline({
          pipeline: config.pipeline,
          sessions: sessions.sessions,
          tracker,
          emitter,
          logger,
          maxBundle: config.maxBundle,
        });
  const holds = config.holdLeaseMs > 0 ? parts.holds : undefined;
  return {
    config,
    store,
    keyed,
    tracker,
    emitter,
    pipeline,
    ...(sessions !== undefined && { sessions }),
    logger,
    now,
    holds,
    ...(groups !== undefined && { groups }),
    ...(legacy !== undefined && { legacy }),
  };
}

/**
 * Builds the booking pipeline from `env` (`loadWindowConfig`, plus the project, BigQuery endpoint and bad-data table
 * of `loadIngestConfig`) on Firestore; the client follows `FIRESTORE_EMULATOR_HOST` when set.
 * @throws ConfigError for a bad variable (fail fast at cold start)
 */
export function createBookingWindows(
  env: Env,
  logger: Logger,
  overrides: BookingWindowsOverrides = {},
): BookingWindows {
  const config = loadWindowConfig(env);
  const ingest = loadIngestConfig(env);
  assertGoldTableIsOwn(config.goldTable, ingest);
  const firestore =
    overrides.firestore ?? firestoreClient(ingest.projectId, ingest.firestoreDatabase);
  const storeOptions = {
    root: config.firestoreRoot,
    pipeline: config.pipeline,
    parseAccumulator: parseBookingAccumulator,
    ...(overrides.metrics && { metrics: overrides.metrics }),
  };
  const perWindow = new FirestoreWindowStore<BookingAccumulator>(firestore, storeOptions);
  const { earlyFirings, lateFirings } = config.strategy.trigger;
  const sessionStore =
    config.strategy.windowFn.kind === 'sessions'
      ? new FirestoreSessionStore<BookingAccumulator>(firestore, {
          ...storeOptions,
          keyGroups: config.keyGroups,
        })
      : undefined;
  const store =
    sessionStore !== undefined
      ? sessionStore
      : config.layout === 'key-groups'
        ? new GroupedFirestoreWindowStore<BookingAccumulator>(firestore, {
            ...storeOptions,
            keyGroups: config.keyGroups,
            shards: config.groupShards,
            earlyDelayMs: earlyFirings?.processingTimeDelayMs ?? null,
            lateDelayMs: lateFirings?.processingTimeDelayMs ?? null,
            dedupTtlMs: config.ledgerTtlMs,
            ...(overrides.now && { now: overrides.now }),
          })
        : perWindow;
  const writer =
    overrides.writer ??
    new BigQueryRowWriter(
      // As ingestBooking's client: autoRetry off against the emulator, whose 500s are not transient.
      new BigQuery({
        ...(ingest.projectId ? { projectId: ingest.projectId } : {}),
        ...(ingest.bigQueryEndpoint
          ? { apiEndpoint: ingest.bigQueryEndpoint, autoRetry: false }
          : {}),
      }),
    );
  return assembleBookingWindows(config, {
    store,
    writer,
    badDataTable: ingest.badDataTable,
    projectId: ingest.projectId,
    logger,
    now: overrides.now ?? Date.now,
    ...(overrides.pickShard && { pickShard: overrides.pickShard }),
    holds: new FirestoreWatermarkHoldStore(firestore, config.firestoreRoot, config.pipeline),
    ...(store !== perWindow && sessionStore === undefined && { legacyStore: perWindow }),
    ...(sessionStore !== undefined && { sessionStore }),
    ...(config.holdSource === 'monitoring' &&
      config.holdSubscription !== undefined && {
        backlog:
          overrides.backlog ?? monitoringBacklogReader(ingest.projectId, config.holdSubscription),
      }),
  });
}

/**
 * The window-state sink for ingestBooking, or `undefined` when `OFFVIA_WINDOWS_ENABLED` is false.
 * @throws ConfigError for a bad variable
 */
export function createWindowStateSink(
  env: Env,
  logger: Logger,
  overrides: BookingWindowsOverrides = {},
): BookingWindowSink | undefined {
  return createWindowIngestParts(env, logger, overrides)?.sink;
}

/** ingestBooking's window parts: the window-state sink and, when holds are on, the delivery holds. */
export interface WindowIngestParts {
  readonly sink: BookingWindowSink;
  readonly holds: DeliveryHolds | undefined;
}

/**
 * The window-state sink and the delivery holds for ingestBooking, or `undefined` when `OFFVIA_WINDOWS_ENABLED` is
 * false (no windows, so nothing to hold).
 * @throws ConfigError for a bad variable
 */
export function createWindowIngestParts(
  env: Env,
  logger: Logger,
  overrides: BookingWindowsOverrides = {},
): WindowIngestParts | undefined {
  const config = loadWindowConfig(env);
  if (!config.enabled) return undefined;
  const windows = createBookingWindows(env, logger, overrides);
  logs.configLoaded(logger, { windows: summary(windows.config) });
  return {
    sink: new BookingWindowSink(windows.pipeline, logger),
    holds:
      windows.holds === undefined
        ? undefined
        : new DeliveryHolds(windows.holds, config.holdLeaseMs, logger),
  };
}

/** fireWindows' dependencies over a built pipeline (a fresh lease holder id per instance). */
export function fireWindowsDepsOf(
  windows: BookingWindows,
): FireWindowsDeps<bigint, BookingAccumulator, BookingAggregate> {
  const { config } = windows;
  return {
    pipeline: config.pipeline,
    store: windows.store,
    keyed: windows.keyed,
    tracker: windows.tracker,
    emitter: windows.emitter,
    logger: windows.logger,
    now: windows.now,
    holder: `fireWindows-${randomUUID()}`,
    leaseMs: config.fireLeaseMs,
    concurrency: config.fireConcurrency,
    maxWindows: config.fireMaxWindows,
    outboxGraceMs: config.outboxGraceMs,
    processingTimeDelayMs: minProcessingTimeDelayMs(config.strategy),
    ...watermarkHoldOf(windows),
    ...(windows.groups !== undefined && {
      groups: {
        store: windows.groups,
        partitions: config.firePartitions,
        partitionsInFlight: config.firePartitionsInFlight,
      },
    }),
    ...(windows.sessions !== undefined && { sessions: windows.sessions }),
    ...(windows.legacy !== undefined && {
      legacy: { ...windows.legacy, active: legacyActive(windows) },
    }),
  };
}

/**
 * Whether windows of the per-window layout may still be open: only if it held windows when key groups took over (a
 * cutover after 0), and while its `windows` collection is not empty (one document read per run).
 */
function legacyActive(windows: BookingWindows): (watermarkMs: number) => Promise<boolean> {
  const { groups, legacy } = windows;
  return async () => {
    if (groups === undefined || legacy === undefined) return true;
    const cutoverMs = await groups.layoutCutoverMs(LAYOUT_ROLLOUT_MARGIN_MS);
    if (cutoverMs === 0) return false;
    return !(legacy.store instanceof FirestoreWindowStore) || (await legacy.store.hasWindows());
  };
}

/**
 * fireWindows' hold seam for the configured source: `local`, the delivery holds (none when holds are off);
 * `monitoring`, the subscription backlog together with the delivery holds (`backlogWatermarkHold`).
 */
function watermarkHoldOf(
  windows: BookingWindows,
): Pick<FireWindowsDeps<bigint, BookingAccumulator, BookingAggregate>, 'watermarkHold'> {
  const { config, holds, backlog, logger } = windows;
  const local = holds === undefined ? undefined : watermarkHoldReader(holds, config, logger);
  if (backlog === undefined) return local === undefined ? {} : { watermarkHold: local };
  return {
    watermarkHold: backlogWatermarkHold({
      read: backlog,
      local: local ?? (() => Promise.resolve(NO_HOLD)),
      policy: config.watermarkPolicy,
      maxHoldMs: config.holdMaxMs,
      minAgeMs: config.holdMinBacklogAgeMs,
      cacheMs: BACKLOG_CACHE_MS,
      logger,
      pipeline: config.pipeline,
    }),
  };
}

/** fireWindows' seam for the watermark hold, over the hold store. */
function watermarkHoldReader(
  holds: WatermarkHoldStore,
  config: WindowConfig,
  logger: Logger,
): (processingTimeMs: number) => Promise<WatermarkHold> {
  return (processingTimeMs) =>
    readWatermarkHold(
      holds,
      config.watermarkPolicy,
      { maxHoldMs: config.holdMaxMs, pipeline: config.pipeline },
      logger,
      processingTimeMs,
    );
}

/**
 * fireWindows' dependencies from `env`.
 * @throws ConfigError for a bad variable (fail fast at cold start)
 */
export function createFireWindowsDeps(
  env: Env,
  logger = new Logger('fireWindows'),
  overrides: BookingWindowsOverrides = {},
): FireWindowsDeps<bigint, BookingAccumulator, BookingAggregate> {
  const windows = createBookingWindows(env, logger, overrides);
  logs.configLoaded(logger, { windows: summary(windows.config) });
  return fireWindowsDepsOf(windows);
}

/**
 * The timer loop's budget and poll interval from `env` (`OFFVIA_FIRE_WINDOWS_LOOP_MS`, `OFFVIA_FIRE_WINDOWS_POLL_MS`).
 * @throws ConfigError for a bad variable
 */
export function fireWindowsLoopOptions(env: Env): TimerLoopOptions {
  const config = loadWindowConfig(env);
  return { loopMs: config.fireLoopMs, pollMs: config.firePollMs };
}

function summary(config: WindowConfig): Record<string, unknown> {
  return { ...config, goldTable: `${config.goldTable.datasetId}.${config.goldTable.tableId}` };
}

/**
 * Refuses a gold table that is also Silver, quarantine or bad data: panes written there would corrupt that layer.
 * @throws ConfigError naming `OFFVIA_GOLD_TABLE`
 */
export function assertGoldTableIsOwn(
  gold: TableRef,
  ingest: Pick<IngestConfig, 'silverTable' | 'quarantineTable' | 'badDataTable' | 'projectId'>,
): void {
  const name = (t: TableRef) =>
    `${t.projectId ?? ingest.projectId ?? ''}.${t.datasetId}.${t.tableId}`.toLowerCase();
  const layers: [string, TableRef][] = [
    ['Silver (OFFVIA_SILVER_TABLE)', ingest.silverTable],
    ['quarantine (OFFVIA_QUARANTINE_TABLE)', ingest.quarantineTable],
    ['bad data (OFFVIA_BAD_DATA_TABLE)', ingest.badDataTable],
  ];
  for (const [layer, table] of layers) {
    if (name(table) === name(gold)) {
      throw new ConfigError(
        'OFFVIA_GOLD_TABLE',
        `${gold.datasetId}.${gold.tableId} is also the ${layer} table; panes need a table of their own`,
      );
    }
  }
}
