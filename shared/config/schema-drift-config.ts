// Configuration of schema drift (ingest gate and schemaSweep), read from the environment once at cold start.
import { ConfigError } from '../errors';
import {
  type Env,
  type TableRef,
  readBool,
  readInt,
  readOptionalString,
  readString,
  readTable,
  tableName,
} from './env';

/** Whether the sweep applies planned changes (`apply`) or only records them on the change (`propose`). */
export type SchemaMode = 'propose' | 'apply';

/**
 * How a change is sent to BigQuery: `single` is one `ALTER TABLE … ADD COLUMN …, ADD COLUMN …` statement (one
 * table metadata update, what BigQuery wants); `per_column` is one statement per column, for the local emulator,
 * which takes one ALTER command per statement.
 */
export type DdlStyle = 'single' | 'per_column';

/** Everything the drift gate and the schema sweep need. Durations carry their unit in the name. */
export interface SchemaDriftConfig {
  /** The gate is wired into ingestBooking (`OFFVIA_SCHEMA_DRIFT`, default true). */
  enabled: boolean;
  /** `OFFVIA_SCHEMA_MODE`, default `apply`. */
  mode: SchemaMode;
  /** Length of the schema-change window, minutes (`OFFVIA_SCHEMA_WINDOW_MINUTES`, default 3, bad-data design). */
  windowMinutes: number;
  /** Retry budget from first receipt, minutes (`OFFVIA_SCHEMA_RETRY_MINUTES`, default 30 = 10 windows). */
  retryMinutes: number;
  /** Wait after a window's end before it is swept, ms (`OFFVIA_SCHEMA_WINDOW_GRACE_MS`, default 10000). */
  windowGraceMs: number;
  /** New columns one window may add to one table (`OFFVIA_SCHEMA_MAX_NEW_COLUMNS_PER_WINDOW`, default 10). */
  maxNewColumnsPerWindow: number;
  /** Columns a target table may reach (`OFFVIA_SCHEMA_MAX_COLUMNS_PER_TABLE`, default 1000; BigQuery: 10,000). */
  maxColumnsPerTable: number;
  /**
   * Not-yet-column fields one event may propose (`OFFVIA_SCHEMA_MAX_NEW_FIELDS_PER_EVENT`, default 20); an
   * event with more is a flood: it proposes none of them and its row carries `FIELD_FLOOD`.
   */
  maxNewFieldsPerEvent: number;
  /**
   * Distinct fields one pending change may hold (`OFFVIA_SCHEMA_MAX_PROPOSED_FIELDS_PER_WINDOW`, default 200):
   * bounds the Firestore document; a field past it is an error on its row (`PROPOSAL_CAP`).
   */
  maxProposedFieldsPerWindow: number;
  /** Tables drift rows may target; configuration only, never a payload (`OFFVIA_SCHEMA_TARGET_TABLES`). */
  targetTables: TableRef[];
  /** How long the gate trusts a cached table schema, ms (`OFFVIA_SCHEMA_CACHE_TTL_MS`, default 60000). */
  schemaCacheTtlMs: number;
  /** `OFFVIA_SCHEMA_DDL_STYLE`; default `per_column` with BIGQUERY_EMULATOR_HOST set, else `single`. */
  ddlStyle: DdlStyle;
  /** Sweep lease per table, ms (`OFFVIA_SCHEMA_LEASE_MS`, default 120000); renewed before every write step. */
  leaseMs: number;
  /**
   * Least time between two updates of one table, ms (`OFFVIA_SCHEMA_MIN_UPDATE_INTERVAL_MS`, default 10000):
   * BigQuery allows 5 table metadata updates per 10 s per table.
   */
  minUpdateIntervalMs: number;
  /** Waiting rows one sweep retries per table, oldest first (`OFFVIA_SCHEMA_SWEEP_MAX_ROWS`, default 5000). */
  sweepMaxRows: number;
  /** Root Firestore collection of the drift state (`OFFVIA_SCHEMA_FIRESTORE_ROOT`, default `offviaSchemaDrift`). */
  firestoreRoot: string;
}

