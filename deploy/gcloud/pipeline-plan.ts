// The deploy and teardown steps of a registered pipeline planned from its definition alone (every pipeline but
// booking, whose hand-written sections keep its names): its topics, Bronze, tables, accounts and grants, functions,
// ordered ingest subscription, schedules, Firestore namespace and monitoring. Shared resources are not planned here.
import path from 'node:path';
import type { TableRef } from '../../shared/config/env';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { pipelineFirestoreRoots, pipelineFunctions } from '../../shared/pipeline/registry-checks';
import { COLLECTIONS } from '../../shared/state/firestore-window-store';
import { GROUP_COLLECTIONS } from '../../shared/state/grouped-window-store';
import { HOLDS_COLLECTION } from '../../shared/state/watermark-holds';
import type { Schedule } from '../schedules';
import { addMonitoringDashboard } from './dashboard';
import { setEnvVarsValue } from './env';
import {
  attemptDeadlineSeconds,
  assertLoopFitsSchedule,
  deployedTimeoutSeconds,
} from './fire-windows-timeout';
import {
  CUSTOM_ROLES,
  DATASET_METADATA_ROLE,
  FUNCTION_SPECS,
  type FunctionSpec,
  type FunctionsConfig,
  functionProjectRoles,
  INGRESS_SETTINGS,
  type TableAccess,
} from './functions';
import {
  conditionFlag,
  datasetGrant,
  invokerGrant,
  projectGrant,
  resourceGrant,
  tableGrant,
} from './iam';
import type { KmsKey } from './kms';
import { alertPolicies, logMetrics, type MonitoringTargets } from './monitoring';
import {
  BUILD_SA,
  type DeployOptions,
  durationSeconds,
  type GeneratedFile,
  Names,
  PUBSUB_AGENT,
  SCHEDULER_SA,
  TRIGGER_SA,
} from './options';
import { isPartitioned, monitoringPrefix } from './pipelines';
import type { RegisteredFunction } from './registry';
import { datasetsCreated, type SqlFile, tablesCreated } from './sql';
import { bq, type Command, gcloud, type Step } from './steps';

/**
 * The role a reader of reference data gets on each reference table (a side input loaded with a query): read rows
 * and metadata of that table only. plan-checks.ts allows it to the pipeline's ingest account on its reference
 * tables and nowhere else.
 */
export const REFERENCE_READER_ROLE = 'roles/bigquery.dataViewer';

/** What the pipeline's steps need from the deploy plan (a subset of its context). */
export interface PipelinePlanContext {
  readonly o: DeployOptions;
  /** `--project=P`. */
  readonly p: string;
  readonly names: Names;
  readonly config: FunctionsConfig;
  readonly kms: KmsKey | undefined;
  readonly steps: Step[];
  readonly files: GeneratedFile[];
  /** Digest of the uploaded source (upload.ts), part of each function's deploy label. */
  readonly sourceDigest: string;
  /** The functions functions/index.ts registers. */
  readonly registered: readonly RegisteredFunction[];
  readonly schedules: readonly Schedule[];
  /** Label a function's deploy digest is kept in, and the state that means it is serving. */
  readonly deployLabel: string;
  readonly liveState: string;
  readonly digest: (command: readonly string[]) => string;
}

/**
 * The environment of a pipeline's functions (`--set-env-vars`): the project and the system's Firestore database,
 * the backlog watermark hold on the pipeline's ingest subscription, and the `--env` overrides named for this pipeline (`OFFVIA_<PIPELINE>_…`, e.g. `OFFVIA_TELEMETRY_MAX_TEMPERATURE_C`).
 * Not booking's table and schema-drift variables: the pipeline's tables come from its definition, and an
 * `OFFVIA_SILVER_TABLE` meant for booking must not point another pipeline at booking's Silver.
 */
export function pipelineEnv(o: DeployOptions, p: AnyPipelineDefinition): [string, string][] {
  const own = `OFFVIA_${p.name.toUpperCase()}_`;
  const env: Record<string, string> = {
    ...Object.fromEntries(Object.entries(o.envOverrides).filter(([k]) => k.startsWith(own))),
    OFFVIA_PROJECT_ID: o.project,
    OFFVIA_FIRESTORE_DATABASE: o.firestoreDatabase,
    // fireWindows holds the watermark behind the ingest subscription's oldest unacknowledged message, as Dataflow's
    // Pub/Sub source does (docs/windows.md, the cloud hold source); the plan names that subscription itself.
    OFFVIA_WATERMARK_HOLD_SOURCE: 'monitoring',
    OFFVIA_WATERMARK_HOLD_SUBSCRIPTION: p.pubsub.subscriptions.ingest,
  };
  return Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Delivery settings of the pipeline's ingest subscription (as booking's, deploy-plan.ts DELIVERY). */
export interface IngestDelivery {
  readonly maxDeliveryAttempts: number;
  readonly minRetryDelay: string;
  readonly maxRetryDelay: string;
  readonly messageRetention: string;
  readonly deadLetterRetention: string;
  readonly ackDeadlineMarginSeconds: number;
}

/** One function of the pipeline with its deploy settings (sizes from booking's function of the same role). */
export interface PipelineFunction {
  readonly role: 'ingest' | 'fireWindows' | 'schemaSweep';
  readonly spec: FunctionSpec;
  /** Its schedule (fireWindows and the sweep), at the cadence of booking's function of the same role. */
  readonly schedule?: Schedule;
}

