// The validation stages a rejected booking is filed under, and the issue data a rejection is built from.

/**
 * The stage at which a booking was rejected, the quarantine row's `error_stage` (lab: `ValidateAndEnrichBookingFn`):
 * PARSE_JSON (not UTF-8 JSON), SCHEMA_VALIDATION (not an object with the contract's fields and types),
 * BUSINESS_RULE_VALIDATION (fare, airports, currency, status), EVENT_TIME_VALIDATION (no usable RFC 3339 instant).
 */
export type ErrorStage =
  'PARSE_JSON' | 'SCHEMA_VALIDATION' | 'BUSINESS_RULE_VALIDATION' | 'EVENT_TIME_VALIDATION';

/** Every stage, in the order the checks run (lab): an event is rejected at the first stage it fails. */
export const ERROR_STAGES: readonly ErrorStage[] = Object.freeze([
  'PARSE_JSON',
  'SCHEMA_VALIDATION',
  'BUSINESS_RULE_VALIDATION',
  'EVENT_TIME_VALIDATION',
]);

/**
 * What kind of problem an issue is, as stable data for dashboards and alerts (grouped by stage):
 * - PARSE_JSON: `invalid_utf8`, `empty_payload`, `invalid_json`, `too_deep`.
 * - SCHEMA_VALIDATION: `not_object`, `missing`, `null_or_empty`, `non_scalar`, `wrong_type`, `too_long`,
 *   `control_character`, `invalid_format`, `duplicate_key`.
 * - BUSINESS_RULE_VALIDATION: `not_a_decimal`, `not_positive`, `exceeds_numeric`, `invalid_airport`,
 *   `same_airport`, `invalid_currency`, `invalid_status`.
 * - EVENT_TIME_VALIDATION: `wrong_type`, `invalid_format`, `missing_offset`, `out_of_range`,
 *   `too_far_in_future`, `too_old`.
 */
export type ContractIssueKind =
  | 'invalid_utf8'
  | 'empty_payload'
  | 'invalid_json'
  | 'too_deep'
  | 'not_object'
  | 'missing'
  | 'null_or_empty'
  | 'non_scalar'
  | 'wrong_type'
  | 'too_long'
  | 'control_character'
  | 'invalid_format'
  | 'duplicate_key'
  | 'not_a_decimal'
  | 'not_positive'
  | 'exceeds_numeric'
  | 'invalid_airport'
  | 'same_airport'
  | 'invalid_currency'
  | 'invalid_status'
  | 'missing_offset'
  | 'out_of_range'
  | 'too_far_in_future'
  | 'too_old';

/** One problem found in a payload: data, like a valibot issue, from which the rejection reason is written. */
export interface ContractIssue {
  /** The top-level contract field concerned, e.g. `fare`; `null` when the problem is the payload as a whole. */
  field: string | null;
  /** The kind of problem, see {@link ContractIssueKind}. */
  kind: ContractIssueKind;
  /** Human-readable description, e.g. `Invalid fare: fare must be greater than zero`. */
  message: string;
}

/** A rejection: the first failing stage, the quarantine `error_reason`, and the issues it summarises. */
export interface ValidationFailure {
  ok: false;
  /** The stage that failed; one of {@link ERROR_STAGES}. */
  stage: ErrorStage;
  /** One line for the quarantine table's `error_reason`, listing every issue of the stage. */
  reason: string;
  /** The issues behind `reason`, at least one. */
  issues: ContractIssue[];
}

/** A step that passed, and what it produced. */
export interface Ok<T> {
  ok: true;
  value: T;
}

/** Builds a failure whose reason is the issues' messages joined by "; " (stages with self-describing issues). */
export function failWith(stage: ErrorStage, issues: ContractIssue[]): ValidationFailure {
  return { ok: false, stage, reason: issues.map((issue) => issue.message).join('; '), issues };
}

/** Longest excerpt of a rejected value quoted in a reason: reasons stay one short line (team decision). */
const MAX_QUOTED_LENGTH = 64;

/** A value quoted for a reason: JSON string syntax, cut to 64 characters with an ellipsis. */
export function quoteForReason(text: string): string {
  const excerpt = text.length > MAX_QUOTED_LENGTH ? `${text.slice(0, MAX_QUOTED_LENGTH)}…` : text;
  return JSON.stringify(excerpt);
}
