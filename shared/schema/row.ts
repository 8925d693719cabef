// Turns an event's extra top-level fields into the values of its row, given the table's (applied) columns.
import { isLosslessNumber, stringify as losslessStringify } from 'lossless-json';
import { columnNameKey, describeName } from './column-names';
import { inferType, type InferenceErrorCode } from './infer';
import { isAssignable, widensTo } from './type-lattice';
import type { BqField, BqType, TableSchema } from './types';

/** Why an extra field cannot go into the row. */
export type RowFieldErrorCode =
  | 'NO_COLUMN'
  | 'PROTECTED_NAME'
  | 'CASE_COLLISION'
  | 'INCOMPATIBLE_WITH_COLUMN'
  | 'NEEDS_COLUMN_WIDENING'
  | InferenceErrorCode;

/** An extra field that cannot go into the row, with the reason; such a row must not be inserted yet. */
export interface RowFieldError {
  readonly field: string;
  /** Machine-readable cause; `NO_COLUMN` is the schema drift the retry store waits out. */
  readonly code: RowFieldErrorCode;
  /** Human-readable cause, for the bad-data table's `error` column. */
  readonly reason: string;
}

/** The row values for an event's extra fields. */
export interface ExtraFieldsRow {
  /** Column name → value for `insertAll`, to be added to the contract's row. */
  readonly values: Readonly<Record<string, unknown>>;
  /** Fields that cannot be written; when non-empty the row is not ready (never insert it without them). */
  readonly errors: readonly RowFieldError[];
  /** Fields whose value is `null` and that are no column: nothing to store or propose; listed for the logs. */
  readonly nullFields: readonly string[];
}

/** The table the row is for. */
export interface RowTarget {
  /** The table's schema including every applied column. */
  readonly schema: TableSchema;
  /** Names no extra field may write, case-insensitive (the same list as `GuardConfig.protectedNames`). */
  readonly protectedNames: readonly string[];
}

/** Integer digits of an exactly known integer value, or null when the value is not one. */
function exactIntegerText(value: unknown): string | null {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (isLosslessNumber(value) && /^-?\d+$/.test(value.value)) return value.value;
  return null;
}

/** The streaming-insert (JSON) representation of `value` in a column of type `column.type`. */
function columnValue(value: unknown, column: BqField): unknown {
  switch (column.type) {
    case 'JSON':
      // JSON columns take JSON text in insertAll; lossless-json keeps big numbers exact.
      return losslessStringify(value);
    case 'INT64':
    case 'NUMERIC':
    case 'BIGNUMERIC': {
      // Exact integers as decimal text where a double could lose digits; BigQuery parses INT64/NUMERIC strings
      // in insertAll JSON. A safe integer in an INT64 column stays a number.
      const text = exactIntegerText(value) ?? String(value);
      if (column.type !== 'INT64') return text;
      if (typeof value === 'number') return value;
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : text;
    }
    case 'FLOAT64':
      return isLosslessNumber(value)
        ? Number(value.value)
        : typeof value === 'bigint'
          ? Number(value)
          : value;
    default:
      return value;
  }
}

/**
 * The values to put in an event's row for its extra top-level fields, given the table's columns (after the
 * window's change was applied). For each field, in event order:
 * - a name equal, ignoring case, to `target.protectedNames` → `PROTECTED_NAME`;
 * - a value with no type (`inferType` error) → that error;
 * - no column of exactly that name: `CASE_COLLISION` if one differs only in case, else `NO_COLUMN`, except
 *   for a `null` value, which is left out (NULL and absent are the same);
 * - a value not assignable to the column (`isAssignable`): `NEEDS_COLUMN_WIDENING` when BigQuery could widen the
 *   column to the value's type (`canWidenColumn`), else `INCOMPATIBLE_WITH_COLUMN`;
 * - else the value, converted for a streaming insert (`columnValue`: JSON as lossless text, integers beyond
 *   2^53 as decimal text).
 * Never drops a field silently: every field is either in `values`, in `nullFields` (a `null` with no column),
 * or in `errors`.
 */
export function extraFieldsToRow(
  extraFields: Readonly<Record<string, unknown>>,
  target: RowTarget,
): ExtraFieldsRow {
  const protectedKeys = new Set(target.protectedNames.map(columnNameKey));
  const exact = new Map(target.schema.fields.map((f) => [f.name, f]));
  const byKey = new Map(target.schema.fields.map((f) => [columnNameKey(f.name), f]));
  const values: [string, unknown][] = [];
  const errors: RowFieldError[] = [];
  const nullFields: string[] = [];

  for (const [field, value] of Object.entries(extraFields)) {
    const name = describeName(field);
    if (protectedKeys.has(columnNameKey(field))) {
      errors.push({
        field,
        code: 'PROTECTED_NAME',
        reason: `field ${name} matches a contract or derived column name (case-insensitive)`,
      });
      continue;
    }
    const inferred = inferType(value);
    if (!inferred.ok) {
      errors.push({ field, code: inferred.code, reason: `field ${name}: ${inferred.message}` });
      continue;
    }
    const column = exact.get(field);
    if (column === undefined) {
      if (inferred.type === null) {
        nullFields.push(field);
        continue;
      }
      const other = byKey.get(columnNameKey(field));
      errors.push(
        other === undefined
          ? {
              field,
              code: 'NO_COLUMN',
              reason: `no such field: ${name} is not a column of the table yet`,
            }
          : {
              field,
              code: 'CASE_COLLISION',
              reason: `field ${name} differs only in case from column ${describeName(other.name)}`,
            },
      );
      continue;
    }
    if (inferred.type === null) {
      values.push([field, null]);
    } else if (!isAssignable(inferred.type, column)) {
      const widenable = canWidenColumn(column, inferred.type);
      errors.push({
        field,
        code: widenable ? 'NEEDS_COLUMN_WIDENING' : 'INCOMPATIBLE_WITH_COLUMN',
        reason:
          `field ${name} has a ${inferred.type} value; column is ${column.mode} ${column.type}` +
          (widenable
            ? ` (an operator may widen it to ${inferred.type}; the sweep never alters a column)`
            : ''),
      });
    } else {
      values.push([field, columnValue(value, column)]);
    }
  }
  // fromEntries defines own properties, so a `__proto__` field stays a field.
  return { values: Object.fromEntries(values), errors, nullFields };
}

/**
 * Whether BigQuery could change `column` to `valueType` in place (`ALTER COLUMN SET DATA TYPE` to a numeric
 * supertype, https://cloud.google.com/bigquery/docs/managing-table-schemas#change_a_columns_data_type): a
 * NULLABLE or REQUIRED scalar column whose type widens to `valueType`. Such a refusal is not final.
 */
export function canWidenColumn(column: BqField, valueType: BqType): boolean {
  if (column.mode === 'REPEATED' || column.type === 'RECORD') return false;
  return column.type !== valueType && widensTo(column.type, valueType);
}
