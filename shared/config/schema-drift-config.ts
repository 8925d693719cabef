// Configuration of schema drift (ingest gate and schemaSweep), read from the environment once at cold start.
import { ConfigError } from '../errors';
import { type Env, type TableRef, readOptionalString, readTable, tableName } from './env';
import {
  type VarGroup,
  type VarValues,
  boolVar,
  choiceVar,
  nameVar,
  readChoiceVar,
  readVars,
  tableListVar,
  countVar,
  minutesVar,
  msVar,
} from './spec';

/** Whether the sweep applies planned changes (`apply`) or only records them on the change (`propose`). */
export type SchemaMode = 'propose' | 'apply';

/**
 * How a change is sent to BigQuery: `single`, one `ALTER TABLE` adding every column (one table metadata update);
 * `per_column`, one statement per column, for the local emulator (one ALTER command per statement).
 */
export type DdlStyle = 'single' | 'per_column';

/**
 * Everything the drift gate and the schema sweep need. The fields named in `PLAIN_DRIFT_KEYS` are the variables of
 * `SCHEMA_DRIFT_VARS` as read (meaning, default, range and unit there: `…Minutes` in minutes, `…Ms` in ms).
 */
export interface SchemaDriftConfig extends VarValues<typeof SCHEMA_DRIFT_VARS, PlainDriftKey> {
  /** Tables drift rows may target; configuration only, never a payload (`OFFVIA_SCHEMA_TARGET_TABLES`). */
  targetTables: TableRef[];
  /** `OFFVIA_SCHEMA_DDL_STYLE`; default `per_column` with BIGQUERY_EMULATOR_HOST set, else `single`. */
  ddlStyle: DdlStyle;
}

/** The variables a `SchemaDriftConfig` carries as read, in the order they are checked. */
const PLAIN_DRIFT_KEYS = [
  'enabled',
  'firestoreRoot',
  'windowMinutes',
  'retryMinutes',
  'mode',
  'windowGraceMs',
  'maxNewColumnsPerWindow',
  'maxColumnsPerTable',
  'maxNewFieldsPerEvent',
  'maxProposedFieldsPerWindow',
  'schemaCacheTtlMs',
  'leaseMs',
  'minUpdateIntervalMs',
  'sweepMaxRows',
] as const;
type PlainDriftKey = (typeof PLAIN_DRIFT_KEYS)[number];

const WEEK_MINUTES = 7 * 24 * 60;
const HOUR_MS = 3_600_000;
/** Firestore collection ids: no `/`, not `.`/`..`, not `__…__`; we keep to a plain alphabet. */
const COLLECTION_ID = /^[A-Za-z][A-Za-z0-9_-]{0,99}$/;

