// The ordered deploy plan for one project: a pure function of the options and of what the repository holds
// (registered functions, schedules, sql/, source digest). No Google Cloud call happens here.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { COLLECTIONS } from '../../shared/state/firestore-window-store';
import { HOLDS_COLLECTION } from '../../shared/state/watermark-holds';
import { GROUP_COLLECTIONS } from '../../shared/state/grouped-window-store';
import {
  BOOKING_DLQ_SUBSCRIPTION,
  BOOKING_DLQ_TOPIC,
  BOOKING_TOPIC,
  BRONZE_DATASET,
  BRONZE_SUBSCRIPTION,
  BRONZE_TABLE,
} from '../local/resources';
import type { Schedule } from '../schedules';
import { functionEnv, setEnvVarsValue } from './env';
import {
  BUILD_ROLES,
  CUSTOM_ROLES,
  DATASET_METADATA_ROLE,
  FUNCTION_SPECS,
  type FunctionSpec,
  type FunctionsConfig,
  functionProjectRoles,
  INGRESS_SETTINGS,
  signatureFor,
  type TableWrite,
} from './functions';
import {
  assertNoBroadRoles,
  datasetGrant,
  invokerGrant,
  projectGrant,
  removeUnconditionedStep,
  resourceGrant,
  tableGrant,
} from './iam';
import { assertPlanSecure, kmsCoverageViolations } from './plan-checks';
import { FUNCTION_IMAGES_REPOSITORY, KEY_USERS, KMS_ROLE, type KmsKey, parseKmsKey } from './kms';
import { alertPolicies, logMetrics, type MonitoringTargets } from './monitoring';
import { addMonitoringDashboard } from './dashboard';
import {
  type DeployOptions,
  type GeneratedFile,
  Names,
  type Plan,
  BRONZE_DLQ_SUBSCRIPTION,
  BRONZE_DLQ_TOPIC,
  BRONZE_SA,
  BUILD_SA,
  durationSeconds,
  passengerIdSecret,
  PUBSUB_AGENT,
  type RepoFacts,
  SCHEDULER_SA,
  TRIGGER_SA,
  validateOptions,
} from './options';
import { PASSENGER_ID_VARS } from '../../shared/config/passenger-id-config';
import { datasetsCreated, tablesCreated } from './sql';
import {
  assertLoopFitsSchedule,
  attemptDeadlineSeconds,
  deployedTimeoutSeconds,
} from './fire-windows-timeout';
import { bq, type Command, gcloud, type Step } from './steps';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { pipelineFunctions } from '../../shared/pipeline/registry-checks';
import { PIPELINES } from '../../shared/pipelines';
import { planPipeline } from './pipeline-plan';
import { BOOKING, checkPipelineAccounts, selectPipelines } from './pipelines';
import type { SqlFile } from './sql';

/** Firestore field every TTL policy is on (shared/state/firestore-window-store.ts writes it as a Timestamp). */
export const TTL_FIELD = 'expireAt';
/**
 * The collection groups with a TTL policy unless `--ttl-collection-group` says otherwise: the dedup ledger,
 * the dropped-late counters and the watermark holds of the window store (shared/state; fireWindows also deletes
 * lapsed holds itself). The schema-drift store (shared/drift) gets none:
 * the sweep deletes the waiting rows it settles, but its audit records (the `changes` and `updates` documents
 * under each table) are kept without expiry, one per schema window with a change and one per applied update
 * (a few a day at most); `teardown.sh --delete-data` removes them.
 */
export const DEFAULT_TTL_COLLECTION_GROUPS: readonly string[] = [
  COLLECTIONS.ledger,
  COLLECTIONS.dropped,
  HOLDS_COLLECTION,
];
/**
 * Label carrying the digest of a function's source and deploy flags; equal digest and state LIVE_STATE → the
 * deploy is skipped.
 */
export const DEPLOY_LABEL = 'offvia_deploy';
/** `state` of a v2 function that is deployed and serving (FAILED, DEPLOYING, UNKNOWN, DELETING are not). */
export const LIVE_STATE = 'ACTIVE';

/** Dead-letter and retry policy of the function subscription; docs/deploy.md explains the numbers. */
export const DELIVERY = {
  maxDeliveryAttempts: 15,
  minRetryDelay: '10s',
  maxRetryDelay: '600s',
  /** Eventarc creates the subscription with 24 h; 7 days rides out a long outage (the dedup ledger TTL must be ≥). */
  messageRetention: '7d',
  messageRetentionMs: 7 * 24 * 3_600_000,
  /** How long dead letters are kept in the hold subscription. */
  deadLetterRetention: '7d',
  /**
   * Seconds added to the function's `--timeout` for the push subscription's ack deadline. For a push
   * subscription the ack deadline is also the timeout of the push request (Pub/Sub `Subscription.ack_deadline_seconds`:
   * "For push delivery, this value is also used to set the request timeout for the call to the push endpoint"), so
   * a deadline at or below the function's timeout would redeliver a message still being processed. Pub/Sub allows
   * 10–600 s.
   */
  ackDeadlineMarginSeconds: 30,
} as const;

/**
 * The push subscription's ack deadline for a function: its timeout plus the margin.
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

/** The APIs the deployment uses. */
export const APIS: readonly string[] = [
  'artifactregistry.googleapis.com',
  'bigquery.googleapis.com',
  'cloudbuild.googleapis.com',
  'cloudfunctions.googleapis.com',
  'cloudresourcemanager.googleapis.com',
  'cloudscheduler.googleapis.com',
  'eventarc.googleapis.com',
  'firestore.googleapis.com',
  'iam.googleapis.com',
  'logging.googleapis.com',
  'monitoring.googleapis.com',
  'pubsub.googleapis.com',
  'run.googleapis.com',
];

/** A function this plan deploys, with its schedule when it is an HTTP function. */
interface Deployed {
  readonly spec: FunctionSpec;
  readonly schedule?: Schedule;
}

/** Everything the sections of the plan share. */
interface Context {
  readonly o: DeployOptions;
  readonly facts: RepoFacts;
  readonly names: Names;
  readonly config: FunctionsConfig;
  readonly envValue: string;
  readonly functions: readonly Deployed[];
  /** `--project=P`. */
  readonly p: string;
  readonly steps: Step[];
  readonly files: GeneratedFile[];
  /** `--kms-key`, parsed; undefined: Google-managed encryption. */
  readonly kms: KmsKey | undefined;
}

/**
 * The deploy plan for the pipelines `o.pipelines` names (absent: booking alone): the shared foundation, booking's
 * hand-written sections when booking is selected, then each other pipeline from its definition (pipeline-plan.ts).
 * @throws Error for invalid options, an unknown pipeline, a pipeline account id too long for the prefix, a registered function without a spec or schedule, a bad OFFVIA_* value
 * (ConfigError), a dedup ledger TTL shorter than the subscription's retention, or a grant on a dataset of this
 * project that sql/ does not create.
 */