/** Booking's function of each role: the sizes and schedule a new pipeline starts from. */
const ROLE_TEMPLATE: Readonly<Record<PipelineFunction['role'], string>> = {
  ingest: 'ingestBooking',
  fireWindows: 'fireWindows',
  schemaSweep: 'schemaSweep',
};

const ownTable = (o: DeployOptions, t: TableRef): boolean =>
  t.projectId === undefined || t.projectId === o.project;

/**
 * The pipeline's functions as deploy specs: booking's sizes for the same role, the definition's entry point, name
 * and account, and the tables it writes. Every function is an HTTP function: fireWindows and the sweep are called
 * by Cloud Scheduler, and ingest by the plan's own push subscription (pipelineIngestSubscription).
 */
export function pipelineFunctionSpecs(
  p: AnyPipelineDefinition,
  schedules: readonly Schedule[],
): PipelineFunction[] {
  const gold = p.aggregations.map((a) => a.goldTable);
  const { tables } = p;
  const writes: Record<PipelineFunction['role'], () => { table: TableRef; access: TableAccess }[]> =
    {
      // Silver, the dead-letter table and bad data; element-driven early and late panes go to gold too.
      ingest: () => [
        { table: tables.silver, access: 'rows' },
        { table: tables.quarantine, access: 'rows' },
        { table: tables.badData, access: 'rows' },
        ...gold.map((table) => ({ table, access: 'rows' as const })),
      ],
      fireWindows: () => [
        ...gold.map((table) => ({ table, access: 'rows' as const })),
        { table: tables.badData, access: 'rows' },
      ],
      schemaSweep: () => [
        ...(p.schemaDrift.mode === 'sweep' ? p.schemaDrift.targetTables : []).map((table) => ({
          table,
          access: 'schema' as const,
        })),
        { table: tables.badData, access: 'rows' },
      ],
    };
  const accounts = p.serviceAccounts;
  return pipelineFunctions(p).flatMap(({ role, entryPoint, baseName }) => {
    const r = role as PipelineFunction['role'];
    const template = FUNCTION_SPECS.get(ROLE_TEMPLATE[r]);
    if (template === undefined) throw new Error(`no deploy spec for ${ROLE_TEMPLATE[r]}`);
    const account =
      r === 'ingest'
        ? accounts.ingest
        : r === 'fireWindows'
          ? accounts.fireWindows
          : accounts.schemaSweep;
    if (account === null) throw new Error(`pipeline ${p.name}: ${role} has no service account`);
    const spec: FunctionSpec = {
      ...template,
      entryPoint,
      baseName,
      trigger: 'http',
      serviceAccount: account,
      writes: () => writes[r](),
      // Reference data (a side input) is loaded with a query job.
      runsQueryJobs: template.runsQueryJobs || (r === 'ingest' && tables.reference.length > 0),
      // The plan creates the ingest subscription under a fixed name, so fireWindows can hold the watermark behind
      // its backlog (pipelineEnv): Cloud Monitoring's read permission.
      ...(r === 'fireWindows' && { readsBacklogMetric: true }),
    };
    const schedule = schedules.find((s) => s.functionName === ROLE_TEMPLATE[r]);
    return r === 'ingest' || schedule === undefined
      ? [{ role: r, spec }]
      : [{ role: r, spec, schedule: { ...schedule, functionName: entryPoint } }];
  });
}

/** The function's `--timeout`, seconds: fireWindows' derives from its loop as booking's does. */
function timeoutSeconds(fn: PipelineFunction, config: FunctionsConfig): number {
  return deployedTimeoutSeconds(
    fn.role === 'fireWindows' ? { ...fn.spec, entryPoint: 'fireWindows' } : fn.spec,
    config.window,
  );
}

