// One aggregation of a pipeline definition on the keyed window store: the per-event path and the fireWindows wiring.
import { randomUUID } from 'node:crypto';
import type { Firestore } from '@google-cloud/firestore';
import type { TableRef } from '../../config/env';
import { SHARED_WINDOW_KNOBS, type WindowConfig } from '../../config/window-config';
import type { Logger } from '../../logging/logger';
import type { RowWriter } from '../../sinks/row-writer';
import type { FireWindowsDeps } from '../../state/fire-windows';
import type { StoreMetrics } from '../../state/firestore-window-store';
import { FirestoreSessionStore } from '../../state/firestore-session-store';
import { GroupedFirestoreWindowStore } from '../../state/grouped-window-store';
import { SessionPipeline, type ElementRecorder } from '../../state/session-pipeline';
import { SessionWindows } from '../../state/session-windows';
import type { WindowStore } from '../../state/window-store';
import { KeyedWindows, minProcessingTimeDelayMs } from '../../state/keyed-windows';
import { PaneEmitter } from '../../state/pane-emitter';
import {
  DeliveryHolds,
  FirestoreWatermarkHoldStore,
  heartbeatWatermarkHold,
  readWatermarkHold,
  type HeartbeatStore,
} from '../../state/watermark-holds';
import {
  BACKLOG_CACHE_MS,
  backlogWatermarkHold,
  NO_HOLD,
  type BacklogSampleReader,
} from '../../state/backlog-hold';

import { WatermarkTracker } from '../../state/watermark-tracker';
import {
  JointMemberRecorder,
  JointWindowedPipeline,
  WindowedPipeline,
} from '../../state/windowed-pipeline';
import { createReduceFnRunner, type JsonValue } from '../../windowing';
import type { AggregationDefinition } from '../definition';
import { aggregationNamespace, type AggregationNamespace } from './namespace';

/** An aggregation with its types erased, as a definition lists it. */
export type AnyAggregation = AggregationDefinition<unknown, unknown, never, JsonValue, unknown>;

export { SHARED_WINDOW_KNOBS };
export type SharedWindowKnobs = Pick<WindowConfig, (typeof SHARED_WINDOW_KNOBS)[number]>;

/** What {@link createAggregationWindows} wires together. */
export interface AggregationWindowsParts {
  readonly firestore: Firestore;
  /** Writer for gold rows and for the bad-data rows of panes BigQuery refused. */
  readonly writer: RowWriter;
  /** The pipeline's bad-data table (refused pane rows). */
  readonly badDataTable: TableRef;
  /** Project for `target_dest` of bad-data rows when a table reference names none. */
  readonly projectId: string | undefined;
  readonly knobs: SharedWindowKnobs;
  readonly logger: Logger;
  /** Processing time, epoch ms UTC. */
  readonly now: () => number;
  /** Firestore counters (benchmarks, tests). */
  readonly metrics?: StoreMetrics;
  /** The ingest subscription's backlog (`OFFVIA_WATERMARK_HOLD_SOURCE=monitoring`); absent: delivery holds only. */
  readonly backlog?: BacklogSampleReader;
  /** The heartbeat record (tests); absent: Firestore's, beside the watermark (`FirestoreWatermarkHoldStore`). */
  readonly heartbeats?: HeartbeatStore;
}

/** One aggregation, built: its namespace, the per-event path, the delivery holds and the fireWindows wiring. */
export interface AggregationWindows {
  readonly aggregation: AnyAggregation;
  readonly namespace: AggregationNamespace;
  /** The key-groups store, or the session layout's store for a `sessions` window function. */
  readonly store: WindowStore<JsonValue>;
  /** The per-event path: counts an element once (dedup by event id), emits the element-driven panes. */
  readonly pipeline: ElementRecorder<never>;
  /** Watermark holds of failed deliveries, `undefined` when `OFFVIA_WATERMARK_HOLD_LEASE_MS` is 0. */
  readonly holds: DeliveryHolds | undefined;
  /** Where the ingest records the newest processed heartbeat (always on: docs/windows.md "Heartbeats"). */
  readonly heartbeats: HeartbeatStore;
  /** fireWindows' dependencies (a fresh lease holder id per instance). */
  readonly fire: FireWindowsDeps<never, JsonValue, unknown>;
}

