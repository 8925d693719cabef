// The booking event's valibot schema (the SCHEMA_VALIDATION stage) and how its issues become one reason.
import { LosslessNumber } from 'lossless-json';
import * as v from 'valibot';

import { isRequiredField, type ContractField } from './fields';
import type { ContractIssue, ContractIssueKind, Ok, ValidationFailure } from './stages';

/** Longest identifier accepted (team decision: bounds Silver rows and log lines; real ids are far shorter). */
export const MAX_IDENTIFIER_LENGTH = 1024;

/** A producer's `event_id`: 1–128 characters of `A-Z a-z 0-9 . _ : -` (team decision: safe as an insertId). */
const EVENT_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
/** Integer syntax of a JSON number; JSON itself already excludes leading zeros. */
const JSON_INTEGER = /^-?\d+$/;

/** A scalar as the schema receives it: JSON numbers arrive as their exact source text (lossless-json). */
type Scalar = string | LosslessNumber;

/** Whitespace and invisible format characters only (e.g. a lone U+200B): as empty as "" to a reader. */
const BLANK = /^[\s\p{Cf}]*$/u;

function isNonBlank(value: Scalar): boolean {
  return typeof value !== 'string' || !BLANK.test(value);
}

function isNonBlankString(value: string): boolean {
  return !BLANK.test(value);
}

function isStringOrInteger(value: Scalar): boolean {
  return typeof value === 'string' || JSON_INTEGER.test(value.value);
}

function scalarText(value: Scalar): string {
  return typeof value === 'string' ? value : value.value;
}

function fitsIdentifierLength(text: string): boolean {
  return text.length <= MAX_IDENTIFIER_LENGTH;
}

/**
 * Characters an identifier may not hold (team decision): controls (they corrupt logs and CSV exports), invisible
 * format characters (ids that look equal but are not), line/paragraph separators, and unpaired surrogates (no UTF-8).
 */
const FORBIDDEN_IN_IDENTIFIER = /[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029]/u;

function hasNoControlCharacters(text: string): boolean {
  return !FORBIDDEN_IN_IDENTIFIER.test(text);
}

function isEventId(text: string): boolean {
  return EVENT_ID_PATTERN.test(text);
}

const EMPTY = 'is empty or whitespace-only';

const ScalarSchema = v.union(
  [v.string(), v.instance(LosslessNumber)],
  'must be a string or a number',
);

/** A required scalar (lab: required, then `str()`-ed), never null, blank, or an object/array/boolean. */
const RequiredScalarSchema = v.pipe(ScalarSchema, v.check(isNonBlank, EMPTY));

/**
 * A required text field (airport codes): a non-blank JSON string. A JSON number here is the wrong JSON type, a
 * SCHEMA_VALIDATION error, not a malformed code (team decision: the stage names what is wrong).
 */
const RequiredTextSchema = v.pipe(
  ScalarSchema,
  v.check(isNonBlank, EMPTY),
  v.string('must be a string'),
);

/** An identifier: a string or a JSON integer (its exact digits), ≤ 1024 characters, no control characters. */
const IdentifierSchema = v.pipe(
  ScalarSchema,
  v.check(isNonBlank, EMPTY),
  v.check(isStringOrInteger, 'must be a string or a JSON integer'),
  v.transform(scalarText),
  v.check(fitsIdentifierLength, `must be at most ${MAX_IDENTIFIER_LENGTH} characters`),
  v.check(
    hasNoControlCharacters,
    'must not contain control, invisible format or line-separator characters, or unpaired surrogates',
  ),
);

/** An optional text field: null means absent (team decision), otherwise a non-blank string. */
const OptionalTextSchema = v.nullish(
  v.pipe(v.string('must be a string'), v.check(isNonBlankString, EMPTY)),
);

/** The producer's `event_id`: null means absent, otherwise 1-128 characters safe as an insertId. */
const EventIdSchema = v.nullish(
  v.pipe(
    v.string('must be a string'),
    v.check(isNonBlankString, EMPTY),
    v.check(isEventId, 'must be 1-128 characters of A-Z a-z 0-9 . _ : -'),
  ),
);

/**
 * The booking event contract as a valibot schema over the contract fields (input as `readContractFields` gives
 * it). Required (lab): identifiers `booking_id`, `passenger_id`, `flight_number` (string or JSON integer, output as
 * text), strings `origin`, `destination`, and `fare`, `event_time` (string or number; their formats are later
 * stages). Optional, null = absent: `currency`, `status` (lab) and `event_id` (design.md "Dedup").
 */
export const BookingEventSchema = v.object({
  booking_id: IdentifierSchema,
  passenger_id: IdentifierSchema,
  flight_number: IdentifierSchema,
  origin: RequiredTextSchema,
  destination: RequiredTextSchema,
  fare: RequiredScalarSchema,
  event_time: RequiredScalarSchema,
  currency: OptionalTextSchema,
  status: OptionalTextSchema,
  event_id: EventIdSchema,
});

/** A booking that passed the schema: identifiers as text, other required fields as string or JSON number. */
export type SchemaValidBooking = v.InferOutput<typeof BookingEventSchema>;

