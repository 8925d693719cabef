// Where `offvia` connects: the local stack (its env file) or a Google Cloud project (Application Default
// Credentials), with the same clients and the same table names the functions use.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BigQuery } from '@google-cloud/bigquery';
import { Firestore } from '@google-cloud/firestore';
import { tableName, type Env, type TableRef } from '../config/env';
import { loadIngestConfig, type IngestConfig } from '../config/ingest-config';
import { loadWindowConfig, type WindowConfig } from '../config/window-config';
import { loadSchemaDriftConfig, type SchemaDriftConfig } from '../config/schema-drift-config';
import { ConfigError } from '../errors';
import { OpsError, UsageError, describeBackendError } from './errors';
import { firestoreClient } from '../drift/runtime';
import { configuredDefinition, type AnyPipelineDefinition } from '../pipeline/definition';
import { BOOKING_PIPELINE } from '../pipelines/booking/definition';

/** The emulator variables of the stack's env file; dropped when `--project` targets a real project. */
const EMULATOR_VARIABLES = [
  'PUBSUB_EMULATOR_HOST',
  'FIRESTORE_EMULATOR_HOST',
  'BIGQUERY_EMULATOR_HOST',
] as const;

/** Longest a single backend call may take before `offvia` reports the backend as unreachable, ms. */
const BACKEND_DEADLINE_MS = 20_000;

/** Everything a command needs to read and write the pipeline's state. */
export interface OpsContext {
  /** `local`: the emulators of the local stack; `cloud`: a real project through ADC. */
  readonly mode: 'local' | 'cloud';
  readonly projectId: string;
  /** The environment the functions would see (the stack's env file merged over the process environment). */
  readonly env: Env;
  readonly ingest: IngestConfig;
  readonly windows: WindowConfig;
  readonly drift: SchemaDriftConfig;
  /** The pipeline the command works on, with this deployment's OFFVIA_* overrides (`configuredDefinition`). */
  readonly pipeline: AnyPipelineDefinition;
  /** `project.dataset.table` of the pipeline's layers (`gold`: its first aggregation's table). */
  readonly tables: OpsTables;
  readonly bigquery: BigQuery;
  /** Created on first use (the Firestore client opens a gRPC channel). */
  firestore(): Firestore;
  /** Local stack only: the directory of the functions' logs (`.local/stack/logs`). */
  readonly logsDir: string | undefined;
  /** Where the backends are, for error messages: e.g. `BigQuery emulator http://127.0.0.1:9050`. */
  readonly describe: { bigquery: string; firestore: string; hint: string };
  /** Closes the clients (so the process can exit). */
  close(): Promise<void>;
}

/** Fully qualified names (`project.dataset.table`) of the layers; the open views sit beside their tables. */
export interface OpsTables {
  bronze: string;
  silver: string;
  quarantine: string;
  quarantineOpen: string;
  badData: string;
  badDataOpen: string;
  gold: string;
}

/**
 * What selects the target (global flags): `--project` (ADC, the local stack ignored), `--stack-dir` (default
 * OFFVIA_STACK_DIR, else `.local/stack`), and the pipeline of `--pipeline` (default booking) before its configuration.
 */
export interface ConnectOptions {
  readonly project?: string | undefined;
  readonly stackDir?: string | undefined;
  readonly pipeline?: AnyPipelineDefinition | undefined;
}

/** The repository root (this file is shared/ops/context.ts, or build/shared/ops/context.js). */
export function repositoryRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) {
    dir = path.dirname(dir);
  }
  return dir;
}

/** The default local stack directory: OFFVIA_STACK_DIR, else `.local/stack` at the repository root. */
export function defaultStackDir(env: Env = process.env): string {
  return env.OFFVIA_STACK_DIR ?? path.join(repositoryRoot(), '.local', 'stack');
}

