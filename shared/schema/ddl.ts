// The one DDL statement a schema change needs, with every identifier validated and backtick-quoted.
import {
  checkColumnName,
  COLUMN_NAME_PATTERN,
  describeName,
  MAX_COLUMN_NAME_LENGTH,
} from './column-names';
import {
  BQ_TYPES,
  SchemaConfigError,
  type BqField,
  type BqType,
  type TargetTableRef,
} from './types';

/** Project ids: lowercase letters, digits, hyphens (and `.`/`:` of domain-scoped ids), 6–63 characters. */
const PROJECT_ID = /^[a-z][a-z0-9.:-]{4,61}[a-z0-9]$/;
/** Dataset and table ids, restricted to letters, digits and underscores (a subset of BigQuery's rules). */
const DATASET_OR_TABLE_ID = /^[A-Za-z0-9_]{1,1024}$/;

/** Types a drift column may be added with: every scalar type except parameterised `RANGE` (and never RECORD). */
const ADDABLE_TYPES: ReadonlySet<BqType> = new Set<BqType>(
  BQ_TYPES.filter((t) => t !== 'RANGE' && t !== 'RECORD'),
);

/** Whether `ADD COLUMN` can create a column of this type here (not `RECORD`, not parameterised `RANGE`). */
export function isAddableType(type: BqType): boolean {
  return ADDABLE_TYPES.has(type);
}

/**
 * A column name as a backtick-quoted identifier, e.g. `` `promo_code` ``. The name must pass
 * `COLUMN_NAME_PATTERN` and the length limit, so no injection is possible.
 * @throws SchemaConfigError for any other name (callers pass only names `planSchemaChange` accepted).
 */
export function quoteColumnName(name: string): string {
  if (!COLUMN_NAME_PATTERN.test(name) || name.length > MAX_COLUMN_NAME_LENGTH) {
    throw new SchemaConfigError(`refusing to quote column name ${describeName(name)}`);
  }
  return `\`${name}\``;
}

/**
 * A table path as one backtick-quoted identifier, `` `project.dataset.table` `` (or `` `dataset.table` ``).
 * @throws SchemaConfigError when an id is outside the accepted alphabet (a configuration error).
 */
export function quoteTablePath(table: TargetTableRef): string {
  const { projectId, datasetId, tableId } = table;
  if (projectId !== undefined && !PROJECT_ID.test(projectId)) {
    throw new SchemaConfigError(`invalid project id ${describeName(projectId)}`);
  }
  if (!DATASET_OR_TABLE_ID.test(datasetId)) {
    throw new SchemaConfigError(`invalid dataset id ${describeName(datasetId)}`);
  }
  if (!DATASET_OR_TABLE_ID.test(tableId)) {
    throw new SchemaConfigError(`invalid table id ${describeName(tableId)}`);
  }
  return `\`${projectId === undefined ? '' : `${projectId}.`}${datasetId}.${tableId}\``;
}

function addColumnClause(column: BqField): string {
  const check = checkColumnName(column.name);
  if (!check.ok) throw new SchemaConfigError(check.reason);
  if (column.mode !== 'NULLABLE') {
    throw new SchemaConfigError(
      `column ${describeName(column.name)} is ${column.mode}; only NULLABLE columns can be added`,
    );
  }
  if (!isAddableType(column.type)) {
    throw new SchemaConfigError(
      `column ${describeName(column.name)} has type ${column.type}, which ADD COLUMN cannot create here`,
    );
  }
  return `ADD COLUMN IF NOT EXISTS ${quoteColumnName(column.name)} ${column.type}`;
}

/**
 * The single statement adding `columns` to `table`:
 * `` ALTER TABLE `p.d.t` ADD COLUMN IF NOT EXISTS `a` INT64, ADD COLUMN IF NOT EXISTS `b` JSON ``.
 * One statement is one table metadata update (BigQuery: 5 per 10 s per table). `IF NOT EXISTS` makes a repeated
 * or concurrent sweep harmless. Source: https://cloud.google.com/bigquery/docs/managing-table-schemas#add_an_empty_column
 * The local emulator (bqemulator 1.4.0) takes one ALTER command per statement: use `addColumnDdlStatements`.
 * @param columns the columns to add: `NULLABLE`, an addable type (`isAddableType`), names that pass
 *   `checkColumnName`; at least one.
 * @throws SchemaConfigError for an invalid table, an empty list or a column breaking those rules.
 */
export function addColumnsDdl(table: TargetTableRef, columns: readonly BqField[]): string {
  if (columns.length === 0) throw new SchemaConfigError('no columns to add');
  const clauses = columns.map(addColumnClause);
  return `ALTER TABLE ${quoteTablePath(table)} ${clauses.join(', ')}`;
}

/**
 * The same change as `addColumnsDdl`, one statement per column (the local emulator). On BigQuery each statement
 * is a table metadata update of its own, so prefer `addColumnsDdl` there.
 * @throws SchemaConfigError under the same conditions as `addColumnsDdl`.
 */
export function addColumnDdlStatements(
  table: TargetTableRef,
  columns: readonly BqField[],
): string[] {
  if (columns.length === 0) throw new SchemaConfigError('no columns to add');
  const path = quoteTablePath(table);
  return columns.map((column) => `ALTER TABLE ${path} ${addColumnClause(column)}`);
}
