// The BigQuery schema vocabulary of the schema core: column types, modes, fields, table schemas, target tables.

/**
 * Every BigQuery column type, by its GoogleSQL name (`INT64`, not the legacy API name `INTEGER`; `RECORD` is
 * the API's name for `STRUCT`). Legacy API names are mapped by `tableSchemaFromApi`.
 * Source: https://cloud.google.com/bigquery/docs/schemas#standard_sql_data_types
 */
export const BQ_TYPES = [
  'STRING',
  'BYTES',
  'INT64',
  'NUMERIC',
  'BIGNUMERIC',
  'FLOAT64',
  'BOOL',
  'TIMESTAMP',
  'DATE',
  'TIME',
  'DATETIME',
  'GEOGRAPHY',
  'INTERVAL',
  'RANGE',
  'JSON',
  'RECORD',
] as const;

/** A BigQuery column type (GoogleSQL name). See `BQ_TYPES`. */
export type BqType = (typeof BQ_TYPES)[number];

/** A column mode. The schema sweep adds only `NULLABLE` columns. */
export type BqMode = 'NULLABLE' | 'REQUIRED' | 'REPEATED';

/** One column of a table schema, as the BigQuery API describes it (types normalised to GoogleSQL names). */
export interface BqField {
  /** Column name, as stored (BigQuery compares names case-insensitively). */
  readonly name: string;
  readonly type: BqType;
  /** Column mode; the API's absent mode means `NULLABLE`. */
  readonly mode: BqMode;
  /** Sub-columns of a `RECORD` column; absent for every other type. */
  readonly fields?: readonly BqField[];
}

/** A table's schema: its top-level columns, in table order. */
export interface TableSchema {
  readonly fields: readonly BqField[];
}

/**
 * The table a schema change targets; structurally the configuration's `TableRef`. Target tables come from
 * configuration only, never from a payload (design.md, "Schema-change window and retry minutes").
 */
export interface TargetTableRef {
  /** Project id; when absent the DDL names `dataset.table` and the job's project applies. */
  readonly projectId?: string;
  readonly datasetId: string;
  readonly tableId: string;
}

/** Raised for a programming or configuration mistake handed to the schema core, never for bad event data. */
export class SchemaConfigError extends Error {
  override readonly name = 'SchemaConfigError';
}
