// Type inference from JSON values: which BigQuery column type an event's extra field would need.
import { isLosslessNumber } from 'lossless-json';
import type { BqType } from './types';

/** The types `inferType` can produce. Never TIMESTAMP/DATE (no guessing from strings) and never RECORD. */
export type InferableType = Extract<
  BqType,
  'STRING' | 'INT64' | 'NUMERIC' | 'BIGNUMERIC' | 'FLOAT64' | 'BOOL' | 'JSON'
>;

/**
 * A successful inference. `type` is `null` for JSON `null`: it carries no type information, proposes no column
 * and is written as absent (NULL and absent are the same for a NULLABLE column).
 */
export interface InferredType {
  readonly ok: true;
  readonly type: InferableType | null;
}

/** Why a value has no BigQuery type (see `inferType`). */
export type InferenceErrorCode = 'NON_FINITE_NUMBER' | 'NUMBER_OUT_OF_RANGE' | 'UNSUPPORTED_VALUE';

/** A failed inference: the value cannot be written to any column. */
export interface InferenceError {
  readonly ok: false;
  readonly code: InferenceErrorCode;
  /** Human-readable cause, for the row's error column. */
  readonly message: string;
}

/** The INT64 range, [-2^63, 2^63 - 1]. Source: https://cloud.google.com/bigquery/docs/reference/standard-sql/data-types#integer_types */
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Integer digits NUMERIC holds (precision 38, scale 9) and BIGNUMERIC holds whole (precision 76.76, scale 38). */
const NUMERIC_INTEGER_DIGITS = 29;
const BIGNUMERIC_INTEGER_DIGITS = 38;

/** The type of an exactly known integer, or an error when no BigQuery numeric type holds it exactly. */
function exactIntegerType(n: bigint): InferredType | InferenceError {
  if (n >= INT64_MIN && n <= INT64_MAX) return { ok: true, type: 'INT64' };
  const digits = (n < 0n ? -n : n).toString().length;
  if (digits <= NUMERIC_INTEGER_DIGITS) return { ok: true, type: 'NUMERIC' };
  if (digits <= BIGNUMERIC_INTEGER_DIGITS) return { ok: true, type: 'BIGNUMERIC' };
  return {
    ok: false,
    code: 'NUMBER_OUT_OF_RANGE',
    message:
      `an integer of ${digits} digits: no BigQuery numeric type holds more than ` +
      `${BIGNUMERIC_INTEGER_DIGITS} integer digits exactly (FLOAT64 would round it)`,
  };
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Infers the BigQuery column type a JSON value needs. Decisions (mission.md, "The bad-data design"):
 * - string → `STRING`, always (no TIMESTAMP/DATE detection: a later value that does not parse would break it).
 * - number (as `JSON.parse` gives it): a safe integer → `INT64`; any other finite number → `FLOAT64`, as BigQuery's
 *   own JSON schema auto-detection does.
 * - a `lossless-json` number or a `bigint`: within INT64 → `INT64`; up to 29 integer digits → `NUMERIC`; up to
 *   38 → `BIGNUMERIC`; more → `NUMBER_OUT_OF_RANGE` (never rounded to FLOAT64). A lossless literal with a
 *   fraction or exponent → `FLOAT64`.
 * - boolean → `BOOL`.
 * - object or array → `JSON` (never RECORD or REPEATED: their shape drifts too; JSON accepts every later shape).
 * - `null` → `{ ok: true, type: null }`: no information; the field waits for a typed value.
 * @returns `InferredType`, or `InferenceError` for a non-finite number (`NON_FINITE_NUMBER`), an integer beyond
 *   BIGNUMERIC (`NUMBER_OUT_OF_RANGE`) or a value JSON cannot hold (`UNSUPPORTED_VALUE`: undefined, function,
 *   symbol, non-plain object such as a Date).
 */
export function inferType(value: unknown): InferredType | InferenceError {
  if (value === null) return { ok: true, type: null };
  switch (typeof value) {
    case 'string':
      return { ok: true, type: 'STRING' };
    case 'boolean':
      return { ok: true, type: 'BOOL' };
    case 'number':
      if (!Number.isFinite(value)) {
        return { ok: false, code: 'NON_FINITE_NUMBER', message: `${value} has no BigQuery type` };
      }
      return { ok: true, type: Number.isSafeInteger(value) ? 'INT64' : 'FLOAT64' };
    case 'bigint':
      return exactIntegerType(value);
    case 'object':
      if (isLosslessNumber(value)) return inferLosslessNumber(value.value);
      if (Array.isArray(value) || isPlainObject(value)) return { ok: true, type: 'JSON' };
      return {
        ok: false,
        code: 'UNSUPPORTED_VALUE',
        message: `a ${value.constructor?.name ?? 'non-plain'} object is not a JSON value`,
      };
    default:
      return {
        ok: false,
        code: 'UNSUPPORTED_VALUE',
        message: `a ${typeof value} is not a JSON value`,
      };
  }
}

function inferLosslessNumber(literal: string): InferredType | InferenceError {
  if (/^-?\d+$/.test(literal)) return exactIntegerType(BigInt(literal));
  if (!Number.isFinite(Number(literal))) {
    return {
      ok: false,
      code: 'NON_FINITE_NUMBER',
      message: `${literal.slice(0, 64)} is outside the FLOAT64 range`,
    };
  }
  return { ok: true, type: 'FLOAT64' };
}
