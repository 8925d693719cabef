// Security properties every rendered plan must have, checked on its commands: the deploy and teardown plans run
// them before rendering (a violation stops the plan), and the tests run them on plans altered to break each one.
// Also the retention of Bronze, Silver and gold against the replay horizon, read from the same commands.
import type { TableRef } from '../../shared/config/env';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { PIPELINES } from '../../shared/pipelines';
import { DATASET_METADATA_ROLE, INGRESS_SETTINGS } from './functions';
import { grantsOf, isDataRole } from './iam';
import { KEY_USERS, KMS_ROLE } from './kms';
import type { DeployOptions } from './options';
import { Names } from './options';
import { REFERENCE_READER_ROLE } from './pipeline-plan';
import { type Command, commandsOf, flagValue, type Step } from './steps';

const starts = (command: Command, ...words: string[]): boolean =>
  words.every((w, i) => command[i] === w);

/** Data roles on the whole project without an IAM condition, or a Firestore role conditioned on another database. */
function dataRoleViolations(steps: readonly Step[], o: DeployOptions): string[] {
  const out: string[] = [];
  const database = `resource.name=="projects/${o.project}/databases/${o.firestoreDatabase}"`;
  for (const g of grantsOf(steps)) {
    if (!isDataRole(g.role) || !g.projectLevel) continue;
    if (!g.conditioned) {
      out.push(`${g.role} to ${g.member} on the whole project`);
    } else if (/^roles\/datastore\./.test(g.role)) {
      const condition = flagValue(g.command, '--condition') ?? '';
      if (!condition.startsWith(`expression=${database},`)) {
        out.push(
          `${g.role} to ${g.member} with a condition other than database ${o.firestoreDatabase}`,
        );
      }
    }
  }
  return out;
}

/** A registered pipeline's Bronze: its subscription, writer account, table and dead-letter topic. */
interface BronzeOf {
  readonly subscription: string;
  /** `serviceAccount:EMAIL`. */
  readonly writer: string;
  /** `P:dataset.table`. */
  readonly table: string;
  /** `projects/P/topics/T`. */
  readonly deadLetter: string | undefined;
}

/** Every registered pipeline's Bronze (one per pipeline with Bronze, from its definition). */
function bronzes(o: DeployOptions): BronzeOf[] {
  const names = new Names(o);
  return PIPELINES.flatMap((p) => {
    const { bronze } = p.tables;
    const subscription = p.pubsub.subscriptions.bronze;
    const writer = p.serviceAccounts.bronze;
    if (bronze === null || subscription === null || writer === null) return [];
    const dlq = p.pubsub.bronzeDeadLetterTopic;
    return [
      {
        subscription,
        writer: `serviceAccount:${names.serviceAccountEmail(writer)}`,
        table: `${o.project}:${bronze.datasetId}.${bronze.tableId}`,
        deadLetter: dlq === null ? undefined : `projects/${o.project}/topics/${dlq}`,
      },
    ];
  });
}

/** `serviceAccount:EMAIL|P:dataset.table` pairs: each pipeline's ingest account on each of its reference tables. */
function referenceReaders(o: DeployOptions): Set<string> {
  const names = new Names(o);
  return new Set(
    PIPELINES.flatMap((p) =>
      p.tables.reference.map(
        (t) =>
          `serviceAccount:${names.serviceAccountEmail(p.serviceAccounts.ingest)}|${o.project}:${t.datasetId}.${t.tableId}`,
      ),
    ),
  );
}

/**
 * BigQuery grants wider than one table: any role but the metadata viewer on a dataset, a custom role on the project,
 * a predefined data role on a table except the Bronze writer's on its Bronze and the ingest's reader role on its
 * reference tables.
 */
