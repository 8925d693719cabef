// Composition of a pipeline's schema-drift gate: its configuration, the Firestore retry store, the schema cache.
import { Firestore } from '@google-cloud/firestore';
import type { BigQuery } from '@google-cloud/bigquery';
import type { Env, TableRef } from '../config/env';
import { loadSchemaDriftConfig, type SchemaDriftConfig } from '../config/schema-drift-config';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import type { Logger } from '../logging/logger';
import type { RowWriter } from '../sinks/row-writer';
import { FirestoreDriftStore } from './firestore-store';
import { RetryStoreDriftGate } from './gate';
import { ProposalMerger } from './proposal-merger';
import { TableSchemaCache } from './schema-cache';
import { BigQueryTableAdmin } from './table-admin';

/**
 * A Firestore client for the named database `databaseId` (OFFVIA_FIRESTORE_DATABASE); it finds the emulator
 * through FIRESTORE_EMULATOR_HOST. `ignoreUndefinedProperties` stays off: an undefined field is a bug to see.
 */
export function firestoreClient(projectId: string | undefined, databaseId: string): Firestore {
  return new Firestore({ ...(projectId ? { projectId } : {}), databaseId });
}

/** The variables whose values the (configured) definition decides; the environment gives every other drift knob. */
const DEFINITION_DRIFT_VARS = [
  'OFFVIA_SCHEMA_DRIFT',
  'OFFVIA_SCHEMA_TARGET_TABLES',
  'OFFVIA_SCHEMA_WINDOW_MINUTES',
  'OFFVIA_SCHEMA_RETRY_MINUTES',
  'OFFVIA_SCHEMA_FIRESTORE_ROOT',
];

/**
 * The drift configuration of a pipeline, or `undefined` when its definition turns drift off (`schemaDrift.mode`
 * `off`, or no `firestore.schemaDriftRoot`): target tables, schema window, retry budget and Firestore root from the
 * definition; the operational knobs (cache TTL, caps, lease, DDL style, ...) from `env` (`loadSchemaDriftConfig`).
 * @throws ConfigError for a bad variable
 */
export function pipelineDriftConfig(
  definition: Pick<AnyPipelineDefinition, 'schemaDrift' | 'firestore' | 'tables'>,
  env: Env,
  projectId: string | undefined,
): SchemaDriftConfig | undefined {
  const drift = definition.schemaDrift;
  const root = definition.firestore.schemaDriftRoot;
  if (drift.mode !== 'sweep' || root === null) return undefined;
  const knobs: Record<string, string | undefined> = { ...env };
  for (const name of DEFINITION_DRIFT_VARS) delete knobs[name];
  return {
    ...loadSchemaDriftConfig(knobs, definition.tables.silver, projectId),
    enabled: true,
    targetTables: [...drift.targetTables],
    windowMinutes: drift.windowMinutes,
    retryMinutes: drift.retryMinutes,
    firestoreRoot: root,
  };
}

/** What the gate is built from. */
export interface DriftGateParts {
  readonly drift: SchemaDriftConfig;
  readonly silverTable: TableRef;
  readonly badDataTable: TableRef;
  readonly projectId: string | undefined;
  readonly bigquery: BigQuery;
  readonly firestore: Firestore;
  readonly writer: RowWriter;
  readonly logger: Logger;
  /** ms since the epoch (UTC). */
  readonly now: () => number;
}

/** The drift gate of a pipeline's ingest (Silver as target), with its per-instance schema cache and merger. */
export function createDriftGate(parts: DriftGateParts): RetryStoreDriftGate {
  const store = new FirestoreDriftStore(parts.firestore, parts.drift.firestoreRoot);
  return new RetryStoreDriftGate({
    config: parts.drift,
    store,
    schemas: new TableSchemaCache(
      new BigQueryTableAdmin(parts.bigquery),
      parts.drift.schemaCacheTtlMs,
      parts.now,
    ),
    merger: new ProposalMerger(
      store,
      parts.drift.windowMinutes,
      parts.drift.maxProposedFieldsPerWindow,
      parts.now,
    ),
    writer: parts.writer,
    badDataTable: parts.badDataTable,
    target: parts.silverTable,
    projectId: parts.projectId,
    logger: parts.logger,
    now: parts.now,
  });
}