/** Defaults, for docs and tests. */
export const SCHEMA_DRIFT_DEFAULTS = {
  windowMinutes: 3,
  retryMinutes: 30,
  windowGraceMs: 10_000,
  maxNewColumnsPerWindow: 10,
  maxColumnsPerTable: 1000,
  maxNewFieldsPerEvent: 20,
  maxProposedFieldsPerWindow: 200,
  schemaCacheTtlMs: 60_000,
  leaseMs: 120_000,
  minUpdateIntervalMs: 10_000,
  sweepMaxRows: 5000,
  firestoreRoot: 'offviaSchemaDrift',
} as const;

const WEEK_MINUTES = 7 * 24 * 60;
const HOUR_MS = 3_600_000;
/** Firestore collection ids: no `/`, not `.`/`..`, not `__…__`; we keep to a plain alphabet. */
const COLLECTION_ID = /^[A-Za-z][A-Za-z0-9_-]{0,99}$/;

/**
 * Reads and validates the drift configuration.
 * @param silverTable the Silver table from `loadIngestConfig`: the default (and required) target table.
 * @param projectId the client project, to compare `project.dataset.table` targets with Silver.
 * @throws ConfigError naming the first bad variable; also when drift is enabled and Silver is not a target.
 */
export function loadSchemaDriftConfig(
  env: Env,
  silverTable: TableRef,
  projectId?: string,
): SchemaDriftConfig {
  const enabled = readBool(env, 'OFFVIA_SCHEMA_DRIFT', true);
  const targetTables = readTargetTables(env, silverTable, projectId);
  const silverName = tableName(silverTable, projectId);
  if (enabled && !targetTables.some((t) => tableName(t, projectId) === silverName)) {
    throw new ConfigError(
      'OFFVIA_SCHEMA_TARGET_TABLES',
      `must include the Silver table ${silverName} while OFFVIA_SCHEMA_DRIFT is on (or turn drift off)`,
    );
  }
  const d = SCHEMA_DRIFT_DEFAULTS;
  const firestoreRoot = readString(env, 'OFFVIA_SCHEMA_FIRESTORE_ROOT', d.firestoreRoot);
  if (!COLLECTION_ID.test(firestoreRoot)) {
    throw new ConfigError(
      'OFFVIA_SCHEMA_FIRESTORE_ROOT',
      `expected a collection id (letter, then letters, digits, _ or -), got ${JSON.stringify(firestoreRoot)}`,
    );
  }
  const windowMinutes = readInt(env, 'OFFVIA_SCHEMA_WINDOW_MINUTES', d.windowMinutes, 1, 60);
  const retryMinutes = readInt(env, 'OFFVIA_SCHEMA_RETRY_MINUTES', d.retryMinutes, 0, WEEK_MINUTES);
  // A row waits up to one window for its window to close, then for the sweep that applies the change and retries
  // it: a budget under two windows sends rows to bad data before their column could exist. 0 is an explicit
  // "no retries" (rows go to bad data at the first sweep after their window).
  if (retryMinutes > 0 && retryMinutes < 2 * windowMinutes) {
    throw new ConfigError(
      'OFFVIA_SCHEMA_RETRY_MINUTES',
      `${retryMinutes} min is less than two schema windows (OFFVIA_SCHEMA_WINDOW_MINUTES=${windowMinutes}), so ` +
        `rows would reach bad data before their column could be added; use 0 (no retries) or at least ` +
        `${2 * windowMinutes}`,
    );
  }
  return {
    enabled,
    mode: readChoice(env, 'OFFVIA_SCHEMA_MODE', ['propose', 'apply'], 'apply'),
    windowMinutes,
    retryMinutes,
    windowGraceMs: readInt(env, 'OFFVIA_SCHEMA_WINDOW_GRACE_MS', d.windowGraceMs, 0, 300_000),
    maxNewColumnsPerWindow: readInt(
      env,
      'OFFVIA_SCHEMA_MAX_NEW_COLUMNS_PER_WINDOW',
      d.maxNewColumnsPerWindow,
      0,
      10_000,
    ),
    maxColumnsPerTable: readInt(
      env,
      'OFFVIA_SCHEMA_MAX_COLUMNS_PER_TABLE',
      d.maxColumnsPerTable,
      1,
      10_000,
    ),
    maxNewFieldsPerEvent: readInt(
      env,
      'OFFVIA_SCHEMA_MAX_NEW_FIELDS_PER_EVENT',
      d.maxNewFieldsPerEvent,
      0,
      10_000,
    ),
    maxProposedFieldsPerWindow: readInt(
      env,
      'OFFVIA_SCHEMA_MAX_PROPOSED_FIELDS_PER_WINDOW',
      d.maxProposedFieldsPerWindow,
      1,
      2000,
    ),
    targetTables,
    schemaCacheTtlMs: readInt(env, 'OFFVIA_SCHEMA_CACHE_TTL_MS', d.schemaCacheTtlMs, 0, HOUR_MS),
    ddlStyle: readChoice(
      env,
      'OFFVIA_SCHEMA_DDL_STYLE',
      ['single', 'per_column'],
      readOptionalString(env, 'BIGQUERY_EMULATOR_HOST') === undefined ? 'single' : 'per_column',
    ),
    leaseMs: readInt(env, 'OFFVIA_SCHEMA_LEASE_MS', d.leaseMs, 10_000, HOUR_MS),
    minUpdateIntervalMs: readInt(
      env,
      'OFFVIA_SCHEMA_MIN_UPDATE_INTERVAL_MS',
      d.minUpdateIntervalMs,
      0,
      HOUR_MS,
    ),
    sweepMaxRows: readInt(env, 'OFFVIA_SCHEMA_SWEEP_MAX_ROWS', d.sweepMaxRows, 1, 100_000),
    firestoreRoot,
  };
}

