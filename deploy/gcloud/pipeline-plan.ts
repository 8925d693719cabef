// How each registered pipeline is deployed and torn down: one step generator per concept, each iterating over the
// selected pipelines' deployments. Project-wide steps are deploy-plan.ts's.
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { TableRef } from '../../shared/config/env';
import { loadWindowConfig } from '../../shared/config/window-config';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { HEARTBEAT_ATTRIBUTE } from '../../shared/pubsub/message';
import { pipelineFirestoreRoots } from '../../shared/pipeline/registry-checks';
import { pipelineSchedules, type Schedule } from '../schedules';
import { addMonitoringDashboard, DASHBOARD_VARIABLE } from './dashboard';
import { setEnvVarsValue } from './env';
import {
  assertLoopFitsSchedule,
  attemptDeadlineSeconds,
  deployedTimeoutSeconds,
} from './fire-windows-timeout';
import {
  CUSTOM_ROLES,
  DATASET_METADATA_ROLE,
  FUNCTION_SPECS,
  type FunctionRole,
  type FunctionSpec,
  type FunctionsConfig,
  functionProjectRoles,
  INGRESS_SETTINGS,
  roleTemplate,
  type TableAccess,
  type TableWrite,
} from './functions';
import {
  bqGrant,
  invokerGrant,
  projectRoleStep,
  removeProjectBindingStep,
  resourceGrant,
} from './iam';
import { FUNCTION_IMAGES_REPOSITORY, type KmsKey } from './kms';
import { alertPolicies, logMetrics, type MonitoringTargets } from './monitoring';
import {
  BUILD_SA,
  type DeployOptions,
  durationSeconds,
  type GeneratedFile,
  Names,
  passengerIdSecret,
  PUBSUB_AGENT,
  SCHEDULER_SA,
  TRIGGER_SA,
} from './options';
import { BOOKING, isPartitioned, monitoringPrefix } from './pipelines';
import { datasetsCreated, type SqlFile, tablesCreated } from './sql';
import { bq, byDisplayName, type Command, gcloud, requireLine, type Step } from './steps';
import { PASSENGER_ID_VARS } from '../../shared/config/passenger-id-config';

/** A reader's role on each reference table (a side input): rows and metadata of that table only (plan-checks.ts). */
export const REFERENCE_READER_ROLE = 'roles/bigquery.dataViewer';

/** Label of the digest of a function's source and deploy flags; equal digest and LIVE_STATE skip the deploy. */
export const DEPLOY_LABEL = 'offvia_deploy';
/** `state` of a v2 function that is deployed and serving (FAILED, DEPLOYING, UNKNOWN, DELETING are not). */
export const LIVE_STATE = 'ACTIVE';

/** Dead-letter and retry policy of every ingest subscription; docs/deploy.md explains the numbers. */
export const DELIVERY = {
  maxDeliveryAttempts: 15,
  minRetryDelay: '10s',
  maxRetryDelay: '600s',
  /** Eventarc creates the subscription with 24 h; 7 days rides out a long outage (the dedup ledger TTL must be ≥). */
  messageRetention: '7d',
  messageRetentionMs: 7 * 24 * 3_600_000,
  /** How long dead letters are kept in the hold subscriptions. */
  deadLetterRetention: '7d',
  /**
   * Seconds added to the function's `--timeout` for the ack deadline, which for a push subscription is also the
   * push request's timeout (Pub/Sub `Subscription.ack_deadline_seconds`; 10–600 s).
   */
  ackDeadlineMarginSeconds: 30,
} as const;

/**
 * The push subscription's ack deadline for an ingest function, seconds: its timeout plus the margin.
 * @throws Error when that exceeds Pub/Sub's 600 s maximum.
 */
export function ackDeadlineSeconds(spec: FunctionSpec): number {
  const seconds = spec.timeoutSeconds + DELIVERY.ackDeadlineMarginSeconds;
  if (seconds > 600) {
    throw new Error(
      `${spec.entryPoint}: ack deadline ${seconds} s is above Pub/Sub's 600 s maximum`,
    );
  }
  return seconds;
}

/**
 * What every step generator shares: the options, `p` (`--project=P`), the functions' configuration from booking's
 * environment, the parsed `--kms-key` (undefined: Google-managed), the plan being built and the source digest.
 */
export interface PlanContext {
  readonly o: DeployOptions;
  readonly p: string;
  readonly names: Names;
  readonly config: FunctionsConfig;
  readonly kms: KmsKey | undefined;
  readonly steps: Step[];
  readonly files: GeneratedFile[];
  readonly sourceDigest: string;
}

/** One function of a pipeline with its deploy settings and, for an HTTP function, its schedule. */
export interface PipelineFunction {
  readonly spec: FunctionSpec;
  readonly schedule?: Schedule;
}

/** Everything the step generators read about one pipeline's deployment. */
export interface PipelineDeployment {
  readonly pipeline: AnyPipelineDefinition;
  /** Its DDL files (`tables.ddlFiles`), filled in. */
  readonly sqlFiles: readonly SqlFile[];
  /**
   * Ingest, the schema sweep when drift is on, fireWindows. A `topic` ingest gets an Eventarc trigger (Eventarc
   * names the subscription); an `http` one the plan's own push subscription, ordered when the contract has an
   * ordering key (fixed at creation; Eventarc sets none).
   */
  readonly functions: readonly PipelineFunction[];
  /** `--set-env-vars`, sorted by name. */
  readonly env: readonly (readonly [string, string])[];
  readonly monitoring: MonitoringTargets;
  readonly dashboardVariable: string;
  /** The dead-letter and bad-data tables, whose partitions expire after `--quarantine-retention-days`. */
  readonly expiringTables: readonly TableRef[];
  /** `--publisher` principals, granted `roles/pubsub.publisher` on its topic. */
  readonly publishers: readonly string[];
  /**
   * Deployed before the registry (booking): the plan mends what those deploys left (an unconditioned Firestore
   * grant, an unpartitioned Bronze), and its ingest may read the passenger_id key.
   */
  readonly earlierDeploys: boolean;
}

/** Whether a pipeline was deployed before the registry (booking): it keeps those names, specs and environment. */
export function deployedBeforeRegistry(p: AnyPipelineDefinition): boolean {
  return p.name === BOOKING;
}

const ownTable = (o: DeployOptions, t: TableRef): boolean =>
  t.projectId === undefined || t.projectId === o.project;

/** The functions of a definition in deploy order: ingest, the sweep (when drift is on), fireWindows. */
function definitionFunctions(
  p: AnyPipelineDefinition,
): { role: FunctionRole; entryPoint: string; baseName: string }[] {
  const f = p.functions;
  return [
    { role: 'ingest' as const, ...f.ingest },
    ...(f.schemaSweep === null ? [] : [{ role: 'schemaSweep' as const, ...f.schemaSweep }]),
    { role: 'fireWindows' as const, ...f.fireWindows },
  ];
}

/**
 * A pipeline's functions as deploy specs: booking's are FUNCTION_SPECS; another pipeline's take booking's sizes for
 * the role with the definition's names, account and tables, as HTTP functions (ingest behind the plan's push).
 * @throws Error for a function without a service account in its definition.
 */
