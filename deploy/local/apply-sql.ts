// Applies every registered pipeline's DDL files (definition.tables.ddlFiles, registry order; or one directory's
// *.sql with --sql-dir) to BigQuery: the local emulator when BIGQUERY_EMULATOR_HOST is set, otherwise the
// real project through Application Default Credentials. Fills in {{project}} and {{location}}, then checks that every
// dataset, table and view the files create exists (the emulator answers some invalid SQL with an empty result).
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BigQuery } from '@google-cloud/bigquery';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { PIPELINES } from '../../shared/pipelines';
import { projectIdFromEnv } from './resources';

const USAGE = `usage: apply-sql.ts [--project ID] [--location LOC] [--sql-dir DIR | --pipeline NAME] [--dry-run]
  --project   default: OFFVIA_PROJECT_ID, GOOGLE_CLOUD_PROJECT, offvia-local
  --location  BigQuery location of the datasets; default: OFFVIA_BQ_LOCATION or US
  --sql-dir   apply DIR/*.sql in name order instead of the pipelines' DDL files
  --pipeline  apply only this registered pipeline's DDL files
  --dry-run   print the statements instead of running them`;

/** The repository root, which the definitions' ddlFiles paths are relative to. */
const REPO_ROOT = path.resolve(__dirname, '..', '..');

/**
 * The DDL files to apply, absolute paths: every registered pipeline's in registry order, or `only` that one's.
 * @throws RangeError naming the registered pipelines when `only` names none
 */
export function pipelineDdlFiles(
  pipelines: readonly AnyPipelineDefinition[],
  only?: string,
  root: string = REPO_ROOT,
): string[] {
  const chosen = only === undefined ? pipelines : pipelines.filter((p) => p.name === only);
  if (chosen.length === 0) {
    throw new RangeError(
      `no pipeline ${JSON.stringify(only)} (registered: ${pipelines.map((p) => p.name).join(', ')})`,
    );
  }
  return chosen.flatMap((p) => p.tables.ddlFiles.map((file) => path.join(root, file)));
}

/** A dataset, table or view a CREATE statement makes, to check for afterwards. */
interface CreatedObject {
  kind: 'SCHEMA' | 'TABLE' | 'VIEW';
  datasetId: string;
  tableId?: string;
}

/** Fills the {{name}} placeholders; a placeholder without a value is an error, not an empty string. */
export function fillPlaceholders(sql: string, values: Record<string, string>): string {
  return sql.replace(/\{\{\s*(\w+)\s*\}\}/g, (match, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for placeholder ${match}`);
    return value;
  });
}

/** The objects a file's CREATE statements make, from their backquoted `project.dataset[.table]` names. */
export function createdObjects(sql: string): CreatedObject[] {
  const pattern =
    /CREATE\s+(?:OR\s+REPLACE\s+)?(SCHEMA|TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?`([^`]+)`/gi;
  const objects: CreatedObject[] = [];
  for (const match of sql.matchAll(pattern)) {
    const kind = (match[1] ?? '').toUpperCase() as CreatedObject['kind'];
    const parts = (match[2] ?? '').split('.');
    const datasetId = parts[1];
    if (datasetId === undefined) continue;
    const tableId = parts[2];
    objects.push(tableId === undefined ? { kind, datasetId } : { kind, datasetId, tableId });
  }
  return objects;
}

async function objectExists(bigquery: BigQuery, object: CreatedObject): Promise<boolean> {
  const dataset = bigquery.dataset(object.datasetId);
  if (object.tableId === undefined) return (await dataset.exists())[0];
  return (await dataset.table(object.tableId).exists())[0];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      project: { type: 'string' },
      location: { type: 'string' },
      'sql-dir': { type: 'string' },
      pipeline: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const projectId = values.project ?? projectIdFromEnv();
  const location = values.location ?? (process.env.OFFVIA_BQ_LOCATION || 'US');
  const sqlDir = values['sql-dir'];
  if (sqlDir !== undefined && values.pipeline !== undefined) {
    throw new Error('--sql-dir and --pipeline exclude each other');
  }
  const files =
    sqlDir === undefined
      ? pipelineDdlFiles(PIPELINES, values.pipeline)
      : (await readdir(sqlDir))
          .filter((name) => name.endsWith('.sql'))
          .sort()
          .map((name) => path.join(sqlDir, name));
  if (files.length === 0) throw new Error(`no .sql files in ${sqlDir ?? 'the pipelines'}`);
  const source =
    sqlDir ?? `the DDL of ${values.pipeline ?? PIPELINES.map((p) => p.name).join(', ')}`;

  const target = process.env.BIGQUERY_EMULATOR_HOST
    ? `emulator ${process.env.BIGQUERY_EMULATOR_HOST}`
    : 'BigQuery (Application Default Credentials)';
  console.log(
    `applying ${files.length} files from ${source} to project ${projectId} (${location}) on ${target}`,
  );
  // autoRetry off: the emulator answers unsupported SQL with HTTP 500, which would otherwise be retried for minutes.
  const bigquery = new BigQuery({ projectId, location, autoRetry: false });

  for (const filePath of files) {
    const file = path.relative(REPO_ROOT, filePath);
    const sql = fillPlaceholders(await readFile(filePath, 'utf8'), {
      project: projectId,
      location,
    });
    if (values['dry-run']) {
      console.log(`-- ${file}\n${sql}`);
      continue;
    }
    const startedMs = Date.now();
    try {
      // One query job per file: BigQuery runs a file with several statements as a script.
      await bigquery.query({ query: sql, location });
    } catch (error) {
      throw new Error(`${file}: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
    const missing: string[] = [];
    for (const object of createdObjects(sql)) {
      if (!(await objectExists(bigquery, object))) {
        missing.push(
          `${object.kind} ${object.datasetId}${object.tableId ? `.${object.tableId}` : ''}`,
        );
      }
    }
    if (missing.length > 0) {
      throw new Error(`${file} ran without error but did not create: ${missing.join(', ')}`);
    }
    console.log(`applied ${file} (${Date.now() - startedMs} ms)`);
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error('apply-sql failed:', error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
