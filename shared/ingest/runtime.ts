// Composition root for ingestBooking: builds the real Google clients from configuration, once per instance.
import { BigQuery } from '@google-cloud/bigquery';
import { type IngestConfig, loadIngestConfig } from '../config/ingest-config';
import type { Env } from '../config/env';
import { loadSchemaDriftConfig } from '../config/schema-drift-config';
import { createDriftGate, firestoreClient } from '../drift/runtime';
import { createWindowStateSink } from '../aggregates/runtime';
import { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import { BigQueryRowWriter } from '../sinks/bigquery-writer';
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

/**
 * Reads the configuration from `env` and wires the real dependencies: the BigQuery writer and, unless
 * OFFVIA_SCHEMA_DRIFT is off, the schema-drift gate (Firestore retry store; the Firestore client finds the
 * emulator through FIRESTORE_EMULATOR_HOST).
 * @throws ConfigError for a bad variable (fail fast at cold start).
 */
export function createIngestDeps(env: Env, logger = new Logger('ingestBooking')): IngestDeps {
  const config = loadIngestConfig(env);
  const drift = loadSchemaDriftConfig(env, config.silverTable, config.projectId);
  logs.configLoaded(logger, { ...config, schemaDrift: drift });
  const bigquery = bigQueryClient(config);
  const writer = new BigQueryRowWriter(bigquery);
  const deps: IngestDeps = { config, logger, writer, now: Date.now };
  if (drift.enabled) {
    deps.schemaDrift = createDriftGate({
      drift,
      silverTable: config.silverTable,
      badDataTable: config.badDataTable,
      projectId: config.projectId,
      bigquery,
      firestore: firestoreClient(config.projectId),
      writer,
      logger,
      now: Date.now,
    });
  }
  // Window state (issue 4), unless OFFVIA_WINDOWS_ENABLED is off: booking aggregates on Firestore, panes to gold.
  const windowState = createWindowStateSink(env, logger, { writer });
  if (windowState) deps.windowState = windowState;
  return deps;
}