function bigQueryViolations(steps: readonly Step[], o: DeployOptions): string[] {
  const out: string[] = [];
  const writers = bronzes(o);
  const readers = referenceReaders(o);
  for (const g of grantsOf(steps)) {
    if (g.projectLevel && g.role.startsWith(`projects/${o.project}/roles/`)) {
      out.push(`${g.role} to ${g.member} on the whole project`);
    }
    if (g.command[0] !== 'bq') continue;
    if (g.command.includes('--dataset') && g.role !== DATASET_METADATA_ROLE) {
      out.push(`${g.role} to ${g.member} on the whole dataset ${g.resource}`);
    }
    if (g.command.includes('--table') && isDataRole(g.role)) {
      const bronze =
        g.role === 'roles/bigquery.dataEditor' &&
        writers.some((b) => g.member === b.writer && g.resource === b.table);
      const reference =
        g.role === REFERENCE_READER_ROLE && readers.has(`${g.member}|${g.resource}`);
      if (!bronze && !reference)
        out.push(`${g.role} to ${g.member} on table ${g.resource} (reads and deletes it)`);
    }
  }
  return out;
}

/** Bronze subscription commands writing as anyone but the pipeline's Bronze writer, or dead-lettering elsewhere. */
function bronzeViolations(steps: readonly Step[], o: DeployOptions): string[] {
  const out: string[] = [];
  for (const c of steps.flatMap(commandsOf)) {
    const verb = c[3];
    if (!starts(c, 'gcloud', 'pubsub', 'subscriptions')) continue;
    if (verb !== 'create' && verb !== 'update') continue;
    const b = bronzes(o).find((x) => x.subscription === c[4]);
    if (b === undefined) continue;
    const writer = b.writer.slice('serviceAccount:'.length);
    const account = flagValue(c, '--bigquery-service-account-email');
    if (account !== writer) {
      out.push(
        `${b.subscription} ${verb} writes as ${account ?? 'the Pub/Sub service agent'}, not ${writer}`,
      );
    }
    const topic = flagValue(c, '--dead-letter-topic');
    if (topic !== b.deadLetter) {
      out.push(
        `${b.subscription} ${verb} dead-letters to ${topic ?? 'nowhere'}, not ${b.deadLetter ?? 'none'}`,
      );
    }
  }
  return out;
}

/** Firestore commands that name a database other than the system's (or none: gcloud then means `(default)`). */
function firestoreDatabaseViolations(steps: readonly Step[], o: DeployOptions): string[] {
  return steps
    .flatMap(commandsOf)
    .filter((c) => starts(c, 'gcloud', 'firestore'))
    .filter((c) => flagValue(c, '--database') !== o.firestoreDatabase)
    .map(
      (c) =>
        `${c.slice(0, 4).join(' ')} on database ${flagValue(c, '--database') ?? '(default)'}, not ${o.firestoreDatabase}`,
    );
}

/** Function deploys without `--ingress-settings=internal-only` (gcloud's default is `all`: the internet). */
function ingressViolations(steps: readonly Step[]): string[] {
  return steps
    .flatMap(commandsOf)
    .filter((c) => starts(c, 'gcloud', 'functions', 'deploy'))
    .filter((c) => flagValue(c, '--ingress-settings') !== INGRESS_SETTINGS)
    .map(
      (c) =>
        `function ${c[3]} deployed with ingress ${flagValue(c, '--ingress-settings') ?? 'all (unset)'}`,
    );
}

/** Any mention of Cloud KMS in a command: a key flag, the KMS API or a key grant. */
const KMS_MENTION = /kms|encryption-key|crypto-key|cloudkms/i;

/**
 * With `--kms-key`, a topic, function, Firestore database or dataset made or updated without the key; without it, any
 * command mentioning KMS.
 */
