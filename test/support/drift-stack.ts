// Helpers for tests on the local stack: clients, a pipeline's DDL, Silver-shaped scratch tables, Firestore roots.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import { readFirestoreDatabase } from '../../shared/config/ingest-config';
import { firestoreClient } from '../../shared/drift/runtime';
import type { BigQuery } from '@google-cloud/bigquery';
import type { TableRef } from '../../shared/config/env';
import { fillPlaceholders } from '../../deploy/local/apply-sql';
import { stackBigQuery, stackEnv } from '../../deploy/local/layers';

const ROOT = path.resolve(__dirname, '../..');

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

/**
 * Applies a pipeline's DDL (`tables.ddlFiles`) to the stack's BigQuery, file by file, filled as deploy/local/apply-sql
 * fills it; idempotent (CREATE IF NOT EXISTS, CREATE OR REPLACE VIEW). @throws what the emulator answers to a file
 */
export async function applyPipelineDdl(
  bigquery: BigQuery,
  projectId: string,
  pipeline: { readonly tables: { readonly ddlFiles: readonly string[] } },
): Promise<void> {
  for (const file of pipeline.tables.ddlFiles) {
    const sql = fillPlaceholders(await readFile(path.join(ROOT, file), 'utf8'), {
      project: projectId,
      location: 'US',
    });
    await bigquery.query({ query: sql });
  }
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
