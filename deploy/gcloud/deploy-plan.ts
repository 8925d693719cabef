// The ordered deploy plan for one project, a pure function of the options and the repository: project-wide sections
// once here, each concept of the selected pipelines by pipeline-plan.ts. No Google Cloud call happens here.
import { COLLECTIONS } from '../../shared/state/firestore-window-store';
import { HOLDS_COLLECTION } from '../../shared/state/watermark-holds';
import {
  FIRESTORE_INVENTORY,
  indexExemptions,
  ttlCollections,
} from '../../shared/state/firestore-inventory';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { functionEnv } from './env';
import { BUILD_ROLES, CUSTOM_ROLES } from './functions';
import { assertNoBroadRoles, projectRoleStep } from './iam';
import { assertPlanSecure, kmsCoverageViolations, retentionFindings } from './plan-checks';
import { FUNCTION_IMAGES_REPOSITORY, KEY_USERS, KMS_ROLE, type KmsKey, parseKmsKey } from './kms';
import {
  BUILD_SA,
  type DeployOptions,
  durationSeconds,
  Names,
  type Plan,
  type RepoFacts,
  SCHEDULER_SA,
  TRIGGER_SA,
  validateOptions,
} from './options';
import {
  accountStep,
  ackDeadlineSeconds,
  bigQuerySteps,
  DELIVERY,
  functionSteps,
  grantSteps,
  monitoringHoldWarnings,
  monitoringSteps,
  passengerIdKeySteps,
  type PipelineDeployment,
  pipelineDeployment,
  pipelineNotes,
  type PlanContext,
  pubSubSteps,
} from './pipeline-plan';
import { checkPipelineAccounts, selectPipelines } from './pipelines';
import { datasetsCreated, type SqlFile } from './sql';
import { bq, gcloud, requireLine, type Step } from './steps';

/**
 * The deploy plan for the pipelines `o.pipelines` names (absent: booking alone), in the order the resources need
 * each other (tables, accounts and roles before grants; topics before functions; functions before their
 * subscriptions and schedules; metrics before the policies and dashboards reading them).
 * @throws Error for invalid options, an unknown pipeline, a pipeline account id too long for the prefix, a bad
 * OFFVIA_* value (ConfigError), a dedup ledger TTL shorter than the subscription's retention, a table a function
 * writes that its pipeline's DDL does not create, or a grant on a dataset of this project no DDL creates.
 */
export function buildDeployPlan(o: DeployOptions, facts: RepoFacts): Plan {
  validateOptions(o);
  const selected = selectPipelines(o.pipelines ?? ['booking']);
  checkPipelineAccounts(o, selected);
  const bookingEnv = functionEnv(
    o.project,
    o.envOverrides,
    o.firestoreDatabase,
    o.passengerIdHmacSecret !== undefined,
  );
  const { config } = bookingEnv;
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
  const deployments = selected.map((p) =>
    pipelineDeployment(o, p, pipelineSqlFiles(facts, p), bookingEnv),
  );
  // The attempt deadline ends before the function's timeout, which ends before the push timeout (ack deadline).
  for (const { spec } of deployments.flatMap((d) => d.functions)) {
    if (spec.role !== 'ingest') continue;
    if (config.ingest.attemptDeadlineMs >= spec.timeoutSeconds * 1000) {
      throw new Error(
        `OFFVIA_ATTEMPT_DEADLINE_MS (${config.ingest.attemptDeadlineMs}) is not below ${spec.entryPoint}'s ` +
          `timeout (${spec.timeoutSeconds} s)`,
      );
    }
    ackDeadlineSeconds(spec);
  }
  const ctx: PlanContext = {
    o,
    p: `--project=${o.project}`,
    names: new Names(o),
    config,
    kms: o.kmsKey === undefined ? undefined : parseKmsKey(o.kmsKey),
    steps: [],
    files: [],
    sourceDigest: facts.sourceDigest,
  };
  foundation(ctx);
  if (ctx.kms !== undefined) kmsKeyGrants(ctx, ctx.kms);
  bigQuerySteps(ctx, deployments);
  firestore(ctx);
  firestoreIndexes(ctx);
  pipelineNotes(ctx, deployments);
  accountSteps(ctx, deployments);
  customRoles(ctx);
  grantSteps(ctx, deployments);
  if (o.passengerIdHmacSecret !== undefined) passengerIdKeySteps(ctx, deployments);
  buildRoles(ctx);
  pubSubSteps(ctx, deployments);
  if (ctx.kms !== undefined) functionImagesRepository(ctx, ctx.kms, deployments);
  functionSteps(ctx, deployments);
  monitoringSteps(ctx, deployments);
  assertNoBroadRoles(ctx.steps);
  assertPlanSecure(ctx.steps, o);
  // Replay reads Bronze and restate reads Silver as far back as the docs promise: nothing may expire sooner.
  const retention = retentionFindings(ctx.steps, selected, Date.now());
  if (retention.refusals.length > 0) {
    throw new Error(
      `the plan keeps less than the replay horizon:\n  ${retention.refusals.join('\n  ')}`,
    );
  }
  const uncovered = kmsCoverageViolations(
    ctx.steps,
    o,
    deployments.flatMap((d) => datasetsCreated(d.sqlFiles)),
  );
  if (uncovered.length > 0) {
    throw new Error(`--kms-key does not reach everything:\n  ${uncovered.join('\n  ')}`);
  }
  const deployed = deployments
    .flatMap((d) => d.functions)
    .map(({ spec }) => `${spec.entryPoint} → ${ctx.names.functionName(spec.baseName)}`);
  const topics = selected.map((p) => p.pubsub.topic);
  const header = [
    `Offvia deploy plan for project ${o.project}, region ${o.region}`,
    ...(o.notificationChannels.length === 0
      ? [
          'WARNING: no --notification-channel: the alert policies notify nobody (incidents show in the console ' +
            'only), and each rerun rewrites every policy from its file, removing channels added in the console',
        ]
      : []),
    ...monitoringHoldWarnings(o, ctx.names, deployments),
    ...retention.warnings.map((w) => `WARNING: ${w}`),
    `BigQuery location ${o.bqLocation}; Firestore database ${o.firestoreDatabase} in ${o.firestoreLocation} ` +
      '(the location applies only if the database is created)',
    `name prefix ${JSON.stringify(o.namePrefix)}; runtime ${o.runtime}; functions: ${deployed.join(', ')}`,
    ctx.kms === undefined
      ? 'encryption: Google-managed (no --kms-key)'
      : `encryption: customer-managed key ${ctx.kms.name} on the datasets, topics, functions and Firestore database`,
    `source digest ${facts.sourceDigest.slice(0, 16)} (the files .gcloudignore lets through); ` +
      `metric and policy files in ${o.outDir}`,
    // What `offvia seek` needs is set by the deploy: each topic retains messages (--topic-retention); a snapshot
    // keeps its own backlog and lives at most 7 days.
    `seek: ${topics.join(', ')} ${topics.length === 1 ? 'retains' : 'retain'} messages ${o.topicRetention} ` +
      "(--topic-retention), so 'offvia seek --time' reaches that far back; offvia snapshots last at most 7 days",
    `pipelines: ${selected.map((p) => p.name).join(', ')} (--pipeline; shared: APIs, Firestore database, ` +
      'trigger, scheduler and build accounts, custom roles)',
  ];
  return { header, steps: ctx.steps, files: ctx.files };
}

