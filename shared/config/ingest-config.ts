// Configuration of ingestBooking, read from the environment once at cold start (design.md, "Configuration").
import { ConfigError } from '../errors';
import { type Env, type TableRef, readInt, readOptionalString, readString, readTable } from './env';

/** Everything ingestBooking needs to know; all durations in ms. */
export interface IngestConfig {
  /** Google Cloud project for the clients; `undefined` lets the client libraries detect it. */
  projectId: string | undefined;
  /**
   * The Firestore database holding the system's state (window store, dedup ledger, drift retry store): a named
   * database of its own, so nothing else in the project shares its collections and `teardown.sh --delete-data`
   * deletes only what the system wrote. Default `offvia`; the deploy plan sets it from `--firestore-database`.
   */
  firestoreDatabase: string;
  /** BigQuery REST endpoint of the local emulator (`BIGQUERY_EMULATOR_HOST`), `undefined` in Google Cloud. */
  bigQueryEndpoint: string | undefined;
  silverTable: TableRef;
  quarantineTable: TableRef;
  badDataTable: TableRef;
  /** Events stamped later than receipt + this are rejected at EVENT_TIME_VALIDATION (design.md). Default 5 min. */
  maxFutureSkewMs: number;
  /** Events stamped earlier than receipt − this are rejected at EVENT_TIME_VALIDATION. Default 3650 days. */
  maxEventAgeMs: number;
  /** Longest raw_payload kept in a quarantine row, in UTF-8 bytes; Bronze keeps the full message. Default 1 MiB. */
  quarantinePayloadMaxBytes: number;
  /**
   * Retry-age guard: a message still failing this long after its publish time goes to the bad-data table instead
   * of being retried again. Must stay below the subscription's dead-letter horizon (15 attempts with 10–600 s
   * backoff: about 90 min), so the message ends in a table, not in the dead-letter topic. Default 45 min.
   */
  maxRetryAgeMs: number;
  /**
   * Longest one delivery may take before ingestBooking gives up on it, ms: a dependency that hangs instead of
   * failing (the Firestore emulator stopped, a network black hole) is then a transient failure like any other, so
   * the invocation answers 5xx (redelivery) or, past `maxRetryAgeMs`, the retry-age guard routes it to bad data.
   * Keep it below the function's timeout (deployed: 60 s), or the platform kills the invocation first and the guard
   * never runs. Default 45 s.
   */
  attemptDeadlineMs: number;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * Reads and validates the configuration.
 * Variables: OFFVIA_PROJECT_ID (else GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT), OFFVIA_FIRESTORE_DATABASE,
 * BIGQUERY_EMULATOR_HOST,
 * OFFVIA_SILVER_TABLE, OFFVIA_QUARANTINE_TABLE, OFFVIA_BAD_DATA_TABLE, OFFVIA_MAX_FUTURE_SKEW_MS,
 * OFFVIA_MAX_EVENT_AGE_MS, OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES, OFFVIA_MAX_RETRY_AGE_MS,
 * OFFVIA_ATTEMPT_DEADLINE_MS.
 * @throws ConfigError naming the first bad variable.
 */
export function loadIngestConfig(env: Env): IngestConfig {
  return {
    projectId:
      readOptionalString(env, 'OFFVIA_PROJECT_ID') ??
      readOptionalString(env, 'GOOGLE_CLOUD_PROJECT') ??
      readOptionalString(env, 'GCLOUD_PROJECT'),
    firestoreDatabase: readFirestoreDatabase(env),
    bigQueryEndpoint: emulatorEndpoint(readOptionalString(env, 'BIGQUERY_EMULATOR_HOST')),
    silverTable: readTable(env, 'OFFVIA_SILVER_TABLE', 'offvia_silver.fact_bookings'),
    quarantineTable: readTable(env, 'OFFVIA_QUARANTINE_TABLE', 'offvia_quarantine.poisoned_events'),
    badDataTable: readTable(env, 'OFFVIA_BAD_DATA_TABLE', 'offvia_quarantine.bad_data'),
    maxFutureSkewMs: readInt(env, 'OFFVIA_MAX_FUTURE_SKEW_MS', 5 * MINUTE_MS, 0, 365 * DAY_MS),
    maxEventAgeMs: readInt(
      env,
      'OFFVIA_MAX_EVENT_AGE_MS',
      3650 * DAY_MS,
      MINUTE_MS,
      36_500 * DAY_MS,
    ),
    // 1 MiB keeps a quarantine row far below BigQuery's 10 MB streaming row limit even with the base64 copy.
    quarantinePayloadMaxBytes: readInt(
      env,
      'OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES',
      1024 * 1024,
      1024,
      4 * 1024 * 1024,
    ),
    maxRetryAgeMs: readInt(env, 'OFFVIA_MAX_RETRY_AGE_MS', 45 * MINUTE_MS, MINUTE_MS, 7 * DAY_MS),
    attemptDeadlineMs: readInt(env, 'OFFVIA_ATTEMPT_DEADLINE_MS', 45_000, 1_000, 3_600_000),
  };
}

/** The database id the system uses unless OFFVIA_FIRESTORE_DATABASE says otherwise. */
export const DEFAULT_FIRESTORE_DATABASE = 'offvia';

/**
 * OFFVIA_FIRESTORE_DATABASE, or DEFAULT_FIRESTORE_DATABASE. Firestore's rule for a database id: 4–63 characters,
 * lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen
 * (Firestore REST reference, projects.databases.create `databaseId`; UUID-like ids are refused there too). `(default)` is refused: the system keeps its state out of
 * the project's shared default database.
 * @throws ConfigError for any other value.
 */
export function readFirestoreDatabase(env: Env): string {
  const id = readString(env, 'OFFVIA_FIRESTORE_DATABASE', DEFAULT_FIRESTORE_DATABASE);
  if (!/^[a-z][a-z0-9-]{2,61}[a-z0-9]$/.test(id)) {
    throw new ConfigError(
      'OFFVIA_FIRESTORE_DATABASE',
      `expected a named Firestore database id (4-63 of a-z 0-9 -, starting with a letter), got ${JSON.stringify(id)}`,
    );
  }
  return id;
}

/** `host:port` or a URL → a URL the BigQuery client accepts as apiEndpoint. */
function emulatorEndpoint(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return /^https?:\/\//.test(value) ? value : `http://${value}`;
}
