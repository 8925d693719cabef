// The booking event contract: validation of one payload into a Silver row or a quarantine verdict, pure logic.
export {
  validateBooking,
  type SilverRow,
  type ValidationOptions,
  type ValidationResult,
  type ValidationSuccess,
} from './validate';
export {
  ERROR_STAGES,
  type ContractIssue,
  type ContractIssueKind,
  type ErrorStage,
  type ValidationFailure,
} from './stages';
export {
  formatScaled,
  NUMERIC_MAX_INTEGER_DIGITS,
  NUMERIC_SCALE,
  parseNumeric,
  type NumericParseResult,
} from './numeric';
export { deriveEventId, DERIVED_EVENT_ID_PREFIX, type EventIdSource } from './event-id';
export {
  BOOKING_CONTRACT_VERSION,
  CONTRACT_FIELDS,
  DEFAULT_CURRENCY,
  DEFAULT_STATUS,
  OPTIONAL_FIELDS,
  REQUIRED_FIELDS,
  type ContractField,
} from './fields';
export { BookingEventSchema, MAX_IDENTIFIER_LENGTH, type SchemaValidBooking } from './schema';
export { MAX_NESTING_DEPTH } from './json-payload';
export { formatEpochMs } from './event-time';
