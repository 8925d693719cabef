// The DDL in sql/, in name order, with {{project}} and {{location}} filled in: what `bq query` runs in the cloud
// (the same files and the same filling as deploy/local/apply-sql.ts runs on the emulator).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createdObjects, fillPlaceholders } from '../local/apply-sql';

/** One filled DDL file. */
export interface SqlFile {
  /** File name, e.g. `000_datasets.sql`. */
  readonly name: string;
  /** The statements, placeholders filled. */
  readonly sql: string;
}

/**
 * The `.sql` files of `sqlDir` in name order, filled for `project` and `location`.
 * @throws Error when there is none, or a placeholder has no value.
 */
export function readSqlFiles(sqlDir: string, project: string, location: string): SqlFile[] {
  const names = readdirSync(sqlDir)
    .filter((name) => name.endsWith('.sql'))
    .sort();
  if (names.length === 0) throw new Error(`no .sql files in ${sqlDir}`);
  return names.map((name) => ({
    name,
    sql: fillPlaceholders(readFileSync(path.join(sqlDir, name), 'utf8'), { project, location }),
  }));
}

/** The dataset ids the files create (`CREATE SCHEMA`), in order. */
export function datasetsCreated(files: readonly SqlFile[]): string[] {
  const ids = files.flatMap((f) =>
    createdObjects(f.sql)
      .filter((o) => o.kind === 'SCHEMA')
      .map((o) => o.datasetId),
  );
  return [...new Set(ids)];
}

/** The tables the files create (`CREATE TABLE`), as `dataset.table`, in order. */
export function tablesCreated(files: readonly SqlFile[]): string[] {
  const ids = files.flatMap((f) =>
    createdObjects(f.sql)
      .filter((o) => o.kind === 'TABLE' && o.tableId !== undefined)
      .map((o) => `${o.datasetId}.${o.tableId ?? ''}`),
  );
  return [...new Set(ids)];
}