export function pipelineFunctionSpecs(p: AnyPipelineDefinition): PipelineFunction[] {
  const schedules = pipelineSchedules(p);
  const withSchedule = (spec: FunctionSpec): PipelineFunction => {
    const schedule = schedules.find((s) => s.functionName === spec.entryPoint);
    return spec.trigger === 'http' && schedule !== undefined ? { spec, schedule } : { spec };
  };
  if (deployedBeforeRegistry(p)) {
    return definitionFunctions(p).map(({ entryPoint }) => {
      const spec = FUNCTION_SPECS.get(entryPoint);
      if (spec === undefined) throw new Error(`no deploy spec for booking's ${entryPoint}`);
      return withSchedule(spec);
    });
  }
  const gold = p.aggregations.map((a) => a.goldTable);
  const { tables } = p;
  const rows = (table: TableRef): TableWrite => ({ table, access: 'rows' });
  const writes: Record<FunctionRole, TableWrite[]> = {
    // Silver, the dead-letter table and bad data; element-driven early and late panes go to gold too.
    ingest: [tables.silver, tables.quarantine, tables.badData, ...gold].map(rows),
    fireWindows: [...gold, tables.badData].map(rows),
    schemaSweep: [
      ...(p.schemaDrift.mode === 'sweep' ? p.schemaDrift.targetTables : []).map((table) => ({
        table,
        access: 'schema' as const,
      })),
      rows(tables.badData),
    ],
  };
  return definitionFunctions(p).map(({ role, entryPoint, baseName }) => {
    const template = roleTemplate(role);
    const account = p.serviceAccounts[role];
    if (account === null) throw new Error(`pipeline ${p.name}: ${role} has no service account`);
    return withSchedule({
      ...template,
      entryPoint,
      baseName,
      trigger: 'http',
      serviceAccount: account,
      writes: () => writes[role],
      // Reference data (a side input) is loaded with a query job; fireWindows reads the backlog (pipelineEnv).
      runsQueryJobs: template.runsQueryJobs || (role === 'ingest' && tables.reference.length > 0),
      ...(role === 'fireWindows' && { readsBacklogMetric: true }),
    });
  });
}

/**
 * `--set-env-vars` of a pipeline other than booking: project, Firestore database, the backlog watermark hold on its
 * ingest subscription, and the `--env` overrides named `OFFVIA_<PIPELINE>_…`. Never booking's table variables.
 */
