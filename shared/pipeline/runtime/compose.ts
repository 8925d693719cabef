// Composition root of a pipeline definition's functions (every registered pipeline but booking, which keeps its own
// path): the real BigQuery and Firestore clients from the environment, the definition's settings, its aggregations.
import type { BigQuery } from '@google-cloud/bigquery';
import type { Firestore } from '@google-cloud/firestore';
import { loadCoalescingConfig } from '../../config/coalescing-config';
import type { Env } from '../../config/env';
import { loadIngestConfig } from '../../config/ingest-config';
import { loadWindowConfig } from '../../config/window-config';
import { firestoreClient } from '../../drift/runtime';
import { bigQueryClient } from '../../ingest/runtime';
import { Logger } from '../../logging/logger';
import * as logs from '../../logging/logs';
import { BigQueryRowWriter } from '../../sinks/bigquery-writer';
import { CoalescingRowWriter } from '../../sinks/coalescing-writer';
import type { RowWriter } from '../../sinks/row-writer';
import type { StoreMetrics } from '../../state/firestore-window-store';
import { monitoringBacklogReader, type BacklogSampleReader } from '../../state/backlog-hold';
import type { TimerLoopOptions } from '../../state/timer-loop';
import type { AnyPipelineDefinition } from '../definition';
import type { PipelineFireDeps } from './fire';
import type { PipelineIngestDeps } from './ingest';
import { pipelineNamespaces } from './namespace';
import {
  createAggregationWindows,
  type AggregationWindows,
  type SharedWindowKnobs,
} from './windows';

/** What the composition root may be given instead of building it (tests, benchmarks). */
export interface PipelineRuntimeOverrides {
  readonly bigquery?: BigQuery;
  readonly firestore?: Firestore;
  /** Writer for every row (Silver, quarantine, bad data, gold); default: BigQuery, coalesced per table. */
  readonly writer?: RowWriter;
  /** Processing time, epoch ms UTC; default `Date.now`. */
  readonly now?: () => number;
  readonly metrics?: StoreMetrics;
  /** The ingest subscription's backlog reader (tests stub Cloud Monitoring with it). */
  readonly backlog?: BacklogSampleReader;
}

/** The clients, writer and aggregations both functions of a pipeline build from the environment. */
export interface PipelineParts {
  readonly definition: AnyPipelineDefinition;
  readonly projectId: string | undefined;
  readonly bigquery: BigQuery;
  readonly writer: RowWriter;
  readonly aggregations: readonly AggregationWindows[];
  readonly logger: Logger;
  readonly now: () => number;
}

/**
 * The knobs of `loadWindowConfig` every aggregation shares (key groups, fireWindows partitions and leases, TTLs,
 * watermark cache, holds); the rest of the window configuration is booking's and is not read here.
 * @throws ConfigError for a bad variable
 */
export function sharedWindowKnobs(env: Env): SharedWindowKnobs {
  const c = loadWindowConfig(env);
  return {
    keyGroups: c.keyGroups,
    firePartitions: c.firePartitions,
    firePartitionsInFlight: c.firePartitionsInFlight,
    maxBundle: c.maxBundle,
    ledgerTtlMs: c.ledgerTtlMs,
    droppedTtlMs: c.droppedTtlMs,
    watermarkCacheMs: c.watermarkCacheMs,
    watermarkWriteIntervalMs: c.watermarkWriteIntervalMs,
    fireLeaseMs: c.fireLeaseMs,
    fireConcurrency: c.fireConcurrency,
    fireMaxWindows: c.fireMaxWindows,
    outboxGraceMs: c.outboxGraceMs,
    holdLeaseMs: c.holdLeaseMs,
    holdMaxMs: c.holdMaxMs,
    holdMinBacklogAgeMs: c.holdMinBacklogAgeMs,
  };
}

/**
 * Builds the clients (BigQuery follows `BIGQUERY_EMULATOR_HOST`, with `autoRetry` off there, as booking's does;
 * Firestore follows `FIRESTORE_EMULATOR_HOST`; the project is `OFFVIA_PROJECT_ID` / `GOOGLE_CLOUD_PROJECT` as
 * `loadIngestConfig` reads it) and every aggregation of `definition` in its own Firestore namespace.
 * @throws ConfigError for a bad variable (fail fast at cold start)
 */