/** The monitoring targets of a pipeline: its functions, subscriptions and jobs, under its own name prefix. */
export function pipelineMonitoringTargets(
  o: DeployOptions,
  p: AnyPipelineDefinition,
  schedules: readonly Schedule[],
): MonitoringTargets {
  const names = new Names(o);
  const fns = pipelineFunctionSpecs(p, schedules);
  const s = p.pubsub.subscriptions;
  return {
    prefix: monitoringPrefix(o, p),
    region: o.region,
    services: fns.map((f) => names.functionName(f.spec.baseName)),
    ingestService: names.functionName(p.functions.ingest.baseName),
    fireWindowsService: names.functionName(p.functions.fireWindows.baseName),
    schedulerJobs: fns
      .filter((f) => f.schedule !== undefined)
      .map((f) => names.functionName(f.spec.baseName)),
    ingestSubscription: s.ingest,
    bronzeSubscription: s.bronze ?? s.ingest,
    deadLetterHoldSubscription: s.deadLetterHold,
    bronzeDeadLetterHoldSubscription: s.bronzeDeadLetterHold ?? s.deadLetterHold,
    notificationChannels: o.notificationChannels,
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

/** The pipeline's service account bases with a display name each. */
function accountsOf(p: AnyPipelineDefinition): [string, string][] {
  const a = p.serviceAccounts;
  return [
    [a.ingest, `Offvia ${p.name} ${p.functions.ingest.entryPoint} runtime`],
    [a.fireWindows, `Offvia ${p.name} ${p.functions.fireWindows.entryPoint} runtime`],
    ...(a.schemaSweep === null || p.functions.schemaSweep === null
      ? []
      : [
          [a.schemaSweep, `Offvia ${p.name} ${p.functions.schemaSweep.entryPoint} runtime`] as [
            string,
            string,
          ],
        ]),
    ...(a.bronze === null
      ? []
      : [[a.bronze, `Offvia ${p.name} Bronze BigQuery subscription writer`] as [string, string]]),
  ];
}

/**
 * The deploy steps of one pipeline, after the shared foundation (APIs, Firestore database and its collection-group
 * TTL policies and index exemptions, the shared accounts and custom roles) and before nothing of another pipeline
 * depends on them.
 * @param withAgentTokenGrant also let the Pub/Sub service agent sign push tokens as the shared trigger account
 * (booking's section does it when it deploys its Eventarc-triggered function)
 * @throws Error for a DDL file that does not create a table the pipeline writes, a registered function whose
 * signature cannot be deployed, or a fireWindows loop longer than its schedule.
 */
export function planPipeline(
  ctx: PipelinePlanContext,
  p: AnyPipelineDefinition,
  sqlFiles: readonly SqlFile[],
  delivery: IngestDelivery,
  withAgentTokenGrant: boolean,
): void {
  const { o, steps } = ctx;
  steps.push({
    kind: 'note',
    title: `pipeline ${p.name}: ${p.description}`,
  });
  pipelineBigQuery(ctx, p, sqlFiles);
  pipelineFirestoreNote(ctx, p);
  pipelineAccounts(ctx, p, sqlFiles);
  pipelinePubSub(ctx, p, delivery);
  const functions = pipelineFunctionSpecs(p, ctx.schedules);
  const deployed: PipelineFunction[] = [];
  for (const fn of functions) {
    const registered = ctx.registered.find((r) => r.entryPoint === fn.spec.entryPoint);
    if (registered === undefined) {
      steps.push({
        kind: 'note',
        title: `${fn.spec.entryPoint} is not registered in functions/index.ts: not deployed, no schedule or push subscription`,
      });
      continue;
    }
    // fireWindows and the sweep are HTTP handlers; ingest may be a CloudEvent function: a push to the path
    // /projects/P/topics/T reaches the Functions Framework as the messagePublished event Eventarc would send.
    if (fn.role !== 'ingest' && registered.signatureType !== 'http') {
      throw new Error(
        `${fn.spec.entryPoint} is registered as ${registered.signatureType} but Cloud Scheduler calls it over HTTP`,
      );
    }
    deployed.push(fn);
  }
  if (withAgentTokenGrant && deployed.some((f) => f.role === 'ingest')) {
    steps.push({
      kind: 'run',
      title: `Pub/Sub service agent: roles/iam.serviceAccountTokenCreator on ${ctx.names.serviceAccountId(TRIGGER_SA)} (signs push tokens)`,
      command: resourceGrant(
        'iam service-accounts',
        ctx.names.serviceAccountEmail(TRIGGER_SA),
        `serviceAccount:${PUBSUB_AGENT}`,
        'roles/iam.serviceAccountTokenCreator',
        o.project,
      ),
      retry: true,
    });
  }
  for (const fn of deployed) pipelineFunction(ctx, p, fn, delivery);
  pipelineMonitoring(ctx, p);
}

/** The pipeline's DDL files, then the partition expiration of its dead-letter and bad-data tables. */
function pipelineBigQuery(
  { o, steps, kms }: PipelinePlanContext,
  p: AnyPipelineDefinition,
  sqlFiles: readonly SqlFile[],
): void {
  const query = (sql: string): string[] => [
    'bq',
    `--project_id=${o.project}`,
    `--location=${o.bqLocation}`,
    '--headless',
    'query',
    '--use_legacy_sql=false',
    sql,
  ];
  if (kms !== undefined) {
    // As for booking's datasets: the default key first, so every table the DDL creates is encrypted with it.
    for (const datasetId of datasetsCreated(sqlFiles)) {
      const dataset = `${o.project}:${datasetId}`;
      steps.push({
        kind: 'ensure',
        title: `Dataset ${datasetId} with default key ${kms.key}`,
        probe: { kind: 'status', command: bq(o.project, 'show', '--dataset', dataset) },
        absent: [
          'bq',
          `--project_id=${o.project}`,
          `--location=${o.bqLocation}`,
          '--headless',
          'mk',
          '--dataset',
          `--default_kms_key=${kms.name}`,
          dataset,
        ],
        present: bq(o.project, 'update', `--default_kms_key=${kms.name}`, dataset),
        retry: true,
      });
    }
  }
  for (const file of sqlFiles) {
    steps.push({
      kind: 'run',
      title: `BigQuery DDL ${file.name}`,
      command: query(file.sql.trimEnd()),
    });
  }
  // The dead-letter and bad-data tables keep raw payloads: their partitions expire as booking's quarantine does.
  const days = o.quarantineRetentionDays === 0 ? 'NULL' : String(o.quarantineRetentionDays);
  for (const t of [p.tables.quarantine, p.tables.badData]) {
    const id = `${t.datasetId}.${t.tableId}`;
    if (!ownTable(o, t) || !isPartitioned(sqlFiles, id)) continue;
    steps.push({
      kind: 'run',
      title: `Partition expiration of ${id}: ${o.quarantineRetentionDays === 0 ? 'none' : `${days} days`}`,
      command: query(
        `ALTER TABLE \`${o.project}.${id}\`\nSET OPTIONS (partition_expiration_days = ${days});`,
      ),
    });
  }
}

/** The collection groups of the window store under a pipeline's root that have a TTL policy (shared, database-wide). */
const TTL_GROUPS = [
  COLLECTIONS.ledger,
  COLLECTIONS.dropped,
  HOLDS_COLLECTION,
  GROUP_COLLECTIONS.groups,
  GROUP_COLLECTIONS.spills,
];

/**
 * The pipeline's Firestore namespace. Firestore sets TTL policies and single-field index exemptions per collection
 * group (a collection id, across the whole database), so the window-store subcollections under this pipeline's
 * roots are covered by the policies and exemptions the shared section sets once; its root collections hold one
 * document per aggregation (no TTL, nothing to exempt).
 */
function pipelineFirestoreNote({ o, steps }: PipelinePlanContext, p: AnyPipelineDefinition): void {
  steps.push({
    kind: 'note',
    title:
      `pipeline ${p.name}: Firestore namespace ${pipelineFirestoreRoots(p).join(', ')} in database ` +
      `${o.firestoreDatabase}; TTL policies (${TTL_GROUPS.join(', ')}) and index exemptions are per collection ` +
      'group, set once above for every pipeline',
  });
}

/** The pipeline's own accounts, then each function's grants on its own tables and datasets only. */
function pipelineAccounts(
  ctx: PipelinePlanContext,
  p: AnyPipelineDefinition,
  sqlFiles: readonly SqlFile[],
): void {
  const { o, p: proj, names, steps } = ctx;
  for (const [base, displayName] of accountsOf(p)) {
    steps.push({
      kind: 'ensure',
      title: `Service account ${names.serviceAccountId(base)} (pipeline ${p.name})`,
      probe: {
        kind: 'status',
        command: gcloud('iam service-accounts describe', names.serviceAccountEmail(base), proj),
      },
      absent: gcloud(
        'iam service-accounts create',
        names.serviceAccountId(base),
        `--display-name=${displayName}`,
        proj,
      ),
    });
  }
  const created = new Set(tablesCreated(sqlFiles));
  for (const { spec } of pipelineFunctionSpecs(p, ctx.schedules)) {
    const member = `serviceAccount:${names.serviceAccountEmail(spec.serviceAccount)}`;
    const access = new Map<string, TableAccess>();
    const datasets: string[] = [];
    for (const write of spec.writes(ctx.config)) {
      const id = `${write.table.datasetId}.${write.table.tableId}`;
      if (!ownTable(o, write.table)) {
        steps.push({
          kind: 'note',
          title: `${spec.entryPoint}: no grant on ${write.table.projectId ?? ''}:${id} (another project: grant it there by hand)`,
        });
        continue;
      }
      if (!created.has(id)) {
        throw new Error(
          `${spec.entryPoint} writes to table ${id}, which pipeline ${p.name}'s DDL files do not create`,
        );
      }
      if (access.get(id) !== 'schema') access.set(id, write.access);
      if (!datasets.includes(write.table.datasetId)) datasets.push(write.table.datasetId);
    }
    const reads =
      spec.entryPoint === p.functions.ingest.entryPoint
        ? p.tables.reference.filter((t) => ownTable(o, t))
        : [];
    for (const t of reads) if (!datasets.includes(t.datasetId)) datasets.push(t.datasetId);
    for (const datasetId of datasets) {
      const dataset = `${o.project}:${datasetId}`;
      steps.push({
        kind: 'run',
        title: `${spec.entryPoint}: ${DATASET_METADATA_ROLE} on dataset ${dataset} (metadata, no rows)`,
        command: datasetGrant(o.project, member, DATASET_METADATA_ROLE, dataset),
        retry: true,
      });
    }
    for (const [id, kind] of access) {
      steps.push({
        kind: 'run',
        title: `${spec.entryPoint}: ${names.customRoleId(CUSTOM_ROLES[kind].id)} on table ${id} only`,
        command: tableGrant(
          o.project,
          member,
          names.customRoleName(CUSTOM_ROLES[kind].id),
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
        command: tableGrant(o.project, member, REFERENCE_READER_ROLE, `${o.project}:${id}`),
        retry: true,
      });
    }
    for (const { role, condition } of functionProjectRoles(spec, o.project, o.firestoreDatabase)) {
      steps.push({
        kind: 'run',
        title: `${spec.entryPoint}: ${role} on the project${condition ? ` (${condition.title})` : ''}`,
        command: projectGrant(o.project, member, role, condition),
        retry: true,
      });
    }
  }
}

/**
 * The pipeline's topics (its topic retains messages for seek like booking's), dead-letter hold subscriptions, and
 * Bronze as a BigQuery subscription written by the pipeline's own Bronze account, with the agent grants.
 */
function pipelinePubSub(
  { o, p: proj, names, steps, kms }: PipelinePlanContext,
  p: AnyPipelineDefinition,
  delivery: IngestDelivery,
): void {
  const agent = `serviceAccount:${PUBSUB_AGENT}`;
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
  steps.push({
    kind: 'note',
    title: `pipeline ${p.name}: no publisher is granted on ${p.pubsub.topic} (grant roles/pubsub.publisher on the topic to its producers)`,
  });
  const holds: [string, string][] = [
    [p.pubsub.subscriptions.deadLetterHold, p.pubsub.deadLetterTopic],
  ];
  if (
    p.pubsub.subscriptions.bronzeDeadLetterHold !== null &&
    p.pubsub.bronzeDeadLetterTopic !== null
  ) {
    holds.push([p.pubsub.subscriptions.bronzeDeadLetterHold, p.pubsub.bronzeDeadLetterTopic]);
  }
  for (const [subscription, topic] of holds) {
    steps.push({
      kind: 'ensure',
      title: `Subscription ${subscription} (keeps the dead letters of ${topic})`,
      probe: {
        kind: 'status',
        command: gcloud('pubsub subscriptions describe', subscription, proj),
      },
      absent: gcloud(
        'pubsub subscriptions create',
        subscription,
        `--topic=${topic}`,
        `--message-retention-duration=${delivery.deadLetterRetention}`,
        '--expiration-period=never',
        proj,
      ),
    });
  }
  for (const topic of pipelineTopics(p).slice(1)) {
    steps.push({
      kind: 'run',
      title: `Pub/Sub service agent: roles/pubsub.publisher on ${topic} (forwards dead letters)`,
      command: resourceGrant('pubsub topics', topic, agent, 'roles/pubsub.publisher', o.project),
      retry: true,
    });
  }
  const bronze = p.tables.bronze;
  const bronzeSubscription = p.pubsub.subscriptions.bronze;
  const writerBase = p.serviceAccounts.bronze;
  if (bronze === null || bronzeSubscription === null || writerBase === null) return;
  const writer = names.serviceAccountEmail(writerBase);
  const table = `${bronze.datasetId}.${bronze.tableId}`;
  steps.push({
    kind: 'run',
    title: `${names.serviceAccountId(writerBase)}: roles/bigquery.dataEditor on table ${table} only`,
    command: tableGrant(
      o.project,
      `serviceAccount:${writer}`,
      'roles/bigquery.dataEditor',
      `${o.project}:${table}`,
    ),
    retry: true,
  });
  steps.push({
    kind: 'run',
    title: `Pub/Sub service agent: roles/iam.serviceAccountTokenCreator on ${names.serviceAccountId(writerBase)} (acts as the Bronze writer)`,
    command: resourceGrant(
      'iam service-accounts',
      writer,
      agent,
      'roles/iam.serviceAccountTokenCreator',
      o.project,
    ),
    retry: true,
  });
  const settings = [
    `--bigquery-table=${o.project}.${table}`,
    `--bigquery-service-account-email=${writer}`,
    '--write-metadata',
    ...(p.pubsub.bronzeDeadLetterTopic === null
      ? []
      : [
          `--dead-letter-topic=projects/${o.project}/topics/${p.pubsub.bronzeDeadLetterTopic}`,
          `--max-delivery-attempts=${delivery.maxDeliveryAttempts}`,
        ]),
  ];
  steps.push({
    kind: 'ensure',
    title: `Bronze BigQuery subscription ${bronzeSubscription} (writes as ${names.serviceAccountId(writerBase)})`,
    probe: {
      kind: 'status',
      command: gcloud('pubsub subscriptions describe', bronzeSubscription, proj),
    },
    absent: gcloud(
      'pubsub subscriptions create',
      bronzeSubscription,
      `--topic=${p.pubsub.topic}`,
      ...settings,
      '--expiration-period=never',
      proj,
    ),
    present: gcloud('pubsub subscriptions update', bronzeSubscription, ...settings, proj),
    retry: true,
  });
  steps.push({
    kind: 'run',
    title: `Pub/Sub service agent: roles/pubsub.subscriber on ${bronzeSubscription} (acks Bronze dead letters)`,
    command: resourceGrant(
      'pubsub subscriptions',
      bronzeSubscription,
      agent,
      'roles/pubsub.subscriber',
      o.project,
    ),
    retry: true,
  });
}

/** The `gcloud functions deploy` command of one of the pipeline's functions, without the digest label. */
function deployCommand(
  ctx: PipelinePlanContext,
  p: AnyPipelineDefinition,
  fn: PipelineFunction,
): string[] {
  const { o, names, kms } = ctx;
  return gcloud(
    'functions deploy',
    names.functionName(fn.spec.baseName),
    '--gen2',
    `--project=${o.project}`,
    `--region=${o.region}`,
    `--runtime=${o.runtime}`,
    '--source=.',
    `--entry-point=${fn.spec.entryPoint}`,
    '--trigger-http',
    `--ingress-settings=${INGRESS_SETTINGS}`,
    '--no-allow-unauthenticated',
    `--service-account=${names.serviceAccountEmail(fn.spec.serviceAccount)}`,
    `--build-service-account=projects/${o.project}/serviceAccounts/${names.serviceAccountEmail(BUILD_SA)}`,
    `--memory=${fn.spec.memory}`,
    `--cpu=${fn.spec.cpu}`,
    `--concurrency=${fn.spec.concurrency}`,
    `--max-instances=${fn.spec.maxInstances}`,
    `--min-instances=${fn.spec.minInstances}`,
    `--timeout=${timeoutSeconds(fn, ctx.config)}s`,
    `--set-env-vars=${setEnvVarsValue(pipelineEnv(o, p))}`,
    '--clear-secrets',
    ...(kms === undefined
      ? []
      : [
          `--kms-key=${kms.name}`,
          `--docker-repository=projects/${o.project}/locations/${o.region}/repositories/${names.serviceAccountId('functions')}`,
        ]),
  );
}

/** One function, its URL, then its push subscription (ingest) or its Cloud Scheduler job. */
function pipelineFunction(
  ctx: PipelinePlanContext,
  p: AnyPipelineDefinition,
  fn: PipelineFunction,
  delivery: IngestDelivery,
): void {
  const { o, p: proj, names, steps } = ctx;
  const name = names.functionName(fn.spec.baseName);
  const command = deployCommand(ctx, p, fn);
  const digest = ctx.digest(command);
  const describe = (format: string): Command =>
    gcloud('functions describe', name, `--region=${o.region}`, '--v2', proj, `--format=${format}`);
  steps.push({
    kind: 'ensure',
    title: `Function ${name} (${fn.spec.entryPoint}, pipeline ${p.name}): deploy unless this source and configuration are live`,
    probe: {
      kind: 'line',
      command: describe(`value[separator=" "](state,labels.${ctx.deployLabel})`),
      line: `${ctx.liveState} ${digest}`,
    },
    absent: [...command, `--update-labels=${ctx.deployLabel}=${digest}`],
  });
  const url = `\${${names.variable(fn.spec.entryPoint, 'URL')}}`;
  const invoker = names.serviceAccountEmail(fn.role === 'ingest' ? TRIGGER_SA : SCHEDULER_SA);
  steps.push({
    kind: 'run',
    title: `${names.serviceAccountId(fn.role === 'ingest' ? TRIGGER_SA : SCHEDULER_SA)}: roles/run.invoker on ${name} only`,
    command: invokerGrant(o.project, o.region, name, invoker),
    retry: true,
  });
  steps.push({
    kind: 'capture',
    title: `URL of ${name}`,
    variable: names.variable(fn.spec.entryPoint, 'URL'),
    command: describe('value(serviceConfig.uri)'),
  });
  if (fn.role === 'ingest') {
    pipelineIngestSubscription(ctx, p, fn, url, delivery);
    return;
  }
  const schedule = fn.schedule;
  if (schedule === undefined) return;
  if (fn.role === 'fireWindows') assertLoopFitsSchedule(ctx.config.window, schedule);
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
      `--oidc-service-account-email=${invoker}`,
      `--oidc-token-audience=${url}`,
      `--attempt-deadline=${attemptDeadlineSeconds(timeoutSeconds(fn, ctx.config))}s`,
      '--max-retry-attempts=0',
      `--description=Calls ${fn.spec.entryPoint} of pipeline ${p.name}`,
      proj,
    );
  steps.push({
    kind: 'ensure',
    title: `Cloud Scheduler job ${name} (${schedule.cron}, OIDC)`,
    probe: {
      kind: 'status',
      command: gcloud('scheduler jobs describe', name, `--location=${o.region}`, proj),
    },
    absent: job('create'),
    present: job('update'),
    retry: true,
  });
}

/**
 * The ingest function's push subscription, created by the plan rather than by Eventarc: message ordering is fixed
 * when a subscription is created (Pub/Sub `enable_message_ordering` cannot be updated) and Eventarc creates its
 * subscription without it. With the contract's ordering key (`orderingKeyAttribute`) Pub/Sub delivers one key's
 * messages in publish order; delivery stays at-least-once. The push goes to `/projects/P/topics/T` on the function,
 * authenticated as the shared trigger account (OIDC, audience the function's URL).
 */
function pipelineIngestSubscription(
  { o, p: proj, names, steps }: PipelinePlanContext,
  p: AnyPipelineDefinition,
  fn: PipelineFunction,
  url: string,
  delivery: IngestDelivery,
): void {
  const subscription = p.pubsub.subscriptions.ingest;
  const ordered = p.contract.orderingKeyAttribute !== null;
  const ackDeadline = fn.spec.timeoutSeconds + delivery.ackDeadlineMarginSeconds;
  if (ackDeadline > 600) {
    throw new Error(
      `${fn.spec.entryPoint}: ack deadline ${ackDeadline} s is above Pub/Sub's 600 s maximum`,
    );
  }
  const deadLetter = `projects/${o.project}/topics/${p.pubsub.deadLetterTopic}`;
  const settings = [
    `--push-endpoint=${url}/projects/${o.project}/topics/${p.pubsub.topic}`,
    `--push-auth-service-account=${names.serviceAccountEmail(TRIGGER_SA)}`,
    `--push-auth-token-audience=${url}`,
    `--dead-letter-topic=${deadLetter}`,
    `--max-delivery-attempts=${delivery.maxDeliveryAttempts}`,
    `--min-retry-delay=${delivery.minRetryDelay}`,
    `--max-retry-delay=${delivery.maxRetryDelay}`,
    `--message-retention-duration=${delivery.messageRetention}`,
    `--ack-deadline=${ackDeadline}`,
  ];
  steps.push({
    kind: 'ensure',
    title: `Push subscription ${subscription} to ${names.functionName(fn.spec.baseName)}${ordered ? ` (message ordering by ${p.contract.orderingKeyAttribute ?? ''})` : ''}`,
    probe: { kind: 'status', command: gcloud('pubsub subscriptions describe', subscription, proj) },
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
    steps.push({
      kind: 'ensure',
      title: `The ${subscription} subscription delivers in order (set only when it is created)`,
      probe: {
        kind: 'line',
        command: gcloud(
          'pubsub subscriptions describe',
          subscription,
          proj,
          '--format=value(enableMessageOrdering)',
        ),
        line: 'True',
      },
      absent: [
        'bash',
        '-c',
        'echo "the subscription $0 was created without message ordering, which cannot be turned on: delete it ' +
          '(teardown.sh --pipeline $1) and deploy again" >&2; exit 1',
        subscription,
        p.name,
      ],
    });
  }
  steps.push({
    kind: 'run',
    title: `Pub/Sub service agent: roles/pubsub.subscriber on ${subscription} (acks dead letters)`,
    command: resourceGrant(
      'pubsub subscriptions',
      subscription,
      `serviceAccount:${PUBSUB_AGENT}`,
      'roles/pubsub.subscriber',
      o.project,
    ),
    retry: true,
  });
  // Read back, as booking's seek readiness does: seek and replay depend on the topic's retention.
  const retained = `${durationSeconds(o.topicRetention)}s`;
  steps.push({
    kind: 'ensure',
    title: `${p.pubsub.topic} retains messages ${o.topicRetention} (what offvia seek --time replays)`,
    probe: {
      kind: 'line',
      command: gcloud(
        'pubsub topics describe',
        p.pubsub.topic,
        proj,
        '--format=value(messageRetentionDuration)',
      ),
      line: retained,
    },
    absent: [
      'bash',
      '-c',
      'echo "the topic $0 does not retain messages $1 after the update" >&2; exit 1',
      p.pubsub.topic,
      retained,
    ],
  });
}

/** The pipeline's log-based metrics, alert policies and dashboard, all named `<prefix><pipeline>-…`. */
function pipelineMonitoring(ctx: PipelinePlanContext, p: AnyPipelineDefinition): void {
  const { o, p: proj, steps, files } = ctx;
  const targets = pipelineMonitoringTargets(o, p, ctx.schedules);
  for (const metric of logMetrics(targets)) {
    const file = path.posix.join(o.outDir, 'metrics', `${metric.name}.json`);
    files.push({ path: file, content: `${JSON.stringify(metric, null, 2)}\n` });
    const config = `--config-from-file=${file}`;
    steps.push({
      kind: 'ensure',
      title: `Log-based metric ${metric.name}`,
      probe: { kind: 'status', command: gcloud('logging metrics describe', metric.name, proj) },
      absent: gcloud('logging metrics create', metric.name, config, proj),
      present: gcloud('logging metrics update', metric.name, config, proj),
    });
  }
  for (const policy of alertPolicies(targets)) {
    const file = path.posix.join(
      o.outDir,
      'policies',
      `${policy.displayName.slice(o.namePrefix.length)}.json`,
    );
    const variable = policyVariableOf(o, policy.displayName);
    files.push({ path: file, content: `${JSON.stringify(policy, null, 2)}\n` });
    steps.push({
      kind: 'ensure',
      title: `Alert policy ${policy.displayName}`,
      probe: { kind: 'lookup', variable, command: findPolicyCommand(proj, policy.displayName) },
      absent: gcloud('alpha monitoring policies create', `--policy-from-file=${file}`, proj),
      present: gcloud(
        'alpha monitoring policies update',
        `\${${variable}}`,
        `--policy-from-file=${file}`,
        proj,
      ),
      retry: true,
    });
  }
  addMonitoringDashboard(o, targets, steps, files, dashboardVariable(p));
}

/** The plan variable of a pipeline's dashboard lookup. */
export function dashboardVariable(p: AnyPipelineDefinition): string {
  return `MONITORING_DASHBOARD_${p.name.toUpperCase()}`;
}

/** Alert policies are found by display name: `${prefix}${id}` → a plan variable (as deploy-plan.ts policyVariable). */
export function policyVariableOf(o: DeployOptions, displayName: string): string {
  return `POLICY_${displayName.slice(o.namePrefix.length).replace(/-/g, '_').toUpperCase()}`;
}

/** Lists the alert policy with this display name (as deploy-plan.ts findPolicy). */
export function findPolicyCommand(p: string, displayName: string): Command {
  return gcloud(
    'alpha monitoring policies list',
    p,
    `--filter=displayName="${displayName}"`,
    '--limit=1',
    '--format=value(name)',
  );
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

/**
 * The teardown steps of one pipeline: its scheduler jobs, alert policies, metrics, functions, subscriptions, its
 * accounts' project bindings and the accounts; with `deleteData` its topics, datasets and the documents under its
 * Firestore roots. Never a shared resource, nor a name another pipeline owns.
 */
export function pipelineTeardownSteps(
  o: DeployOptions,
  p: AnyPipelineDefinition,
  sqlFiles: readonly SqlFile[],
  schedules: readonly Schedule[],
  deleteData: boolean,
): Step[] {
  const names = new Names(o);
  const proj = `--project=${o.project}`;
  const steps: Step[] = [];
  const deleteIfPresent = (title: string, probe: string[], remove: string[]): void => {
    steps.push({
      kind: 'ensure',
      title,
      probe: { kind: 'status', command: probe },
      present: remove,
    });
  };
  const fns = pipelineFunctionSpecs(p, schedules);
  for (const fn of fns.filter((f) => f.schedule !== undefined)) {
    const name = names.functionName(fn.spec.baseName);
    const where = [`--location=${o.region}`, proj];
    deleteIfPresent(
      `Delete Cloud Scheduler job ${name}`,
      gcloud('scheduler jobs describe', name, ...where),
      gcloud('scheduler jobs delete', name, ...where, '--quiet'),
    );
  }
  const targets = pipelineMonitoringTargets({ ...o, notificationChannels: [] }, p, schedules);
  for (const policy of alertPolicies(targets)) {
    const variable = policyVariableOf(o, policy.displayName);
    steps.push({
      kind: 'ensure',
      title: `Delete alert policy ${policy.displayName}`,
      probe: { kind: 'lookup', variable, command: findPolicyCommand(proj, policy.displayName) },
      present: gcloud('alpha monitoring policies delete', `\${${variable}}`, proj, '--quiet'),
    });
  }
  for (const metric of logMetrics(targets)) {
    deleteIfPresent(
      `Delete log-based metric ${metric.name}`,
      gcloud('logging metrics describe', metric.name, proj),
      gcloud('logging metrics delete', metric.name, proj, '--quiet'),
    );
  }
  const dashboard = `${targets.prefix}pipeline`;
  const dashboardVar = dashboardVariable(p);
  steps.push({
    kind: 'ensure',
    title: `Delete Cloud Monitoring dashboard ${dashboard}`,
    probe: {
      kind: 'lookup',
      variable: dashboardVar,
      command: gcloud(
        'monitoring dashboards list',
        proj,
        `--filter=displayName="${dashboard}"`,
        '--limit=1',
        '--format=value(name)',
      ),
    },
    present: gcloud('monitoring dashboards delete', `\${${dashboardVar}}`, proj, '--quiet'),
  });
  for (const fn of fns) {
    const name = names.functionName(fn.spec.baseName);
    const where = [`--region=${o.region}`, proj];
    deleteIfPresent(
      `Delete function ${name}`,
      gcloud('functions describe', name, ...where),
      gcloud('functions delete', name, ...where, '--quiet'),
    );
  }
  const s = p.pubsub.subscriptions;
  for (const subscription of [
    s.ingest,
    ...(s.bronze === null ? [] : [s.bronze]),
    ...(deleteData
      ? [s.deadLetterHold, ...(s.bronzeDeadLetterHold === null ? [] : [s.bronzeDeadLetterHold])]
      : []),
  ]) {
    deleteIfPresent(
      `Delete subscription ${subscription}`,
      gcloud('pubsub subscriptions describe', subscription, proj),
      gcloud('pubsub subscriptions delete', subscription, proj, '--quiet'),
    );
  }
  // Project-level bindings before their accounts: a deleted account's bindings can no longer be removed by email.
  for (const { spec } of fns) {
    const email = names.serviceAccountEmail(spec.serviceAccount);
    for (const { role, condition } of functionProjectRoles(spec, o.project, o.firestoreDatabase)) {
      steps.push({
        kind: 'ensure',
        title: `Remove ${role} on the project from ${names.serviceAccountId(spec.serviceAccount)}`,
        probe: {
          kind: 'line',
          command: gcloud(
            'projects get-iam-policy',
            o.project,
            '--flatten=bindings[].members',
            `--filter=bindings.members=serviceAccount:${email}`,
            '--format=value(bindings.role)',
          ),
          line: role,
        },
        present: gcloud(
          'projects remove-iam-policy-binding',
          o.project,
          `--member=serviceAccount:${email}`,
          `--role=${role}`,
          conditionFlag(condition),
          '--format=none',
        ),
      });
    }
  }
  for (const [base] of accountsOf(p)) {
    const email = names.serviceAccountEmail(base);
    deleteIfPresent(
      `Delete service account ${names.serviceAccountId(base)}`,
      gcloud('iam service-accounts describe', email, proj),
      gcloud('iam service-accounts delete', email, proj, '--quiet'),
    );
  }
  const datasets = datasetsCreated(sqlFiles);
  const roots = pipelineFirestoreRoots(p);
  if (deleteData) {
    for (const topic of [...pipelineTopics(p)].reverse()) {
      deleteIfPresent(
        `Delete topic ${topic}`,
        gcloud('pubsub topics describe', topic, proj),
        gcloud('pubsub topics delete', topic, proj, '--quiet'),
      );
    }
    for (const dataset of [...datasets].reverse()) {
      const ref = `${o.project}:${dataset}`;
      deleteIfPresent(
        `Delete dataset ${dataset} and all its tables`,
        bq(o.project, 'show', '--dataset', ref),
        bq(o.project, 'rm', '-r', '-f', '--dataset', ref),
      );
    }
    // Not `gcloud firestore bulk-delete`: it deletes collection groups, every collection with an id anywhere in
    // the database, and the window-store subcollection ids are the same under every pipeline's root.
    for (const root of roots) {
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
