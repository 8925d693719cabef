// Configuration of ingestBooking, read from the environment once at cold start (design.md, "Configuration").
import { DEFAULT_CURRENCY } from '../contract/fields';
import { ConfigError } from '../errors';
import { type Env, readOptionalString } from './env';
import {
  type VarGroup,
  type PlainKey,
  type VarValues,
  nameVar,
  readNameVar,
  readVars,
  tableVar,
  textVar,
  bytesVar,
  msVar,
} from './spec';

/**
 * Everything ingestBooking needs to know; all durations in ms. The plain variables of `INGEST_VARS` are fields as
 * read (meaning, default, range and unit there).
 */
export interface IngestConfig extends VarValues<typeof INGEST_VARS, PlainKey<typeof INGEST_VARS>> {
  /** Google Cloud project for the clients; `undefined` lets the client libraries detect it. */
  projectId: string | undefined;
  /** BigQuery REST endpoint of the local emulator (`BIGQUERY_EMULATOR_HOST`), `undefined` in Google Cloud. */
  bigQueryEndpoint: string | undefined;
  /**
   * `currency` of a booking that has none: three ASCII capitals, default "USD" (the lab's); `null` when
   * `OFFVIA_DEFAULT_CURRENCY=none`, so a booking without currency is a SCHEMA_VALIDATION error.
   */
  defaultCurrency: string | null;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * Longest `OFFVIA_MAX_EVENT_AGE_MS` accepted: 1800 days. BigQuery limit: `tabledata.insertAll` into a
 * column-partitioned table (Silver: `DATE(event_timestamp)`) accepts partitions from 5 years in the past to 1 year in
 * the future ("Streaming into partitioned tables"). 5 years are at least 1825 days; the 25 left cover the
 * schema-retry budget (up to 7 days, OFFVIA_SCHEMA_RETRY_MINUTES ≤ 10080) and the partition date's day boundary.
 */
export const MAX_EVENT_AGE_LIMIT_MS = 1800 * DAY_MS;

/**
 * Default `OFFVIA_MAX_EVENT_AGE_MS`: 730 days (team decision: older is a replay or producer bug far more often than
 * news), well inside BigQuery's 5-year streaming window ({@link MAX_EVENT_AGE_LIMIT_MS}).
 */
export const DEFAULT_MAX_EVENT_AGE_MS = 730 * DAY_MS;

/**
 * Longest `OFFVIA_MAX_FUTURE_SKEW_MS` accepted: 365 days, the 1 year in the future that BigQuery's streaming into a
 * column-partitioned table accepts (same source as {@link MAX_EVENT_AGE_LIMIT_MS}; a year is at least 365 days).
 */
export const MAX_FUTURE_SKEW_LIMIT_MS = 365 * DAY_MS;

/** The database id the system uses unless OFFVIA_FIRESTORE_DATABASE says otherwise. */
export const DEFAULT_FIRESTORE_DATABASE = 'offvia';

/** `OFFVIA_DEFAULT_CURRENCY`'s value meaning "no default: currency is required" (any case). */
export const NO_DEFAULT_CURRENCY = 'none';

/** The variables `loadIngestConfig` reads; docs/configuration.md is generated from these specs. */
export const INGEST_VARS = {
  projectId: textVar({
    name: 'OFFVIA_PROJECT_ID',
    defaultText:
      '`GOOGLE_CLOUD_PROJECT`, else `GCLOUD_PROJECT`, else detected by the client libraries',
    meaning:
      'Google Cloud project of the BigQuery and Firestore clients (the deploy plan sets it to `--project`)',
  }),
  // Firestore's database id rule (projects.databases.create `databaseId`). `(default)` does not match: the system
  // keeps its state out of the project's shared default database.
  firestoreDatabase: nameVar({
    name: 'OFFVIA_FIRESTORE_DATABASE',
    default: DEFAULT_FIRESTORE_DATABASE,
    pattern: /^[a-z][a-z0-9-]{2,61}[a-z0-9]$/,
    patternText:
      'a named Firestore database id: 4–63 of `a-z 0-9 -`, starting with a letter, not ending with `-`; ' +
      '`(default)` refused',
    meaning:
      "the system's own named Firestore database (window store, dedup ledger, drift retry store); the deploy sets " +
      'it from `--firestore-database`, the local stack from its own environment (same default)',
  }),
  googleCloudProject: textVar({
    name: 'GOOGLE_CLOUD_PROJECT',
    defaultText: 'unset',
    meaning: 'fallback for `OFFVIA_PROJECT_ID` (then `GCLOUD_PROJECT`); set by the local stack',
  }),
  gcloudProject: textVar({
    name: 'GCLOUD_PROJECT',
    defaultText: 'unset',
    meaning: 'last fallback for `OFFVIA_PROJECT_ID` before the client libraries detect the project',
  }),
  bigQueryEmulatorHost: textVar({
    name: 'BIGQUERY_EMULATOR_HOST',
    defaultText: 'unset (Google Cloud)',
    meaning:
      'the local BigQuery emulator, `host:port` or a URL; for the Node client v8 it must include the path ' +
      '(`http://127.0.0.1:9050/bigquery/v2`). Also switches `OFFVIA_SCHEMA_DDL_STYLE` to `per_column`',
  }),
  silverTable: tableVar({
    name: 'OFFVIA_SILVER_TABLE',
    default: 'offvia_silver.fact_bookings',
    meaning: 'Silver: validated bookings (insertId = `event_id`)',
  }),
  quarantineTable: tableVar({
    name: 'OFFVIA_QUARANTINE_TABLE',
    default: 'offvia_quarantine.poisoned_events',
    meaning: 'quarantine: rejected messages with their `error_stage` (insertId = message id)',
  }),
  badDataTable: tableVar({
    name: 'OFFVIA_BAD_DATA_TABLE',
    default: 'offvia_quarantine.bad_data',
    meaning:
      'bad data: rows BigQuery refused, schema-drift rows past their retry budget, messages past the retry-age guard',
  }),
  maxFutureSkewMs: msVar([0, MAX_FUTURE_SKEW_LIMIT_MS], {
    name: 'OFFVIA_MAX_FUTURE_SKEW_MS',
    default: 5 * MINUTE_MS,
    meaning:
      '`event_time` later than receipt + this is rejected at `EVENT_TIME_VALIDATION`; the maximum is the 1 year ' +
      'ahead BigQuery streams into a partitioned table',
  }),
  maxEventAgeMs: msVar([MINUTE_MS, MAX_EVENT_AGE_LIMIT_MS], {
    name: 'OFFVIA_MAX_EVENT_AGE_MS',
    default: DEFAULT_MAX_EVENT_AGE_MS,
    meaning:
      '`event_time` older than receipt − this is rejected at `EVENT_TIME_VALIDATION`; the maximum stays inside ' +
      "BigQuery's 5 years for streaming into a partitioned table " +
      '([validation](validation.md#event-times-bigquery-will-stream))',
  }),
  defaultCurrency: textVar({
    name: 'OFFVIA_DEFAULT_CURRENCY',
    defaultText: `\`${DEFAULT_CURRENCY}\``,
    allowedText: `three capitals (ISO 4217 shape), or \`${NO_DEFAULT_CURRENCY}\` (any case)`,
    meaning:
      `\`currency\` of a booking that has none; \`${NO_DEFAULT_CURRENCY}\` makes a missing currency a ` +
      '`SCHEMA_VALIDATION` error ([validation](validation.md#default-currency))',
  }),
  // 1 MiB keeps a quarantine row far below BigQuery's 10 MB streaming row limit even with the base64 copy.
  quarantinePayloadMaxBytes: bytesVar([1024, 4 * 1024 * 1024], {
    name: 'OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES',
    default: 1024 * 1024,
    meaning:
      'longest `raw_payload` kept in a quarantine or retry-age bad-data row (UTF-8 bytes); Bronze keeps the whole message',
  }),
  maxRetryAgeMs: msVar([MINUTE_MS, 7 * DAY_MS], {
    name: 'OFFVIA_MAX_RETRY_AGE_MS',
    default: 45 * MINUTE_MS,
    meaning:
      'retry-age guard: a message still failing this long after its publish time goes to bad data and is acked; ' +
      "keep it below the subscription's dead-letter horizon (about 90 min)",
  }),
  attemptDeadlineMs: msVar([1_000, 3_600_000], {
    name: 'OFFVIA_ATTEMPT_DEADLINE_MS',
    default: 45_000,
    meaning:
      'longest one delivery may take: a dependency that hangs (rather than fails) is then a transient failure, so ' +
      "the invocation answers 5xx or, past the retry age, routes to bad data; keep it below the function's " +
      'timeout (60 s deployed)',
  }),
} as const;

/** The reference section of the ingest variables. */
export const INGEST_VAR_GROUP: VarGroup = {
  title: 'Ingest: tables, validation bounds, retries',
  intro:
    'Read by `ingestBooking` (and, for the project and tables, by `schemaSweep` and `fireWindows`); see ' +
    '[validation](validation.md) and [delivery guarantees](delivery-guarantees.md).',
  vars: Object.values(INGEST_VARS),
};

/**
 * Reads and validates the configuration (specs, defaults and ranges: `INGEST_VARS`). The project is
 * OFFVIA_PROJECT_ID, else GOOGLE_CLOUD_PROJECT, else GCLOUD_PROJECT.
 * @throws ConfigError naming the first bad variable.
 */
export function loadIngestConfig(env: Env): IngestConfig {
  const v = INGEST_VARS;
  return {
    projectId:
      readOptionalString(env, v.projectId.name) ??
      readOptionalString(env, v.googleCloudProject.name) ??
      readOptionalString(env, v.gcloudProject.name),
    bigQueryEndpoint: emulatorEndpoint(readOptionalString(env, v.bigQueryEmulatorHost.name)),
    ...readVars(env, v),
    defaultCurrency: readDefaultCurrency(env),
  };
}

/**
 * `OFFVIA_DEFAULT_CURRENCY`: unset or empty → "USD" (lab: `payload.get("currency", "USD")`); `none` → `null` (no
 * default); otherwise three ASCII capitals, the shape of an ISO 4217 alphabetic code (the list itself is not
 * checked, as for the event's own `currency`).
 * @throws ConfigError for any other value.
 */
function readDefaultCurrency(env: Env): string | null {
  const name = INGEST_VARS.defaultCurrency.name;
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

/**
 * OFFVIA_FIRESTORE_DATABASE, or DEFAULT_FIRESTORE_DATABASE.
 * @throws ConfigError when it breaks Firestore's database id rule (`INGEST_VARS.firestoreDatabase`).
 */
export function readFirestoreDatabase(env: Env): string {
  return readNameVar(env, INGEST_VARS.firestoreDatabase);
}

/** `host:port` or a URL → a URL the BigQuery client accepts as apiEndpoint. */
function emulatorEndpoint(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return /^https?:\/\//.test(value) ? value : `http://${value}`;
}