export function createPipelineParts(
  definition: AnyPipelineDefinition,
  env: Env,
  logger: Logger,
  overrides: PipelineRuntimeOverrides = {},
): PipelineParts {
  const ingest = loadIngestConfig(env);
  const knobs = sharedWindowKnobs(env);
  const coalescing = loadCoalescingConfig(env);
  const now = overrides.now ?? Date.now;
  const bigquery = overrides.bigquery ?? bigQueryClient(ingest);
  const writer =
    overrides.writer ??
    (coalescing.enabled
      ? new CoalescingRowWriter(new BigQueryRowWriter(bigquery), coalescing)
      : new BigQueryRowWriter(bigquery));
  const firestore =
    overrides.firestore ?? firestoreClient(ingest.projectId, ingest.firestoreDatabase);
  // One backlog reader per instance, shared by the aggregations: they read the same ingest subscription.
  const window = loadWindowConfig(env);
  const backlog =
    overrides.backlog ??
    (window.holdSource === 'monitoring' && window.holdSubscription !== undefined
      ? monitoringBacklogReader(ingest.projectId, window.holdSubscription)
      : undefined);
  const aggregations = definition.aggregations.map((aggregation) =>
    createAggregationWindows(definition, aggregation, {
      firestore,
      writer,
      badDataTable: definition.tables.badData,
      projectId: ingest.projectId,
      knobs,
      logger,
      now,
      ...(overrides.metrics && { metrics: overrides.metrics }),
      ...(backlog !== undefined && { backlog }),
    }),
  );
  logs.configLoaded(logger, {
    pipeline: definition.name,
    projectId: ingest.projectId,
    firestoreDatabase: ingest.firestoreDatabase,
    bigQueryEndpoint: ingest.bigQueryEndpoint,
    windows: knobs,
    namespaces: pipelineNamespaces(definition).map((n) => n.paths.namespace),
    coalescing,
  });
  return {
    definition,
    projectId: ingest.projectId,
    bigquery,
    writer,
    aggregations,
    logger,
    now,
  };
}

/**
 * The ingest function's dependencies: the parts, then the definition's settings (`createSettings`: telemetry loads
 * its device directory here).
 * @throws ConfigError for a bad variable; TransientError when a side input cannot be loaded (the cold start fails,
 *   so Pub/Sub holds the messages back instead of dead-lettering them)
 */
export async function createPipelineIngestDeps(
  definition: AnyPipelineDefinition,
  env: Env,
  logger = new Logger(definition.functions.ingest.entryPoint),
  overrides: PipelineRuntimeOverrides = {},
): Promise<PipelineIngestDeps> {
  const parts = createPipelineParts(definition, env, logger, overrides);
  const ingest = loadIngestConfig(env);
  const settings = await definition.createSettings(env, {
    bigquery: parts.bigquery,
    logger,
    now: parts.now,
  });
  return {
    definition,
    settings,
    writer: parts.writer,
    projectId: parts.projectId,
    aggregations: parts.aggregations,
    logger,
    now: parts.now,
    maxRetryAgeMs: ingest.maxRetryAgeMs,
    payloadMaxBytes: ingest.quarantinePayloadMaxBytes,
  };
}

/**
 * The fireWindows function's dependencies (no settings: firing reads only the window state).
 * @throws ConfigError for a bad variable
 */
export function createPipelineFireDeps(
  definition: AnyPipelineDefinition,
  env: Env,
  logger = new Logger(definition.functions.fireWindows.entryPoint),
  overrides: PipelineRuntimeOverrides = {},
): PipelineFireDeps {
  const parts = createPipelineParts(definition, env, logger, overrides);
  return {
    pipeline: definition.name,
    aggregations: parts.aggregations.map((a) => ({ name: a.aggregation.name, fire: a.fire })),
  };
}

/**
 * The timer loop's budget and poll interval (`OFFVIA_FIRE_WINDOWS_LOOP_MS`, `OFFVIA_FIRE_WINDOWS_POLL_MS`, as
 * booking's fireWindows).
 * @throws ConfigError for a bad variable
 */
export function pipelineLoopOptions(env: Env): TimerLoopOptions {
  const c = loadWindowConfig(env);
  return { loopMs: c.fireLoopMs, pollMs: c.firePollMs };
}