function kmsViolations(steps: readonly Step[], o: DeployOptions): string[] {
  const out: string[] = [];
  const key = o.kmsKey;
  for (const c of steps.flatMap(commandsOf)) {
    if (key === undefined) {
      if (c.some((a) => KMS_MENTION.test(a)))
        out.push(`${c.slice(0, 4).join(' ')} mentions KMS without --kms-key`);
      continue;
    }
    const what = c.slice(0, 4).join(' ');
    if (starts(c, 'gcloud', 'pubsub', 'topics') && (c[3] === 'create' || c[3] === 'update')) {
      if (flagValue(c, '--topic-encryption-key') !== key)
        out.push(`${what} ${c[4] ?? ''} without the key`);
    }
    if (starts(c, 'gcloud', 'functions', 'deploy')) {
      if (flagValue(c, '--kms-key') !== key)
        out.push(`function ${c[3] ?? ''} deployed without the key`);
      if (flagValue(c, '--docker-repository') === undefined) {
        out.push(
          `function ${c[3] ?? ''} deployed without a --docker-repository (the key needs one)`,
        );
      }
    }
    if (
      starts(c, 'gcloud', 'firestore', 'databases', 'create') &&
      flagValue(c, '--kms-key-name') !== key
    ) {
      out.push(`Firestore database ${flagValue(c, '--database') ?? ''} created without the key`);
    }
    // `bq mk --dataset P:D`, or `bq update P:D` (a dataset: no table after a dot).
    const dataset =
      (c.includes('mk') && c.includes('--dataset')) ||
      (c.includes('update') && /^[^.:]+:[^.]+$/.test(c.at(-1) ?? ''));
    if (c[0] === 'bq' && dataset) {
      if (flagValue(c, '--default_kms_key') !== key)
        out.push(`dataset ${c.at(-1) ?? ''} without the default key`);
    }
  }
  return out;
}

/** With `--kms-key`: each of `datasets` without the key as its default, each KEY_USERS agent without `KMS_ROLE`. */
export function kmsCoverageViolations(
  steps: readonly Step[],
  o: DeployOptions,
  datasets: readonly string[],
): string[] {
  const key = o.kmsKey;
  if (key === undefined) return [];
  const out: string[] = [];
  const commands = steps.flatMap(commandsOf);
  for (const id of datasets) {
    const keyed = commands.some(
      (c) =>
        c[0] === 'bq' &&
        c.at(-1) === `${o.project}:${id}` &&
        flagValue(c, '--default_kms_key') === key,
    );
    if (!keyed) out.push(`dataset ${id} gets no default key`);
  }
  const grants = grantsOf(steps).filter((g) => g.role === KMS_ROLE && g.resource === key);
  for (const user of KEY_USERS) {
    if (!grants.some((g) => g.member === `serviceAccount:${user.email}`)) {
      out.push(`${user.email} (${user.what}) is not granted ${KMS_ROLE} on the key`);
    }
  }
  return out;
}

/**
 * The `passenger_id` HMAC key: only a pinned secret mounted into the Pub/Sub-triggered function (never in
 * `--set-env-vars`), readable by its account alone; without the flag, no command mentions a secret.
 */
function passengerIdViolations(steps: readonly Step[], o: DeployOptions): string[] {
  const out: string[] = [];
  const all = steps.flatMap(commandsOf);
  for (const c of all) {
    if ((flagValue(c, '--set-env-vars') ?? '').includes('OFFVIA_PASSENGER_ID_HMAC_KEY')) {
      out.push(
        `${c.slice(0, 4).join(' ')} puts the passenger_id key in plain environment variables`,
      );
    }
    if (
      o.passengerIdHmacSecret === undefined &&
      c.some((a) => /PASSENGER_ID_HMAC_KEY|secretmanager|^secrets$/.test(a))
    ) {
      out.push(`${c.slice(0, 4).join(' ')} mentions a secret without --passenger-id-hmac-secret`);
    }
    if (o.passengerIdHmacSecret !== undefined && starts(c, 'gcloud', 'functions', 'deploy')) {
      const secrets = flagValue(c, '--set-secrets');
      const topic = c.some((a) => a.startsWith('--trigger-topic='));
      if (topic && !(secrets ?? '').startsWith('OFFVIA_PASSENGER_ID_HMAC_KEY=')) {
        out.push(`function ${c[3] ?? ''} deployed without the passenger_id key secret`);
      }
      if (
        topic &&
        !/(^|[,@^])OFFVIA_PASSENGER_ID_MODE=hmac-sha256([,@]|$)/.test(
          flagValue(c, '--set-env-vars') ?? '',
        )
      ) {
        out.push(`function ${c[3] ?? ''} deployed without OFFVIA_PASSENGER_ID_MODE=hmac-sha256`);
      }
      if (!topic && secrets !== undefined)
        out.push(`function ${c[3] ?? ''} gets a secret it does not use`);
    }
  }
  for (const g of grantsOf(steps)) {
    if (
      g.role === 'roles/secretmanager.secretAccessor' &&
      (g.projectLevel || !starts(g.command, 'gcloud', 'secrets'))
    ) {
      out.push(`${g.role} to ${g.member} on ${g.resource}, not on the one secret`);
    }
  }
  return out;
}