/**
 * A pipeline's DDL files from the repository facts.
 * @throws Error when the facts hold none for it (the CLI reads every registered pipeline's).
 */
export function pipelineSqlFiles(facts: RepoFacts, p: AnyPipelineDefinition): readonly SqlFile[] {
  const files = facts.pipelineSqlFiles[p.name];
  if (files === undefined || files.length === 0) {
    throw new Error(`no DDL files read for pipeline ${p.name} (its definition's tables.ddlFiles)`);
  }
  return files;
}

/**
 * The service accounts: each function's runtime account, those every pipeline shares (push identity, Cloud
 * Scheduler invoker, build account), then each pipeline's Bronze writer.
 */
function accountSteps(ctx: PlanContext, deployments: readonly PipelineDeployment[]): void {
  const accounts: [string, string][] = [
    ...deployments.flatMap((d) =>
      d.functions.map(({ spec }): [string, string] => [
        spec.serviceAccount,
        `Offvia ${spec.entryPoint} runtime`,
      ]),
    ),
    [TRIGGER_SA, 'Offvia push identity (Eventarc trigger and push subscriptions)'],
    [SCHEDULER_SA, 'Offvia Cloud Scheduler invoker (OIDC)'],
    [BUILD_SA, 'Offvia Cloud Build (builds the functions)'],
    ...deployments.flatMap(({ pipeline: p }): [string, string][] =>
      p.serviceAccounts.bronze === null
        ? []
        : [[p.serviceAccounts.bronze, `Offvia ${p.name} Bronze BigQuery subscription writer`]],
    ),
  ];
  for (const [base, displayName] of accounts) ctx.steps.push(accountStep(ctx, base, displayName));
}

/** The build account's project roles (not the project's default build account, often the Compute Engine one). */
function buildRoles({ o, names, steps }: PlanContext): void {
  const member = `serviceAccount:${names.serviceAccountEmail(BUILD_SA)}`;
  for (const role of BUILD_ROLES) {
    steps.push(projectRoleStep(o.project, names.serviceAccountId(BUILD_SA), member, role));
  }
}

/** Firestore field every TTL policy is on (shared/state/firestore-window-store.ts writes it as a Timestamp). */
export const TTL_FIELD = 'expireAt';
/**
 * The collection groups with a TTL policy unless `--ttl-collection-group` says otherwise: the window store's dedup
 * ledger, dropped-late counters and watermark holds. The drift store's audit records are kept (a few a day).
 */
export const DEFAULT_TTL_COLLECTION_GROUPS: readonly string[] = [
  COLLECTIONS.ledger,
  COLLECTIONS.dropped,
  HOLDS_COLLECTION,
];
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