/** Parses the stack's env file: `export NAME=value` lines, quotes around a value removed, other lines ignored. */
export function parseStackEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!match?.[1]) continue;
    let value = (match[2] ?? '').trim();
    if (/^(['"]).*\1$/.test(value)) value = value.slice(1, -1);
    out[match[1]] = value;
  }
  return out;
}

/**
 * The environment for the target: with `project`, the process environment without the emulator variables; else the
 * stack's env file over it, or (no env file, no `--stack-dir`) the emulator variables already set.
 * @throws UsageError when there is neither a local stack nor `--project`.
 */
export function targetEnv(
  options: ConnectOptions,
  processEnv: Env = process.env,
): { mode: 'local' | 'cloud'; env: Record<string, string | undefined>; stackDir: string } {
  const stackDir = options.stackDir ?? defaultStackDir(processEnv);
  if (options.project !== undefined) {
    const env: Record<string, string | undefined> = { ...processEnv };
    for (const name of EMULATOR_VARIABLES) delete env[name];
    env.OFFVIA_PROJECT_ID = options.project;
    env.GOOGLE_CLOUD_PROJECT = options.project;
    return { mode: 'cloud', env, stackDir };
  }
  const file = path.join(stackDir, 'env');
  if (existsSync(file)) {
    return {
      mode: 'local',
      env: { ...processEnv, ...parseStackEnv(readFileSync(file, 'utf8')) },
      stackDir,
    };
  }
  // An explicit --stack-dir names one stack: the shell's emulator variables may belong to another.
  if (options.stackDir === undefined && processEnv.BIGQUERY_EMULATOR_HOST)
    return { mode: 'local', env: { ...processEnv }, stackDir };
  throw new UsageError(
    `no local stack (${file} not found) and no --project: start the stack with 'npm run stack:up' or pass --project ID`,
  );
}

/**
 * Connects to the target. Locally the stack's variables also go into `process.env`, where the Google clients and
 * the ingest path read the emulator hosts.
 * @throws UsageError without a target; OpsError for a bad configuration variable.
 */
export function connect(
  options: ConnectOptions,
  processEnv: NodeJS.ProcessEnv = process.env,
): OpsContext {
  const { mode, env, stackDir } = targetEnv(options, processEnv);
  let ingest: IngestConfig;
  let windows: WindowConfig;
  let drift: SchemaDriftConfig;
  let pipeline: AnyPipelineDefinition;
  try {
    pipeline = configuredDefinition(
      options.pipeline ?? (BOOKING_PIPELINE as unknown as AnyPipelineDefinition),
      env,
    );
    ingest = loadIngestConfig(env);
    windows = loadWindowConfig(env);
    drift = loadSchemaDriftConfig(env, ingest.silverTable, ingest.projectId);
  } catch (err) {
    if (err instanceof ConfigError) throw new OpsError(`configuration: ${err.message}`);
    throw err;
  }
  const projectId = ingest.projectId;
  if (projectId === undefined) {
    throw new UsageError('no project: pass --project ID (or set OFFVIA_PROJECT_ID)');
  }
  if (mode === 'local') {
    for (const [name, value] of Object.entries(env)) {
      if (value !== undefined) processEnv[name] = value;
    }
    processEnv.OFFVIA_PROJECT_ID = projectId;
    processEnv.GOOGLE_CLOUD_PROJECT = projectId;
  } else {
    for (const name of EMULATOR_VARIABLES) delete processEnv[name];
  }
  const bigquery = new BigQuery({
    projectId,
    ...(ingest.bigQueryEndpoint ? { apiEndpoint: ingest.bigQueryEndpoint, autoRetry: false } : {}),
  });
  let firestore: Firestore | undefined;
  const hint =
    mode === 'local'
      ? "is the local stack up? 'bash deploy/local/stack.sh status'"
      : 'check --project and Application Default Credentials (gcloud auth application-default login)';
  const { bronze, silver, quarantine, badData } = pipeline.tables;
  const q = (ref: TableRef, tableId = ref.tableId): string =>
    tableName({ ...ref, tableId }, projectId);
  const tables: OpsTables = {
    // A pipeline without Bronze: `replay` refuses it (pipeline-choice.ts); status and trace find no such table.
    bronze: q(bronze ?? { datasetId: `${silver.datasetId}_bronze`, tableId: 'absent' }),
    silver: q(silver),
    quarantine: q(quarantine),
    quarantineOpen: q(quarantine, `${quarantine.tableId}_open`),
    badData: q(badData),
    badDataOpen: q(badData, `${badData.tableId}_open`),
    gold: q(pipeline.aggregations[0]?.goldTable ?? windows.goldTable),
  };
  return {
    mode,
    projectId,
    env,
    ingest,
    windows,
    drift,
    pipeline,
    tables,
    bigquery,
    firestore() {
      // The functions' own database (OFFVIA_FIRESTORE_DATABASE), not `(default)`.
      firestore ??= firestoreClient(projectId, ingest.firestoreDatabase);
      return firestore;
    },
    logsDir: mode === 'local' ? path.join(stackDir, 'logs') : undefined,
    describe: {
      bigquery:
        mode === 'local' ? `the BigQuery emulator (${env.BIGQUERY_EMULATOR_HOST})` : 'BigQuery',
      firestore:
        mode === 'local' ? `the Firestore emulator (${env.FIRESTORE_EMULATOR_HOST})` : 'Firestore',
      hint,
    },
    async close() {
      await firestore?.terminate();
    },
  };
}

/** Rows of a query, as plain objects; a failure becomes one line naming BigQuery and the hint. */
export async function query<T = Record<string, unknown>>(
  ctx: OpsContext,
  sql: string,
  params: Record<string, unknown> = {},
  types?: Record<string, string | string[]>,
): Promise<T[]> {
  try {
    // The client's type names two elements; at run time the third is the API response (queryFailure).
    const [rows, , response] = (await withDeadline(
      ctx.bigquery.query({
        query: sql,
        params,
        ...(types ? { types } : {}),
        // Against a project the job runs where its tables are, unless OFFVIA_BQ_LOCATION pins it.
        ...(ctx.mode === 'cloud' && ctx.env.OFFVIA_BQ_LOCATION
          ? { location: ctx.env.OFFVIA_BQ_LOCATION }
          : {}),
      }),
      BACKEND_DEADLINE_MS * 3,
      ctx.describe.bigquery,
    )) as unknown as [unknown[], unknown, unknown];
    const failure = queryFailure(response);
    if (failure !== undefined) throw new Error(failure);
    return rows as T[];
  } catch (err) {
    throw describeBackendError(ctx.describe.bigquery, err, ctx.describe.hint);
  }
}

/**
 * The error of a query completed without a result (`errors`, no schema): the emulator answers a bad query with HTTP
 * 200 and no rows, which would read as "0 rows". With a schema, `errors` are warnings.
 */
function queryFailure(response: unknown): string | undefined {
  if (typeof response !== 'object' || response === null) return undefined;
  const { errors, schema } = response as { errors?: unknown; schema?: { fields?: unknown } };
  if (!Array.isArray(errors) || errors.length === 0) return undefined;
  if (Array.isArray(schema?.fields) && schema.fields.length > 0) return undefined;
  return errors
    .map(
      (e: { reason?: unknown; message?: unknown }) => `${String(e.reason)}: ${String(e.message)}`,
    )
    .join('; ')
    .replace(/\s+/g, ' ');
}

/** A Firestore call with a deadline: the client retries an unreachable emulator for minutes otherwise. */
export async function firestoreCall<T>(
  ctx: OpsContext,
  what: string,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await withDeadline(call(), BACKEND_DEADLINE_MS, ctx.describe.firestore);
  } catch (err) {
    throw describeBackendError(`${ctx.describe.firestore} (${what})`, err, ctx.describe.hint);
  }
}

/** Resolves as `promise` does, or rejects with "timed out after N ms" (the call goes on in the background). */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
  });
  promise.catch(() => undefined);
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
