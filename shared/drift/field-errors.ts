// Pure verdict on an event's extra fields against a table schema: row values, clear errors, fields to propose.
import { defineField } from '../contract/json-payload';
import {
  checkColumnName,
  columnNameKey,
  describeName,
  extraFieldsToRow,
  proposeFields,
  SCHEMA_ERROR_PERMANENCE,
  type NameRejectionCode,
  type ProposedFields,
  type RejectedField,
  type RejectionCode,
  type RowFieldErrorCode,
  type TableSchema,
} from '../schema';

/** Every reason a waiting row can carry. */
export type DriftErrorCode =
  | RowFieldErrorCode
  | NameRejectionCode
  | RejectionCode
  /** The event has more not-yet-column fields than `maxNewFieldsPerEvent`: it proposes none. */
  | 'FIELD_FLOOD'
  /** The window's pending change already holds `maxProposedFieldsPerWindow` fields. */
  | 'PROPOSAL_CAP'
  /** BigQuery refused the row with "no such field" for a column the table lists (streaming lags minutes). */
  | 'INSERT_REJECTED'
  /** BigQuery refused the row's data on insert (reason `invalid`, e.g. "Invalid NUMERIC value"): final. */
  | 'INSERT_INVALID'
  /** BigQuery did not write the row for a reason that is not its data: the next sweep tries again. */
  | 'INSERT_NOT_WRITTEN'
  /** The stored row or extra fields are not a JSON object (a damaged retry-store document). */
  | 'UNREADABLE_ROW';

/**
 * Whether each code is final (`permanent`: the row goes to bad data at the next sweep, or at ingest) or may still
 * clear (`retryable`: the row waits within its retry budget): `SCHEMA_ERROR_PERMANENCE` plus the drift codes,
 * for the reasons given on `DriftErrorCode` (a flooding event proposes none of its fields, so they stay missing).
 */
export const DRIFT_ERROR_PERMANENCE: Readonly<Record<DriftErrorCode, 'permanent' | 'retryable'>> = {
  ...SCHEMA_ERROR_PERMANENCE,
  FIELD_FLOOD: 'permanent',
  UNREADABLE_ROW: 'permanent',
  PROPOSAL_CAP: 'retryable',
  INSERT_REJECTED: 'retryable',
  INSERT_INVALID: 'permanent',
  INSERT_NOT_WRITTEN: 'retryable',
};

/** Whether an error can never clear (see `DRIFT_ERROR_PERMANENCE`); an unknown stored code counts as retryable. */
export function isPermanentError(error: Pick<DriftFieldError, 'code'>): boolean {
  return (DRIFT_ERROR_PERMANENCE as Record<string, string | undefined>)[error.code] === 'permanent';
}

/** One error of a waiting row; kept on the row and written to the bad-data table's `error` column. */
export interface DriftFieldError {
  /** The field, as in the event; `null` for an error of the whole row (`FIELD_FLOOD`, `INSERT_…`). */
  readonly field: string | null;
  readonly code: DriftErrorCode;
  /** Human-readable cause, naming the rule. */
  readonly reason: string;
}

/** The guard rails a single row can check by itself. */
export interface RowRules {
  /** Contract and derived column names (case-insensitive); see `DRIFT_PROTECTED_NAMES`. */
  readonly protectedNames: readonly string[];
  /** Most not-yet-column fields one event may propose; more is a `FIELD_FLOOD`. */
  readonly maxNewFieldsPerEvent: number;
}

/** The verdict on one event's extra fields. */
export interface ExtraFieldsVerdict {
  /** Column name → value to add to the row; complete only when `errors` is empty. */
  readonly values: Readonly<Record<string, unknown>>;
  /** Why the row cannot be written yet; empty when it can. Never drops a field: each is a value or an error. */
  readonly errors: readonly DriftFieldError[];
  /** Fields that may become columns (name rules passed, not protected, no case sibling, no flood), with types. */
  readonly proposed: ProposedFields;
  /** Fields whose value is `null` and that are no column: nothing to store or propose (see `extraFieldsToRow`). */
  readonly nullFields: readonly string[];
}