/**
 * The replay horizon the docs promise, days: how far back `offvia replay` reads Bronze and `gold restate` reads Silver
 * (docs/backfill.md#replay-horizon). Unlimited: Bronze, Silver and gold keep every partition.
 */
export const REPLAY_HORIZON_DAYS = Number.POSITIVE_INFINITY;

/**
 * How long a table or dataset keeps data as the plan's steps set it, days (`null`: kept, no expiry), with the step
 * title that set each. A dataset's `default_*` options stand for the tables it holds that set none of their own.
 */
export interface Retention {
  /** `partition_expiration_days` (datasets: `default_partition_expiration_days`). */
  partitionDays: number | null;
  partitionStep: string;
  /** Days from now to `expiration_timestamp` (datasets: `default_table_expiration_days`). */
  tableDays: number | null;
  tableStep: string;
}

const SECONDS_PER_DAY = 86_400;

/** An option's value in days: `NULL` is none, a number as is, a TIMESTAMP '…' as days from `nowMs`. */
function optionDays(text: string, nowMs: number): number | null {
  const value = text.trim();
  if (/^NULL$/i.test(value)) return null;
  const timestamp = /^TIMESTAMP\s*['"]([^'"]+)['"]$/i.exec(value);
  if (timestamp?.[1] !== undefined)
    return (Date.parse(timestamp[1]) - nowMs) / (SECONDS_PER_DAY * 1000);
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

/** Expiry options of a DDL statement's `OPTIONS (…)` (comments removed): option name to its value text. */
function expiryOptions(statement: string): Map<string, string> {
  const out = new Map<string, string>();
  const re =
    /\b(partition_expiration_days|expiration_timestamp|default_table_expiration_days|default_partition_expiration_days)\s*=\s*(NULL|TIMESTAMP\s*'[^']*'|TIMESTAMP\s*"[^"]*"|[0-9.]+)/gi;
  for (const m of statement.matchAll(re)) out.set((m[1] ?? '').toLowerCase(), m[2] ?? '');
  return out;
}

/**
 * Every table's (`dataset.table`) and dataset's (`dataset`) retention as the plan's commands set it, step by step (a
 * later step wins): the DDL of `bq query` steps (`CREATE`/`ALTER` `TABLE`/`SCHEMA` with `partition_expiration_days`,
 * `expiration_timestamp`, `default_*_expiration_days`) and `bq mk`/`bq update` flags (`--time_partitioning_expiration`,
 * `--expiration`, `--default_table_expiration`, `--default_partition_expiration`, seconds). Wherever the expiry comes
 * from (the DDL files, a flag, the pipeline definition), it reaches BigQuery through these steps, so this is the one
 * place it is read. `nowMs` turns an `expiration_timestamp` into days.
 */
export function retentionsOf(steps: readonly Step[], nowMs: number): Map<string, Retention> {
  const out = new Map<string, Retention>();
  const set = (id: string, key: 'partition' | 'table', days: number | null, step: string) => {
    const r = out.get(id) ?? {
      partitionDays: null,
      partitionStep: '',
      tableDays: null,
      tableStep: '',
    };
    if (key === 'partition') Object.assign(r, { partitionDays: days, partitionStep: step });
    else Object.assign(r, { tableDays: days, tableStep: step });
    out.set(id, r);
  };
  for (const step of steps) {
    for (const c of commandsOf(step)) {
      if (c[0] !== 'bq') continue;
      if (c.includes('query')) {
        const sql = (c.at(-1) ?? '').replace(/--[^\n]*/g, '');
        for (const statement of sql.split(';')) {
          const target =
            /\b(?:CREATE\s+(?:OR\s+REPLACE\s+)?|ALTER\s+)(TABLE|SCHEMA)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?`([^`]+)`/i.exec(
              statement,
            );
          if (target === null) continue;
          // `project.dataset[.table]` without the project.
          const id = (target[2] ?? '').split('.').slice(1).join('.');
          for (const [name, value] of expiryOptions(statement)) {
            const days = optionDays(value, nowMs);
            const key = /partition/.test(name) ? 'partition' : 'table';
            set(id, key, days, step.title);
          }
        }
        continue;
      }
      // `P:dataset[.table]`, the last argument of `bq mk` / `bq update`.
      const id = (c.at(-1) ?? '').split(':')[1];
      if (id === undefined) continue;
      const flags: [string, 'partition' | 'table'][] = [
        ['--time_partitioning_expiration', 'partition'],
        ['--default_partition_expiration', 'partition'],
        ['--expiration', 'table'],
        ['--default_table_expiration', 'table'],
      ];
      for (const [flag, key] of flags) {
        const seconds = flagValue(c, flag);
        if (seconds === undefined) continue;
        const n = Number(seconds);
        set(id, key, n > 0 ? n / SECONDS_PER_DAY : null, step.title);
      }
    }
  }
  return out;
}

/** What the retention check found: `refusals` stop the plan, `warnings` go into its header; each one line. */
export interface RetentionFindings {
  refusals: string[];
  warnings: string[];
}

/**
 * Bronze, Silver and gold retention against {@link REPLAY_HORIZON_DAYS}, for the plan's pipelines. Bronze (the
 * replay's source) or Silver (`gold restate`'s source) keeping less refuses the plan; gold keeping less is a
 * warning (it is restated from Silver). A table with no expiry of its own takes its dataset's default.
 */
export function retentionFindings(
  steps: readonly Step[],
  pipelines: readonly Pick<AnyPipelineDefinition, 'name' | 'tables' | 'aggregations'>[],
  nowMs: number,
  horizonDays = REPLAY_HORIZON_DAYS,
): RetentionFindings {
  const retentions = retentionsOf(steps, nowMs);
  const findings: RetentionFindings = { refusals: [], warnings: [] };
  const horizon = Number.isFinite(horizonDays) ? `${horizonDays} days` : 'unlimited';
  for (const p of pipelines) {
    const layers: [string, TableRef | null, string[]][] = [
      ['Bronze', p.tables.bronze, findings.refusals],
      ['Silver', p.tables.silver, findings.refusals],
      ...p.aggregations.map((a): [string, TableRef, string[]] => [
        `gold (${a.name})`,
        a.goldTable,
        findings.warnings,
      ]),
    ];
    for (const [layer, ref, into] of layers) {
      if (ref === null) continue;
      const id = `${ref.datasetId}.${ref.tableId}`;
      const own = retentions.get(id);
      const dataset = retentions.get(ref.datasetId);
      const kinds: [string, number | null, string][] = [
        [
          'partitions expire after',
          own?.partitionDays ?? dataset?.partitionDays ?? null,
          own?.partitionDays == null ? (dataset?.partitionStep ?? '') : own.partitionStep,
        ],
        [
          'the table expires in',
          own?.tableDays ?? dataset?.tableDays ?? null,
          own?.tableDays == null ? (dataset?.tableStep ?? '') : own.tableStep,
        ],
      ];
      for (const [what, days, step] of kinds) {
        if (days === null || days >= horizonDays) continue;
        into.push(
          `${p.name} ${layer} ${id}: ${what} ${Number(days.toFixed(2))} days (step "${step}"), shorter than the replay horizon (${horizon}, docs/backfill.md#replay-horizon)`,
        );
      }
    }
  }
  return findings;
}

/** Every violation of the security properties in a deploy or teardown plan's steps; empty when there is none. */
export function planViolations(steps: readonly Step[], o: DeployOptions): string[] {
  return [
    ...dataRoleViolations(steps, o),
    ...bigQueryViolations(steps, o),
    ...bronzeViolations(steps, o),
    ...firestoreDatabaseViolations(steps, o),
    ...ingressViolations(steps),
    ...kmsViolations(steps, o),
    ...passengerIdViolations(steps, o),
  ];
}

/** @throws Error listing the violations of planViolations, when there are any. */
export function assertPlanSecure(steps: readonly Step[], o: DeployOptions): void {
  const violations = planViolations(steps, o);
  if (violations.length > 0) {
    throw new Error(`the plan violates its security properties:\n  ${violations.join('\n  ')}`);
  }
}
