// The ordered deploy plan for one project: a pure function of the options and of what the repository holds
// (registered functions, schedules, sql/, source digest). No Google Cloud call happens here.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { COLLECTIONS } from '../../shared/state/firestore-window-store';
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
  FUNCTION_SPECS,
  type FunctionSpec,
  type FunctionsConfig,
  signatureFor,
} from './functions';
import { assertNoBroadRoles, datasetGrant, invokerGrant, projectGrant, resourceGrant } from './iam';
import { alertPolicies, logMetrics, type MonitoringTargets } from './monitoring';
import { addMonitoringDashboard } from './dashboard';
import {
  type DeployOptions,
  type GeneratedFile,
  Names,
  type Plan,
  BUILD_SA,
  PUBSUB_AGENT,
  type RepoFacts,
  SCHEDULER_SA,
  TRIGGER_SA,
  validateOptions,
} from './options';
import { datasetsCreated } from './sql';
import { type Command, gcloud, type Step } from './steps';

/** Firestore field every TTL policy is on (shared/state/firestore-window-store.ts writes it as a Timestamp). */
export const TTL_FIELD = 'expireAt';
/**
 * The collection groups with a TTL policy unless `--ttl-collection-group` says otherwise: the dedup ledger and
 * the dropped-late counters of the window store (shared/state). The schema-drift store (shared/drift) gets none:
 * the sweep deletes the waiting rows it settles, but its audit records (the `changes` and `updates` documents
 * under each table) are kept without expiry, one per schema window with a change and one per applied update
 * (a few a day at most); `teardown.sh --delete-data` removes them.
 */
export const DEFAULT_TTL_COLLECTION_GROUPS: readonly string[] = [
  COLLECTIONS.ledger,
  COLLECTIONS.dropped,
];
/**
 * Label carrying the digest of a function's source and deploy flags; equal digest and state LIVE_STATE → the
 * deploy is skipped.
 */
export const DEPLOY_LABEL = 'offvia_deploy';
/** `state` of a v2 function that is deployed and serving (FAILED, DEPLOYING, UNKNOWN, DELETING are not). */
export const LIVE_STATE = 'ACTIVE';

/** Dead-letter and retry policy of the function subscription; README explains the numbers. */
export const DELIVERY = {
  maxDeliveryAttempts: 15,
  minRetryDelay: '10s',
  maxRetryDelay: '600s',
  /** Eventarc creates the subscription with 24 h; 7 days rides out a long outage (the dedup ledger TTL must be ≥). */
  messageRetention: '7d',
  messageRetentionMs: 7 * 24 * 3_600_000,
  /** How long dead letters are kept in the hold subscription. */
  deadLetterRetention: '7d',
} as const;

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
}

/**
 * The deploy plan.
 * @throws Error for invalid options, a registered function without a spec or schedule, a bad OFFVIA_* value
 * (ConfigError), a dedup ledger TTL shorter than the subscription's retention, or a grant on a dataset of this
 * project that sql/ does not create.
 */
export function buildDeployPlan(o: DeployOptions, facts: RepoFacts): Plan {
  validateOptions(o);
  const { vars, config } = functionEnv(o.project, o.envOverrides);
  // A ledger entry must outlive every redelivery of its message, or a late redelivery counts twice.
  if (config.window.ledgerTtlMs < DELIVERY.messageRetentionMs) {
    throw new Error(
      `OFFVIA_WINDOW_LEDGER_TTL_MS (${config.window.ledgerTtlMs}) is shorter than the function ` +
        `subscription's message retention (${DELIVERY.messageRetention})`,
    );
  }
  const ctx: Context = {
    o,
    facts,
    names: new Names(o),
    config,
    envValue: setEnvVarsValue(vars),
    functions: deployedFunctions(facts),
    p: `--project=${o.project}`,
    steps: [],
    files: [],
  };
  foundation(ctx);
  bigQuery(ctx);
  firestore(ctx);
  serviceAccounts(ctx);
  pubSub(ctx);
  for (const fn of ctx.functions) deployFunction(ctx, fn);
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
  assertNoBroadRoles(ctx.steps);
  const deployed = ctx.functions.map(
    ({ spec }) => `${spec.entryPoint} → ${ctx.names.functionName(spec.baseName)}`,
  );
  const header = [
    `Offvia deploy plan for project ${o.project}, region ${o.region}`,
    ...(o.notificationChannels.length === 0
      ? [
          'WARNING: no --notification-channel: the alert policies notify nobody (incidents show in the console ' +
            'only), and each rerun rewrites every policy from its file, removing channels added in the console',
        ]
      : []),
    `BigQuery location ${o.bqLocation}; Firestore location ${o.firestoreLocation} (only if the database is created)`,
    `name prefix ${JSON.stringify(o.namePrefix)}; runtime ${o.runtime}; functions: ${deployed.join(', ')}`,
    `source digest ${facts.sourceDigest.slice(0, 16)} (the files .gcloudignore lets through); ` +
      `metric and policy files in ${o.outDir}`,
  ];
  return { header, steps: ctx.steps, files: ctx.files };
}