/**
 * The aggregations of one pipeline; two or more in the key-groups layout share one per-event path (one transaction
 * per bundle, each dedup id kept once) through a `JointMemberRecorder` each.
 */
export function joinAggregations(
  aggregations: readonly AggregationWindows[],
  knobs: Pick<SharedWindowKnobs, 'maxBundle'>,
  logger: Logger,
): AggregationWindows[] {
  const grouped = aggregations.filter((a) => a.fire.groups !== undefined);
  if (grouped.length < 2) return [...aggregations];
  const joint = new JointWindowedPipeline<never, JsonValue, unknown>({
    members: grouped.map((a) => ({
      pipeline: a.aggregation.name,
      keyed: a.fire.keyed,
      tracker: a.fire.tracker,
      emitter: a.fire.emitter,
    })),
    logger,
    maxBundle: knobs.maxBundle,
  });
  return aggregations.map((a) => {
    const member = grouped.indexOf(a);
    return member < 0 ? a : { ...a, pipeline: new JointMemberRecorder(joint, member) };
  });
}

/**
 * Builds one aggregation on Firestore under `{windowsRoot}/{aggregation name}`: the key-groups layout with `shards`
 * documents per key group and window, or the session layout for `sessions` (docs/windows.md "Session windows").
 */
export function createAggregationWindows(
  definition: {
    readonly firestore: { readonly windowsRoot: string; readonly schemaDriftRoot: string | null };
  },
  aggregation: AnyAggregation,
  parts: AggregationWindowsParts,
): AggregationWindows {
  const { knobs, logger, now } = parts;
  const namespace = aggregationNamespace(definition, aggregation);
  const { earlyFirings, lateFirings } = aggregation.strategy.trigger;
  const storeOptions = {
    root: namespace.root,
    pipeline: namespace.pipeline,
    parseAccumulator: (value: unknown) => aggregation.parseAccumulator(value),
    keyGroups: knobs.keyGroups,
    ...(parts.metrics && { metrics: parts.metrics }),
  };
  const store =
    aggregation.strategy.windowFn.kind === 'sessions'
      ? new FirestoreSessionStore<JsonValue>(parts.firestore, storeOptions)
      : new GroupedFirestoreWindowStore<JsonValue>(parts.firestore, {
          ...storeOptions,
          shards: aggregation.shards,
          earlyDelayMs: earlyFirings?.processingTimeDelayMs ?? null,
          lateDelayMs: lateFirings?.processingTimeDelayMs ?? null,
          dedupTtlMs: knobs.ledgerTtlMs,
          now,
        });
  const sessionStore = store instanceof FirestoreSessionStore ? store : undefined;
  const groups = store instanceof GroupedFirestoreWindowStore ? store : undefined;
  const paneRow = (pane: Parameters<AnyAggregation['goldRow']>[0], insertId: string) =>
    aggregation.goldRow(pane, insertId, aggregation.strategy.accumulationMode);
  const runner = createReduceFnRunner(aggregation.strategy, aggregation.combineFn);
  const keyed = new KeyedWindows<never, JsonValue, unknown>({
    pipeline: aggregation.name,
    runner,
    combineFn: aggregation.combineFn,
    store,
    shardCount: aggregation.shards,
    droppedTtlMs: knobs.droppedTtlMs,
    paneRow,
  });
  const tracker = new WatermarkTracker(store, {
    policy: aggregation.watermarkPolicy,
    cacheMs: knobs.watermarkCacheMs,
    minWriteIntervalMs: knobs.watermarkWriteIntervalMs,
  });
  const emitter = new PaneEmitter({
    pipeline: aggregation.name,
    writer: parts.writer,
    goldTable: aggregation.goldTable,
    badDataTable: parts.badDataTable,
    projectId: parts.projectId,
    store,
    logger,
    now,
  });
  const sessions =
    sessionStore === undefined
      ? undefined
      : {
          store: sessionStore,
          sessions: new SessionWindows<never, JsonValue, unknown>({
            pipeline: aggregation.name,
            runner,
            combineFn: aggregation.combineFn,
            store: sessionStore,
            droppedTtlMs: knobs.droppedTtlMs,
            paneRow,
          }),
        };
  const common = {
    pipeline: aggregation.name,
    tracker,
    emitter,
    logger,
    maxBundle: knobs.maxBundle,
  };
  const pipeline: ElementRecorder<never> =
    sessions === undefined
      ? new WindowedPipeline<never, JsonValue, unknown>({ ...common, keyed })
      : new SessionPipeline<never, JsonValue, unknown>({ ...common, sessions: sessions.sessions });
  const holdStore = new FirestoreWatermarkHoldStore(
    parts.firestore,
    namespace.root,
    namespace.pipeline,
  );
  const heartbeats = parts.heartbeats ?? holdStore;
  const partitions = {
    partitions: knobs.firePartitions,
    partitionsInFlight: knobs.firePartitionsInFlight,
  };
  const fire: FireWindowsDeps<never, JsonValue, unknown> = {
    pipeline: aggregation.name,
    store,
    keyed,
    tracker,
    emitter,
    logger,
    now,
    holder: `fireWindows-${aggregation.name}-${randomUUID()}`,
    leaseMs: knobs.fireLeaseMs,
    concurrency: knobs.fireConcurrency,
    maxWindows: knobs.fireMaxWindows,
    outboxGraceMs: knobs.outboxGraceMs,
    processingTimeDelayMs: minProcessingTimeDelayMs(aggregation.strategy),
    ...(groups !== undefined && { groups: { store: groups, ...partitions } }),
    ...(sessions !== undefined && { sessions: { ...sessions, ...partitions } }),
    ...holdOf(holdStore, heartbeats, aggregation, parts),
  };
  return {
    aggregation,
    namespace,
    store,
    pipeline,
    holds:
      knobs.holdLeaseMs > 0 ? new DeliveryHolds(holdStore, knobs.holdLeaseMs, logger) : undefined,
    heartbeats,
    fire,
  };
}