/** One of `choices` (case-insensitive), or `fallback` when unset/empty. */
function readChoice<T extends string>(
  env: Env,
  name: string,
  choices: readonly T[],
  fallback: T,
): T {
  const raw = readOptionalString(env, name);
  if (raw === undefined) return fallback;
  const found = choices.find((c) => c === raw.toLowerCase());
  if (found === undefined) {
    throw new ConfigError(
      name,
      `expected one of ${choices.join(', ')}, got ${JSON.stringify(raw)}`,
    );
  }
  return found;
}

/** Comma-separated `dataset.table` / `project.dataset.table` list; default: the Silver table. */
function readTargetTables(env: Env, silverTable: TableRef, projectId?: string): TableRef[] {
  const raw = readOptionalString(env, 'OFFVIA_SCHEMA_TARGET_TABLES');
  if (raw === undefined) return [silverTable];
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.some((p) => p === '')) {
    throw new ConfigError('OFFVIA_SCHEMA_TARGET_TABLES', `empty entry in ${JSON.stringify(raw)}`);
  }
  const tables = parts.map((p) => {
    try {
      return readTable({ OFFVIA_SCHEMA_TARGET_TABLES: p }, 'OFFVIA_SCHEMA_TARGET_TABLES', p);
    } catch (err) {
      if (err instanceof ConfigError) {
        throw new ConfigError('OFFVIA_SCHEMA_TARGET_TABLES', `bad entry ${JSON.stringify(p)}`);
      }
      throw err;
    }
  });
  const names = tables.map((t) => tableName(t, projectId));
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) {
    throw new ConfigError('OFFVIA_SCHEMA_TARGET_TABLES', `table ${dup} is listed twice`);
  }
  return tables;
}
