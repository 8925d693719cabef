// Shared inputs for the contract's unit tests: the lab's three messages, a valid booking builder, fixed options.
import assert from 'node:assert/strict';

import {
  ERROR_STAGES,
  validateBooking,
  type ErrorStage,
  type ValidationFailure,
  type ValidationOptions,
  type ValidationResult,
  type ValidationSuccess,
} from '../../../shared/contract';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** The injected clock: one minute after the lab's events (2026-10-07T14:11:00Z). */
export const RECEIVED_AT_MS = Date.UTC(2026, 9, 7, 14, 11, 0);

export const OPTIONS: ValidationOptions = {
  messageId: 'msg-1',
  receivedAtMs: RECEIVED_AT_MS,
  maxFutureSkewMs: 5 * MINUTE_MS,
  maxEventAgeMs: 3650 * DAY_MS,
};

/** The lab's acceptance messages, byte for byte as published in mission.md. */
export const LAB_VALID =
  '{"booking_id":"BK-90210","passenger_id":"PAX-4821","flight_number":"OF-104","origin":"JFK","destination":"LHR","fare":"749.50","currency":"USD","status":"CONFIRMED","event_time":"2026-10-07T14:10:00Z"}';
export const LAB_NEGATIVE_FARE =
  '{"booking_id":"BK-90211","passenger_id":"PAX-7712","flight_number":"OF-208","origin":"SFO","destination":"HND","fare":"-50.00","event_time":"2026-10-07T14:10:05Z"}';
export const LAB_UNCLOSED = '{"booking_id":"BK-90212", "unclosed_json...';

/** A valid booking (the lab's BK-90210); `undefined` in `overrides` removes a field. */
export function booking(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const event: Record<string, unknown> = {
    booking_id: 'BK-90210',
    passenger_id: 'PAX-4821',
    flight_number: 'OF-104',
    origin: 'JFK',
    destination: 'LHR',
    fare: '749.50',
    currency: 'USD',
    status: 'CONFIRMED',
    event_time: '2026-10-07T14:10:00Z',
  };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete event[key];
    else event[key] = value;
  }
  return event;
}

/** Validates an event object (serialized with JSON.stringify) or raw text/bytes with {@link OPTIONS}. */
export function validate(
  input: Record<string, unknown> | string | Uint8Array,
  options: Partial<ValidationOptions> = {},
): ValidationResult {
  const payload =
    typeof input === 'string' || input instanceof Uint8Array ? input : JSON.stringify(input);
  return validateBooking(payload, { ...OPTIONS, ...options });
}

/** Asserts success and narrows; on failure the assertion message shows the reason. */
export function expectSuccess(result: ValidationResult): ValidationSuccess {
  if (!result.ok) assert.fail(`expected success, got ${result.stage}: ${result.reason}`);
  return result;
}

/** Asserts a failure at `stage` and narrows. */
export function expectFailure(result: ValidationResult, stage: ErrorStage): ValidationFailure {
  if (result.ok) assert.fail(`expected ${stage}, got success`);
  assert.equal(result.stage, stage, result.reason);
  assert.ok(ERROR_STAGES.includes(result.stage));
  assert.ok(result.issues.length > 0);
  return result;
}