export function buildDeployPlan(o: DeployOptions, facts: RepoFacts): Plan {
  validateOptions(o);
  const selected = selectPipelines(o.pipelines ?? [BOOKING]);
  const withBooking = selected.some((p) => p.name === BOOKING);
  const others = selected.filter((p) => p.name !== BOOKING);
  checkPipelineAccounts(o, others);
  const otherSql = others.map((p) => [p, pipelineSqlFiles(facts, p)] as const);
  const { vars, config } = functionEnv(
    o.project,
    o.envOverrides,
    o.firestoreDatabase,
    o.passengerIdHmacSecret !== undefined,
  );
  // A ledger entry must outlive every redelivery of its message, or a late redelivery counts twice.
  if (config.window.ledgerTtlMs < DELIVERY.messageRetentionMs) {
    throw new Error(
      `OFFVIA_WINDOW_LEDGER_TTL_MS (${config.window.ledgerTtlMs}) is shorter than the function ` +
        `subscription's message retention (${DELIVERY.messageRetention})`,
    );
  }
  // A message replayed by a seek within the topic's retention must still find its ledger entry, or it counts twice.
  if (config.window.ledgerTtlMs < durationSeconds(o.topicRetention) * 1000) {
    throw new Error(
      `OFFVIA_WINDOW_LEDGER_TTL_MS (${config.window.ledgerTtlMs}) is shorter than --topic-retention ` +
        `(${o.topicRetention}): a replayed message would count twice in the windows`,
    );
  }
  // One delivery's budget inside the function must end before the function's timeout, which must end before
  // Pub/Sub's push timeout (the ack deadline): otherwise a slow delivery is cut by the platform, or redelivered
  // while it still runs.
  for (const spec of FUNCTION_SPECS.values()) {
    if (spec.trigger !== 'topic') continue;
    if (config.ingest.attemptDeadlineMs >= spec.timeoutSeconds * 1000) {
      throw new Error(
        `OFFVIA_ATTEMPT_DEADLINE_MS (${config.ingest.attemptDeadlineMs}) is not below ${spec.entryPoint}'s ` +
          `timeout (${spec.timeoutSeconds} s)`,
      );
    }
    ackDeadlineSeconds(spec);
  }
  const ctx: Context = {
    o,
    facts,
    names: new Names(o),
    config,
    envValue: setEnvVarsValue(vars),
    functions: withBooking ? deployedFunctions(facts) : [],
    p: `--project=${o.project}`,
    steps: [],
    files: [],
    kms: o.kmsKey === undefined ? undefined : parseKmsKey(o.kmsKey),
  };
  // Shared sections (APIs, Firestore database and its collection-group TTL policies and index exemptions, the
  // shared accounts) run whatever the selection; booking's own sections only when booking is selected.
  foundation(ctx);
  if (ctx.kms !== undefined) kmsKeyGrants(ctx, ctx.kms);
  if (withBooking) bigQuery(ctx);
  firestore(ctx);
  keyGroupIndexes(ctx);
  if (withBooking) serviceAccounts(ctx);
  else sharedAccounts(ctx);
  if (withBooking) pubSub(ctx);
  const otherFunctions = others.some((p) =>
    pipelineFunctions(p).some((f) => facts.registered.some((r) => r.entryPoint === f.entryPoint)),
  );
  if (ctx.kms !== undefined && (ctx.functions.length > 0 || otherFunctions)) {
    functionImagesRepository(ctx, ctx.kms);
  }
  for (const fn of ctx.functions) deployFunction(ctx, fn);
  if (withBooking) {
    seekReadiness(ctx);
    for (const spec of FUNCTION_SPECS.values()) {
      if (!ctx.functions.some((f) => f.spec === spec)) {
        ctx.steps.push({
          kind: 'note',
          title: `${spec.entryPoint} is not registered in functions/index.ts: not deployed, no schedule`,
        });
      }
    }
    monitoring(ctx);
    const targets = monitoringTargets(
      ctx.o,
      ctx.functions.map((f) => f.spec),
    );
    addMonitoringDashboard(ctx.o, targets, ctx.steps, ctx.files);
  }
  // Booking's sections create the shared accounts only for the functions booking deploys; another pipeline's
  // functions need them whatever booking deploys.
  if (withBooking && otherFunctions) {
    const has = (base: string): boolean =>
      ctx.steps.some((s) => s.title === `Service account ${ctx.names.serviceAccountId(base)}`);
    if (!has(BUILD_SA)) sharedAccounts(ctx);
    else {
      for (const base of [TRIGGER_SA, SCHEDULER_SA].filter((b) => !has(b))) {
        ctx.steps.push(
          accountStep(ctx, base, 'Offvia shared identity (push and Cloud Scheduler OIDC)'),
        );
      }
    }
  }
  for (const [pipeline, sqlFiles] of otherSql) {
    planPipeline(
      {
        ...ctx,
        sourceDigest: facts.sourceDigest,
        registered: facts.registered,
        schedules: facts.schedules,
        deployLabel: DEPLOY_LABEL,
        liveState: LIVE_STATE,
        digest: (command) => deployDigest(facts.sourceDigest, command),
      },
      pipeline,
      sqlFiles,
      DELIVERY,
      // Booking's section lets the agent sign as the trigger account when it deploys its Eventarc function.
      !ctx.functions.some(({ spec }) => spec.trigger === 'topic'),
    );
  }
  assertNoBroadRoles(ctx.steps);
  assertPlanSecure(ctx.steps, o);
  const uncovered = kmsCoverageViolations(ctx.steps, o, [
    ...(withBooking ? datasetsCreated(facts.sqlFiles) : []),
    ...otherSql.flatMap(([, files]) => datasetsCreated(files)),
  ]);
  if (uncovered.length > 0) {
    throw new Error(`--kms-key does not reach everything:\n  ${uncovered.join('\n  ')}`);
  }
  // Every function the plan deploys: booking's, then each other selected pipeline's registered entry points.
  const deployed = [
    ...ctx.functions.map(({ spec }) => spec),
    ...others.flatMap((p) =>
      pipelineFunctions(p).filter((f) =>
        facts.registered.some((r) => r.entryPoint === f.entryPoint),
      ),
    ),
  ].map((f) => `${f.entryPoint} → ${ctx.names.functionName(f.baseName)}`);
  const header = [
    `Offvia deploy plan for project ${o.project}, region ${o.region}`,
    ...(o.notificationChannels.length === 0
      ? [
          'WARNING: no --notification-channel: the alert policies notify nobody (incidents show in the console ' +
            'only), and each rerun rewrites every policy from its file, removing channels added in the console',
        ]
      : []),
    ...monitoringHoldWarning(ctx),
    `BigQuery location ${o.bqLocation}; Firestore database ${o.firestoreDatabase} in ${o.firestoreLocation} ` +
      '(the location applies only if the database is created)',
    `name prefix ${JSON.stringify(o.namePrefix)}; runtime ${o.runtime}; functions: ${deployed.join(', ')}`,
    ctx.kms === undefined
      ? 'encryption: Google-managed (no --kms-key)'
      : `encryption: customer-managed key ${ctx.kms.name} on the datasets, topics, functions and Firestore database`,
    `source digest ${facts.sourceDigest.slice(0, 16)} (the files .gcloudignore lets through); ` +
      `metric and policy files in ${o.outDir}`,
    seekSummary(o, selected),
    `pipelines: ${selected.map((p) => p.name).join(', ')} (--pipeline; shared: APIs, Firestore database, ` +
      'trigger, scheduler and build accounts, custom roles)',
  ];
  return { header, steps: ctx.steps, files: ctx.files };
}

/**
 * The header's warning when booking's fireWindows reads its watermark hold from Cloud Monitoring
 * (`OFFVIA_WATERMARK_HOLD_SOURCE=monitoring`): its account needs `roles/monitoring.viewer` on the project
 * (`monitoring.timeSeries.list`), which this plan does not grant (docs/windows.md, "The cloud source"); without it
 * every pass logs the fallback to the delivery holds. Empty otherwise.
 */
function monitoringHoldWarning(ctx: Context): string[] {
  const fire = ctx.functions.find(({ spec }) => spec.entryPoint === 'fireWindows');
  if (ctx.config.window.holdSource !== 'monitoring' || fire === undefined) return [];
  const member = `serviceAccount:${ctx.names.serviceAccountEmail(fire.spec.serviceAccount)}`;
  return [
    'WARNING: OFFVIA_WATERMARK_HOLD_SOURCE=monitoring: this plan does not grant roles/monitoring.viewer, which ' +
      "fireWindows needs to read the subscription's backlog (every pass falls back to the delivery holds); grant " +
      `it: gcloud projects add-iam-policy-binding ${ctx.o.project} --member=${member} --role=roles/monitoring.viewer`,
  ];
}

/**
 * A pipeline's DDL files from the repository facts.
 * @throws Error when the facts hold none for it (the CLI reads every registered pipeline's).
 */
