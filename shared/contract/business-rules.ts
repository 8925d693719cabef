// The BUSINESS_RULE_VALIDATION stage: the fare as an exact positive NUMERIC, airports, currency and status.
import { LosslessNumber } from 'lossless-json';

import { DEFAULT_CURRENCY, DEFAULT_STATUS } from './fields';
import { NOT_A_DECIMAL, parseNumeric } from './numeric';
import type { SchemaValidBooking } from './schema';
import {
  failWith,
  quoteForReason,
  type ContractIssue,
  type Ok,
  type ValidationFailure,
} from './stages';

/** An IATA airport code: exactly three ASCII capitals; lower case is rejected, not fixed (team decision). */
const AIRPORT_CODE = /^[A-Z]{3}$/;
/** An ISO 4217 currency code: exactly three ASCII capitals (team decision). */
const CURRENCY_CODE = /^[A-Z]{3}$/;
/** A booking status: an upper-case symbol such as CONFIRMED or CANCELLED_BY_AIRLINE (team decision). */
const STATUS_SYMBOL = /^[A-Z][A-Z0-9_]*$/;
/** Longest booking status (team decision). */
export const MAX_STATUS_LENGTH = 64;

/** The values the business rules produce for the Silver row. */
export interface BusinessFields {
  /** `fare_amount`: canonical decimal text, e.g. "749.5" for "749.50". */
  fareAmount: string;
  /** The fare × 10^9 (BigQuery NUMERIC's scale), exact. */
  fareScaled: bigint;
  /** IATA code of the origin airport. */
  origin: string;
  /** IATA code of the destination airport. */
  destination: string;
  /** ISO 4217 code; the default currency ("USD" in the lab) when the event had none. */
  currency: string;
  /** Booking status; "CONFIRMED" when the event had none (lab). */
  status: string;
}

/**
 * Checks the business rules of a schema-valid booking and reports every broken one, fare first, in one reason
 * joined by "; ": the fare is > 0 and exact in BigQuery NUMERIC (lab: `Decimal(str(fare))`, reasons "Invalid
 * fare: …"); origin and destination are different IATA codes; currency and status match their patterns above
 * (team decisions), defaulting to `defaultCurrency` ("USD" unless configured) and "CONFIRMED" (lab).
 */
export function checkBusinessRules(
  booking: SchemaValidBooking,
  defaultCurrency: string = DEFAULT_CURRENCY,
): Ok<BusinessFields> | ValidationFailure {
  const issues: ContractIssue[] = [];
  const fare = checkFare(booking.fare, issues);
  const origin = checkAirport('origin', booking.origin, issues);
  const destination = checkAirport('destination', booking.destination, issues);
  if (origin !== undefined && origin === destination) {
    issues.push({
      field: 'destination',
      kind: 'same_airport',
      message: `Invalid route: origin and destination are both ${origin}`,
    });
  }
  const currency = booking.currency ?? defaultCurrency;
  if (!CURRENCY_CODE.test(currency)) {
    issues.push({
      field: 'currency',
      kind: 'invalid_currency',
      message: `Invalid currency: ${quoteForReason(currency)} is not a three-letter upper-case ISO 4217 code`,
    });
  }
  const status = booking.status ?? DEFAULT_STATUS;
  if (status.length > MAX_STATUS_LENGTH || !STATUS_SYMBOL.test(status)) {
    issues.push({
      field: 'status',
      kind: 'invalid_status',
      message: `Invalid status: ${quoteForReason(status)} must match [A-Z][A-Z0-9_]* and have at most ${MAX_STATUS_LENGTH} characters`,
    });
  }
  if (
    fare === undefined ||
    origin === undefined ||
    destination === undefined ||
    issues.length > 0
  ) {
    return failWith('BUSINESS_RULE_VALIDATION', issues);
  }
  return {
    ok: true,
    value: {
      fareAmount: fare.canonical,
      fareScaled: fare.scaled,
      origin,
      destination,
      currency,
      status,
    },
  };
}

function checkFare(
  fare: string | LosslessNumber,
  issues: ContractIssue[],
): { canonical: string; scaled: bigint } | undefined {
  const text = typeof fare === 'string' ? fare : fare.value;
  const parsed = parseNumeric(text);
  if (!parsed.ok) {
    const notDecimal = parsed.reason === NOT_A_DECIMAL;
    issues.push({
      field: 'fare',
      kind: notDecimal ? 'not_a_decimal' : 'exceeds_numeric',
      message: notDecimal
        ? `Invalid fare: ${quoteForReason(text)} is not a decimal number`
        : `Invalid fare: ${quoteForReason(text)} has ${parsed.reason}`,
    });
    return undefined;
  }
  if (parsed.scaled <= 0n) {
    // The lab's exact wording.
    issues.push({
      field: 'fare',
      kind: 'not_positive',
      message: 'Invalid fare: fare must be greater than zero',
    });
    return undefined;
  }
  return parsed;
}

function checkAirport(
  field: 'origin' | 'destination',
  value: string,
  issues: ContractIssue[],
): string | undefined {
  if (AIRPORT_CODE.test(value)) return value;
  issues.push({
    field,
    kind: 'invalid_airport',
    message: `Invalid ${field}: ${quoteForReason(value)} is not a three-letter upper-case IATA airport code`,
  });
  return undefined;
}
