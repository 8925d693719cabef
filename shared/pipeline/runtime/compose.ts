// Composition root of every pipeline definition's functions: configured definition, clients, settings, aggregations.
import type { BigQuery } from '@google-cloud/bigquery';
import type { Firestore } from '@google-cloud/firestore';
import { loadCoalescingConfig } from '../../config/coalescing-config';
import type { Env } from '../../config/env';
import { loadIngestConfig } from '../../config/ingest-config';
import { loadWindowConfig } from '../../config/window-config';
import { createDriftGate, firestoreClient, pipelineDriftConfig } from '../../drift/runtime';
import { Logger } from '../../logging/logger';
import * as logs from '../../logging/logs';
import { BigQueryRowWriter, bigQueryClient } from '../../sinks/bigquery-writer';
import { CoalescingRowWriter } from '../../sinks/coalescing-writer';
import type { RowWriter } from '../../sinks/row-writer';
import type { StoreMetrics } from '../../state/firestore-window-store';
import { monitoringBacklogReader, type BacklogSampleReader } from '../../state/backlog-hold';
import type { FireWindowsDeps } from '../../state/fire-windows';
import type { TimerLoopOptions } from '../../state/timer-loop';
import type { JsonValue } from '../../windowing';
import { configuredDefinition, type AnyPipelineDefinition } from '../definition';
import type { PipelineFireDeps } from './fire';
import type { PipelineIngestDeps } from './ingest';
import { pipelineNamespaces } from './namespace';
import {
  createAggregationWindows,
  joinAggregations,
  SHARED_WINDOW_KNOBS,
  type AggregationWindows,
  type SharedWindowKnobs,
} from './windows';

/** What the composition root may be given instead of building it (tests, benchmarks). */
export interface PipelineRuntimeOverrides {
  readonly bigquery?: BigQuery;
  readonly firestore?: Firestore;
  /** Writer for every row (Silver, quarantine, bad data, gold); default: BigQuery, coalesced per table. */
  readonly writer?: RowWriter;
  /** Wraps the default BigQuery writer below the coalescing layer (benchmarks); ignored with `writer`. */
  readonly wrapWriter?: (writer: RowWriter) => RowWriter;
  /** Processing time, epoch ms UTC; default `Date.now`. */
  readonly now?: () => number;
  readonly metrics?: StoreMetrics;
  /** The ingest subscription's backlog reader (tests stub Cloud Monitoring with it). */
  readonly backlog?: BacklogSampleReader;
}

/** The clients, writer and aggregations both functions of a pipeline build from the environment. */
export interface PipelineParts {
  /** The definition as configured for this deployment (`configure(env)`). */
  readonly definition: AnyPipelineDefinition;
  readonly projectId: string | undefined;
  readonly bigquery: BigQuery;
  readonly firestore: Firestore;
  readonly writer: RowWriter;
  readonly aggregations: readonly AggregationWindows[];
  readonly logger: Logger;
  readonly now: () => number;
}

/**
 * The knobs of `loadWindowConfig` every aggregation shares; strategy, shards, gold table and roots come from the
 * (configured) definition instead.
 * @throws ConfigError for a bad variable
 */
export function sharedWindowKnobs(env: Env): SharedWindowKnobs {
  const c = loadWindowConfig(env);
  return Object.fromEntries(SHARED_WINDOW_KNOBS.map((k) => [k, c[k]])) as SharedWindowKnobs;
}

/**
 * Configures `definition` for `env` (its `configure` hook, once), then builds the clients (emulators when
 * `BIGQUERY_EMULATOR_HOST` / `FIRESTORE_EMULATOR_HOST` are set), the writer (coalescing unless `OFFVIA_BQ_COALESCE`
 * is off) and every aggregation in its own Firestore namespace.
 * @throws ConfigError for a bad variable (fail fast at cold start)
 */
