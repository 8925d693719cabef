// Reads a target table's schema and adds columns with DDL, through @google-cloud/bigquery.
import type { BigQuery, TableField } from '@google-cloud/bigquery';
import { tableName, type TableRef } from '../config/env';
import { TransientError, errorText } from '../errors';
import { tableSchemaFromApi, type BqField, type BqType, type TableSchema } from '../schema';

/** What a column addition did besides its DDL. */
export interface AddColumnsResult {
  /** Columns whose catalog entry had to be written with `tables.patch` (local emulator only; see `BigQueryTableAdmin`). */
  readonly catalogPatched: readonly string[];
}

/** The table operations the drift gate and the schema sweep need. */
export interface TableAdmin {
  /**
   * The table's current schema (`tables.get`).
   * @throws TransientError when BigQuery cannot be reached or the table does not exist.
   */
  getSchema(table: TableRef): Promise<TableSchema>;
  /**
   * Runs `statements` (DDL adding `columns`) in order, then checks that the table lists every column. Each
   * statement is one table metadata update (BigQuery: 5 per 10 s per table); the caller paces them.
   * @throws DdlError when a statement fails (`rateLimited` when BigQuery refused it for the update rate) or a
   *   column is still missing afterwards; TransientError when BigQuery cannot be reached.
   */
  addColumns(
    table: TableRef,
    columns: readonly BqField[],
    statements: readonly string[],
  ): Promise<AddColumnsResult>;
}

/** A DDL statement failed, or did not leave the table with the columns it should have added. */
export class DdlError extends Error {
  override readonly name = 'DdlError';
  /** BigQuery refused the statement for the table metadata update rate (`isRateLimitError`): retry next sweep. */
  readonly rateLimited: boolean;
  constructor(message: string, options?: { cause?: unknown; rateLimited?: boolean }) {
    super(message, options);
    this.rateLimited = options?.rateLimited ?? false;
  }
}

/**
 * Whether an error from the BigQuery client is the short-term rate limit (reason `rateLimitExceeded`, HTTP 403), in
 * its `errors`, a failed job's `errorResult`, or its message (https://cloud.google.com/bigquery/docs/troubleshoot-quotas).
 * A `quotaExceeded` is not: waiting seconds does not clear it.
 */
export function isRateLimitError(err: unknown): boolean {
  const e = err as {
    errors?: unknown;
    message?: unknown;
    response?: { status?: { errorResult?: { reason?: unknown } } };
  } | null;
  if (e === null || typeof e !== 'object') return false;
  const reasons = Array.isArray(e.errors)
    ? e.errors.map((x) => (x as { reason?: unknown } | null)?.reason)
    : [];
  reasons.push(e.response?.status?.errorResult?.reason);
  if (reasons.includes('rateLimitExceeded')) return true;
  return typeof e.message === 'string' && /exceeded rate limits/i.test(e.message);
}

/** GoogleSQL type → the type name `tables.patch` is given (the API's legacy names where they exist). */
const API_TYPE: Partial<Record<BqType, string>> = {
  INT64: 'INTEGER',
  FLOAT64: 'FLOAT',
  BOOL: 'BOOLEAN',
};

/**
 * TableAdmin over the official client (emulator or Google Cloud).
 * The local emulator (bqemulator 1.4.0) applies `ADD COLUMN` to storage but not to its catalog, and every
 * `insertAll` then fails with HTTP 500. So `addColumns` checks `tables.get` after the DDL; for a missing column
 * it reads the stored columns with a dry-run `SELECT *` and writes the catalog with `tables.patch`. On BigQuery
 * the DDL is already visible to `tables.get`, so this branch does not run there.
 */
export class BigQueryTableAdmin implements TableAdmin {
  constructor(private readonly bigquery: BigQuery) {}

  private table(ref: TableRef) {
    return this.bigquery
      .dataset(ref.datasetId, ref.projectId ? { projectId: ref.projectId } : {})
      .table(ref.tableId);
  }

