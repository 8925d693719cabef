// Helpers for drift tests on the local stack: Silver-shaped scratch tables, clients, Firestore roots.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import { readFirestoreDatabase } from '../../shared/config/ingest-config';
import { firestoreClient } from '../../shared/drift/runtime';
import type { BigQuery } from '@google-cloud/bigquery';
import type { TableRef } from '../../shared/config/env';
import { stackBigQuery, stackEnv } from '../../deploy/local/layers';

/** Fails fast outside the stack (the tests need the emulators). */
export function requireStack(): void {
  for (const name of [
    'BIGQUERY_EMULATOR_HOST',
    'FIRESTORE_EMULATOR_HOST',
    'PUBSUB_EMULATOR_HOST',
  ]) {
    if (!process.env[name])
      throw new Error(`${name} is not set: run through \`npm test\` (the local stack)`);
  }
}

/** The stack's project and clients. */
export function stackClients(): { projectId: string; bigquery: BigQuery; firestore: Firestore } {
  const env = stackEnv();
  return {
    projectId: env.projectId,
    bigquery: stackBigQuery(env),
    firestore: firestoreClient(env.projectId, readFirestoreDatabase(process.env)),
  };
}

/** A short random suffix for scratch names (letters and digits). */
export function runTag(): string {
  return randomUUID().replace(/-/g, '').slice(0, 10);
}

/** Creates `offvia_silver.<tableId>` with Silver's DDL (sql/020), so rows of the ingest path fit it. */
export async function createSilverLikeTable(
  bigquery: BigQuery,
  projectId: string,
  tableId: string,
): Promise<TableRef> {
  const ddl = (
    await readFile(path.resolve(__dirname, '../../sql/020_silver_fact_bookings.sql'), 'utf8')
  )
    .replace(/\{\{project\}\}/g, projectId)
    .replace('offvia_silver.fact_bookings`', `offvia_silver.${tableId}\``);
  const [job] = await bigquery.createQueryJob({ query: ddl });
  await job.getQueryResults();
  return { datasetId: 'offvia_silver', tableId };
}

/** Rows of a table whose `source_message_id` is one of `ids`, with every column. */
export async function rowsOf(
  bigquery: BigQuery,
  projectId: string,
  table: TableRef,
  columns: readonly string[],
  where = 'TRUE',
): Promise<Record<string, unknown>[]> {
  const [rows] = await bigquery.query({
    query: `SELECT ${columns.join(', ')} FROM \`${projectId}.${table.datasetId}.${table.tableId}\` WHERE ${where}`,
  });
  return rows as Record<string, unknown>[];
}
