// The widening order between column types: which value types a column accepts and how proposals combine.
import { BQ_TYPES, type BqField, type BqType } from './types';

/**
 * The numeric widening chain, narrowest first: each type coerces to every type after it in GoogleSQL, so a column
 * of a later type accepts values of an earlier one. Every other type is comparable only with itself.
 * Source: https://cloud.google.com/bigquery/docs/reference/standard-sql/conversion_rules (coercion table).
 */
export const NUMERIC_WIDENING_CHAIN: readonly BqType[] = [
  'INT64',
  'NUMERIC',
  'BIGNUMERIC',
  'FLOAT64',
];

/**
 * Whether `narrow` widens to `wide` (reflexive): equal types, or `narrow` before `wide` in
 * `NUMERIC_WIDENING_CHAIN`. A partial order on `BqType`.
 */
export function widensTo(narrow: BqType, wide: BqType): boolean {
  if (narrow === wide) return true;
  const i = NUMERIC_WIDENING_CHAIN.indexOf(narrow);
  const j = NUMERIC_WIDENING_CHAIN.indexOf(wide);
  return i >= 0 && j >= 0 && i < j;
}

/**
 * The maximal elements of a set of types under `widensTo`, deduplicated and in `BQ_TYPES` order: one type when
 * the set has a common widest type (`[INT64, FLOAT64]` → `[FLOAT64]`), several when it holds a conflict
 * (`[INT64, STRING]` → `[INT64, STRING]`). Union followed by this is a join, so proposals merge in any order.
 */
export function maximalTypes(types: Iterable<BqType>): BqType[] {
  const set = new Set(types);
  return BQ_TYPES.filter(
    (t) => set.has(t) && ![...set].some((other) => other !== t && widensTo(t, other)),
  );
}

/**
 * Whether a value whose inferred type is `valueType` can be written to the existing column `column` without a
 * schema change: the column is not `REPEATED` and not a `RECORD` (drift values are never written into those),
 * and either the column is `JSON` (any value is written as JSON text) or `valueType` widens to the column type.
 */
export function isAssignable(valueType: BqType, column: BqField): boolean {
  if (column.mode === 'REPEATED' || column.type === 'RECORD') return false;
  if (column.type === 'JSON') return true;
  return widensTo(valueType, column.type);
}
