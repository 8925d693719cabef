// The booking event contract: validation of one payload into a Silver row or a quarantine verdict, pure logic.
export {
  validateBooking,
  type SilverRow,
  type ValidationOptions,
  type ValidationResult,
  type ValidationSuccess,
} from './validate';
export { ERROR_STAGES, type ErrorStage, type ValidationFailure } from './stages';
export { formatScaled, parseNumeric } from './numeric';
export { deriveEventId } from './event-id';
export { BOOKING_CONTRACT_VERSION, CONTRACT_FIELDS } from './fields';
export { MAX_NESTING_DEPTH } from './json-payload';
export { formatEpochMs } from './event-time';
