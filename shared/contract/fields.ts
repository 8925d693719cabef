// The booking event contract's top-level field names: which are required, which are identifiers, the defaults.

/** Fields every booking must carry (lab: `ValidateAndEnrichBookingFn`'s `required` set). */
export const REQUIRED_FIELDS = [
  'booking_id',
  'passenger_id',
  'flight_number',
  'origin',
  'destination',
  'fare',
  'event_time',
] as const;

/**
 * Fields a booking may carry: `currency` and `status` (lab, with defaults) and `event_id`, the producer's own
 * idempotency id (design.md "Dedup": "the producer's id when the contract carries one").
 */
export const OPTIONAL_FIELDS = ['currency', 'status', 'event_id'] as const;

/** A top-level key the contract knows. */
export type ContractField = (typeof REQUIRED_FIELDS)[number] | (typeof OPTIONAL_FIELDS)[number];

/** The contract's top-level keys, typed for indexing contract records. */
export const CONTRACT_FIELD_NAMES: readonly ContractField[] = Object.freeze([
  ...REQUIRED_FIELDS,
  ...OPTIONAL_FIELDS,
]);

/**
 * Every top-level key the contract knows (required first, in the lab's order, then optional); any other key of
 * a payload is an extra field (schema drift). Typed `string[]` so callers can test any key with `includes`.
 */
export const CONTRACT_FIELDS: readonly string[] = CONTRACT_FIELD_NAMES;

/**
 * The booking contract version today's validation (`validateBooking`) implements, written to Silver's
 * `contract_version` for every row the ingest path accepts (sql/046; NULL in older rows means this version). The
 * booking pipeline definition registers it as its only, current version.
 */
export const BOOKING_CONTRACT_VERSION = '1';

/** `currency` when absent or null (lab: `payload.get("currency", "USD")`). */
export const DEFAULT_CURRENCY = 'USD';

/** `status` when absent or null (lab: `payload.get("status", "CONFIRMED")`). */
export const DEFAULT_STATUS = 'CONFIRMED';

const CONTRACT_FIELD_SET: ReadonlySet<string> = new Set(CONTRACT_FIELD_NAMES);
const REQUIRED_FIELD_SET: ReadonlySet<string> = new Set(REQUIRED_FIELDS);

/** Whether a top-level key belongs to the contract (`__proto__`, `constructor` and the like do not). */
export function isContractField(key: string): key is ContractField {
  return CONTRACT_FIELD_SET.has(key);
}

/** Whether a contract field is required. */
export function isRequiredField(key: string): boolean {
  return REQUIRED_FIELD_SET.has(key);
}
