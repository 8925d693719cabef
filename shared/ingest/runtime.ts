// Composition root for ingestBooking: builds the real Google clients from configuration, once per instance.
import { BigQuery } from '@google-cloud/bigquery';
import { type IngestConfig, loadIngestConfig } from '../config/ingest-config';
import type { Env } from '../config/env';
import { loadPassengerIdConfig } from '../config/passenger-id-config';
import { loadSchemaDriftConfig } from '../config/schema-drift-config';
import { createDriftGate, firestoreClient } from '../drift/runtime';
import { createWindowStateSink } from '../aggregates/runtime';
import { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import { BigQueryRowWriter } from '../sinks/bigquery-writer';
import { CoalescingRowWriter } from '../sinks/coalescing-writer';
import type { RowWriter } from '../sinks/row-writer';
import { loadCoalescingConfig } from '../config/coalescing-config';
import type { StoreMetrics } from '../state/firestore-window-store';
import type { IngestDeps } from './ingest-booking';

/**
 * A BigQuery client for the configured project; pointed at the local emulator when BIGQUERY_EMULATOR_HOST is set
 * (then `autoRetry` is off: the emulator's 500s are not transient and would be retried for minutes).
 */
export function bigQueryClient(
  config: Pick<IngestConfig, 'projectId' | 'bigQueryEndpoint'>,
): BigQuery {
  return new BigQuery({
    ...(config.projectId ? { projectId: config.projectId } : {}),
    ...(config.bigQueryEndpoint ? { apiEndpoint: config.bigQueryEndpoint, autoRetry: false } : {}),
  });
}

/** Instrumentation hooks (the benchmark): see what the real clients are asked to do. */
export interface IngestInstrumentation {
  /** Wraps the writer that makes the actual insertAll calls (below the coalescing layer). */
  readonly wrapWriter?: (writer: RowWriter) => RowWriter;
  /** Counters the window store adds its Firestore reads, writes and transactions to. */
  readonly windowMetrics?: StoreMetrics;
}

/**
 * Reads the configuration from `env` and wires the real dependencies: the BigQuery writer (coalescing concurrent
 * rows per table unless OFFVIA_BQ_COALESCE is off) and, unless OFFVIA_SCHEMA_DRIFT is off, the schema-drift gate
 * (Firestore retry store; the Firestore client finds the emulator through FIRESTORE_EMULATOR_HOST); the
 * `passenger_id` protection of OFFVIA_PASSENGER_ID_MODE.
 * @throws ConfigError for a bad variable (fail fast at cold start).
 */
export function createIngestDeps(
  env: Env,
  logger = new Logger('ingestBooking'),
  instrumentation: IngestInstrumentation = {},
): IngestDeps {
  const config = loadIngestConfig(env);
  const drift = loadSchemaDriftConfig(env, config.silverTable, config.projectId);
  const coalescing = loadCoalescingConfig(env);
  // The key shows only as its length and fingerprint (PassengerIdKey.toJSON).
  const passengerId = loadPassengerIdConfig(env);
  logs.configLoaded(logger, { ...config, schemaDrift: drift, coalescing, passengerId });
  const bigquery = bigQueryClient(config);
  const direct = new BigQueryRowWriter(bigquery);
  const wrapped = instrumentation.wrapWriter ? instrumentation.wrapWriter(direct) : direct;
  // One writer for Silver, quarantine, bad data, the drift gate's writes and element-driven panes: they coalesce.
  const writer = coalescing.enabled ? new CoalescingRowWriter(wrapped, coalescing) : wrapped;
  const deps: IngestDeps = { config, logger, writer, now: Date.now, passengerId };
  if (drift.enabled) {
    deps.schemaDrift = createDriftGate({
      drift,
      silverTable: config.silverTable,
      badDataTable: config.badDataTable,
      projectId: config.projectId,
      bigquery,
      firestore: firestoreClient(config.projectId, config.firestoreDatabase),
      writer,
      logger,
      now: Date.now,
    });
  }
  // Window state (issue 4), unless OFFVIA_WINDOWS_ENABLED is off: booking aggregates on Firestore, panes to gold.
  const windowState = createWindowStateSink(env, logger, {
    writer,
    ...(instrumentation.windowMetrics && { metrics: instrumentation.windowMetrics }),
  });
  if (windowState) deps.windowState = windowState;
  return deps;
}
