// Configuration of ingestBooking, read from the environment once at cold start (design.md, "Configuration").
import { DEFAULT_CURRENCY } from '../contract/fields';
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
  /**
   * Events stamped later than receipt + this are rejected at EVENT_TIME_VALIDATION (design.md). Default 5 min; at
   * most {@link MAX_FUTURE_SKEW_LIMIT_MS} (BigQuery's streaming window, see there).
   */
  maxFutureSkewMs: number;
  /**
   * Events stamped earlier than receipt − this are rejected at EVENT_TIME_VALIDATION. Default
   * {@link DEFAULT_MAX_EVENT_AGE_MS} (730 days); at most {@link MAX_EVENT_AGE_LIMIT_MS} (BigQuery's streaming window).
   */
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
  /**
   * `currency` of a booking that has none: an ISO-4217-shaped code (three ASCII capitals), default "USD" (the lab's);
   * `null` when `OFFVIA_DEFAULT_CURRENCY=none`, so a booking without currency is a SCHEMA_VALIDATION error rather
   * than a fare silently filed in a currency the producer may not have meant.
   */
  defaultCurrency: string | null;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * Longest `OFFVIA_MAX_EVENT_AGE_MS` accepted: 1800 days. BigQuery limit: `tabledata.insertAll` into a table
 * partitioned on a DATE or TIMESTAMP column (Silver: `DATE(event_timestamp)`) accepts rows whose partition is
 * between 5 years in the past and 1 year in the future, and rejects the rest (BigQuery docs, "Streaming data into
 * BigQuery", section "Streaming into partitioned tables"; the Storage Write API allows 10 years in the past). 5 years
 * are at least 1825 days; 1800 leaves 25 days for the schema-retry budget (a held row is re-sent up to 7 days after
 * receipt, OFFVIA_SCHEMA_RETRY_MINUTES ≤ 10080) and for the day boundary of the partition date.
 */
export const MAX_EVENT_AGE_LIMIT_MS = 1800 * DAY_MS;

/**
 * Default `OFFVIA_MAX_EVENT_AGE_MS`: 730 days (team decision). A booking change stamped two years before it reaches
 * us is a replay or a producer bug far more often than news; it is quarantined at EVENT_TIME_VALIDATION, well inside
 * BigQuery's 5-year streaming window ({@link MAX_EVENT_AGE_LIMIT_MS}), so it is never a refused insert.
 */
export const DEFAULT_MAX_EVENT_AGE_MS = 730 * DAY_MS;

/**
 * Longest `OFFVIA_MAX_FUTURE_SKEW_MS` accepted: 365 days, the 1 year in the future that BigQuery's streaming into a
 * column-partitioned table accepts (same source as {@link MAX_EVENT_AGE_LIMIT_MS}; a year is at least 365 days).
 */
export const MAX_FUTURE_SKEW_LIMIT_MS = 365 * DAY_MS;

/**
 * Reads and validates the configuration.
 * Variables: OFFVIA_PROJECT_ID (else GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT), OFFVIA_FIRESTORE_DATABASE,
 * BIGQUERY_EMULATOR_HOST,
 * OFFVIA_SILVER_TABLE, OFFVIA_QUARANTINE_TABLE, OFFVIA_BAD_DATA_TABLE, OFFVIA_MAX_FUTURE_SKEW_MS,
 * OFFVIA_MAX_EVENT_AGE_MS, OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES, OFFVIA_MAX_RETRY_AGE_MS,
 * OFFVIA_ATTEMPT_DEADLINE_MS, OFFVIA_DEFAULT_CURRENCY.
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
    maxFutureSkewMs: readInt(
      env,
      'OFFVIA_MAX_FUTURE_SKEW_MS',
      5 * MINUTE_MS,
      0,
      MAX_FUTURE_SKEW_LIMIT_MS,
    ),
    maxEventAgeMs: readInt(
      env,
      'OFFVIA_MAX_EVENT_AGE_MS',
      DEFAULT_MAX_EVENT_AGE_MS,
      MINUTE_MS,
      MAX_EVENT_AGE_LIMIT_MS,
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
    defaultCurrency: readDefaultCurrency(env),
  };
}

/** `OFFVIA_DEFAULT_CURRENCY`'s value meaning "no default: currency is required" (any case). */
export const NO_DEFAULT_CURRENCY = 'none';

/**
 * `OFFVIA_DEFAULT_CURRENCY`: unset or empty → "USD" (lab: `payload.get("currency", "USD")`); `none` → `null` (no
 * default); otherwise three ASCII capitals, the shape of an ISO 4217 alphabetic code (the list itself is not
 * checked, as for the event's own `currency`).
 * @throws ConfigError for any other value.
 */
function readDefaultCurrency(env: Env): string | null {
  const name = 'OFFVIA_DEFAULT_CURRENCY';
  const value = readOptionalString(env, name);
  if (value === undefined) return DEFAULT_CURRENCY;
  if (value.toLowerCase() === NO_DEFAULT_CURRENCY) return null;
  if (!/^[A-Z]{3}$/.test(value)) {
    throw new ConfigError(
      name,
      `expected a three-letter upper-case ISO 4217 code (e.g. USD, EUR) or ${NO_DEFAULT_CURRENCY}, got ${JSON.stringify(value)}`,
    );
  }
  return value;
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
