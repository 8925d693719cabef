// The invariants every result of booking's contract validation satisfies, whatever the input: for the fuzz tests of
// the contract and of the whole ingest path.
import assert from 'node:assert/strict';
import {
  CONTRACT_FIELDS,
  ERROR_STAGES,
  parseNumeric,
  type ValidationResult,
} from '../../shared/contract';

/** A Silver TIMESTAMP as the contract writes it: UTC, microseconds. */
const TIMESTAMP_TEXT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * A rejection names a known stage, a reason and issues with messages; an accepted row has distinct IATA-shaped
 * airports, an ISO currency, a status token, timestamps in Silver's text form, a positive canonical fare equal to
 * `fareScaled`, non-blank ids of at most 1,024 characters, and extra fields outside the contract's.
 * @throws AssertionError naming the first invariant broken
 */
export function assertWellFormed(result: ValidationResult): void {
  if (!result.ok) {
    assert.ok(ERROR_STAGES.includes(result.stage), result.stage);
    assert.ok(result.reason.length > 0, 'non-empty reason');
    assert.ok(result.issues.length > 0, 'at least one issue');
    for (const issue of result.issues) assert.ok(issue.message.length > 0);
    return;
  }
  const { row } = result;
  assert.match(row.origin_airport, /^[A-Z]{3}$/);
  assert.match(row.destination_airport, /^[A-Z]{3}$/);
  assert.notEqual(row.origin_airport, row.destination_airport);
  assert.match(row.currency, /^[A-Z]{3}$/);
  assert.match(row.booking_status, /^[A-Z][A-Z0-9_]{0,63}$/);
  assert.match(row.event_timestamp, TIMESTAMP_TEXT);
  assert.match(row.ingestion_timestamp, TIMESTAMP_TEXT);
  const fare = parseNumeric(row.fare_amount);
  assert.ok(fare.ok && fare.scaled > 0n && fare.scaled === result.fareScaled, row.fare_amount);
  assert.equal(fare.canonical, row.fare_amount);
  for (const id of [row.booking_id, row.passenger_id, row.flight_number]) {
    assert.ok(id.trim() !== '' && id.length <= 1024);
  }
  for (const key of Object.keys(result.extraFields)) assert.ok(!CONTRACT_FIELDS.includes(key));
}
