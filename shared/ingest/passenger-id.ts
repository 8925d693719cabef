// Pseudonymisation of `passenger_id` before Silver: a keyed hash, so joins keep working (docs/privacy.md).
import { createHmac } from 'node:crypto';
import type { ValidationSuccess } from '../contract';
import type { PassengerIdConfig, PassengerIdKey } from '../config/passenger-id-config';

/**
 * Prefix of a pseudonymised id: names the derivation (HMAC-SHA256, hex), so a later derivation gets another prefix
 * and a reader can tell a hashed value from a raw one.
 */
export const PSEUDONYM_PREFIX = 'hmac1:';

/**
 * `hmac1:` + the 64 lower-case hex digits of HMAC-SHA256(key, UTF-8 of `passengerId`) (RFC 2104): deterministic per
 * key (joins work), and unlike a plain SHA-256 not reversible by enumerating likely ids. Never throws.
 */
export function pseudonymisePassengerId(key: PassengerIdKey, passengerId: string): string {
  return (
    PSEUDONYM_PREFIX + createHmac('sha256', key.bytes()).update(passengerId, 'utf8').digest('hex')
  );
}

/**
 * The validated event unchanged for `raw`, else with the Silver row's `passenger_id` pseudonymised; applied right
 * after validation, so every stored copy gets the pseudonym. `eventId` never depends on `passenger_id`.
 */
export function protectPassengerId(
  event: ValidationSuccess,
  config: PassengerIdConfig,
): ValidationSuccess {
  if (config.mode === 'raw') return event;
  return {
    ...event,
    row: {
      ...event.row,
      passenger_id: pseudonymisePassengerId(config.key, event.row.passenger_id),
    },
  };
}