/**
 * Classifies an event's extra top-level fields against the table's current `schema`:
 * - `extraFieldsToRow` gives the values and the per-field errors;
 * - a `NO_COLUMN` field then gets the name rules (`checkColumnName`) and `CASE_COLLISION` with another
 *   not-yet-column field of the same event; what survives is proposed with its inferred type and keeps its
 *   `NO_COLUMN` error (the row waits for it);
 * - more than `rules.maxNewFieldsPerEvent` proposable fields: none is proposed, one `FIELD_FLOOD` error.
 * Deterministic and pure; the same function judges a row at ingest (gate) and at every retry (sweep).
 */
export function classifyExtraFields(
  extraFields: Readonly<Record<string, unknown>>,
  schema: TableSchema,
  rules: RowRules,
): ExtraFieldsVerdict {
  const row = extraFieldsToRow(extraFields, { schema, protectedNames: rules.protectedNames });
  const missing = row.errors.filter((e) => e.code === 'NO_COLUMN').map((e) => e.field);
  const byKey = new Map<string, string[]>();
  for (const field of missing) {
    const key = columnNameKey(field);
    byKey.set(key, [...(byKey.get(key) ?? []), field]);
  }
  const errors: DriftFieldError[] = [];
  const candidates: string[] = [];
  for (const error of row.errors) {
    if (error.code !== 'NO_COLUMN') {
      errors.push(error);
      continue;
    }
    const name = checkColumnName(error.field);
    const siblings = (byKey.get(columnNameKey(error.field)) ?? []).filter((f) => f !== error.field);
    if (!name.ok) {
      errors.push({ field: error.field, code: name.code, reason: name.reason });
    } else if (siblings.length > 0) {
      errors.push({
        field: error.field,
        code: 'CASE_COLLISION',
        reason:
          `field ${describeName(error.field)} differs only in case from field(s) ` +
          `${siblings.slice(0, 3).map(describeName).join(', ')} of the same event`,
      });
    } else {
      candidates.push(error.field);
    }
  }
  if (candidates.length > rules.maxNewFieldsPerEvent) {
    errors.push({
      field: null,
      code: 'FIELD_FLOOD',
      reason:
        `the event carries ${candidates.length} fields that are not columns ` +
        `(${candidates.slice(0, 3).map(describeName).join(', ')}, …); at most ${rules.maxNewFieldsPerEvent} ` +
        'may be proposed per event (OFFVIA_SCHEMA_MAX_NEW_FIELDS_PER_EVENT), so none is',
    });
    return { values: row.values, errors, proposed: new Map(), nullFields: row.nullFields };
  }
  const subset: Record<string, unknown> = {};
  for (const field of candidates) {
    defineField(subset, field, extraFields[field]);
    errors.push({
      field,
      code: 'NO_COLUMN',
      reason: `no such field: ${describeName(field)} is not a column of the table yet`,
    });
  }
  return {
    values: row.values,
    errors,
    proposed: proposeFields(subset).proposed,
    nullFields: row.nullFields,
  };
}

/**
 * Replaces the `NO_COLUMN` error of a field the window's plan refused with the plan's reason (e.g.
 * `CASE_VARIANT_LOST`, `WINDOW_CAP`, `RESERVED_KEYWORD`), so the row says why its column was not added.
 */
export function withPlanRejections(
  errors: readonly DriftFieldError[],
  rejections: ReadonlyMap<string, RejectedField>,
): DriftFieldError[] {
  return errors.map((e) => {
    const rejected =
      e.field === null || e.code !== 'NO_COLUMN' ? undefined : rejections.get(e.field);
    return rejected === undefined
      ? e
      : { field: e.field, code: rejected.code, reason: rejected.reason };
  });
}

/** Most errors spelled out in one error text; the rest are counted. */
export const MAX_ERRORS_IN_TEXT = 20;

/**
 * One line for logs and the bad-data `error` column: `CODE: reason; CODE: reason; … and N more`.
 * Empty input gives an empty string.
 */
export function errorsText(errors: readonly DriftFieldError[], max = MAX_ERRORS_IN_TEXT): string {
  const shown = errors.slice(0, max).map((e) => `${e.code}: ${e.reason}`);
  const more = errors.length - shown.length;
  return shown.join('; ') + (more > 0 ? `; … and ${more} more` : '');
}