export function pipelineEnv(o: DeployOptions, p: AnyPipelineDefinition): [string, string][] {
  const own = `OFFVIA_${p.name.toUpperCase()}_`;
  const env: Record<string, string> = {
    ...Object.fromEntries(Object.entries(o.envOverrides).filter(([k]) => k.startsWith(own))),
    OFFVIA_PROJECT_ID: o.project,
    OFFVIA_FIRESTORE_DATABASE: o.firestoreDatabase,
    // The hold behind the oldest unacknowledged message, as Dataflow's Pub/Sub source (docs/windows.md).
    OFFVIA_WATERMARK_HOLD_SOURCE: 'monitoring',
    OFFVIA_WATERMARK_HOLD_SUBSCRIPTION: p.pubsub.subscriptions.ingest,
  };
  return Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * A pipeline's monitoring targets. Booking's keep the bare prefix and match its Eventarc subscription by pattern;
 * another pipeline's are `<prefix><pipeline>-…` and name the plan's own ingest subscription.
 */
export function pipelineMonitoringTargets(
  o: DeployOptions,
  p: AnyPipelineDefinition,
): MonitoringTargets {
  const names = new Names(o);
  const specs = pipelineFunctionSpecs(p).map((f) => f.spec);
  const s = p.pubsub.subscriptions;
  const booking = deployedBeforeRegistry(p);
  return {
    prefix: booking ? o.namePrefix : monitoringPrefix(o, p),
    region: o.region,
    services: specs.map((spec) => names.functionName(spec.baseName)),
    ingestService: names.functionName(p.functions.ingest.baseName),
    fireWindowsService: names.functionName(p.functions.fireWindows.baseName),
    // Scheduler jobs are named like their functions.
    schedulerJobs: [
      ...specs
        .filter((spec) => spec.trigger === 'http' && spec.role !== 'ingest')
        .map((spec) => names.functionName(spec.baseName)),
      heartbeatJobName(names, p),
    ],
    ...(booking ? {} : { ingestSubscription: s.ingest }),
    bronzeSubscription: s.bronze ?? s.ingest,
    deadLetterHoldSubscription: s.deadLetterHold,
    bronzeDeadLetterHoldSubscription: s.bronzeDeadLetterHold ?? s.deadLetterHold,
    notificationChannels: o.notificationChannels,
  };
}

/** The plan variable of a pipeline's dashboard lookup (booking's keeps the one it had). */
export function dashboardVariable(p: AnyPipelineDefinition): string {
  return deployedBeforeRegistry(p)
    ? DASHBOARD_VARIABLE
    : `${DASHBOARD_VARIABLE}_${p.name.toUpperCase()}`;
}

/** How one pipeline is deployed; `bookingEnv` is functionEnv's (booking), another pipeline's env is pipelineEnv. */
export function pipelineDeployment(
  o: DeployOptions,
  p: AnyPipelineDefinition,
  sqlFiles: readonly SqlFile[],
  bookingEnv: { vars: readonly (readonly [string, string])[]; config: FunctionsConfig },
): PipelineDeployment {
  const booking = deployedBeforeRegistry(p);
  const { ingest } = bookingEnv.config;
  return {
    pipeline: p,
    sqlFiles,
    functions: pipelineFunctionSpecs(p),
    env: booking ? bookingEnv.vars : pipelineEnv(o, p),
    monitoring: pipelineMonitoringTargets(o, p),
    dashboardVariable: dashboardVariable(p),
    // Booking's tables follow its environment (OFFVIA_QUARANTINE_TABLE, OFFVIA_BAD_DATA_TABLE).
    expiringTables: booking
      ? [ingest.quarantineTable, ingest.badDataTable]
      : [p.tables.quarantine, p.tables.badData],
    publishers: booking ? o.publishers : [],
    earlierDeploys: booking,
  };
}

/** Every topic of the pipeline: its topic first, then the dead-letter topics. */
export function pipelineTopics(p: AnyPipelineDefinition): string[] {
  return [
    p.pubsub.topic,
    p.pubsub.deadLetterTopic,
    ...(p.pubsub.bronzeDeadLetterTopic === null ? [] : [p.pubsub.bronzeDeadLetterTopic]),
  ];
}

/** Creates a service account unless it exists. */
export function accountStep(
  { p, names }: Pick<PlanContext, 'p' | 'names'>,
  base: string,
  displayName: string,
): Step {
  return {
    kind: 'ensure',
    title: `Service account ${names.serviceAccountId(base)}`,
    probe: {
      kind: 'status',
      command: gcloud('iam service-accounts describe', names.serviceAccountEmail(base), p),
    },
    absent: gcloud(
      'iam service-accounts create',
      names.serviceAccountId(base),
      `--display-name=${displayName}`,
      p,
    ),
  };
}

/** `bq` in the BigQuery location (a global flag of bq: before the command words `args`). */
function bqAt(o: DeployOptions, ...args: string[]): string[] {
  return ['bq', `--project_id=${o.project}`, `--location=${o.bqLocation}`, '--headless', ...args];
}

/** `bq query` of standard SQL in the BigQuery location. */
function bqQuery(o: DeployOptions, sql: string): string[] {
  return bqAt(o, 'query', '--use_legacy_sql=false', sql);
}

/**
 * Each pipeline's datasets keyed (under `--kms-key`), its DDL files (idempotent statements), then the partition
 * expiration of its dead-letter and bad-data tables.
 */
export function bigQuerySteps(ctx: PlanContext, deployments: readonly PipelineDeployment[]): void {
  const { o, steps, kms } = ctx;
  for (const d of deployments) {
    if (kms !== undefined) datasetKeys(ctx, kms, d.sqlFiles);
    for (const file of d.sqlFiles) {
      steps.push({
        kind: 'run',
        title: `BigQuery DDL ${file.name}`,
        command: bqQuery(o, file.sql.trimEnd()),
      });
    }
    if (d.earlierDeploys) bronzePartitioningCheck(ctx, d.pipeline);
    // Raw payloads (booking's: passenger_id) expire with their partitions (NULL keeps them); Bronze never does: every
    // replay starts from it. Tables in another project are its business.
    const days = o.quarantineRetentionDays === 0 ? 'NULL' : String(o.quarantineRetentionDays);
    for (const t of d.expiringTables) {
      const id = `${t.datasetId}.${t.tableId}`;
      if (!ownTable(o, t) || !isPartitioned(d.sqlFiles, id)) continue;
      steps.push({
        kind: 'run',
        title: `Partition expiration of ${id}: ${o.quarantineRetentionDays === 0 ? 'none' : `${days} days`}`,
        // Two lines, so the plan shows it as a here-document like the DDL files.
        command: bqQuery(
          o,
          `ALTER TABLE \`${o.project}.${id}\`\nSET OPTIONS (partition_expiration_days = ${days});`,
        ),
      });
    }
  }
}

/**
 * A warning when Bronze predates its DAY(publish_time) partitioning (a replay then scans all of it), rather than
 * recreating a table the BigQuery subscription writes to.
 */
function bronzePartitioningCheck({ o, steps }: PlanContext, p: AnyPipelineDefinition): void {
  if (p.tables.bronze === null) return;
  const id = `${p.tables.bronze.datasetId}.${p.tables.bronze.tableId}`;
  const bronze = `${o.project}:${id}`;
  steps.push({
    kind: 'ensure',
    title: `Bronze ${id} is partitioned on publish_time (replay cost)`,
    probe: {
      kind: 'status',
      command: [
        'bash',
        '-c',
        'bq --project_id="$0" --format=json show "$1" | grep -q \'"field":"publish_time"\'',
        o.project,
        bronze,
      ],
    },
    absent: [
      'bash',
      '-c',
      'echo "warning: $0 is not partitioned on publish_time (made before sql/010 partitioned it): every ' +
        'offvia replay chunk scans all of it; see docs/backfill.md (Bronze partitioning)" >&2',
      bronze,
    ],
  });
}

/**
 * Each dataset the DDL creates, with the key as its default before the DDL runs: BigQuery encrypts every table
 * created later with it ("Set a dataset default key"). Older tables keep their encryption: a note says so.
 */
function datasetKeys({ o, steps }: PlanContext, kms: KmsKey, sqlFiles: readonly SqlFile[]): void {
  for (const datasetId of datasetsCreated(sqlFiles)) {
    const dataset = `${o.project}:${datasetId}`;
    steps.push({
      kind: 'ensure',
      title: `Dataset ${datasetId} with default key ${kms.key}`,
      probe: { kind: 'status', command: bq(o.project, 'show', '--dataset', dataset) },
      absent: bqAt(o, 'mk', '--dataset', `--default_kms_key=${kms.name}`, dataset),
      present: bq(o.project, 'update', `--default_kms_key=${kms.name}`, dataset),
      retry: true,
    });
  }
  steps.push({
    kind: 'note',
    title:
      'tables created before --kms-key keep their encryption; re-key each with bq cp -f --destination_kms_key ' +
      '(docs/deploy.md, customer-managed encryption keys)',
  });
}

/**
 * Each pipeline's description and Firestore namespace (TTL policies and index exemptions are per collection group,
 * set once by the project-wide section).
 */
export function pipelineNotes(
  { o, steps }: PlanContext,
  deployments: readonly PipelineDeployment[],
): void {
  for (const { pipeline: p } of deployments) {
    steps.push({ kind: 'note', title: `pipeline ${p.name}: ${p.description}` });
    steps.push({
      kind: 'note',
      title:
        `pipeline ${p.name}: Firestore namespace ${pipelineFirestoreRoots(p).join(', ')} in database ` +
        `${o.firestoreDatabase}; TTL policies and index exemptions are per collection group, set once above for ` +
        'every pipeline',
    });
  }
}

/**
 * Each function's grants: the metadata role on each dataset it writes or reads (insertAll needs
 * `bigquery.datasets.get`), a custom role per table it writes, the reader role on its reference tables, and
 * project-level roles only where IAM has nothing finer. Another project's table gets a note, no grant.
 * @throws Error for a table of this project the pipeline's DDL does not create (unless `whenCreatedBySql`).
 */
export function grantSteps(ctx: PlanContext, deployments: readonly PipelineDeployment[]): void {
  const { o, names, steps, config } = ctx;
  for (const d of deployments) {
    const p = d.pipeline;
    const created = new Set(tablesCreated(d.sqlFiles));
    for (const { spec } of d.functions) {
      const member = `serviceAccount:${names.serviceAccountEmail(spec.serviceAccount)}`;
      const access = new Map<string, TableAccess>();
      const datasets: string[] = [];
      for (const write of spec.writes(config)) {
        const { projectId, datasetId, tableId } = write.table;
        const id = `${datasetId}.${tableId}`;
        if (!ownTable(o, write.table)) {
          steps.push({
            kind: 'note',
            title: `${spec.entryPoint}: no grant on ${projectId ?? ''}:${id} (another project: grant it there by hand)`,
          });
          continue;
        }
        if (!created.has(id)) {
          if (write.whenCreatedBySql === true) {
            steps.push({
              kind: 'note',
              title: `${spec.entryPoint}: no grant on ${id} yet (the DDL does not create it)`,
            });
            continue;
          }
          throw new Error(
            `${spec.entryPoint} writes to table ${id}, which pipeline ${p.name}'s DDL files do not create`,
          );
        }
        if (access.get(id) !== 'schema') access.set(id, write.access);
        if (!datasets.includes(datasetId)) datasets.push(datasetId);
      }
      const reads = spec.role === 'ingest' ? p.tables.reference.filter((t) => ownTable(o, t)) : [];
      for (const t of reads) if (!datasets.includes(t.datasetId)) datasets.push(t.datasetId);
      for (const datasetId of datasets) {
        const dataset = `${o.project}:${datasetId}`;
        steps.push({
          kind: 'run',
          title: `${spec.entryPoint}: ${DATASET_METADATA_ROLE} on dataset ${dataset} (metadata, no rows)`,
          command: bqGrant(o.project, member, DATASET_METADATA_ROLE, 'dataset', dataset),
          retry: true,
        });
      }
      for (const [id, kind] of access) {
        steps.push({
          kind: 'run',
          title: `${spec.entryPoint}: ${names.customRoleId(CUSTOM_ROLES[kind].id)} on table ${id} only`,
          command: bqGrant(
            o.project,
            member,
            names.customRoleName(CUSTOM_ROLES[kind].id),
            'table',
            `${o.project}:${id}`,
          ),
          retry: true,
        });
      }
      for (const t of reads) {
        const id = `${t.datasetId}.${t.tableId}`;
        if (!created.has(id)) {
          throw new Error(
            `${spec.entryPoint} reads table ${id}, which pipeline ${p.name}'s DDL files do not create`,
          );
        }
        steps.push({
          kind: 'run',
          title: `${spec.entryPoint}: ${REFERENCE_READER_ROLE} on reference table ${id} only (side input)`,
          command: bqGrant(o.project, member, REFERENCE_READER_ROLE, 'table', `${o.project}:${id}`),
          retry: true,
        });
      }
      for (const grant of functionProjectRoles(spec, o.project, o.firestoreDatabase)) {
        const { role, condition } = grant;
        steps.push(projectRoleStep(o.project, spec.entryPoint, member, grant));
        // Earlier deploys granted it unconditioned, which would still reach every database.
        if (condition !== undefined && d.earlierDeploys) {
          steps.push(
            removeProjectBindingStep(
              o.project,
              member,
              role,
              `${spec.entryPoint}: remove an earlier deploy's unconditioned ${role} on the project`,
              undefined,
              true,
            ),
          );
        }
      }
    }
  }
}

/**
 * The `--passenger-id-hmac-secret` version exists (the operator makes it, docs/privacy.md), and booking's ingest
 * account may read that secret only.
 */
export function passengerIdKeySteps(
  { o, p, names, steps }: PlanContext,
  deployments: readonly PipelineDeployment[],
): void {
  const { secret, version } = passengerIdSecret(o);
  steps.push(
    requireLine(
      `Secret ${secret} version ${version} (the passenger_id HMAC key) exists and is enabled`,
      gcloud(
        'secrets versions describe',
        version,
        `--secret=${secret}`,
        p,
        '--format=value(state)',
      ),
      'ENABLED',
      'secret $1 version $2 of $0 is missing or not enabled: create the key first, e.g. openssl rand ' +
        '-base64 32 | gcloud secrets create $1 --data-file=- (docs/privacy.md)',
      o.project,
      secret,
      version,
    ),
  );
  for (const spec of deployments.flatMap(readsPassengerIdKey)) {
    steps.push({
      kind: 'run',
      title: `${spec.entryPoint}: roles/secretmanager.secretAccessor on secret ${secret} only`,
      command: resourceGrant(
        'secrets',
        secret,
        `serviceAccount:${names.serviceAccountEmail(spec.serviceAccount)}`,
        'roles/secretmanager.secretAccessor',
        o.project,
      ),
      retry: true,
    });
  }
}

/** The functions that mount the passenger_id key: the ingest of a pipeline deployed before the registry. */
function readsPassengerIdKey(d: PipelineDeployment): FunctionSpec[] {
  return d.earlierDeploys ? d.functions.map((f) => f.spec).filter((s) => s.role === 'ingest') : [];
}

/**
 * Each pipeline's topics (retention for seek; the key under `--kms-key`), its publishers' grants, the subscriptions
 * keeping dead letters, Bronze as a BigQuery subscription writing as the pipeline's own account (not the project's
 * shared service agent) with `roles/bigquery.dataEditor` on the Bronze table only ("Create BigQuery subscriptions"),
 * and the Pub/Sub service agent's grants.
 */
export function pubSubSteps(ctx: PlanContext, deployments: readonly PipelineDeployment[]): void {
  const { o, p: proj, names, steps, kms } = ctx;
  const agent = `serviceAccount:${PUBSUB_AGENT}`;
  const agentGrant = (
    title: string,
    kind: Parameters<typeof resourceGrant>[0],
    resource: string,
    role: string,
  ): Step => ({
    kind: 'run',
    title: `Pub/Sub service agent: ${role} on ${title}`,
    command: resourceGrant(kind, resource, agent, role, o.project),
    retry: true,
  });
  for (const { pipeline: p, publishers } of deployments) {
    for (const topic of pipelineTopics(p)) {
      const flags = [
        ...(topic === p.pubsub.topic ? [`--message-retention-duration=${o.topicRetention}`] : []),
        ...(kms === undefined ? [] : [`--topic-encryption-key=${kms.name}`]),
      ];
      steps.push({
        kind: 'ensure',
        title: `Pub/Sub topic ${topic}${topic === p.pubsub.topic ? ` (retains messages ${o.topicRetention} for seek)` : ''}${kms === undefined ? '' : ', customer-managed key'}`,
        probe: { kind: 'status', command: gcloud('pubsub topics describe', topic, proj) },
        absent: gcloud('pubsub topics create', topic, ...flags, proj),
        ...(flags.length > 0
          ? { present: gcloud('pubsub topics update', topic, ...flags, proj) }
          : {}),
      });
    }
    for (const publisher of publishers) {
      steps.push({
        kind: 'run',
        title: `${publisher}: roles/pubsub.publisher on ${p.pubsub.topic} only (the ${p.name} producer)`,
        command: resourceGrant(
          'pubsub topics',
          p.pubsub.topic,
          publisher,
          'roles/pubsub.publisher',
          o.project,
        ),
        retry: true,
      });
    }
    if (publishers.length === 0) {
      steps.push({
        kind: 'note',
        title: `no --publisher: no principal is granted publishing to ${p.pubsub.topic} (the ${p.name} producer needs one; --publisher grants booking's topic, grant another pipeline's by hand)`,
      });
    }
    const s = p.pubsub.subscriptions;
    const holds: [string, string][] = [[s.deadLetterHold, p.pubsub.deadLetterTopic]];
    if (s.bronzeDeadLetterHold !== null && p.pubsub.bronzeDeadLetterTopic !== null) {
      holds.push([s.bronzeDeadLetterHold, p.pubsub.bronzeDeadLetterTopic]);
    }
    for (const [subscription, topic] of holds) {
      steps.push({
        kind: 'ensure',
        title: `Subscription ${subscription} (keeps the dead letters of ${topic})`,
        probe: describeSubscription(proj, subscription),
        absent: gcloud(
          'pubsub subscriptions create',
          subscription,
          `--topic=${topic}`,
          `--message-retention-duration=${DELIVERY.deadLetterRetention}`,
          '--expiration-period=never',
          proj,
        ),
      });
    }
    const bronze = p.tables.bronze;
    const writerBase = p.serviceAccounts.bronze;
    if (bronze !== null && s.bronze !== null && writerBase !== null) {
      const writer = names.serviceAccountEmail(writerBase);
      const table = `${bronze.datasetId}.${bronze.tableId}`;
      steps.push({
        kind: 'run',
        title: `${names.serviceAccountId(writerBase)}: roles/bigquery.dataEditor on table ${table} only`,
        command: bqGrant(
          o.project,
          `serviceAccount:${writer}`,
          'roles/bigquery.dataEditor',
          'table',
          `${o.project}:${table}`,
        ),
        retry: true,
      });
      steps.push(
        agentGrant(
          `${names.serviceAccountId(writerBase)} (acts as the Bronze writer)`,
          'iam service-accounts',
          writer,
          'roles/iam.serviceAccountTokenCreator',
        ),
      );
      const settings = [
        `--bigquery-table=${o.project}.${table}`,
        `--bigquery-service-account-email=${writer}`,
        '--write-metadata',
        ...(p.pubsub.bronzeDeadLetterTopic === null
          ? []
          : [
              `--dead-letter-topic=projects/${o.project}/topics/${p.pubsub.bronzeDeadLetterTopic}`,
              `--max-delivery-attempts=${DELIVERY.maxDeliveryAttempts}`,
            ]),
      ];
      steps.push({
        kind: 'ensure',
        title: `Bronze BigQuery subscription ${s.bronze} (writes as ${names.serviceAccountId(writerBase)})`,
        probe: describeSubscription(proj, s.bronze),
        absent: gcloud(
          'pubsub subscriptions create',
          s.bronze,
          `--topic=${p.pubsub.topic}`,
          ...settings,
          '--expiration-period=never',
          proj,
        ),
        present: gcloud('pubsub subscriptions update', s.bronze, ...settings, proj),
        retry: true,
      });
      if (p.pubsub.bronzeDeadLetterTopic !== null) {
        steps.push(
          agentGrant(
            `${p.pubsub.bronzeDeadLetterTopic} (forwards Bronze dead letters)`,
            'pubsub topics',
            p.pubsub.bronzeDeadLetterTopic,
            'roles/pubsub.publisher',
          ),
        );
      }
      steps.push(
        agentGrant(
          `${s.bronze} (acks Bronze dead letters)`,
          'pubsub subscriptions',
          s.bronze,
          'roles/pubsub.subscriber',
        ),
      );
    }
    steps.push(
      agentGrant(
        `${p.pubsub.deadLetterTopic} (forwards dead letters)`,
        'pubsub topics',
        p.pubsub.deadLetterTopic,
        'roles/pubsub.publisher',
      ),
    );
  }
  // Every ingest push carries tokens signed as the trigger account.
  if (deployments.length > 0) {
    steps.push(
      agentGrant(
        `${names.serviceAccountId(TRIGGER_SA)} (signs push tokens)`,
        'iam service-accounts',
        names.serviceAccountEmail(TRIGGER_SA),
        'roles/iam.serviceAccountTokenCreator',
      ),
    );
  }
}

/** `describe` of a subscription, as a probe. */
export function describeSubscription(
  p: string,
  subscription: string,
): { kind: 'status'; command: Command } {
  return { kind: 'status', command: gcloud('pubsub subscriptions describe', subscription, p) };
}

/** `OFFVIA_PASSENGER_ID_HMAC_KEY=SECRET:VERSION`: a pinned secret version as a variable (`--set-secrets`). */
export function passengerIdSecretBinding(o: DeployOptions): string {
  const { secret, version } = passengerIdSecret(o);
  return `${PASSENGER_ID_VARS.key.name}=${secret}:${version}`;
}

/** The `gcloud functions deploy` command of one function, without the digest label. */
function deployCommand(
  { o, names, kms, config }: PlanContext,
  d: PipelineDeployment,
  spec: FunctionSpec,
): string[] {
  const trigger =
    spec.trigger === 'topic'
      ? [
          `--trigger-topic=${d.pipeline.pubsub.topic}`,
          '--retry',
          `--trigger-service-account=${names.serviceAccountEmail(TRIGGER_SA)}`,
        ]
      : ['--trigger-http'];
  return gcloud(
    'functions deploy',
    names.functionName(spec.baseName),
    '--gen2',
    `--project=${o.project}`,
    `--region=${o.region}`,
    `--runtime=${o.runtime}`,
    '--source=.',
    `--entry-point=${spec.entryPoint}`,
    ...trigger,
    `--ingress-settings=${INGRESS_SETTINGS}`,
    '--no-allow-unauthenticated',
    `--service-account=${names.serviceAccountEmail(spec.serviceAccount)}`,
    `--build-service-account=projects/${o.project}/serviceAccounts/${names.serviceAccountEmail(BUILD_SA)}`,
    `--memory=${spec.memory}`,
    `--cpu=${spec.cpu}`,
    `--concurrency=${spec.concurrency}`,
    `--max-instances=${spec.maxInstances}`,
    `--min-instances=${spec.minInstances}`,
    `--timeout=${deployedTimeoutSeconds(spec, config.window)}s`,
    `--set-env-vars=${setEnvVarsValue(d.env)}`,
    // --clear-secrets removes a key an earlier deploy mounted (without the hmac mode it stops the ingest at start).
    o.passengerIdHmacSecret !== undefined && readsPassengerIdKey(d).includes(spec)
      ? `--set-secrets=${passengerIdSecretBinding(o)}`
      : '--clear-secrets',
    ...(kms === undefined
      ? []
      : [`--kms-key=${kms.name}`, `--docker-repository=${imagesRepository(o, names)}`]),
  );
}

/** `projects/P/locations/R/repositories/<prefix>functions`: the function images' repository under `--kms-key`. */
export function imagesRepository(o: DeployOptions, names: Names): string {
  return `projects/${o.project}/locations/${o.region}/repositories/${names.serviceAccountId(FUNCTION_IMAGES_REPOSITORY)}`;
}

/**
 * Each pipeline's functions with what needs them (invoker grants, subscriptions, schedules), the read-back of its
 * topic's retention, and for an Eventarc ingest the subscription `offvia snapshot` and `offvia seek` act on.
 * @throws Error for a fireWindows loop longer than its schedule, or an ack deadline above Pub/Sub's maximum.
 */
export function functionSteps(ctx: PlanContext, deployments: readonly PipelineDeployment[]): void {
  for (const d of deployments) {
    for (const fn of d.functions) deployFunction(ctx, d, fn);
    topicRetentionCheck(ctx, d.pipeline);
    const eventarc = d.functions.find((f) => f.spec.trigger === 'topic');
    if (eventarc !== undefined) {
      ctx.steps.push({
        kind: 'run',
        title: `The ${eventarc.spec.entryPoint} subscription, for offvia snapshot and offvia seek`,
        command: [
          'bash',
          '-c',
          'echo "offvia snapshot/seek act on $0 (found there by default; or: export OFFVIA_INGEST_SUBSCRIPTION=$0)"',
          `\${${ctx.names.variable(eventarc.spec.entryPoint, 'SUBSCRIPTION')}}`,
        ],
      });
    }
  }
}

/** Reads back the topic's retention: seek replays acknowledged messages only while the topic retains them. */
function topicRetentionCheck({ o, p, steps }: PlanContext, pipeline: AnyPipelineDefinition): void {
  const topic = pipeline.pubsub.topic;
  const retained = `${durationSeconds(o.topicRetention)}s`;
  steps.push(
    requireLine(
      `${topic} retains messages ${o.topicRetention} (what offvia seek --time replays)`,
      gcloud('pubsub topics describe', topic, p, '--format=value(messageRetentionDuration)'),
      retained,
      'the topic $0 does not retain messages $1 after the update: offvia seek --time cannot replay',
      topic,
      retained,
    ),
  );
}

/** One function, then its invoker grant and its Eventarc subscription, push subscription or schedule. */
function deployFunction(ctx: PlanContext, d: PipelineDeployment, fn: PipelineFunction): void {
  const { o, p, names, steps } = ctx;
  const { spec } = fn;
  const name = names.functionName(spec.baseName);
  const command = deployCommand(ctx, d, spec);
  const digest = deployDigest(ctx.sourceDigest, command);
  const describe = (format: string): Command =>
    gcloud('functions describe', name, `--region=${o.region}`, '--v2', p, `--format=${format}`);
  if (spec.trigger === 'topic') eventarcPreviousSubscription(ctx, spec, name);
  steps.push({
    kind: 'ensure',
    title: `Function ${name} (${spec.entryPoint}, pipeline ${d.pipeline.name}): deploy unless this source and configuration are live`,
    // A failed build can leave the label set: skip only when the function is ACTIVE too.
    probe: {
      kind: 'line',
      command: describe(`value[separator=" "](state,labels.${DEPLOY_LABEL})`),
      line: `${LIVE_STATE} ${digest}`,
    },
    absent: [...command, `--update-labels=${DEPLOY_LABEL}=${digest}`],
  });
  const invoker = spec.role === 'ingest' ? TRIGGER_SA : SCHEDULER_SA;
  steps.push({
    kind: 'run',
    title: `${names.serviceAccountId(invoker)}: roles/run.invoker on ${name} only`,
    command: invokerGrant(o.project, o.region, name, names.serviceAccountEmail(invoker)),
    retry: true,
  });
  if (spec.trigger === 'topic') {
    eventarcSubscription(ctx, d, spec, name, describe);
    return;
  }
  const url = `\${${names.variable(spec.entryPoint, 'URL')}}`;
  steps.push({
    kind: 'capture',
    title: `URL of ${name}`,
    variable: names.variable(spec.entryPoint, 'URL'),
    command: describe('value(serviceConfig.uri)'),
  });
  if (spec.role === 'ingest') {
    pushSubscription(ctx, d.pipeline, spec, url);
    return;
  }
  const schedule = fn.schedule;
  if (schedule === undefined) return;
  if (spec.role === 'fireWindows') assertLoopFitsSchedule(ctx.config.window, schedule);
  const invokerEmail = names.serviceAccountEmail(SCHEDULER_SA);
  const job = (verb: 'create' | 'update'): string[] =>
    gcloud(
      `scheduler jobs ${verb} http`,
      name,
      `--location=${o.region}`,
      `--schedule=${schedule.cron}`,
      '--time-zone=Etc/UTC',
      `--uri=${url}`,
      '--http-method=POST',
      `--${verb === 'create' ? 'headers' : 'update-headers'}=Content-Type=application/json`,
      '--message-body={}',
      `--oidc-service-account-email=${invokerEmail}`,
      `--oidc-token-audience=${url}`,
      `--attempt-deadline=${attemptDeadlineSeconds(deployedTimeoutSeconds(spec, ctx.config.window))}s`,
      // The next tick is the retry.
      '--max-retry-attempts=0',
      `--description=Calls ${spec.entryPoint} of pipeline ${d.pipeline.name} (deploy/schedules.ts)`,
      p,
    );
  schedulerJobStep(ctx, name, `Cloud Scheduler job ${name} (${schedule.cron}, OIDC)`, job);
  if (spec.role === 'fireWindows') heartbeatJob(ctx, d.pipeline);
}

/** The step ensuring Cloud Scheduler job `name`: `job('create')` when it does not exist, else `job('update')`. */
function schedulerJobStep(
  { o, p, steps }: PlanContext,
  name: string,
  title: string,
  job: (verb: 'create' | 'update') => string[],
): void {
  steps.push({
    kind: 'ensure',
    title,
    probe: {
      kind: 'status',
      command: gcloud('scheduler jobs describe', name, `--location=${o.region}`, p),
    },
    absent: job('create'),
    present: job('update'),
    retry: true,
  });
}

/** The Cloud Scheduler job publishing a pipeline's watermark heartbeat: named after its ingest function. */
export function heartbeatJobName(names: Names, p: AnyPipelineDefinition): string {
  return `${names.functionName(p.functions.ingest.baseName)}-heartbeat`;
}

/**
 * The watermark heartbeat of a pipeline (docs/windows.md "Heartbeats"): Cloud Scheduler publishes one message a
 * minute into the ingest topic (a Pub/Sub target: no function, no OIDC; Cloud Scheduler's service agent
 * publishes), marked with `HEARTBEAT_ATTRIBUTE`, so it travels the events' own subscription and push path.
 */
function heartbeatJob(ctx: PlanContext, pipeline: AnyPipelineDefinition): void {
  const { o, p, names } = ctx;
  const name = heartbeatJobName(names, pipeline);
  const attribute = `${HEARTBEAT_ATTRIBUTE}=${pipeline.name}`;
  const job = (verb: 'create' | 'update'): string[] =>
    gcloud(
      `scheduler jobs ${verb} pubsub`,
      name,
      `--location=${o.region}`,
      '--schedule=* * * * *',
      '--time-zone=Etc/UTC',
      `--topic=${pipeline.pubsub.topic}`,
      '--message-body=heartbeat',
      `--${verb === 'create' ? 'attributes' : 'update-attributes'}=${attribute}`,
      // The next minute's heartbeat is the retry.
      '--max-retry-attempts=0',
      `--description=Watermark heartbeat of pipeline ${pipeline.name} (docs/windows.md)`,
      p,
    );
  const title = `Cloud Scheduler job ${name} (* * * * *, Pub/Sub heartbeat into ${pipeline.pubsub.topic})`;
  schedulerJobStep(ctx, name, title, job);
}

/** A label-safe digest of the source and of everything else that goes into a deploy. */
function deployDigest(sourceDigest: string, command: readonly string[]): string {
  return createHash('sha256')
    .update(`${sourceDigest}\0${JSON.stringify(command)}`)
    .digest('hex')
    .slice(0, 32);
}

/**
 * Before an Eventarc deploy, which can replace the trigger and its subscription: the subscription before and the
 * start time, so the plan can seek a new subscription back over the gap.
 */
function eventarcPreviousSubscription(
  { o, names, steps }: PlanContext,
  spec: FunctionSpec,
  name: string,
): void {
  steps.push({
    kind: 'capture',
    title: `Time the deploy of ${name} begins (UTC)`,
    variable: names.variable(spec.entryPoint, 'DEPLOY_STARTED_AT'),
    command: ['date', '-u', '+%Y-%m-%dT%H:%M:%SZ'],
  });
  steps.push({
    kind: 'capture',
    title: `Pub/Sub subscription of ${name} before the deploy (none on a first deploy)`,
    variable: names.variable(spec.entryPoint, 'PREVIOUS_SUBSCRIPTION'),
    command: [
      'bash',
      '-c',
      't="$(gcloud functions describe "$0" --region="$1" --v2 --project="$2" ' +
        '--format="value(eventTrigger.trigger.basename())" 2>/dev/null || true)"; s=""; ' +
        'if [[ -n "$t" ]]; then s="$(gcloud eventarc triggers describe "$t" --location="$1" --project="$2" ' +
        '--format="value(transport.pubsub.subscription)" 2>/dev/null || true)"; fi; echo "${s:-none}"',
      name,
      o.region,
      o.project,
    ],
  });
}

/**
 * The subscription Eventarc created for an ingest function (a replaced trigger gets Eventarc's defaults): captured,
 * given the dead-letter and retry policy, read back, sought back over the gap, and the agent's grant.
 */
function eventarcSubscription(
  { o, p, names, steps }: PlanContext,
  d: PipelineDeployment,
  spec: FunctionSpec,
  name: string,
  describe: (format: string) => Command,
): void {
  const triggerVar = names.variable(spec.entryPoint, 'TRIGGER');
  const subscription = `\${${names.variable(spec.entryPoint, 'SUBSCRIPTION')}}`;
  const deadLetter = `projects/${o.project}/topics/${d.pipeline.pubsub.deadLetterTopic}`;
  steps.push({
    kind: 'capture',
    title: `Eventarc trigger of ${name}`,
    variable: triggerVar,
    command: describe('value(eventTrigger.trigger.basename())'),
  });
  steps.push({
    kind: 'capture',
    title: `Pub/Sub subscription Eventarc created for ${name}`,
    variable: names.variable(spec.entryPoint, 'SUBSCRIPTION'),
    command: gcloud(
      'eventarc triggers describe',
      `\${${triggerVar}}`,
      `--location=${o.region}`,
      p,
      '--format=value(transport.pubsub.subscription)',
    ),
  });
  steps.push({
    kind: 'run',
    title: `Dead-letter and retry policy on the ${name} subscription`,
    command: gcloud(
      'pubsub subscriptions update',
      subscription,
      ...deliveryFlags(deadLetter, spec),
      p,
    ),
  });
  const expected = `${ackDeadlineSeconds(spec)} ${deadLetter} ${DELIVERY.maxDeliveryAttempts}`;
  steps.push(
    requireLine(
      `The ${name} subscription has ack deadline ${ackDeadlineSeconds(spec)} s and its dead-letter policy`,
      gcloud(
        'pubsub subscriptions describe',
        subscription,
        p,
        '--format=value[separator=" "](ackDeadlineSeconds,deadLetterPolicy.deadLetterTopic,deadLetterPolicy.maxDeliveryAttempts)',
      ),
      expected,
      'the subscription $0 does not have the settings just applied ($1)',
      subscription,
      expected,
    ),
  );
  const previous = `\${${names.variable(spec.entryPoint, 'PREVIOUS_SUBSCRIPTION')}}`;
  steps.push({
    kind: 'ensure',
    title: `A new ${name} subscription replays what was published since the deploy began (seek)`,
    probe: { kind: 'status', command: ['bash', '-c', 'test "$0" = "$1"', previous, subscription] },
    absent: gcloud(
      'pubsub subscriptions seek',
      subscription,
      `--time=\${${names.variable(spec.entryPoint, 'DEPLOY_STARTED_AT')}}`,
      p,
    ),
    retry: true,
  });
  steps.push(subscriberGrant(o.project, `the ${name} subscription`, subscription));
}

/** The dead-letter and retry flags of an ingest subscription (Eventarc's or the plan's). */
function deliveryFlags(deadLetterTopic: string, spec: FunctionSpec): string[] {
  return [
    `--dead-letter-topic=${deadLetterTopic}`,
    `--max-delivery-attempts=${DELIVERY.maxDeliveryAttempts}`,
    `--min-retry-delay=${DELIVERY.minRetryDelay}`,
    `--max-retry-delay=${DELIVERY.maxRetryDelay}`,
    `--message-retention-duration=${DELIVERY.messageRetention}`,
    `--ack-deadline=${ackDeadlineSeconds(spec)}`,
  ];
}

/** The Pub/Sub service agent acks dead letters it forwarded from a subscription. */
function subscriberGrant(project: string, what: string, subscription: string): Step {
  return {
    kind: 'run',
    title: `Pub/Sub service agent: roles/pubsub.subscriber on ${what} (acks dead letters)`,
    command: resourceGrant(
      'pubsub subscriptions',
      subscription,
      `serviceAccount:${PUBSUB_AGENT}`,
      'roles/pubsub.subscriber',
      project,
    ),
    retry: true,
  };
}

/**
 * The ingest's push subscription, made by the plan because ordering is fixed at creation and Eventarc sets none.
 * It pushes to `/projects/P/topics/T` on the function (taken as Eventarc's messagePublished event), with OIDC as
 * the trigger account.
 */
function pushSubscription(
  { o, p: proj, names, steps }: PlanContext,
  p: AnyPipelineDefinition,
  spec: FunctionSpec,
  url: string,
): void {
  const subscription = p.pubsub.subscriptions.ingest;
  const ordered = p.contract.orderingKeyAttribute !== null;
  const settings = [
    `--push-endpoint=${url}/projects/${o.project}/topics/${p.pubsub.topic}`,
    `--push-auth-service-account=${names.serviceAccountEmail(TRIGGER_SA)}`,
    `--push-auth-token-audience=${url}`,
    ...deliveryFlags(`projects/${o.project}/topics/${p.pubsub.deadLetterTopic}`, spec),
  ];
  steps.push({
    kind: 'ensure',
    title: `Push subscription ${subscription} to ${names.functionName(spec.baseName)}${ordered ? ` (message ordering by ${p.contract.orderingKeyAttribute ?? ''})` : ''}`,
    probe: describeSubscription(proj, subscription),
    absent: gcloud(
      'pubsub subscriptions create',
      subscription,
      `--topic=${p.pubsub.topic}`,
      ...settings,
      ...(ordered ? ['--enable-message-ordering'] : []),
      '--expiration-period=never',
      proj,
    ),
    present: gcloud('pubsub subscriptions update', subscription, ...settings, proj),
    retry: true,
  });
  if (ordered) {
    steps.push(
      requireLine(
        `The ${subscription} subscription delivers in order (set only when it is created)`,
        gcloud(
          'pubsub subscriptions describe',
          subscription,
          proj,
          '--format=value(enableMessageOrdering)',
        ),
        'True',
        'the subscription $0 was created without message ordering, which cannot be turned on: delete it ' +
          '(teardown.sh --pipeline $1) and deploy again',
        subscription,
        p.name,
      ),
    );
  }
  steps.push(subscriberGrant(o.project, subscription, subscription));
}

/** Alert policies are found by display name: `${prefix}${id}` → a plan variable. */
export function policyVariable(o: DeployOptions, displayName: string): string {
  return `POLICY_${displayName.slice(o.namePrefix.length).replace(/-/g, '_').toUpperCase()}`;
}

/** Each pipeline's log-based metrics, alert policies, then dashboard; their JSON files go to the out dir. */
export function monitoringSteps(
  ctx: PlanContext,
  deployments: readonly PipelineDeployment[],
): void {
  const { o, p, steps, files } = ctx;
  for (const d of deployments) {
    for (const metric of logMetrics(d.monitoring)) {
      const file = path.posix.join(o.outDir, 'metrics', `${metric.name}.json`);
      files.push({ path: file, content: `${JSON.stringify(metric, null, 2)}\n` });
      const config = `--config-from-file=${file}`;
      steps.push({
        kind: 'ensure',
        title: `Log-based metric ${metric.name}`,
        probe: { kind: 'status', command: gcloud('logging metrics describe', metric.name, p) },
        absent: gcloud('logging metrics create', metric.name, config, p),
        present: gcloud('logging metrics update', metric.name, config, p),
      });
    }
    for (const policy of alertPolicies(d.monitoring)) {
      const file = path.posix.join(
        o.outDir,
        'policies',
        `${policy.displayName.slice(o.namePrefix.length)}.json`,
      );
      files.push({ path: file, content: `${JSON.stringify(policy, null, 2)}\n` });
      steps.push(
        byDisplayName(
          `Alert policy ${policy.displayName}`,
          'alpha monitoring policies',
          policyVariable(o, policy.displayName),
          policy.displayName,
          p,
          `--policy-from-file=${file}`,
        ),
      );
    }
    addMonitoringDashboard(o, d.monitoring, steps, files, d.dashboardVariable);
  }
}

/**
 * The header's warning for each pipeline whose fireWindows reads its hold from Cloud Monitoring without the plan
 * granting `roles/monitoring.viewer` (docs/windows.md, "The cloud source").
 */
export function monitoringHoldWarnings(
  o: DeployOptions,
  names: Names,
  deployments: readonly PipelineDeployment[],
): string[] {
  return deployments.flatMap((d) => {
    const fire = d.functions.find((f) => f.spec.role === 'fireWindows')?.spec;
    if (fire === undefined || fire.readsBacklogMetric === true) return [];
    if (loadWindowConfig(Object.fromEntries(d.env)).holdSource !== 'monitoring') return [];
    const member = `serviceAccount:${names.serviceAccountEmail(fire.serviceAccount)}`;
    return [
      `WARNING: OFFVIA_WATERMARK_HOLD_SOURCE=monitoring: this plan does not grant roles/monitoring.viewer, which ` +
        `${fire.entryPoint} needs to read the subscription's backlog (every pass falls back to the delivery holds); grant ` +
        `it: gcloud projects add-iam-policy-binding ${o.project} --member=${member} --role=roles/monitoring.viewer`,
    ];
  });
}

/** The command that deletes every document under one root collection, subcollections included. */
export function deleteFirestoreRootCommand(o: DeployOptions, root: string): Command {
  return [
    'node_modules/.bin/tsx',
    'deploy/gcloud/delete-firestore-root.ts',
    `--project=${o.project}`,
    `--database=${o.firestoreDatabase}`,
    `--root=${root}`,
  ];
}

/** A step that deletes a resource when its `describe` finds it. */
export function deleteIfPresent(title: string, probe: Command, remove: Command): Step {
  return { kind: 'ensure', title, probe: { kind: 'status', command: probe }, present: remove };
}

/** Deletes `id` of the gcloud group `group` (e.g. `pubsub topics`) when `describe` finds it; `where` locates it. */
function deleteGcloud(title: string, group: string, id: string, ...where: string[]): Step {
  return deleteIfPresent(
    `Delete ${title}`,
    gcloud(`${group} describe`, id, ...where),
    gcloud(`${group} delete`, id, ...where, '--quiet'),
  );
}

/** Deletes a service account when it exists. */
export function deleteAccountStep(o: DeployOptions, names: Names, base: string): Step {
  return deleteGcloud(
    `service account ${names.serviceAccountId(base)}`,
    'iam service-accounts',
    names.serviceAccountEmail(base),
    `--project=${o.project}`,
  );
}

/** Removes a project role from an account; with `mendEarlier` first the unconditioned one earlier deploys made. */
export function removeProjectRoleSteps(
  o: DeployOptions,
  names: Names,
  base: string,
  { role, condition }: { role: string; condition?: { expression: string; title: string } },
  mendEarlier: boolean,
): Step[] {
  const member = `serviceAccount:${names.serviceAccountEmail(base)}`;
  const id = names.serviceAccountId(base);
  return [
    ...(condition !== undefined && mendEarlier
      ? [
          removeProjectBindingStep(
            o.project,
            member,
            role,
            `Remove an unconditioned ${role} on the project from ${id} (earlier deploys)`,
            undefined,
            true,
          ),
        ]
      : []),
    removeProjectBindingStep(
      o.project,
      member,
      role,
      `Remove ${role} on the project from ${id}`,
      condition,
    ),
  ];
}

/**
 * One pipeline's teardown: jobs, policies, metrics, dashboard, functions, subscriptions, project bindings, accounts;
 * with `deleteData` its topics, datasets and Firestore roots (not those `bulkDeleted` covers). Nothing shared.
 */
export function pipelineTeardownSteps(
  o: DeployOptions,
  p: AnyPipelineDefinition,
  sqlFiles: readonly SqlFile[],
  deleteData: boolean,
  bulkDeleted: readonly string[] = [],
): Step[] {
  const names = new Names(o);
  const proj = `--project=${o.project}`;
  const steps: Step[] = [];
  const specs = pipelineFunctionSpecs(p).map((f) => f.spec);
  const targets = pipelineMonitoringTargets({ ...o, notificationChannels: [] }, p);
  const regional = (flag: string): string[] => [`${flag}=${o.region}`, proj];
  for (const job of targets.schedulerJobs) {
    steps.push(
      deleteGcloud(`Cloud Scheduler job ${job}`, 'scheduler jobs', job, ...regional('--location')),
    );
  }
  for (const { displayName } of alertPolicies(targets)) {
    steps.push(
      byDisplayName(
        `Delete alert policy ${displayName}`,
        'alpha monitoring policies',
        policyVariable(o, displayName),
        displayName,
        proj,
      ),
    );
  }
  for (const { name } of logMetrics(targets)) {
    steps.push(deleteGcloud(`log-based metric ${name}`, 'logging metrics', name, proj));
  }
  const dashboard = `${targets.prefix}pipeline`;
  steps.push(
    byDisplayName(
      `Delete Cloud Monitoring dashboard ${dashboard}`,
      'monitoring dashboards',
      dashboardVariable(p),
      dashboard,
      proj,
    ),
  );
  for (const spec of specs) {
    const name = names.functionName(spec.baseName);
    const trigger = spec.trigger === 'topic' ? ' (and its Eventarc trigger and subscription)' : '';
    steps.push(
      deleteGcloud(`function ${name}${trigger}`, 'functions', name, ...regional('--region')),
    );
  }
  const s = p.pubsub.subscriptions;
  const eventarc = specs.some((spec) => spec.trigger === 'topic');
  for (const subscription of [
    ...(eventarc ? [] : [s.ingest]),
    ...(s.bronze === null ? [] : [s.bronze]),
    ...(deleteData
      ? [s.deadLetterHold, ...(s.bronzeDeadLetterHold === null ? [] : [s.bronzeDeadLetterHold])]
      : []),
  ]) {
    steps.push(
      deleteGcloud(`subscription ${subscription}`, 'pubsub subscriptions', subscription, proj),
    );
  }
  // Project bindings before their accounts: a deleted account's can no longer be removed by email.
  for (const spec of specs) {
    for (const role of functionProjectRoles(spec, o.project, o.firestoreDatabase)) {
      steps.push(
        ...removeProjectRoleSteps(o, names, spec.serviceAccount, role, deployedBeforeRegistry(p)),
      );
    }
  }
  const accounts = [
    ...specs.map((spec) => spec.serviceAccount),
    ...(p.serviceAccounts.bronze === null ? [] : [p.serviceAccounts.bronze]),
  ];
  for (const base of accounts) steps.push(deleteAccountStep(o, names, base));
  const datasets = datasetsCreated(sqlFiles);
  const roots = pipelineFirestoreRoots(p);
  if (deleteData) {
    for (const topic of [...pipelineTopics(p)].reverse()) {
      steps.push(deleteGcloud(`topic ${topic}`, 'pubsub topics', topic, proj));
    }
    for (const dataset of [...datasets].reverse()) {
      const ref = `${o.project}:${dataset}`;
      steps.push(
        deleteIfPresent(
          `Delete dataset ${dataset} and all its tables`,
          bq(o.project, 'show', '--dataset', ref),
          bq(o.project, 'rm', '-r', '-f', '--dataset', ref),
        ),
      );
    }
    // Not bulk-delete: it deletes collection groups, which are the same under every pipeline's root.
    for (const root of roots.filter((r) => !bulkDeleted.includes(r))) {
      steps.push({
        kind: 'run',
        title: `Delete every Firestore document under ${root} (pipeline ${p.name}) in database ${o.firestoreDatabase}`,
        command: deleteFirestoreRootCommand(o, root),
      });
    }
  } else {
    steps.push({
      kind: 'note',
      title:
        `kept (data; --delete-data removes them): pipeline ${p.name}'s Firestore documents under ${roots.join(', ')}; ` +
        `datasets ${datasets.join(', ')}; topics ${pipelineTopics(p).join(', ')}; dead-letter subscriptions`,
    });
  }
  return steps;
}
