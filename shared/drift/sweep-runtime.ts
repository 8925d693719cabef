// Composition root for schemaSweep: builds the real Firestore and BigQuery clients from configuration, once.
import type { Env } from '../config/env';
import { loadIngestConfig } from '../config/ingest-config';
import { loadSchemaDriftConfig } from '../config/schema-drift-config';
import { bigQueryClient } from '../ingest/runtime';
import { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import { BigQueryRowWriter } from '../sinks/bigquery-writer';
import { FirestoreDriftStore } from './firestore-store';
import { firestoreClient } from './runtime';
import type { SweepDeps } from './sweep';
import { BigQueryTableAdmin } from './table-admin';

/**
 * Reads the configuration from `env` and wires the schema sweep's real dependencies.
 * @throws ConfigError for a bad variable (fail fast at cold start).
 */
export function createSchemaSweepDeps(env: Env, logger = new Logger('schemaSweep')): SweepDeps {
  const ingest = loadIngestConfig(env);
  const config = loadSchemaDriftConfig(env, ingest.silverTable, ingest.projectId);
  logs.configLoaded(logger, { ...config, badDataTable: ingest.badDataTable });
  const bigquery = bigQueryClient(ingest);
  return {
    config,
    store: new FirestoreDriftStore(
      firestoreClient(ingest.projectId, ingest.firestoreDatabase),
      config.firestoreRoot,
    ),
    admin: new BigQueryTableAdmin(bigquery),
    writer: new BigQueryRowWriter(bigquery),
    badDataTable: ingest.badDataTable,
    projectId: ingest.projectId,
    logger,
    now: Date.now,
    leaseNow: Date.now,
  };
}
