// The OFFVIA_* environment every deployed function gets (`--set-env-vars`), validated at plan time by the same
// loaders the functions run at cold start, so a bad value stops the deploy instead of crash-looping an instance.
import { DEFAULT_FIRESTORE_DATABASE, loadIngestConfig } from '../../shared/config/ingest-config';
import { loadSchemaDriftConfig } from '../../shared/config/schema-drift-config';
import { loadWindowConfig } from '../../shared/config/window-config';
import { loadCoalescingConfig } from '../../shared/config/coalescing-config';
import { PASSENGER_ID_VARS } from '../../shared/config/passenger-id-config';
import type { FunctionsConfig } from './functions';

/** Set explicitly (the code's defaults) so the console shows them and every function reads the same set. */
export const FUNCTION_ENV_DEFAULTS: Readonly<Record<string, string>> = {
  OFFVIA_SILVER_TABLE: 'offvia_silver.fact_bookings',
  OFFVIA_QUARANTINE_TABLE: 'offvia_quarantine.poisoned_events',
  OFFVIA_BAD_DATA_TABLE: 'offvia_quarantine.bad_data',
  OFFVIA_SCHEMA_DRIFT: 'true',
  OFFVIA_SCHEMA_MODE: 'apply',
  OFFVIA_SCHEMA_WINDOW_MINUTES: '3',
  OFFVIA_SCHEMA_RETRY_MINUTES: '30',
  OFFVIA_SCHEMA_TARGET_TABLES: 'offvia_silver.fact_bookings',
  OFFVIA_SCHEMA_DDL_STYLE: 'single',
  OFFVIA_SCHEMA_FIRESTORE_ROOT: 'offviaSchemaDrift',
  OFFVIA_GOLD_TABLE: 'offvia_gold.route_panes',
};

const OVERRIDABLE = /^OFFVIA_[A-Z0-9_]+$/;

/**
 * The functions' environment: the defaults, `overrides` (`--env`), OFFVIA_PROJECT_ID, OFFVIA_FIRESTORE_DATABASE
 * (the one the grants reach), and OFFVIA_PASSENGER_ID_MODE=hmac-sha256 when `pseudonymisePassengerId` (the key
 * itself comes as a secret).
 * @returns the variables sorted by name, and the configuration they parse to.
 * @throws Error for a key outside OFFVIA_*, for OFFVIA_PROJECT_ID (it is `--project`),
 * OFFVIA_FIRESTORE_DATABASE (it is `--firestore-database`), OFFVIA_PASSENGER_ID_MODE or
 * OFFVIA_PASSENGER_ID_HMAC_KEY (they are `--passenger-id-hmac-secret`), or a ConfigError naming the first bad value.
 */
export function functionEnv(
  project: string,
  overrides: Readonly<Record<string, string>>,
  firestoreDatabase: string = DEFAULT_FIRESTORE_DATABASE,
  pseudonymisePassengerId = false,
): { vars: [string, string][]; config: FunctionsConfig } {
  for (const key of Object.keys(overrides)) {
    if (!OVERRIDABLE.test(key)) throw new Error(`--env ${key}: only OFFVIA_* variables can be set`);
    if (key === 'OFFVIA_PROJECT_ID') throw new Error('--env OFFVIA_PROJECT_ID: use --project');
    if (key === 'OFFVIA_FIRESTORE_DATABASE') {
      throw new Error('--env OFFVIA_FIRESTORE_DATABASE: use --firestore-database');
    }
    if (key === PASSENGER_ID_VARS.mode.name || key === PASSENGER_ID_VARS.key.name) {
      throw new Error(
        `--env ${key}: use --passenger-id-hmac-secret (the key is a Secret Manager secret)`,
      );
    }
  }
  const env: Record<string, string> = {
    ...FUNCTION_ENV_DEFAULTS,
    ...overrides,
    OFFVIA_PROJECT_ID: project,
    OFFVIA_FIRESTORE_DATABASE: firestoreDatabase,
    ...(pseudonymisePassengerId ? { [PASSENGER_ID_VARS.mode.name]: 'hmac-sha256' } : {}),
  };
  const ingest = loadIngestConfig(env);
  const drift = loadSchemaDriftConfig(env, ingest.silverTable, ingest.projectId);
  const window = loadWindowConfig(env);
  // Validated here too, so a bad --env OFFVIA_BQ_COALESCE* fails the plan instead of the instance's cold start.
  loadCoalescingConfig(env);
  const vars = Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { vars, config: { ingest, drift, window } };
}

/**
 * The value of `--set-env-vars`. Values may hold commas (OFFVIA_SCHEMA_TARGET_TABLES), so a list with one uses
 * gcloud's alternate-delimiter syntax (`^@^A=1@B=x,y`, see `gcloud topic escaping`).
 * @throws Error when every candidate delimiter appears in some value.
 */
export function setEnvVarsValue(vars: readonly (readonly [string, string])[]): string {
  const pairs = vars.map(([k, v]) => `${k}=${v}`);
  if (!pairs.some((p) => p.includes(','))) return pairs.join(',');
  const delimiter = ['@', ';', '|', '#'].find((d) => !pairs.some((p) => p.includes(d)));
  if (delimiter === undefined)
    throw new Error('no delimiter for --set-env-vars: values use , @ ; | and #');
  return `^${delimiter}^${pairs.join(delimiter)}`;
}