export function createPipelineParts(
  unconfigured: AnyPipelineDefinition,
  env: Env,
  logger: Logger,
  overrides: PipelineRuntimeOverrides = {},
): PipelineParts {
  const definition = configuredDefinition(unconfigured, env);
  const ingest = loadIngestConfig(env);
  const knobs = sharedWindowKnobs(env);
  const coalescing = loadCoalescingConfig(env);
  const now = overrides.now ?? Date.now;
  const bigquery = overrides.bigquery ?? bigQueryClient(ingest);
  const direct = new BigQueryRowWriter(bigquery);
  const wrapped = overrides.wrapWriter ? overrides.wrapWriter(direct) : direct;
  // One writer for every row, so concurrent rows coalesce.
  const writer =
    overrides.writer ??
    (coalescing.enabled ? new CoalescingRowWriter(wrapped, coalescing) : wrapped);
  const firestore =
    overrides.firestore ?? firestoreClient(ingest.projectId, ingest.firestoreDatabase);
  // One backlog reader per instance: the aggregations read the same ingest subscription.
  const window = loadWindowConfig(env);
  const backlog =
    overrides.backlog ??
    (window.holdSource === 'monitoring' && window.holdSubscription !== undefined
      ? monitoringBacklogReader(ingest.projectId, window.holdSubscription)
      : undefined);
  const built = definition.aggregations.map((aggregation) =>
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
  const aggregations = joinAggregations(built, knobs, logger);
  logs.configLoaded(logger, {
    pipeline: definition.name,
    projectId: ingest.projectId,
    firestoreDatabase: ingest.firestoreDatabase,
    bigQueryEndpoint: ingest.bigQueryEndpoint,
    windows: knobs,
    tables: definition.tables,
    aggregations: definition.aggregations.map((a) => ({
      name: a.name,
      strategy: a.strategy,
      watermarkPolicy: a.watermarkPolicy,
      shards: a.shards,
      goldTable: a.goldTable,
    })),
    namespaces: pipelineNamespaces(definition).map((n) => n.paths.namespace),
    coalescing,
  });
  return {
    definition,
    projectId: ingest.projectId,
    bigquery,
    firestore,
    writer,
    aggregations,
    logger,
    now,
  };
}

/**
 * The ingest function's dependencies: the parts, the ingest limits of `loadIngestConfig`, the schema-drift gate when
 * the configured definition's `schemaDrift.mode` is `sweep`, and the definition's settings (`createSettings`).
 * @throws ConfigError for a bad variable; TransientError when a side input cannot be loaded (the cold start fails,
 *   so Pub/Sub holds the messages back instead of dead-lettering them)
 */
export async function createPipelineIngestDeps(
  definition: AnyPipelineDefinition,
  env: Env,
  logger = new Logger(definition.functions.ingest.entryPoint),
  overrides: PipelineRuntimeOverrides = {},
): Promise<PipelineIngestDeps> {
  const { bigquery, firestore, ...parts } = createPipelineParts(definition, env, logger, overrides);
  const ingest = loadIngestConfig(env);
  const drift = pipelineDriftConfig(parts.definition, env, parts.projectId);
  if (drift !== undefined) logs.configLoaded(logger, { schemaDrift: drift });
  const settings = await parts.definition.createSettings(env, { bigquery, logger, now: parts.now });
  return {
    ...parts,
    settings,
    maxRetryAgeMs: ingest.maxRetryAgeMs,
    attemptDeadlineMs: ingest.attemptDeadlineMs,
    payloadMaxBytes: ingest.quarantinePayloadMaxBytes,
    ...(drift !== undefined && {
      schemaDrift: createDriftGate({
        drift,
        silverTable: parts.definition.tables.silver,
        badDataTable: parts.definition.tables.badData,
        projectId: parts.projectId,
        bigquery,
        firestore,
        writer: parts.writer,
        logger,
        now: parts.now,
      }),
    }),
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
    pipeline: parts.definition.name,
    aggregations: parts.aggregations.map((a) => ({ name: a.aggregation.name, fire: a.fire })),
  };
}

/**
 * fireWindows' wiring of one aggregation of the configured `definition` (the one called `name`, default the first),
 * for tools that read or fire one aggregation's windows directly (`offvia trace`, the demo, the reliability harness).
 * @throws ConfigError for a bad variable; RangeError when the configured definition has no such aggregation (e.g.
 *   booking with `OFFVIA_WINDOWS_ENABLED=false`)
 */
export function createAggregationFireDeps(
  definition: AnyPipelineDefinition,
  env: Env,
  logger: Logger,
  overrides: PipelineRuntimeOverrides = {},
  name?: string,
): FireWindowsDeps<never, JsonValue, unknown> {
  const parts = createPipelineParts(definition, env, logger, overrides);
  const found = parts.aggregations.find((a) => name === undefined || a.aggregation.name === name);
  if (found === undefined) {
    throw new RangeError(
      `pipeline ${definition.name} runs no aggregation${name === undefined ? '' : ` called ${name}`}`,
    );
  }
  return found.fire;
}

/**
 * The timer loop's budget and poll interval (`OFFVIA_FIRE_WINDOWS_LOOP_MS`, `OFFVIA_FIRE_WINDOWS_POLL_MS`).
 * @throws ConfigError for a bad variable
 */
export function pipelineLoopOptions(env: Env): TimerLoopOptions {
  const c = loadWindowConfig(env);
  return { loopMs: c.fireLoopMs, pollMs: c.firePollMs };
}