function pipelineSqlFiles(facts: RepoFacts, p: AnyPipelineDefinition): readonly SqlFile[] {
  const files = facts.pipelineSqlFiles?.[p.name];
  if (files === undefined || files.length === 0) {
    throw new Error(`no DDL files read for pipeline ${p.name} (its definition's tables.ddlFiles)`);
  }
  return files;
}

/** Entry points that belong to a registered pipeline other than booking: planned by pipeline-plan.ts. */
const OTHER_PIPELINE_ENTRY_POINTS: ReadonlySet<string> = new Set(
  PIPELINES.filter((p) => p.name !== BOOKING).flatMap((p) =>
    pipelineFunctions(p).map((f) => f.entryPoint),
  ),
);

/**
 * The plan's line on seek: what `offvia seek` needs is set by the deploy. Pub/Sub replays acknowledged messages
 * only when they are retained: by the topic (`message_retention_duration`: "allows any attached subscription to
 * seek to a timestamp that is up to message_retention_duration in the past") or by a subscription with
 * `retain_acked_messages`; a snapshot keeps its own backlog and lives at most 7 days (less the age of the oldest
 * unacked message). The topic's retention is the one this plan sets (`--topic-retention`), so a subscription
 * Eventarc re-creates can seek too.
 */
function seekSummary(o: DeployOptions, selected: readonly AnyPipelineDefinition[]): string {
  // Each selected pipeline's topic gets the same retention (booking's section and pipeline-plan.ts set it).
  const topics = selected.map((p) => (p.name === BOOKING ? BOOKING_TOPIC : p.pubsub.topic));
  return (
    `seek: ${topics.join(', ')} ${topics.length === 1 ? 'retains' : 'retain'} messages ${o.topicRetention} ` +
    "(--topic-retention), so 'offvia seek --time' reaches that far back; offvia snapshots last at most 7 days"
  );
}

/**
 * After the functions: prints the ingest subscription that `offvia snapshot` and `offvia seek` act on (Eventarc
 * names it, and a replaced trigger gets a new one), for OFFVIA_INGEST_SUBSCRIPTION.
 */
function seekReadiness({ o, p, names, functions, steps }: Context): void {
  // Read back: a topic made by hand or by an older plan keeps its retention until updated, and seek depends on it.
  const retained = `${durationSeconds(o.topicRetention)}s`;
  steps.push({
    kind: 'ensure',
    title: `${BOOKING_TOPIC} retains messages ${o.topicRetention} (what offvia seek --time replays)`,
    probe: {
      kind: 'line',
      command: gcloud(
        'pubsub topics describe',
        BOOKING_TOPIC,
        p,
        '--format=value(messageRetentionDuration)',
      ),
      line: retained,
    },
    absent: [
      'bash',
      '-c',
      'echo "the topic $0 does not retain messages $1 after the update: offvia seek --time cannot replay" >&2; exit 1',
      BOOKING_TOPIC,
      retained,
    ],
  });
  const ingest = functions.find((f) => f.spec.trigger === 'topic');
  if (ingest === undefined) return;
  steps.push({
    kind: 'run',
    title: `The ${ingest.spec.entryPoint} subscription, for offvia snapshot and offvia seek`,
    command: [
      'bash',
      '-c',
      'echo "offvia snapshot/seek act on $0 (found there by default; or: export OFFVIA_INGEST_SUBSCRIPTION=$0)"',
      `\${${names.variable(ingest.spec.entryPoint, 'SUBSCRIPTION')}}`,
    ],
  });
}

/** The deployed functions: registered ones with a spec, in registration order; checks trigger and schedule. */
function deployedFunctions(facts: RepoFacts): Deployed[] {
  const out: Deployed[] = [];
  for (const fn of facts.registered) {
    if (OTHER_PIPELINE_ENTRY_POINTS.has(fn.entryPoint)) continue;
    const spec = FUNCTION_SPECS.get(fn.entryPoint);
    if (spec === undefined) {
      throw new Error(
        `${fn.entryPoint} is registered in functions/index.ts but has no deploy spec in deploy/gcloud/functions.ts`,
      );
    }
    if (signatureFor(spec.trigger) !== fn.signatureType) {
      throw new Error(
        `${fn.entryPoint} is registered as ${fn.signatureType} but deployed with a ${spec.trigger} trigger`,
      );
    }
    const schedule = facts.schedules.find((s) => s.functionName === fn.entryPoint);
    if (spec.trigger === 'http' && schedule === undefined) {
      throw new Error(
        `${fn.entryPoint} is an HTTP function without a schedule in deploy/schedules.ts`,
      );
    }
    out.push(schedule === undefined ? { spec } : { spec, schedule });
  }
  for (const s of facts.schedules) {
    if (!out.some((f) => f.spec.entryPoint === s.functionName)) {
      throw new Error(
        `deploy/schedules.ts schedules ${s.functionName}, which functions/index.ts does not register`,
      );
    }
  }
  return out;
}

/** APIs, the Pub/Sub service agent, and the project number its email contains. */
function foundation({ o, p, steps, kms }: Context): void {
  const extra = [
    ...(kms === undefined ? [] : ['cloudkms.googleapis.com']),
    ...(o.passengerIdHmacSecret === undefined ? [] : ['secretmanager.googleapis.com']),
  ];
  steps.push({
    kind: 'run',
    title: 'Enable the APIs',
    command: gcloud('services enable', ...APIS, ...extra, p),
  });
  steps.push({
    kind: 'run',
    title: 'Provision the Pub/Sub service agent (BigQuery subscription, dead-letter forwarding)',
    command: gcloud('beta services identity create', '--service=pubsub.googleapis.com', p),
  });
  steps.push({
    kind: 'capture',
    title: 'Project number (names the Pub/Sub service agent)',
    variable: 'PROJECT_NUMBER',
    command: gcloud('projects describe', o.project, '--format=value(projectNumber)'),
  });
}

