// A pipeline's DDL files with {{project}} and {{location}} filled in (what `bq query` runs in the cloud, the same
// filling deploy/local/apply-sql.ts does on the emulator), and what they create.
import { createdObjects } from '../local/apply-sql';

/** One filled DDL file. */
export interface SqlFile {
  /** Path from the repository root, e.g. `sql/000_datasets.sql`. */
  readonly name: string;
  /** The statements, placeholders filled. */
  readonly sql: string;
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
