// Composition root of a pipeline's schemaSweep: its drift configuration and real clients, built once per instance.
import type { Env } from '../config/env';
import { loadIngestConfig } from '../config/ingest-config';
import { loadSchemaDriftConfig } from '../config/schema-drift-config';
import { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import { configuredDefinition, type AnyPipelineDefinition } from '../pipeline/definition';
import { BigQueryRowWriter, bigQueryClient } from '../sinks/bigquery-writer';
import { FirestoreDriftStore } from './firestore-store';
import { firestoreClient, pipelineDriftConfig } from './runtime';
import type { SweepDeps } from './sweep';
import { BigQueryTableAdmin } from './table-admin';

/**
 * Configures `definition` for `env` and wires its schema sweep: target tables, schema window, retry budget and
 * Firestore root from the definition (`pipelineDriftConfig`), the rest from `env`. A deployment that turned drift off
 * (booking's `OFFVIA_SCHEMA_DRIFT=false`) still sweeps what its retry store holds, with the environment's settings.
 * @throws ConfigError for a bad variable (fail fast at cold start).
 */
export function createSchemaSweepDeps(
  definition: AnyPipelineDefinition,
  env: Env,
  logger = new Logger(definition.functions.schemaSweep?.entryPoint ?? 'schemaSweep'),
): SweepDeps {
  const configured = configuredDefinition(definition, env);
  const ingest = loadIngestConfig(env);
  const { silver, badData } = configured.tables;
  const config =
    pipelineDriftConfig(configured, env, ingest.projectId) ??
    loadSchemaDriftConfig(env, silver, ingest.projectId);
  logs.configLoaded(logger, { ...config, pipeline: configured.name, badDataTable: badData });
  const bigquery = bigQueryClient(ingest);
  return {
    config,
    store: new FirestoreDriftStore(
      firestoreClient(ingest.projectId, ingest.firestoreDatabase),
      config.firestoreRoot,
    ),
    admin: new BigQueryTableAdmin(bigquery),
    writer: new BigQueryRowWriter(bigquery),
    badDataTable: badData,
    projectId: ingest.projectId,
    logger,
    now: Date.now,
    leaseNow: Date.now,
  };
}
