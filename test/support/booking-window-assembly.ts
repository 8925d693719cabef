// Test and benchmark wiring of the booking windows over any window store (memory, Firestore; key-groups, per-window
// or session layout): the state machinery under test with booking's combine, its sink and fireWindows' dependencies.
import { randomUUID } from 'node:crypto';
import type { Firestore } from '@google-cloud/firestore';
import { loadIngestConfig } from '../../shared/config/ingest-config';
import type { Env, TableRef } from '../../shared/config/env';
import { loadWindowConfig, type WindowConfig } from '../../shared/config/window-config';
import { firestoreClient } from '../../shared/drift/runtime';
import type { ValidationSuccess } from '../../shared/contract';
import { errorText, TransientError } from '../../shared/errors';
import type { PubSubMessage } from '../../shared/pubsub/message';
import type { ElementOutcome } from '../../shared/state/keyed-windows';
import { routeKey } from '../../shared/aggregates/route-key';
import { Logger } from '../../shared/logging/logger';
import * as logs from '../../shared/logging/logs';
import { assertGoldTableIsOwn } from '../../shared/pipelines/booking/definition';
import { BigQueryRowWriter, bigQueryClient } from '../../shared/sinks/bigquery-writer';
import type { RowWriter } from '../../shared/sinks/row-writer';
import { type StoreMetrics } from '../../shared/state/firestore-window-store';
import { GroupedFirestoreWindowStore } from '../../shared/state/grouped-window-store';
import { MemoryWindowStore } from './memory-window-store';
import type { WindowStore } from '../../shared/state/window-store';
import type { FireWindowsDeps } from '../../shared/state/fire-windows';
import { KeyedWindows, minProcessingTimeDelayMs } from '../../shared/state/keyed-windows';
import { PaneEmitter } from '../../shared/state/pane-emitter';
import { WatermarkTracker } from '../../shared/state/watermark-tracker';
import { WindowedPipeline } from '../../shared/state/windowed-pipeline';
import { FirestoreSessionStore } from '../../shared/state/firestore-session-store';
import {
  BACKLOG_CACHE_MS,
  backlogWatermarkHold,
  monitoringBacklogReader,
  NO_HOLD,
  type BacklogSampleReader,
} from '../../shared/state/backlog-hold';
import type { SessionFiring } from '../../shared/state/fire-windows';
import { SessionPipeline, type ElementRecorder } from '../../shared/state/session-pipeline';
import type { SessionStore } from '../../shared/state/session-store';
import { SessionWindows } from '../../shared/state/session-windows';
import { createReduceFnRunner, type WatermarkHold } from '../../shared/windowing';
import {
  FirestoreWatermarkHoldStore,
  readWatermarkHold,
  type WatermarkHoldStore,
} from '../../shared/state/watermark-holds';
import {
  bookingAggregatesFn,
  parseBookingAccumulator,
  type BookingAccumulator,
  type BookingAggregate,
} from '../../shared/aggregates/booking-aggregates';
import { goldPaneRow } from '../../shared/aggregates/gold-row';

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
  /** Key-groups layout: the store's group queries (fireWindows fires partitions of key groups). */
  readonly groups?: GroupedFirestoreWindowStore<BookingAccumulator>;
}