/**
 * fireWindows' watermark hold for one aggregation: the heartbeat rule (always), over the delivery holds (none when
 * `OFFVIA_WATERMARK_HOLD_LEASE_MS` is 0) and, with a backlog reader, the subscription's oldest unacknowledged
 * message too (`backlogWatermarkHold`).
 */
function holdOf(
  holdStore: FirestoreWatermarkHoldStore,
  heartbeats: HeartbeatStore,
  aggregation: AnyAggregation,
  parts: AggregationWindowsParts,
): Pick<FireWindowsDeps<never, JsonValue, unknown>, 'watermarkHold'> {
  const { knobs, logger } = parts;
  const local =
    knobs.holdLeaseMs > 0
      ? (processingTimeMs: number) =>
          readWatermarkHold(
            holdStore,
            aggregation.watermarkPolicy,
            { maxHoldMs: knobs.holdMaxMs, pipeline: aggregation.name },
            logger,
            processingTimeMs,
          )
      : () => Promise.resolve(NO_HOLD);
  const inner =
    parts.backlog === undefined
      ? local
      : backlogWatermarkHold({
          read: parts.backlog,
          local,
          policy: aggregation.watermarkPolicy,
          maxHoldMs: knobs.holdMaxMs,
          minAgeMs: knobs.holdMinBacklogAgeMs,
          cacheMs: BACKLOG_CACHE_MS,
          logger,
          pipeline: aggregation.name,
        });
  return {
    watermarkHold: heartbeatWatermarkHold(heartbeats, inner, {
      policy: aggregation.watermarkPolicy,
      maxHoldMs: knobs.holdMaxMs,
      pipeline: aggregation.name,
      logger,
    }),
  };
}
