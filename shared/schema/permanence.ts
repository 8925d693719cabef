// Which rejections are final (the row can go to bad data now) and which a later window or an operator may clear.
import type { NameRejectionCode } from './column-names';
import type { InferenceErrorCode } from './infer';
import type { RejectionCode } from './plan';
import type { RowFieldErrorCode } from './row';

/** Every code the schema core gives a field. */
export type SchemaErrorCode =
  RejectionCode | RowFieldErrorCode | NameRejectionCode | InferenceErrorCode;

/**
 * `permanent`: no pipeline action or allowed table change makes the row writable, so waiting only delays bad
 * data. `retryable`: a later schema window or an operator (`TABLE_CAP`: raise
 * `OFFVIA_SCHEMA_MAX_COLUMNS_PER_TABLE`; `NEEDS_COLUMN_WIDENING`: widen the column) may clear it within the budget.
 * A `Record` over the union, so a new code does not compile until it is classified.
 */
export const SCHEMA_ERROR_PERMANENCE: Readonly<Record<SchemaErrorCode, 'permanent' | 'retryable'>> =
  {
    EMPTY_NAME: 'permanent',
    NAME_TOO_LONG: 'permanent',
    ILLEGAL_CHARACTERS: 'permanent',
    RESERVED_PREFIX: 'permanent',
    RESERVED_KEYWORD: 'permanent',
    JS_SPECIAL_NAME: 'permanent',
    PROTECTED_NAME: 'permanent',
    // With an existing column, or with another field of the same event: no new column can end the collision.
    CASE_COLLISION: 'permanent',
    INCOMPATIBLE_WITH_COLUMN: 'permanent',
    UNSUPPORTED_TYPE: 'permanent',
    NON_FINITE_NUMBER: 'permanent',
    NUMBER_OUT_OF_RANGE: 'permanent',
    UNSUPPORTED_VALUE: 'permanent',
    NO_COLUMN: 'retryable',
    // Lost to a case variant that has no column yet; once the winner is a column the row gets CASE_COLLISION.
    CASE_VARIANT_LOST: 'retryable',
    NEEDS_COLUMN_WIDENING: 'retryable',
    WINDOW_CAP: 'retryable',
    TABLE_CAP: 'retryable',
  };

/** Whether a schema-core rejection is final (see `SCHEMA_ERROR_PERMANENCE`). */
export function isPermanentSchemaError(code: SchemaErrorCode): boolean {
  return SCHEMA_ERROR_PERMANENCE[code] === 'permanent';
}
