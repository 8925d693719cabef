// Typed readers for environment variables: each failure is a ConfigError naming the variable.
import { ConfigError } from '../errors';

/** The environment to read from; `process.env` in production, a plain object in tests. */
export type Env = Readonly<Record<string, string | undefined>>;

/** A non-empty string, or `fallback` when unset/empty. */
export function readString(env: Env, name: string, fallback: string): string {
  return readOptionalString(env, name) ?? fallback;
}

/** An optional non-empty string, `undefined` when unset/empty. */
export function readOptionalString(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

/**
 * An integer within [min, max], or `fallback` when unset/empty.
 * @throws ConfigError when the value is not a base-10 integer or out of range.
 */
export function readInt(
  env: Env,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const text = raw.trim();
  if (!/^-?\d+$/.test(text))
    throw new ConfigError(name, `expected an integer, got ${JSON.stringify(raw)}`);
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `expected an integer in [${min}, ${max}], got ${text}`);
  }
  return value;
}

/**
 * A boolean: `true/false/1/0/yes/no` (case-insensitive), or `fallback` when unset/empty.
 * @throws ConfigError on any other value.
 */
export function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const text = raw.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(text)) return true;
  if (['false', '0', 'no'].includes(text)) return false;
  throw new ConfigError(name, `expected true or false, got ${JSON.stringify(raw)}`);
}

/** A BigQuery table reference: project (optional; the client's project when absent), dataset and table ids. */
export interface TableRef {
  projectId?: string;
  datasetId: string;
  tableId: string;
}

const ID = /^[A-Za-z_][A-Za-z0-9_]{0,1023}$/;
const PROJECT = /^[a-z][a-z0-9.:-]{4,61}[a-z0-9]$/;

/**
 * A table as `dataset.table` or `project.dataset.table`, or `fallback`.
 * @throws ConfigError when the text is not such a reference (BigQuery dataset/table id rules: letters, digits,
 * underscores).
 */
export function readTable(env: Env, name: string, fallback: string): TableRef {
  const text = readString(env, name, fallback);
  const parts = text.split('.');
  const [a, b, c] = parts;
  if (parts.length === 2 && a !== undefined && b !== undefined && ID.test(a) && ID.test(b)) {
    return { datasetId: a, tableId: b };
  }
  if (parts.length === 3 && a && b && c && PROJECT.test(a) && ID.test(b) && ID.test(c)) {
    return { projectId: a, datasetId: b, tableId: c };
  }
  throw new ConfigError(
    name,
    `expected dataset.table or project.dataset.table, got ${JSON.stringify(text)}`,
  );
}

/** `project.dataset.table` (or `dataset.table` without a project) for logs and the bad-data `target_dest`. */
export function tableName(ref: TableRef, defaultProject?: string): string {
  const project = ref.projectId ?? defaultProject;
  return project ? `${project}.${ref.datasetId}.${ref.tableId}` : `${ref.datasetId}.${ref.tableId}`;
}