  private async apiFields(ref: TableRef): Promise<TableField[]> {
    try {
      const response: unknown[] = await this.table(ref).getMetadata();
      return (response[0] as { schema?: { fields?: TableField[] } }).schema?.fields ?? [];
    } catch (err) {
      throw new TransientError(`tables.get ${tableName(ref)}`, errorText(err), { cause: err });
    }
  }

  async getSchema(ref: TableRef): Promise<TableSchema> {
    const fields = await this.apiFields(ref);
    const parsed = tableSchemaFromApi({ fields });
    if (!parsed.ok) {
      throw new TransientError(
        `tables.get ${tableName(ref)}`,
        `schema not readable: ${parsed.message}`,
      );
    }
    return parsed.schema;
  }

  async addColumns(
    ref: TableRef,
    columns: readonly BqField[],
    statements: readonly string[],
  ): Promise<AddColumnsResult> {
    for (const statement of statements) await this.runDdl(statement);
    const catalog = await this.apiFields(ref);
    const listed = new Set(catalog.map((f) => f.name));
    if (columns.every((c) => listed.has(c.name))) return { catalogPatched: [] };
    return { catalogPatched: await this.patchCatalog(ref, catalog, columns) };
  }

  /** Runs one DDL statement as a query job and waits for it. @throws DdlError */
  private async runDdl(statement: string): Promise<void> {
    try {
      // createQueryJob + getQueryResults surface a failed job; the emulator's jobs.query fast path can return an
      // empty result for a statement it refused (e.g. several ALTER commands in one statement).
      const [job] = await this.bigquery.createQueryJob({ query: statement });
      await job.getQueryResults();
    } catch (err) {
      throw new DdlError(`${statement}: ${errorText(err)}`, {
        cause: err,
        rateLimited: isRateLimitError(err),
      });
    }
  }

  /** Writes the catalog from the storage columns (emulator catalog lag). @returns the names patched in. */
  private async patchCatalog(
    ref: TableRef,
    catalog: readonly TableField[],
    columns: readonly BqField[],
  ): Promise<string[]> {
    const name = tableName(ref);
    let storage: TableField[];
    try {
      const [job] = await this.bigquery.createQueryJob({
        query: `SELECT * FROM \`${ref.projectId ? `${ref.projectId}.` : ''}${ref.datasetId}.${ref.tableId}\``,
        dryRun: true,
      });
      const stats = job.metadata as {
        statistics?: { query?: { schema?: { fields?: TableField[] } } };
      };
      storage = stats.statistics?.query?.schema?.fields ?? [];
    } catch (err) {
      throw new TransientError(`dry run SELECT * FROM ${name}`, errorText(err), { cause: err });
    }
    const inCatalog = new Map(catalog.map((f) => [f.name, f]));
    const stored = new Set(storage.map((f) => f.name));
    const notStored = columns.filter((c) => !stored.has(c.name)).map((c) => c.name);
    const catalogOnly = catalog.filter((f) => f.name !== undefined && !stored.has(f.name));
    if (notStored.length > 0 || catalogOnly.length > 0) {
      throw new DdlError(
        `after the DDL, ${name} lacks column(s) ${notStored.join(', ') || '(none)'} and lists column(s) ` +
          `${catalogOnly.map((f) => f.name).join(', ') || '(none)'} it does not store`,
      );
    }
    const planned = new Map(columns.map((c) => [c.name, c]));
    const patched: string[] = [];
    const fields = storage.map((f): TableField => {
      const name = f.name ?? '';
      const known = inCatalog.get(name);
      if (known !== undefined) return known;
      patched.push(name);
      const column = planned.get(name);
      const type = column === undefined ? f.type : (API_TYPE[column.type] ?? column.type);
      if (type === undefined)
        throw new DdlError(`column ${name} of ${tableName(ref)} has no type in the dry run`);
      return { name, type, mode: 'NULLABLE' };
    });
    try {
      await this.table(ref).setMetadata({ schema: { fields } });
    } catch (err) {
      throw new TransientError(`tables.patch ${name}`, errorText(err), { cause: err });
    }
    return patched;
  }
}
