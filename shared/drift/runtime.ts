// Composition of the drift gate for ingestBooking: the Firestore retry store and the BigQuery schema cache.
import { Firestore } from '@google-cloud/firestore';
import type { BigQuery } from '@google-cloud/bigquery';
import type { TableRef } from '../config/env';
import type { SchemaDriftConfig } from '../config/schema-drift-config';
import type { Logger } from '../logging/logger';
import type { RowWriter } from '../sinks/row-writer';
import { FirestoreDriftStore } from './firestore-store';
import { RetryStoreDriftGate } from './gate';
import { ProposalMerger } from './proposal-merger';
import { TableSchemaCache } from './schema-cache';
import { BigQueryTableAdmin } from './table-admin';

/**
 * A Firestore client for the project's system database `databaseId` (OFFVIA_FIRESTORE_DATABASE, a named
 * database; the emulator serves named databases too); it finds the local emulator through FIRESTORE_EMULATOR_HOST
 * by itself. `ignoreUndefinedProperties` stays off: an undefined field is a bug to see, not to drop.
 */
export function firestoreClient(projectId: string | undefined, databaseId: string): Firestore {
  return new Firestore({ ...(projectId ? { projectId } : {}), databaseId });
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

/** The drift gate for ingestBooking (Silver as target), with its per-instance schema cache and merger. */
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