/** One issue per field, the first its pipe finds; the other fields are still all checked. */
const PARSE_CONFIG: v.Config<v.BaseIssue<unknown>> = { abortPipeEarly: true };

/** Kinds of the schema's checks, keyed by the check function valibot reports as the issue's `requirement`. */
const KIND_BY_REQUIREMENT: ReadonlyMap<unknown, ContractIssueKind> = new Map<
  unknown,
  ContractIssueKind
>([
  [isNonBlank, 'null_or_empty'],
  [isNonBlankString, 'null_or_empty'],
  [isStringOrInteger, 'wrong_type'],
  [fitsIdentifierLength, 'too_long'],
  [hasNoControlCharacters, 'control_character'],
  [isEventId, 'invalid_format'],
]);

/**
 * Runs the SCHEMA_VALIDATION stage on the contract fields of a JSON object: one issue per field (plus one per
 * duplicate key), in one reason of groups joined by "; ", fields sorted within each: the lab's "Missing required
 * fields: a, b" (with `currencyRequired`, a null or absent `currency` too), "Null or empty required fields",
 * "Empty optional fields", "Non-scalar fields", "Duplicate keys with different values", "Invalid fields: …".
 */
export function checkSchema(
  fields: Partial<Record<ContractField, unknown>>,
  duplicateKeys: readonly ContractField[],
  options: { currencyRequired?: boolean } = {},
): Ok<SchemaValidBooking> | ValidationFailure {
  const result = v.safeParse(BookingEventSchema, fields, PARSE_CONFIG);
  const issues = result.success ? [] : result.issues.map(toContractIssue);
  // Without a default currency (OFFVIA_DEFAULT_CURRENCY=none) currency is required; null counts as absent.
  if (
    options.currencyRequired === true &&
    (fields.currency === undefined || fields.currency === null)
  ) {
    issues.push({ field: 'currency', kind: 'missing', message: 'currency is missing' });
  }
  for (const field of duplicateKeys) {
    issues.push({
      field,
      kind: 'duplicate_key',
      message: `${field} appears more than once with different values`,
    });
  }
  if (result.success && issues.length === 0) return { ok: true, value: result.output };
  return { ok: false, stage: 'SCHEMA_VALIDATION', reason: schemaReason(issues), issues };
}

/** The name of a JSON value's type, as reasons say it: object, array, string, number, boolean or null. */
export function jsonTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof LosslessNumber) return 'number';
  return typeof value;
}

function toContractIssue(issue: v.BaseIssue<unknown>): ContractIssue {
  const pathItem = issue.path?.[0];
  const field = typeof pathItem?.key === 'string' ? pathItem.key : null;
  const name = field ?? 'payload';
  if (pathItem?.origin === 'key') return { field, kind: 'missing', message: `${name} is missing` };
  if (issue.kind === 'schema') {
    // Type failures are classified by the value itself, which valibot keeps as the issue's input.
    const input = issue.input;
    if (input === null) return { field, kind: 'null_or_empty', message: `${name} is null` };
    if (
      typeof input === 'boolean' ||
      (typeof input === 'object' && !(input instanceof LosslessNumber))
    ) {
      const message = `${name} must be a string or a number, got ${jsonTypeName(input)}`;
      return { field, kind: 'non_scalar', message };
    }
    return { field, kind: 'wrong_type', message: `${name} ${issue.message}` };
  }
  const kind = KIND_BY_REQUIREMENT.get(issue.requirement) ?? 'invalid_format';
  return { field, kind, message: `${name} ${issue.message}` };
}

function schemaReason(issues: readonly ContractIssue[]): string {
  const groups = new Map<string, string[]>([
    ['Missing required fields', []],
    ['Null or empty required fields', []],
    ['Empty optional fields', []],
    ['Non-scalar fields', []],
    ['Duplicate keys with different values', []],
    ['Invalid fields', []],
  ]);
  const sorted = [...issues].sort((a, b) => compareText(a.field ?? '', b.field ?? ''));
  for (const issue of sorted) {
    const field = issue.field ?? 'payload';
    const [label, item] = describe(issue.kind, field, issue.message);
    groups.get(label)?.push(item);
  }
  return [...groups]
    .filter(([, items]) => items.length > 0)
    .map(([label, items]) => `${label}: ${items.join(', ')}`)
    .join('; ');
}

/** The reason group an issue belongs to, and how it is listed there (a field name, or its full message). */
function describe(kind: ContractIssueKind, field: string, message: string): [string, string] {
  switch (kind) {
    case 'missing':
      return ['Missing required fields', field];
    case 'null_or_empty':
      return [
        isRequiredField(field) ? 'Null or empty required fields' : 'Empty optional fields',
        field,
      ];
    case 'non_scalar':
      return ['Non-scalar fields', field];
    case 'duplicate_key':
      return ['Duplicate keys with different values', field];
    default:
      return ['Invalid fields', message];
  }
}

/** Code-unit order, like Python's `sorted` on the lab's ASCII field names; locale-independent. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