/** sql/ in name order: every statement is CREATE … IF NOT EXISTS or CREATE OR REPLACE, safe to run again. */
function bigQuery({ o, facts, config, steps, kms }: Context): void {
  // --location is a global flag of bq: it goes before the command.
  const query = (sql: string): string[] => [
    'bq',
    `--project_id=${o.project}`,
    `--location=${o.bqLocation}`,
    '--headless',
    'query',
    '--use_legacy_sql=false',
    sql,
  ];
  if (kms !== undefined) datasetKeys(o, facts, kms, steps);
  for (const file of facts.sqlFiles) {
    steps.push({
      kind: 'run',
      title: `BigQuery DDL sql/${file.name}`,
      command: query(file.sql.trimEnd()),
    });
  }
  // sql/010 creates Bronze partitioned by DAY(publish_time), so `offvia replay` of a range reads only its days; a
  // Bronze made before that is left unpartitioned by CREATE ... IF NOT EXISTS and keeps working. Say so, with
  // where the migration is described, rather than recreate a table the BigQuery subscription is writing to.
  const bronze = `${o.project}:${BRONZE_DATASET}.${BRONZE_TABLE}`;
  steps.push({
    kind: 'ensure',
    title: `Bronze ${BRONZE_DATASET}.${BRONZE_TABLE} is partitioned on publish_time (replay cost)`,
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
  // Quarantine and bad data keep raw payloads with passenger_id: their partitions expire (BigQuery deletes a
  // partition once its date is older than partition_expiration_days; NULL keeps them). Bronze's partitions never
  // expire: it is the copy every replay starts from. Tables in another project are that project's business.
  const days = o.quarantineRetentionDays === 0 ? 'NULL' : String(o.quarantineRetentionDays);
  const tables = [config.ingest.quarantineTable, config.ingest.badDataTable].filter(
    (t) => t.projectId === undefined || t.projectId === o.project,
  );
  for (const t of tables) {
    const name = `${o.project}.${t.datasetId}.${t.tableId}`;
    steps.push({
      kind: 'run',
      title: `Partition expiration of ${t.datasetId}.${t.tableId}: ${o.quarantineRetentionDays === 0 ? 'none' : `${days} days`}`,
      // Two lines, so the plan shows it as a here-document like the sql/ files.
      command: query(`ALTER TABLE \`${name}\`\nSET OPTIONS (partition_expiration_days = ${days});`),
    });
  }
}

/**
 * The system's own named database in Native mode, and its TTL policies. A database of its own keeps the
 * collection ids of the window and drift stores (`windows`, `meta`, `rows`, ...) apart from any other
 * application's, so teardown's bulk delete cannot reach them.
 */
function firestore({ o, p, steps, kms }: Context): void {
  const db = `--database=${o.firestoreDatabase}`;
  steps.push({
    kind: 'ensure',
    title: `Firestore database ${o.firestoreDatabase}, Native mode`,
    probe: { kind: 'status', command: gcloud('firestore databases describe', db, p) },
    absent: gcloud(
      'firestore databases create',
      db,
      `--location=${o.firestoreLocation}`,
      '--type=firestore-native',
      ...(kms === undefined ? [] : [`--kms-key-name=${kms.name}`]),
      p,
    ),
  });
  if (kms !== undefined) {
    // Firestore takes its key only when the database is created: an existing database without it stays
    // Google-encrypted, which the run must not pass over quietly.
    steps.push({
      kind: 'ensure',
      title: `Firestore database ${o.firestoreDatabase} is encrypted with ${kms.key}`,
      probe: {
        kind: 'line',
        command: gcloud(
          'firestore databases describe',
          db,
          p,
          '--format=value(cmekConfig.kmsKeyName)',
        ),
        line: kms.name,
      },
      absent: [
        'bash',
        '-c',
        'echo "the Firestore database $1 of $0 is not encrypted with --kms-key $2 (Firestore sets the key only ' +
          'when it creates a database): use a new --firestore-database" >&2; exit 1',
        o.project,
        o.firestoreDatabase,
        kms.name,
      ],
    });
  }
  // A Datastore-mode database also answers describe: the window and drift stores need Native mode.
  steps.push({
    kind: 'ensure',
    title: `Firestore database ${o.firestoreDatabase} is in Native mode (FIRESTORE_NATIVE, not DATASTORE_MODE)`,
    probe: {
      kind: 'line',
      command: gcloud('firestore databases describe', db, p, '--format=value(type)'),
      line: 'FIRESTORE_NATIVE',
    },
    absent: [
      'bash',
      '-c',
      'echo "the Firestore database $1 of $0 is not in Native mode; the functions need Firestore ' +
        'Native: use another --firestore-database" >&2; exit 1',
      o.project,
      o.firestoreDatabase,
    ],
  });
  for (const group of o.ttlCollectionGroups) {
    const collectionGroup = `--collection-group=${group}`;
    steps.push({
      kind: 'ensure',
      title: `Firestore TTL policy on ${group}.${TTL_FIELD}`,
      probe: {
        kind: 'line',
        command: gcloud(
          'firestore fields ttls list',
          collectionGroup,
          db,
          p,
          '--format=value(name)',
        ),
        line: `projects/${o.project}/databases/${o.firestoreDatabase}/collectionGroups/${group}/fields/${TTL_FIELD}`,
      },
      absent: gcloud(
        'firestore fields ttls update',
        TTL_FIELD,
        collectionGroup,
        db,
        '--enable-ttl',
        '--async',
        p,
      ),
    });
  }
}

/**
 * Fields of the key-groups layout no query uses, exempted from Firestore's automatic single-field indexes: large maps
 * and strings written on every transaction (index fan-out is the main cost of write latency, and a map of thousands
 * of keys would come near the 40,000 index entries a document may have). Firestore's best-practices and quotas pages.
 */
export const KEY_GROUP_INDEX_EXEMPTIONS: readonly (readonly [string, string])[] = [
  [GROUP_COLLECTIONS.groups, 'w'],
  [GROUP_COLLECTIONS.groups, 'c'],
  [GROUP_COLLECTIONS.groups, 'seen'],
  [GROUP_COLLECTIONS.groups, 'expireAt'],
  [GROUP_COLLECTIONS.spills, 'seen'],
  [GROUP_COLLECTIONS.paneBatches, 'panes_json'],
];

/**
 * The composite indexes fireWindows' key-group queries need: `group in […]` with a range on a timer (Firestore
 * requires a composite index for an equality/in filter on one field with a range on another). Leading with the group
 * also spreads the timer index's entries, whose values only grow, over the groups' ranges.
 */
export const KEY_GROUP_COMPOSITE_INDEXES: readonly (readonly [string, string])[] = [
  ['group', 'event_timer_ms'],
  ['group', 'processing_timer_ms'],
];

/** The key-groups layout's TTL policies, single-field index exemptions and composite indexes. */
function keyGroupIndexes({ o, p, steps }: Context): void {
  const db = `--database=${o.firestoreDatabase}`;
  for (const group of [GROUP_COLLECTIONS.groups, GROUP_COLLECTIONS.spills]) {
    if (o.ttlCollectionGroups.includes(group)) continue;
    steps.push({
      kind: 'ensure',
      title: `Firestore TTL policy on ${group}.${TTL_FIELD} (key-group tombstones and dedup ids)`,
      probe: {
        kind: 'line',
        command: gcloud(
          'firestore fields ttls list',
          `--collection-group=${group}`,
          db,
          p,
          '--format=value(name)',
        ),
        line: `projects/${o.project}/databases/${o.firestoreDatabase}/collectionGroups/${group}/fields/${TTL_FIELD}`,
      },
      absent: gcloud(
        'firestore fields ttls update',
        TTL_FIELD,
        `--collection-group=${group}`,
        db,
        '--enable-ttl',
        '--async',
        p,
      ),
    });
  }
  for (const [group, field] of KEY_GROUP_INDEX_EXEMPTIONS) {
    // An exempted field no longer inherits the database's automatic index settings (usesAncestorConfig false).
    steps.push({
      kind: 'ensure',
      title: `Firestore single-field index exemption: ${group}.${field} (no query uses it)`,
      probe: {
        kind: 'line',
        command: gcloud(
          'firestore indexes fields describe',
          field,
          `--collection-group=${group}`,
          db,
          p,
          '--format=value(indexConfig.usesAncestorConfig)',
        ),
        line: 'False',
      },
      absent: gcloud(
        'firestore indexes fields update',
        field,
        `--collection-group=${group}`,
        db,
        '--disable-indexes',
        '--async',
        p,
      ),
    });
  }
  for (const [first, second] of KEY_GROUP_COMPOSITE_INDEXES) {
    steps.push({
      kind: 'ensure',
      title: `Firestore composite index ${GROUP_COLLECTIONS.groups} (${first}, ${second})`,
      probe: {
        kind: 'status',
        command: [
          'bash',
          '-c',
          // The timer fields appear in no other index of the database.
          'gcloud firestore indexes composite list --database="$0" --project="$1" --format=json | ' +
            'grep -q -- "$2"',
          o.firestoreDatabase,
          o.project,
          second,
        ],
      },
      absent: gcloud(
        'firestore indexes composite create',
        `--collection-group=${GROUP_COLLECTIONS.groups}`,
        '--query-scope=COLLECTION',
        `--field-config=field-path=${first},order=ascending`,
        `--field-config=field-path=${second},order=ascending`,
        db,
        '--async',
        p,
      ),
    });
  }
}

/** One account per function, one for the Eventarc trigger, one for Cloud Scheduler; then the runtime grants. */
function serviceAccounts(ctx: Context): void {
  const { p, names, steps, functions } = ctx;
  const accounts: [string, string][] = functions.map(({ spec }) => [
    spec.serviceAccount,
    `Offvia ${spec.entryPoint} runtime`,
  ]);
  if (functions.some(({ spec }) => spec.trigger === 'topic')) {
    accounts.push([TRIGGER_SA, 'Offvia Eventarc trigger identity (pushes to ingestBooking)']);
  }
  if (functions.some(({ spec }) => spec.trigger === 'http')) {
    accounts.push([SCHEDULER_SA, 'Offvia Cloud Scheduler invoker (OIDC)']);
  }
  if (functions.length > 0) {
    accounts.push([BUILD_SA, 'Offvia Cloud Build (builds the functions)']);
  }
  accounts.push([BRONZE_SA, 'Offvia Bronze BigQuery subscription writer']);
  for (const [base, displayName] of accounts) {
    steps.push({
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
    });
  }
  if (functions.length > 0) customRoles(ctx);
  for (const { spec } of functions) runtimeGrants(ctx, spec);
  if (ctx.o.passengerIdHmacSecret !== undefined) passengerIdKeyAccess(ctx);
  if (functions.length > 0) {
    // Not the project's default build account (often the Compute Engine default account, with Editor).
    const member = `serviceAccount:${names.serviceAccountEmail(BUILD_SA)}`;
    for (const { role, condition } of BUILD_ROLES) {
      steps.push({
        kind: 'run',
        title: `${names.serviceAccountId(BUILD_SA)}: ${role} on the project${condition ? ` (${condition.title})` : ''}`,
        command: projectGrant(ctx.o.project, member, role, condition),
        retry: true,
      });
    }
  }
}

/**
 * The shared accounts and roles when booking is not selected: the trigger (push) identity, the Cloud Scheduler
 * invoker, the build account with its project roles, and the custom roles every pipeline's table grants use. With
 * booking selected, serviceAccounts plans the same in its historical order.
 */
function sharedAccounts(ctx: Context): void {
  const { names, steps } = ctx;
  const accounts: [string, string][] = [
    [TRIGGER_SA, 'Offvia push identity (Eventarc trigger and push subscriptions)'],
    [SCHEDULER_SA, 'Offvia Cloud Scheduler invoker (OIDC)'],
    [BUILD_SA, 'Offvia Cloud Build (builds the functions)'],
  ];
  for (const [base, displayName] of accounts) {
    if (steps.some((s) => s.title === `Service account ${names.serviceAccountId(base)}`)) continue;
    steps.push(accountStep(ctx, base, displayName));
  }
  customRoles(ctx);
  const member = `serviceAccount:${names.serviceAccountEmail(BUILD_SA)}`;
  for (const { role, condition } of BUILD_ROLES) {
    steps.push({
      kind: 'run',
      title: `${names.serviceAccountId(BUILD_SA)}: ${role} on the project${condition ? ` (${condition.title})` : ''}`,
      command: projectGrant(ctx.o.project, member, role, condition),
      retry: true,
    });
  }
}

/** Creates a service account unless it exists. */
function accountStep({ p, names }: Context, base: string, displayName: string): Step {
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

/** The custom roles of CUSTOM_ROLES, created or brought up to date (their permissions are the code's). */
function customRoles({ o, p, names, steps }: Context): void {
  for (const role of Object.values(CUSTOM_ROLES)) {
    const id = names.customRoleId(role.id);
    const fields = [
      `--title=${role.title}`,
      `--description=${role.description}`,
      `--permissions=${role.permissions.join(',')}`,
      '--stage=GA',
      p,
    ];
    steps.push({
      kind: 'ensure',
      title: `Custom role ${id} (${role.permissions.join(', ')})`,
      probe: { kind: 'status', command: gcloud('iam roles describe', id, p) },
      absent: gcloud('iam roles create', id, ...fields),
      present: gcloud('iam roles update', id, ...fields, '--format=none'),
    });
  }
  steps.push({
    kind: 'note',
    title: `custom roles ${o.namePrefix.replace(/-/g, '_')}* are kept by teardown: they grant nothing without a binding`,
  });
}

/**
 * Table-level BigQuery grants for what a function writes (a custom role per table), `roles/bigquery.metadataViewer`
 * on each dataset (insertAll needs `bigquery.datasets.get`), and project-level roles only where IAM has nothing
 * finer. A table in another project gets no grant (custom roles are this project's): a note says so.
 * @throws Error for a table of this project that sql/ does not create (unless `whenCreatedBySql`).
 */
function runtimeGrants({ o, facts, names, config, steps }: Context, spec: FunctionSpec): void {
  const created = new Set(tablesCreated(facts.sqlFiles));
  const member = `serviceAccount:${names.serviceAccountEmail(spec.serviceAccount)}`;
  // One grant per table with the widest access asked for it (schema includes rows).
  const access = new Map<string, TableWrite['access']>();
  const datasets: string[] = [];
  for (const write of spec.writes(config)) {
    const { projectId, datasetId, tableId } = write.table;
    const id = `${datasetId}.${tableId}`;
    if (projectId !== undefined && projectId !== o.project) {
      steps.push({
        kind: 'note',
        title: `${spec.entryPoint}: no grant on ${projectId}:${id} (another project: grant it there by hand)`,
      });
      continue;
    }
    if (!created.has(id)) {
      if (write.whenCreatedBySql) {
        steps.push({
          kind: 'note',
          title: `${spec.entryPoint}: no grant on ${id} yet (sql/ does not create it)`,
        });
        continue;
      }
      throw new Error(`${spec.entryPoint} writes to table ${id}, which sql/ does not create`);
    }
    if (access.get(id) !== 'schema') access.set(id, write.access);
    if (!datasets.includes(datasetId)) datasets.push(datasetId);
  }
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
    const role = names.customRoleName(CUSTOM_ROLES[kind].id);
    steps.push({
      kind: 'run',
      title: `${spec.entryPoint}: ${names.customRoleId(CUSTOM_ROLES[kind].id)} on table ${id} only`,
      command: tableGrant(o.project, member, role, `${o.project}:${id}`),
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
    if (condition !== undefined) {
      steps.push(
        removeUnconditionedStep(
          o.project,
          member,
          role,
          `${spec.entryPoint}: remove an earlier deploy's unconditioned ${role} on the project`,
        ),
      );
    }
  }
}

/**
 * The topic, the dead-letter topics and the subscriptions that keep dead letters, Bronze, agent grants. The Bronze
 * BigQuery subscription writes as its own account (`--bigquery-service-account-email`; without it Pub/Sub writes
 * as its service agent, shared by every subscription of the project: Pub/Sub `BigQueryConfig.service_account_email`),
 * which holds `roles/bigquery.dataEditor` on the Bronze table only, the role and scope Pub/Sub documents for the
 * writer ("Create BigQuery subscriptions", cloud.google.com/pubsub/docs/create-bigquery-subscription).
 */
function pubSub({ o, p, names, functions, steps, kms }: Context): void {
  const agent = `serviceAccount:${PUBSUB_AGENT}`;
  for (const topic of [BOOKING_TOPIC, BOOKING_DLQ_TOPIC, BRONZE_DLQ_TOPIC]) {
    // The booking topic retains messages itself, so any subscription can seek back and replay
    // (`gcloud pubsub subscriptions seek --time`), independently of the subscriptions' own retention.
    // With --kms-key every topic, dead-letter ones included, stores its messages under the key; Pub/Sub lets an
    // existing topic change its key (`topics update --topic-encryption-key`).
    const retention = [
      ...(topic === BOOKING_TOPIC ? [`--message-retention-duration=${o.topicRetention}`] : []),
      ...(kms === undefined ? [] : [`--topic-encryption-key=${kms.name}`]),
    ];
    steps.push({
      kind: 'ensure',
      title: `Pub/Sub topic ${topic}${topic === BOOKING_TOPIC ? ` (retains messages ${o.topicRetention} for seek)` : ''}${kms === undefined ? '' : ', customer-managed key'}`,
      probe: { kind: 'status', command: gcloud('pubsub topics describe', topic, p) },
      absent: gcloud('pubsub topics create', topic, ...retention, p),
      ...(retention.length > 0
        ? { present: gcloud('pubsub topics update', topic, ...retention, p) }
        : {}),
    });
  }
  // The producer's grant: publish to this topic, nothing else (the booking service is not ours to create).
  for (const publisher of o.publishers) {
    steps.push({
      kind: 'run',
      title: `${publisher}: roles/pubsub.publisher on ${BOOKING_TOPIC} only (the booking service)`,
      command: resourceGrant(
        'pubsub topics',
        BOOKING_TOPIC,
        publisher,
        'roles/pubsub.publisher',
        o.project,
      ),
      retry: true,
    });
  }
  if (o.publishers.length === 0) {
    steps.push({
      kind: 'note',
      title: `no --publisher: no principal is granted publishing to ${BOOKING_TOPIC} (the booking service needs one)`,
    });
  }
  steps.push({
    kind: 'ensure',
    title: `Subscription ${BOOKING_DLQ_SUBSCRIPTION} (keeps dead letters; a topic alone drops them)`,
    probe: describeSubscription(p, BOOKING_DLQ_SUBSCRIPTION),
    absent: gcloud(
      'pubsub subscriptions create',
      BOOKING_DLQ_SUBSCRIPTION,
      `--topic=${BOOKING_DLQ_TOPIC}`,
      `--message-retention-duration=${DELIVERY.deadLetterRetention}`,
      '--expiration-period=never',
      p,
    ),
  });
  steps.push({
    kind: 'ensure',
    title: `Subscription ${BRONZE_DLQ_SUBSCRIPTION} (keeps the Bronze subscription's dead letters)`,
    probe: describeSubscription(p, BRONZE_DLQ_SUBSCRIPTION),
    absent: gcloud(
      'pubsub subscriptions create',
      BRONZE_DLQ_SUBSCRIPTION,
      `--topic=${BRONZE_DLQ_TOPIC}`,
      `--message-retention-duration=${DELIVERY.deadLetterRetention}`,
      '--expiration-period=never',
      p,
    ),
  });
  const bronzeWriter = names.serviceAccountEmail(BRONZE_SA);
  const bronzeTable = `${o.project}:${BRONZE_DATASET}.${BRONZE_TABLE}`;
  steps.push({
    kind: 'run',
    title: `${names.serviceAccountId(BRONZE_SA)}: roles/bigquery.dataEditor on table ${BRONZE_DATASET}.${BRONZE_TABLE} only`,
    command: tableGrant(
      o.project,
      `serviceAccount:${bronzeWriter}`,
      'roles/bigquery.dataEditor',
      bronzeTable,
    ),
    retry: true,
  });
  steps.push({
    kind: 'run',
    title: `Pub/Sub service agent: roles/iam.serviceAccountTokenCreator on ${names.serviceAccountId(BRONZE_SA)} (acts as the Bronze writer)`,
    command: resourceGrant(
      'iam service-accounts',
      bronzeWriter,
      agent,
      'roles/iam.serviceAccountTokenCreator',
      o.project,
    ),
    retry: true,
  });
  // Created with these settings, and brought back to them on every run (an older deploy wrote as the agent).
  const bronzeSettings = [
    `--bigquery-table=${o.project}.${BRONZE_DATASET}.${BRONZE_TABLE}`,
    `--bigquery-service-account-email=${bronzeWriter}`,
    '--write-metadata',
    `--dead-letter-topic=projects/${o.project}/topics/${BRONZE_DLQ_TOPIC}`,
    `--max-delivery-attempts=${DELIVERY.maxDeliveryAttempts}`,
  ];
  steps.push({
    kind: 'ensure',
    title: `Bronze BigQuery subscription ${BRONZE_SUBSCRIPTION} (writes as ${names.serviceAccountId(BRONZE_SA)})`,
    probe: describeSubscription(p, BRONZE_SUBSCRIPTION),
    absent: gcloud(
      'pubsub subscriptions create',
      BRONZE_SUBSCRIPTION,
      `--topic=${BOOKING_TOPIC}`,
      ...bronzeSettings,
      '--expiration-period=never',
      p,
    ),
    present: gcloud('pubsub subscriptions update', BRONZE_SUBSCRIPTION, ...bronzeSettings, p),
    retry: true,
  });
  steps.push({
    kind: 'run',
    title: `Pub/Sub service agent: roles/pubsub.publisher on ${BRONZE_DLQ_TOPIC} (forwards Bronze dead letters)`,
    command: resourceGrant(
      'pubsub topics',
      BRONZE_DLQ_TOPIC,
      agent,
      'roles/pubsub.publisher',
      o.project,
    ),
    retry: true,
  });
  steps.push({
    kind: 'run',
    title: `Pub/Sub service agent: roles/pubsub.subscriber on ${BRONZE_SUBSCRIPTION} (acks Bronze dead letters)`,
    command: resourceGrant(
      'pubsub subscriptions',
      BRONZE_SUBSCRIPTION,
      agent,
      'roles/pubsub.subscriber',
      o.project,
    ),
    retry: true,
  });
  steps.push({
    kind: 'run',
    title: `Pub/Sub service agent: roles/pubsub.publisher on ${BOOKING_DLQ_TOPIC} (forwards dead letters)`,
    command: resourceGrant(
      'pubsub topics',
      BOOKING_DLQ_TOPIC,
      agent,
      'roles/pubsub.publisher',
      o.project,
    ),
    retry: true,
  });
  if (functions.some(({ spec }) => spec.trigger === 'topic')) {
    steps.push({
      kind: 'run',
      title: `Pub/Sub service agent: roles/iam.serviceAccountTokenCreator on ${names.serviceAccountId(TRIGGER_SA)} (signs push tokens)`,
      command: resourceGrant(
        'iam service-accounts',
        names.serviceAccountEmail(TRIGGER_SA),
        agent,
        'roles/iam.serviceAccountTokenCreator',
        o.project,
      ),
      retry: true,
    });
  }
}

/** The `gcloud functions deploy` command of one function, without the digest label. */
function deployCommand({ o, names, envValue, kms, config }: Context, spec: FunctionSpec): string[] {
  const trigger =
    spec.trigger === 'topic'
      ? [
          `--trigger-topic=${BOOKING_TOPIC}`,
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
    `--set-env-vars=${envValue}`,
    // --set-secrets replaces a function's secrets; --clear-secrets removes one an earlier deploy mounted (a key left
    // in the environment without OFFVIA_PASSENGER_ID_MODE=hmac-sha256 stops ingestBooking at cold start).
    spec.trigger === 'topic' && o.passengerIdHmacSecret !== undefined
      ? `--set-secrets=${passengerIdSecretBinding(o)}`
      : '--clear-secrets',
    ...(kms === undefined
      ? []
      : [`--kms-key=${kms.name}`, `--docker-repository=${imagesRepository(o, names)}`]),
  );
}

/**
 * `OFFVIA_PASSENGER_ID_HMAC_KEY=SECRET:VERSION`: Cloud Run functions expose a pinned secret version as an
 * environment variable, read when an instance starts (`--set-secrets`, "Configure secrets",
 * cloud.google.com/functions/docs/configuring/secrets).
 */
export function passengerIdSecretBinding(o: DeployOptions): string {
  const { secret, version } = passengerIdSecret(o);
  return `${PASSENGER_ID_VARS.key.name}=${secret}:${version}`;
}

/** `projects/P/locations/R/repositories/<prefix>functions`: the function images' repository under `--kms-key`. */
function imagesRepository(o: DeployOptions, names: Names): string {
  return `projects/${o.project}/locations/${o.region}/repositories/${names.serviceAccountId(FUNCTION_IMAGES_REPOSITORY)}`;
}

/** A label-safe digest of the source and of everything else that goes into a deploy. */
function deployDigest(sourceDigest: string, command: readonly string[]): string {
  return createHash('sha256')
    .update(`${sourceDigest}\0${JSON.stringify(command)}`)
    .digest('hex')
    .slice(0, 32);
}

/** One function, then what needs it to exist: invoker grants, the Eventarc subscription, its schedule. */
function deployFunction(ctx: Context, { spec, schedule }: Deployed): void {
  const { o, p, names, steps, facts } = ctx;
  const name = names.functionName(spec.baseName);
  const command = deployCommand(ctx, spec);
  const digest = deployDigest(facts.sourceDigest, command);
  const describe = (format: string): Command =>
    gcloud('functions describe', name, `--region=${o.region}`, '--v2', p, `--format=${format}`);
  if (spec.trigger === 'topic') {
    // A redeploy can replace the Eventarc trigger and with it the subscription (deleted, then created anew): what
    // is published in between reaches no subscription. The name before and the time the deploy began let the plan
    // seek a new subscription back over that gap (the topic retains messages for --topic-retention).
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
  steps.push({
    kind: 'ensure',
    title: `Function ${name} (${spec.entryPoint}): deploy unless this source and configuration are live`,
    // The label is sent with the deploy itself, so a failed build can leave it set on a function that is not
    // serving this source: skip only when the function is ACTIVE too (Function.State of the v2 API).
    probe: {
      kind: 'line',
      command: describe(`value[separator=" "](state,labels.${DEPLOY_LABEL})`),
      line: `${LIVE_STATE} ${digest}`,
    },
    absent: [...command, `--update-labels=${DEPLOY_LABEL}=${digest}`],
  });
  if (spec.trigger === 'topic') {
    const triggerVar = names.variable(spec.entryPoint, 'TRIGGER');
    const subscription = `\${${names.variable(spec.entryPoint, 'SUBSCRIPTION')}}`;
    const agent = `serviceAccount:${PUBSUB_AGENT}`;
    steps.push({
      kind: 'run',
      title: `${names.serviceAccountId(TRIGGER_SA)}: roles/run.invoker on ${name} only`,
      command: invokerGrant(o.project, o.region, name, names.serviceAccountEmail(TRIGGER_SA)),
      retry: true,
    });
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
        `--dead-letter-topic=projects/${o.project}/topics/${BOOKING_DLQ_TOPIC}`,
        `--max-delivery-attempts=${DELIVERY.maxDeliveryAttempts}`,
        `--min-retry-delay=${DELIVERY.minRetryDelay}`,
        `--max-retry-delay=${DELIVERY.maxRetryDelay}`,
        `--message-retention-duration=${DELIVERY.messageRetention}`,
        `--ack-deadline=${ackDeadlineSeconds(spec)}`,
        p,
      ),
    });
    // Eventarc owns this subscription: a redeploy that replaces the trigger makes a new one with Eventarc's
    // defaults. The name is captured and the settings applied after every deploy step (deployed or skipped), and
    // read back here, so a run that leaves them otherwise fails instead of passing quietly.
    const expected = `${ackDeadlineSeconds(spec)} projects/${o.project}/topics/${BOOKING_DLQ_TOPIC} ${DELIVERY.maxDeliveryAttempts}`;
    steps.push({
      kind: 'ensure',
      title: `The ${name} subscription has ack deadline ${ackDeadlineSeconds(spec)} s and its dead-letter policy`,
      probe: {
        kind: 'line',
        command: gcloud(
          'pubsub subscriptions describe',
          subscription,
          p,
          '--format=value[separator=" "](ackDeadlineSeconds,deadLetterPolicy.deadLetterTopic,deadLetterPolicy.maxDeliveryAttempts)',
        ),
        line: expected,
      },
      absent: [
        'bash',
        '-c',
        'echo "the subscription $0 does not have the settings just applied ($1)" >&2; exit 1',
        subscription,
        expected,
      ],
    });
    const previous = `\${${names.variable(spec.entryPoint, 'PREVIOUS_SUBSCRIPTION')}}`;
    steps.push({
      kind: 'ensure',
      title: `A new ${name} subscription replays what was published since the deploy began (seek)`,
      probe: {
        kind: 'status',
        command: ['bash', '-c', 'test "$0" = "$1"', previous, subscription],
      },
      absent: gcloud(
        'pubsub subscriptions seek',
        subscription,
        `--time=\${${names.variable(spec.entryPoint, 'DEPLOY_STARTED_AT')}}`,
        p,
      ),
      retry: true,
    });
    steps.push({
      kind: 'run',
      title: `Pub/Sub service agent: roles/pubsub.subscriber on the ${name} subscription (acks dead letters)`,
      command: resourceGrant(
        'pubsub subscriptions',
        subscription,
        agent,
        'roles/pubsub.subscriber',
        o.project,
      ),
      retry: true,
    });
  }
  if (spec.trigger === 'http' && schedule !== undefined) {
    if (spec.entryPoint === 'fireWindows') assertLoopFitsSchedule(ctx.config.window, schedule);
    const url = `\${${names.variable(spec.entryPoint, 'URL')}}`;
    const invoker = names.serviceAccountEmail(SCHEDULER_SA);
    steps.push({
      kind: 'run',
      title: `${names.serviceAccountId(SCHEDULER_SA)}: roles/run.invoker on ${name} only`,
      command: invokerGrant(o.project, o.region, name, invoker),
      retry: true,
    });
    steps.push({
      kind: 'capture',
      title: `URL of ${name}`,
      variable: names.variable(spec.entryPoint, 'URL'),
      command: describe('value(serviceConfig.uri)'),
    });
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
        // Cloud Scheduler stops waiting at the deadline: give the function its whole timeout and a margin.
        `--attempt-deadline=${attemptDeadlineSeconds(deployedTimeoutSeconds(spec, ctx.config.window))}s`,
        // The next tick is the retry: a failed call is not repeated in between.
        '--max-retry-attempts=0',
        `--description=Calls ${spec.entryPoint} (deploy/schedules.ts)`,
        p,
      );
    steps.push({
      kind: 'ensure',
      title: `Cloud Scheduler job ${name} (${schedule.cron}, OIDC)`,
      probe: {
        kind: 'status',
        command: gcloud('scheduler jobs describe', name, `--location=${o.region}`, p),
      },
      absent: job('create'),
      present: job('update'),
      retry: true,
    });
  }
}

/** The monitoring targets of a deployment (also used by the teardown to find what to delete). */
export function monitoringTargets(
  o: DeployOptions,
  specs: readonly FunctionSpec[],
): MonitoringTargets {
  const names = new Names(o);
  const ingest = specs.find((s) => s.trigger === 'topic') ?? FUNCTION_SPECS.get('ingestBooking');
  const fireWindows = specs.find((s) => s.entryPoint === 'fireWindows');
  return {
    prefix: o.namePrefix,
    region: o.region,
    services: specs.map((s) => names.functionName(s.baseName)),
    ingestService: names.functionName(ingest?.baseName ?? 'ingest-booking'),
    ...(fireWindows === undefined
      ? {}
      : { fireWindowsService: names.functionName(fireWindows.baseName) }),
    // Scheduler jobs are named like their functions (deployFunction).
    schedulerJobs: specs
      .filter((s) => s.trigger === 'http')
      .map((s) => names.functionName(s.baseName)),
    bronzeSubscription: BRONZE_SUBSCRIPTION,
    deadLetterHoldSubscription: BOOKING_DLQ_SUBSCRIPTION,
    bronzeDeadLetterHoldSubscription: BRONZE_DLQ_SUBSCRIPTION,
    notificationChannels: o.notificationChannels,
  };
}

/** Alert policies are found by display name: `${prefix}${id}` → a plan variable. */
export function policyVariable(o: DeployOptions, displayName: string): string {
  return `POLICY_${displayName.slice(o.namePrefix.length).replace(/-/g, '_').toUpperCase()}`;
}

/** Lists the alert policy with this display name (prints its resource name, or nothing). */
export function findPolicy(p: string, displayName: string): Command {
  return gcloud(
    'alpha monitoring policies list',
    p,
    `--filter=displayName="${displayName}"`,
    '--limit=1',
    '--format=value(name)',
  );
}

/** Log-based metrics, then the alert policies that read them; their JSON files go to the out dir. */
function monitoring({ o, p, functions, steps, files }: Context): void {
  const targets = monitoringTargets(
    o,
    functions.map((f) => f.spec),
  );
  for (const metric of logMetrics(targets)) {
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
  for (const policy of alertPolicies(targets)) {
    const file = path.posix.join(
      o.outDir,
      'policies',
      `${policy.displayName.slice(o.namePrefix.length)}.json`,
    );
    const variable = policyVariable(o, policy.displayName);
    files.push({ path: file, content: `${JSON.stringify(policy, null, 2)}\n` });
    steps.push({
      kind: 'ensure',
      title: `Alert policy ${policy.displayName}`,
      probe: { kind: 'lookup', variable, command: findPolicy(p, policy.displayName) },
      absent: gcloud('alpha monitoring policies create', `--policy-from-file=${file}`, p),
      present: gcloud(
        'alpha monitoring policies update',
        `\${${variable}}`,
        `--policy-from-file=${file}`,
        p,
      ),
      // A policy on a log-based metric created a moment ago may be refused until the metric is known.
      retry: true,
    });
  }
}

/** `describe` of a subscription, as a probe. */
export function describeSubscription(
  p: string,
  subscription: string,
): { kind: 'status'; command: Command } {
  return { kind: 'status', command: gcloud('pubsub subscriptions describe', subscription, p) };
}

/**
 * The service agents that use the key exist (some only once asked for), and each gets `KMS_ROLE` on the key alone,
 * before anything is created with it (KEY_USERS, kms.ts). The grant is on the key, in the key's project; the
 * deployer needs `cloudkms.cryptoKeys.setIamPolicy` there (Cloud KMS Admin on the key).
 */
function kmsKeyGrants({ o, p, steps }: Context, kms: KmsKey): void {
  for (const user of KEY_USERS) {
    if (user.provision === 'identity' && user.service !== undefined) {
      steps.push({
        kind: 'run',
        title: `Provision the ${user.what} service agent`,
        command: gcloud('beta services identity create', `--service=${user.service}`, p),
      });
    } else if (user.provision === 'bigquery') {
      // BigQuery creates its encryption account the first time it is asked for it.
      steps.push({
        kind: 'run',
        title: "Provision BigQuery's encryption service account",
        command: bq(o.project, 'show', '--encryption_service_account'),
      });
    } else if (user.provision === 'storage') {
      steps.push({
        kind: 'run',
        title: 'Provision the Cloud Storage service agent',
        command: gcloud('storage service-agent', p),
      });
    }
  }
  for (const user of KEY_USERS) {
    steps.push({
      kind: 'run',
      title: `${user.what}: ${KMS_ROLE} on the key ${kms.key} only`,
      command: gcloud(
        'kms keys add-iam-policy-binding',
        kms.name,
        `--member=serviceAccount:${user.email}`,
        `--role=${KMS_ROLE}`,
        '--format=none',
      ),
      retry: true,
    });
  }
}

/**
 * Every dataset sql/ creates exists with the key as its default (`bq mk --default_kms_key`, or `bq update` for one
 * that exists), before the DDL runs: BigQuery encrypts every table created later in the dataset with its default
 * key, including the ones `sql/` creates next and any the schema sweep creates ("Customer-managed Cloud KMS keys",
 * "Set a dataset default key"). A table created before `--kms-key` was given keeps its encryption: a note says so.
 */
function datasetKeys(o: DeployOptions, facts: RepoFacts, kms: KmsKey, steps: Step[]): void {
  for (const datasetId of datasetsCreated(facts.sqlFiles)) {
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
  steps.push({
    kind: 'note',
    title:
      'tables created before --kms-key keep their encryption; re-key each with bq cp -f --destination_kms_key ' +
      '(docs/deploy.md, customer-managed encryption keys)',
  });
}

/**
 * The Artifact Registry repository of the function images, encrypted with the key (Cloud Run functions with
 * `--kms-key` require `--docker-repository` in a repository with the same key), and the Eventarc Google channel of
 * the region set to the key for the Pub/Sub-triggered function ("Protect your data with CMEK",
 * cloud.google.com/functions/docs/securing/cmek). A repository's key is fixed when it is created: an existing one
 * with another key stops the run.
 */
function functionImagesRepository({ o, p, names, steps, functions }: Context, kms: KmsKey): void {
  const id = names.serviceAccountId(FUNCTION_IMAGES_REPOSITORY);
  const location = `--location=${o.region}`;
  steps.push({
    kind: 'ensure',
    title: `Artifact Registry repository ${id} (function images, key ${kms.key})`,
    probe: {
      kind: 'status',
      command: gcloud('artifacts repositories describe', id, location, p),
    },
    absent: gcloud(
      'artifacts repositories create',
      id,
      '--repository-format=docker',
      location,
      `--kms-key=${kms.name}`,
      '--description=Offvia function images (customer-managed key)',
      p,
    ),
    retry: true,
  });
  steps.push({
    kind: 'ensure',
    title: `Artifact Registry repository ${id} is encrypted with ${kms.key}`,
    probe: {
      kind: 'line',
      command: gcloud(
        'artifacts repositories describe',
        id,
        location,
        p,
        '--format=value(kmsKeyName)',
      ),
      line: kms.name,
    },
    absent: [
      'bash',
      '-c',
      'echo "the Artifact Registry repository $0 is not encrypted with --kms-key $1 (its key is set when it is ' +
        'created): delete it or use another --name-prefix" >&2; exit 1',
      id,
      kms.name,
    ],
  });
  if (functions.some(({ spec }) => spec.trigger === 'topic')) {
    // The Google channel is the project's one for the region, shared with every other Eventarc trigger there: set
    // our key on a channel without one (or keep it), never replace another application's key.
    steps.push({
      kind: 'run',
      title: `Eventarc Google channel of ${o.region} has no key or ${kms.key} (it is shared with other triggers)`,
      command: [
        'bash',
        '-c',
        'k="$(gcloud eventarc google-channels describe --location="$0" --project="$1" ' +
          '--format="value(cryptoKeyName)")" || exit 1; if [[ -n "$k" && "$k" != "$2" ]]; then echo "the Eventarc ' +
          'Google channel of $0 in $1 is encrypted with $k, not --kms-key $2: the channel is shared with every ' +
          'Eventarc trigger of the region, so the plan does not replace its key (use that key, or clear it first)" ' +
          '>&2; exit 1; fi',
        o.region,
        o.project,
        kms.name,
      ],
    });
    steps.push({
      kind: 'run',
      title: `Eventarc Google channel of ${o.region}: key ${kms.key}`,
      command: gcloud('eventarc google-channels update', location, `--crypto-key=${kms.name}`, p),
      retry: true,
    });
  }
}

/**
 * The secret version of `--passenger-id-hmac-secret` exists (the plan never creates or reads a key: the operator
 * makes it, docs/privacy.md), and ingestBooking's account may read that secret only (`secretAccessor` on the
 * secret, not the project).
 */
function passengerIdKeyAccess({ o, p, names, steps, functions }: Context): void {
  const { secret, version } = passengerIdSecret(o);
  steps.push({
    kind: 'ensure',
    title: `Secret ${secret} version ${version} (the passenger_id HMAC key) exists and is enabled`,
    probe: {
      kind: 'line',
      command: gcloud(
        'secrets versions describe',
        version,
        `--secret=${secret}`,
        p,
        '--format=value(state)',
      ),
      line: 'ENABLED',
    },
    absent: [
      'bash',
      '-c',
      'echo "secret $1 version $2 of $0 is missing or not enabled: create the key first, e.g. openssl rand ' +
        '-base64 32 | gcloud secrets create $1 --data-file=- (docs/privacy.md)" >&2; exit 1',
      o.project,
      secret,
      version,
    ],
  });
  for (const { spec } of functions) {
    if (spec.trigger !== 'topic') continue;
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