/** What `createBookingWindows` may be given instead of building it. */
export interface BookingWindowsOverrides {
  readonly firestore?: Firestore;
  readonly writer?: RowWriter;
  readonly now?: () => number;
  readonly metrics?: StoreMetrics;
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
  /** Shards per key group and window instead of `OFFVIA_WINDOW_GROUP_SHARDS` (the in-memory store's tests). */
  readonly shards?: number;
  /** Where failing deliveries record their watermark holds (none: no holds). */
  readonly holds?: WatermarkHoldStore;
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
      shardCount: parts.shards ?? config.groupShards,
      droppedTtlMs: config.droppedTtlMs,
      paneRow: (pane, insertId) => ({
        ...goldPaneRow(config.pipeline, config.strategy.accumulationMode, pane, insertId),
      }),
    });
  const keyed = keyedOver(store);
  const groups =
    store instanceof GroupedFirestoreWindowStore
      ? (store as GroupedFirestoreWindowStore<BookingAccumulator>)
      : undefined;
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
      : new GroupedFirestoreWindowStore<BookingAccumulator>(firestore, {
          ...storeOptions,
          keyGroups: config.keyGroups,
          shards: config.groupShards,
          earlyDelayMs: earlyFirings?.processingTimeDelayMs ?? null,
          lateDelayMs: lateFirings?.processingTimeDelayMs ?? null,
          dedupTtlMs: config.ledgerTtlMs,
          ...(overrides.now && { now: overrides.now }),
        });
  const writer = overrides.writer ?? new BigQueryRowWriter(bigQueryClient(ingest));
  return assembleBookingWindows(config, {
    store,
    writer,
    badDataTable: ingest.badDataTable,
    projectId: ingest.projectId,
    logger,
    now: overrides.now ?? Date.now,
    holds: new FirestoreWatermarkHoldStore(firestore, config.firestoreRoot, config.pipeline),
    ...(sessionStore !== undefined && { sessionStore }),
    ...(config.holdSource === 'monitoring' &&
      config.holdSubscription !== undefined && {
        backlog:
          overrides.backlog ?? monitoringBacklogReader(ingest.projectId, config.holdSubscription),
      }),
  });
}

/** fireWindows' dependencies over a built pipeline (a fresh lease holder id per instance). */
export function fireWindowsDepsOf(
  windows: BookingWindows,
): FireWindowsDeps<bigint, BookingAccumulator, BookingAggregate> {
  const { config } = windows;
  // The in-memory store of the unit tests is a key-groups store too.
  const groupStore =
    windows.groups ?? (windows.store instanceof MemoryWindowStore ? windows.store : undefined);
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
    ...(groupStore !== undefined && {
      groups: {
        store: groupStore,
        partitions: config.firePartitions,
        partitionsInFlight: config.firePartitionsInFlight,
      },
    }),
    ...(windows.sessions !== undefined && {
      sessions: {
        ...windows.sessions,
        partitions: config.firePartitions,
        partitionsInFlight: config.firePartitionsInFlight,
      },
    }),
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
 * Keys a booking by its route (origin, destination, currency), with its exact fare (× 10^9) as the value and its
 * `event_time` as the event time, and records it in the booking pipeline (dedup by `event_id`).
 */
export class BookingWindowSink {
  constructor(
    private readonly pipeline: ElementRecorder<bigint>,
    private readonly logger: Logger,
  ) {}

  /**
   * Counts the event once in its windows; resolves after the commit (also for duplicates and too-late events).
   * @throws TransientError when Firestore fails (logged; Pub/Sub redelivers and the dedup ledger makes that safe)
   */
  async record(
    event: ValidationSuccess,
    message: PubSubMessage,
    receivedAtMs: number,
  ): Promise<void> {
    await this.recordBooking(event, message, receivedAtMs);
  }

  /** `record`, returning what happened to the event (tests, the demo). */
  async recordBooking(
    event: ValidationSuccess,
    message: Pick<PubSubMessage, 'messageId'>,
    receivedAtMs: number,
  ): Promise<ElementOutcome> {
    const key = routeKey({
      origin: event.row.origin_airport,
      destination: event.row.destination_airport,
      currency: event.row.currency,
    });
    try {
      return await this.pipeline.record(key, {
        eventId: event.eventId,
        messageId: message.messageId,
        value: event.fareScaled,
        timestampMs: event.eventTimeMs,
        receivedAtMs,
      });
    } catch (err) {
      if (err instanceof TransientError) {
        logs.transientFailure(this.logger, message, err.operation, errorText(err));
      }
      throw err;
    }
  }
}