/** The variables `loadSchemaDriftConfig` reads; docs/configuration.md is generated from these specs. */
export const SCHEMA_DRIFT_VARS = {
  enabled: boolVar({
    name: 'OFFVIA_SCHEMA_DRIFT',
    default: true,
    meaning:
      'the schema-drift gate in `ingestBooking`; `false`: fields outside the contract are ignored, as in the lab',
  }),
  mode: choiceVar<SchemaMode>({
    name: 'OFFVIA_SCHEMA_MODE',
    choices: ['propose', 'apply'],
    default: 'apply',
    meaning:
      "`apply`: the sweep adds columns; `propose`: it records each window's plan on the change and adds nothing",
  }),
  windowMinutes: minutesVar([1, 60], {
    name: 'OFFVIA_SCHEMA_WINDOW_MINUTES',
    default: 3,
    meaning: "schema-change window (the bad-data design's default; 1–5 for high volume)",
  }),
  // A row waits up to one window for its window to close, then for the sweep that applies the change and retries
  // it: a budget under two windows sends rows to bad data before their column could exist.
  retryMinutes: minutesVar([0, WEEK_MINUTES], {
    name: 'OFFVIA_SCHEMA_RETRY_MINUTES',
    default: 30,
    rangeText: '0 (no retries) or at least two schema windows',
    meaning:
      'retry budget from first receipt for retryable errors (default: 10 windows of 3 min); then bad data. ' +
      'Permanent errors go to bad data at once',
  }),
  windowGraceMs: msVar([0, 300_000], {
    name: 'OFFVIA_SCHEMA_WINDOW_GRACE_MS',
    default: 10_000,
    meaning: 'a window is swept this long after its end, so late proposals still land in it',
  }),
  targetTables: tableListVar({
    name: 'OFFVIA_SCHEMA_TARGET_TABLES',
    defaultText: 'the Silver table',
    meaning:
      'comma-separated tables drift may change (configuration only, never a payload); must include Silver while ' +
      'drift is on',
  }),
  maxNewColumnsPerWindow: countVar([0, 10_000], {
    name: 'OFFVIA_SCHEMA_MAX_NEW_COLUMNS_PER_WINDOW',
    default: 10,
    meaning: "columns one window's update may add to a table; the rest wait for a later window",
  }),
  maxColumnsPerTable: countVar([1, 10_000], {
    name: 'OFFVIA_SCHEMA_MAX_COLUMNS_PER_TABLE',
    default: 1000,
    meaning: 'columns a target table may reach (BigQuery allows 10,000)',
  }),
  maxNewFieldsPerEvent: countVar([0, 10_000], {
    name: 'OFFVIA_SCHEMA_MAX_NEW_FIELDS_PER_EVENT',
    default: 20,
    meaning:
      'an event with more not-yet-column fields is a flood: it proposes none of them (`FIELD_FLOOD`)',
  }),
  maxProposedFieldsPerWindow: countVar([1, 2000], {
    name: 'OFFVIA_SCHEMA_MAX_PROPOSED_FIELDS_PER_WINDOW',
    default: 200,
    meaning:
      'distinct fields one pending change holds (bounds the Firestore document); a field past it is `PROPOSAL_CAP`',
  }),
  schemaCacheTtlMs: msVar([0, HOUR_MS], {
    name: 'OFFVIA_SCHEMA_CACHE_TTL_MS',
    default: 60_000,
    meaning: 'how long `ingestBooking` trusts a cached table schema',
  }),
  ddlStyle: choiceVar<DdlStyle>({
    name: 'OFFVIA_SCHEMA_DDL_STYLE',
    choices: ['single', 'per_column'],
    default: 'single',
    defaultText: '`single`; `per_column` when `BIGQUERY_EMULATOR_HOST` is set',
    meaning:
      'one `ALTER TABLE` with every column (one metadata update, what BigQuery wants), or one per column (the ' +
      'local emulator takes one ALTER command per statement)',
  }),
  leaseMs: msVar([10_000, HOUR_MS], {
    name: 'OFFVIA_SCHEMA_LEASE_MS',
    default: 120_000,
    meaning: "the sweep's lease per table, renewed before every write step",
  }),
  minUpdateIntervalMs: msVar([0, HOUR_MS], {
    name: 'OFFVIA_SCHEMA_MIN_UPDATE_INTERVAL_MS',
    default: 10_000,
    meaning:
      'least time between two updates of one table (BigQuery allows 5 table metadata updates per 10 s per table)',
  }),
  sweepMaxRows: countVar([1, 100_000], {
    name: 'OFFVIA_SCHEMA_SWEEP_MAX_ROWS',
    default: 5000,
    meaning: 'waiting rows one sweep retries per table, oldest first',
  }),
  firestoreRoot: nameVar({
    name: 'OFFVIA_SCHEMA_FIRESTORE_ROOT',
    default: 'offviaSchemaDrift',
    pattern: COLLECTION_ID,
    patternText: 'a Firestore collection id: a letter, then up to 99 letters, digits, `_` or `-`',
    meaning:
      'root collection of the drift state (retry store, pending changes, leases, audit records)',
  }),
} as const;

/** The reference section of the schema-drift variables. */
export const SCHEMA_DRIFT_VAR_GROUP: VarGroup = {
  title: 'Schema drift and the schema sweep',
  intro:
    'Read by `ingestBooking` (the gate) and `schemaSweep`, which must agree on the window; see ' +
    '[schema drift](schema-drift.md).',
  vars: Object.values(SCHEMA_DRIFT_VARS),
};

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
  const v = SCHEMA_DRIFT_VARS;
  const plain = readVars(env, v, PLAIN_DRIFT_KEYS);
  const targetTables = readTargetTables(env, silverTable, projectId);
  const silverName = tableName(silverTable, projectId);
  if (plain.enabled && !targetTables.some((t) => tableName(t, projectId) === silverName)) {
    throw new ConfigError(
      'OFFVIA_SCHEMA_TARGET_TABLES',
      `must include the Silver table ${silverName} while OFFVIA_SCHEMA_DRIFT is on (or turn drift off)`,
    );
  }
  const { windowMinutes, retryMinutes } = plain;
  if (retryMinutes > 0 && retryMinutes < 2 * windowMinutes) {
    throw new ConfigError(
      'OFFVIA_SCHEMA_RETRY_MINUTES',
      `${retryMinutes} min is less than two schema windows (OFFVIA_SCHEMA_WINDOW_MINUTES=${windowMinutes}), so ` +
        `rows would reach bad data before their column could be added; use 0 (no retries) or at least ` +
        `${2 * windowMinutes}`,
    );
  }
  const emulator = readOptionalString(env, 'BIGQUERY_EMULATOR_HOST') !== undefined;
  return {
    ...plain,
    targetTables,
    ddlStyle: readChoiceVar(env, v.ddlStyle, emulator ? 'per_column' : undefined),
  };
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