/** APIs, the Pub/Sub service agent, and the project number its email contains. */
function foundation({ o, p, steps, kms }: PlanContext): void {
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

/** The system's own named database in Native mode (teardown's bulk delete reaches no one else's), and its TTLs. */
function firestore({ o, p, steps, kms }: PlanContext): void {
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
    // Firestore takes its key only when it creates the database.
    steps.push(
      requireLine(
        `Firestore database ${o.firestoreDatabase} is encrypted with ${kms.key}`,
        gcloud('firestore databases describe', db, p, '--format=value(cmekConfig.kmsKeyName)'),
        kms.name,
        'the Firestore database $1 of $0 is not encrypted with --kms-key $2 (Firestore sets the key only ' +
          'when it creates a database): use a new --firestore-database',
        o.project,
        o.firestoreDatabase,
        kms.name,
      ),
    );
  }
  // A Datastore-mode database also answers describe: the window and drift stores need Native mode.
  steps.push(
    requireLine(
      `Firestore database ${o.firestoreDatabase} is in Native mode (FIRESTORE_NATIVE, not DATASTORE_MODE)`,
      gcloud('firestore databases describe', db, p, '--format=value(type)'),
      'FIRESTORE_NATIVE',
      'the Firestore database $1 of $0 is not in Native mode; the functions need Firestore ' +
        'Native: use another --firestore-database',
      o.project,
      o.firestoreDatabase,
    ),
  );
  for (const group of o.ttlCollectionGroups) {
    steps.push(ttlPolicyStep(o, p, group, `Firestore TTL policy on ${group}.${TTL_FIELD}`));
  }
}

/** A TTL policy on `group`.expireAt, created unless Firestore lists it. */
function ttlPolicyStep(o: DeployOptions, p: string, group: string, title: string): Step {
  const db = `--database=${o.firestoreDatabase}`;
  const collectionGroup = `--collection-group=${group}`;
  return {
    kind: 'ensure',
    title,
    probe: {
      kind: 'line',
      command: gcloud('firestore fields ttls list', collectionGroup, db, p, '--format=value(name)'),
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
  };
}

/**
 * Firestore's index settings and TTL policies from the inventory (shared/state/firestore-inventory.ts): a TTL policy on
 * every collection it gives one (unless `--ttl-collection-group` already listed it), a single-field index exemption
 * for every field it exempts (monotonic, or written at high rate: index entries cost write latency, a document may
 * have 40,000, sequential values hot-spot an index range; Firestore's best-practices and quotas pages), and the
 * composite indexes its queries need.
 */
function firestoreIndexes({ o, p, steps }: PlanContext): void {
  const db = `--database=${o.firestoreDatabase}`;
  for (const group of ttlCollections()) {
    if (o.ttlCollectionGroups.includes(group)) continue;
    steps.push(ttlPolicyStep(o, p, group, `Firestore TTL policy on ${group}.${TTL_FIELD}`));
  }
  for (const [group, field, why] of indexExemptions()) {
    steps.push({
      kind: 'ensure',
      title: `Firestore single-field index exemption: ${group}.${field} (no query uses it; ${why})`,
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
  for (const { collection, composite = [] } of FIRESTORE_INVENTORY) {
    for (const [first, second] of composite) {
      steps.push({
        kind: 'ensure',
        title: `Firestore composite index ${collection} (${first}, ${second})`,
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
          `--collection-group=${collection}`,
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
}

/** The custom roles of CUSTOM_ROLES, created or brought up to date (their permissions are the code's). */
function customRoles({ o, p, names, steps }: PlanContext): void {
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
 * The service agents using the key (KEY_USERS) provisioned, then each granted `KMS_ROLE` on the key alone before
 * anything is created with it (the deployer needs `cloudkms.cryptoKeys.setIamPolicy` on the key).
 */
function kmsKeyGrants({ o, p, steps }: PlanContext, kms: KmsKey): void {
  for (const user of KEY_USERS) {
    if (user.provision === 'identity' && user.service !== undefined) {
      steps.push({
        kind: 'run',
        title: `Provision the ${user.what} service agent`,
        command: gcloud('beta services identity create', `--service=${user.service}`, p),
      });
    } else if (user.provision === 'bigquery') {
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
 * The function images' repository with the key (functions with `--kms-key` need one) and the region's Eventarc
 * Google channel set to it ("Protect your data with CMEK"). A repository's key is fixed at creation.
 */
function functionImagesRepository(
  { o, p, names, steps }: PlanContext,
  kms: KmsKey,
  deployments: readonly PipelineDeployment[],
): void {
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
  steps.push(
    requireLine(
      `Artifact Registry repository ${id} is encrypted with ${kms.key}`,
      gcloud('artifacts repositories describe', id, location, p, '--format=value(kmsKeyName)'),
      kms.name,
      'the Artifact Registry repository $0 is not encrypted with --kms-key $1 (its key is set when it is ' +
        'created): delete it or use another --name-prefix',
      id,
      kms.name,
    ),
  );
  if (deployments.some((d) => d.functions.some(({ spec }) => spec.trigger === 'topic'))) {
    // The channel is shared with every Eventarc trigger of the region: never replace another key.
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