/** The deployed functions: registered ones with a spec, in registration order; checks trigger and schedule. */
function deployedFunctions(facts: RepoFacts): Deployed[] {
  const out: Deployed[] = [];
  for (const fn of facts.registered) {
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
function foundation({ o, p, steps }: Context): void {
  steps.push({
    kind: 'run',
    title: 'Enable the APIs',
    command: gcloud('services enable', ...APIS, p),
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
function bigQuery({ o, facts, steps }: Context): void {
  for (const file of facts.sqlFiles) {
    steps.push({
      kind: 'run',
      title: `BigQuery DDL sql/${file.name}`,
      // --location is a global flag of bq: it goes before the command.
      command: [
        'bq',
        `--project_id=${o.project}`,
        `--location=${o.bqLocation}`,
        '--headless',
        'query',
        '--use_legacy_sql=false',
        file.sql.trimEnd(),
      ],
    });
  }
}

/** The (default) database in Native mode, and the TTL policies. */
function firestore({ o, p, steps }: Context): void {
  const db = '--database=(default)';
  steps.push({
    kind: 'ensure',
    title: 'Firestore database (default), Native mode',
    probe: { kind: 'status', command: gcloud('firestore databases describe', db, p) },
    absent: gcloud(
      'firestore databases create',
      db,
      `--location=${o.firestoreLocation}`,
      '--type=firestore-native',
      p,
    ),
  });
  // A Datastore-mode database also answers describe: the window and drift stores need Native mode.
  steps.push({
    kind: 'ensure',
    title: 'Firestore database (default) is in Native mode (FIRESTORE_NATIVE, not DATASTORE_MODE)',
    probe: {
      kind: 'line',
      command: gcloud('firestore databases describe', db, p, '--format=value(type)'),
      line: 'FIRESTORE_NATIVE',
    },
    absent: [
      'bash',
      '-c',
      'echo "the (default) Firestore database of $0 is not in Native mode; the functions need Firestore ' +
        'Native: use another project" >&2; exit 1',
      o.project,
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
        line: `projects/${o.project}/databases/(default)/collectionGroups/${group}/fields/${TTL_FIELD}`,
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
  for (const { spec } of functions) runtimeGrants(ctx, spec);
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

/** Dataset-level BigQuery grants for what a function writes; project level only where IAM has nothing finer. */
function runtimeGrants({ o, facts, names, config, steps }: Context, spec: FunctionSpec): void {
  const created = new Set(datasetsCreated(facts.sqlFiles));
  const member = `serviceAccount:${names.serviceAccountEmail(spec.serviceAccount)}`;
  const seen = new Set<string>();
  for (const write of spec.writes(config)) {
    const dataset = write.dataset.includes(':') ? write.dataset : `${o.project}:${write.dataset}`;
    if (seen.has(dataset)) continue;
    seen.add(dataset);
    const datasetId = dataset.slice(dataset.indexOf(':') + 1);
    if (dataset.startsWith(`${o.project}:`) && !created.has(datasetId)) {
      if (write.whenCreatedBySql) {
        steps.push({
          kind: 'note',
          title: `${spec.entryPoint}: no grant on ${datasetId} yet (sql/ does not create it)`,
        });
        continue;
      }
      throw new Error(
        `${spec.entryPoint} writes to dataset ${datasetId}, which sql/ does not create`,
      );
    }
    steps.push({
      kind: 'run',
      title: `${spec.entryPoint}: roles/bigquery.dataEditor on dataset ${dataset}`,
      command: datasetGrant(o.project, member, 'roles/bigquery.dataEditor', dataset),
      retry: true,
    });
  }
  const projectRoles = [
    ...(spec.usesFirestore ? ['roles/datastore.user'] : []),
    ...(spec.runsQueryJobs ? ['roles/bigquery.jobUser'] : []),
  ];
  for (const role of projectRoles) {
    steps.push({
      kind: 'run',
      title: `${spec.entryPoint}: ${role} on the project`,
      command: projectGrant(o.project, member, role),
      retry: true,
    });
  }
}

/** The topic, the dead-letter topic and the subscription that keeps dead letters, Bronze, agent grants. */
function pubSub({ o, p, names, functions, steps }: Context): void {
  const agent = `serviceAccount:${PUBSUB_AGENT}`;
  for (const topic of [BOOKING_TOPIC, BOOKING_DLQ_TOPIC]) {
    steps.push({
      kind: 'ensure',
      title: `Pub/Sub topic ${topic}`,
      probe: { kind: 'status', command: gcloud('pubsub topics describe', topic, p) },
      absent: gcloud('pubsub topics create', topic, p),
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
    kind: 'run',
    title: `Pub/Sub service agent: roles/bigquery.dataEditor on dataset ${BRONZE_DATASET} (Bronze subscription)`,
    command: datasetGrant(
      o.project,
      agent,
      'roles/bigquery.dataEditor',
      `${o.project}:${BRONZE_DATASET}`,
    ),
    retry: true,
  });
  steps.push({
    kind: 'ensure',
    title: `Bronze BigQuery subscription ${BRONZE_SUBSCRIPTION}`,
    probe: describeSubscription(p, BRONZE_SUBSCRIPTION),
    absent: gcloud(
      'pubsub subscriptions create',
      BRONZE_SUBSCRIPTION,
      `--topic=${BOOKING_TOPIC}`,
      `--bigquery-table=${o.project}.${BRONZE_DATASET}.${BRONZE_TABLE}`,
      '--write-metadata',
      '--expiration-period=never',
      p,
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
function deployCommand({ o, names, envValue }: Context, spec: FunctionSpec): string[] {
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
    '--no-allow-unauthenticated',
    `--service-account=${names.serviceAccountEmail(spec.serviceAccount)}`,
    `--build-service-account=projects/${o.project}/serviceAccounts/${names.serviceAccountEmail(BUILD_SA)}`,
    `--memory=${spec.memory}`,
    `--cpu=${spec.cpu}`,
    `--concurrency=${spec.concurrency}`,
    `--max-instances=${spec.maxInstances}`,
    `--min-instances=${spec.minInstances}`,
    `--timeout=${spec.timeoutSeconds}s`,
    `--set-env-vars=${envValue}`,
  );
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
        p,
      ),
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
        `--attempt-deadline=${spec.timeoutSeconds + 30}s`,
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
