// The teardown plan: everything the deploy plan creates, newest first, each step only if the resource is there.
// Data (datasets, topics, dead letters, the documents of the system's Firestore database) stays unless asked for;
// no other Firestore database, and no API, is ever touched.
import {
  BOOKING_DLQ_SUBSCRIPTION,
  BOOKING_DLQ_TOPIC,
  BOOKING_TOPIC,
  BRONZE_DATASET,
  BRONZE_SUBSCRIPTION,
} from '../local/resources';
import { describeSubscription, findPolicy, monitoringTargets, policyVariable } from './deploy-plan';
import { COLLECTIONS } from '../../shared/state/firestore-window-store';
import { functionEnv } from './env';
import { BUILD_ROLES, FUNCTION_SPECS, functionProjectRoles } from './functions';
import { conditionFlag, removeUnconditionedStep } from './iam';
import { alertPolicies, logMetrics } from './monitoring';
import { assertPlanSecure } from './plan-checks';
import {
  ACCOUNT_BASES,
  BRONZE_DLQ_SUBSCRIPTION,
  BRONZE_DLQ_TOPIC,
  BUILD_SA,
  type DeployOptions,
  Names,
  type Plan,
  type RepoFacts,
  validateOptions,
} from './options';
import { datasetsCreated } from './sql';
import { bq, gcloud, type Step } from './steps';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { deleteFirestoreRootCommand, pipelineTeardownSteps } from './pipeline-plan';
import { BOOKING, SHARED_ACCOUNT_BASES, selectPipelines } from './pipelines';
import type { SqlFile } from './sql';

/** Options of teardown.sh beyond the deploy options. */
export interface TeardownOptions extends DeployOptions {
  /** Also delete the datasets, topics and the dead-letter subscription (data). */
  readonly deleteData: boolean;
  /**
   * Also delete what every pipeline shares (`teardown.sh --all`): the trigger, scheduler and build accounts and the
   * build account's project roles, and (with `deleteData`) Firestore documents by collection group. Absent: true
   * when `pipelines` is absent too (the booking-only deployment of before the registry, torn down whole).
   */
  readonly deleteShared?: boolean;
}

/** Drift store subcollections under each table document (shared/drift/firestore-store.ts). */
const DRIFT_SUBCOLLECTIONS = ['changes', 'rows', 'updates'] as const;

/**
 * The Firestore collection ids of our stores, for `gcloud firestore bulk-delete --collection-ids` (collection
 * groups): the window store's root and subcollections, the drift store's root and subcollections, with roots
 * from the functions' configuration (`OFFVIA_WINDOW_FIRESTORE_ROOT`, `OFFVIA_SCHEMA_FIRESTORE_ROOT`).
 * @throws ConfigError for a bad OFFVIA_* override.
 */
export function firestoreCollectionIds(
  project: string,
  envOverrides: Readonly<Record<string, string>>,
  firestoreDatabase?: string,
): string[] {
  const { config } = functionEnv(project, envOverrides, firestoreDatabase);
  return [
    ...new Set([
      config.window.firestoreRoot,
      ...Object.values(COLLECTIONS),
      config.drift.firestoreRoot,
      ...DRIFT_SUBCOLLECTIONS,
    ]),
  ];
}

/**
 * The teardown plan. Covers every function this deployment knows (registered or not), so a function removed from
 * the code is removed from the cloud too.
 * @throws Error for invalid options.
 */
export function buildTeardownPlan(o: TeardownOptions, facts: RepoFacts): Plan {
  validateOptions(o);
  const selected = selectPipelines(o.pipelines ?? [BOOKING]);
  const deleteShared = o.deleteShared ?? o.pipelines === undefined;
  const steps: Step[] = [];
  // Every other pipeline first, each wholly, then booking's (and the shared accounts, last, with --all).
  for (const pipeline of selected.filter((x) => x.name !== BOOKING)) {
    steps.push(
      ...pipelineTeardownSteps(
        o,
        pipeline,
        pipelineSql(facts, pipeline),
        facts.schedules,
        o.deleteData,
      ),
    );
  }
  const withBooking = selected.some((x) => x.name === BOOKING);
  if (withBooking) bookingTeardown(o, facts, deleteShared, steps);
  // The service agent's dataset grant is booking's Bronze (other pipelines' Bronze writers are their own accounts).
  const agentGrant = withBooking
    ? `, the Pub/Sub service agent grant on ${BRONZE_DATASET} (it goes with the dataset)`
    : '';
  steps.push({
    kind: 'note',
    title:
      `never deleted here: the Firestore database ${o.firestoreDatabase} itself and its TTL policies, any other ` +
      `Firestore database, the APIs${agentGrant}, the build images in Artifact Registry ` +
      '(gcf-artifacts) and the gcf-v2-sources-*/gcf-v2-uploads-* buckets (docs/deploy.md, "Teardown")',
  });
  if (!deleteShared) {
    steps.push({
      kind: 'note',
      title:
        `kept (shared by every pipeline; teardown.sh --all removes them): service accounts ` +
        `${SHARED_ACCOUNT_BASES.map((b) => new Names(o).serviceAccountId(b)).join(', ')}, custom roles`,
    });
  }
  assertPlanSecure(steps, o);
  const header = [
    `Offvia TEARDOWN plan for project ${o.project}, region ${o.region}, name prefix ${JSON.stringify(o.namePrefix)}`,
    o.deleteData
      ? `deletes DATA: datasets, topics, dead letters, the documents of Firestore database ${o.firestoreDatabase}`
      : 'keeps data: datasets, topics, dead letters',
    `pipelines: ${selected.map((x) => x.name).join(', ')}${deleteShared ? ' and the shared resources (--all)' : ' (shared resources kept)'}`,
  ];
  return { header, steps, files: [] };
}

/**
 * A pipeline's DDL files from the repository facts.
 * @throws Error when the facts hold none for it.
 */
function pipelineSql(facts: RepoFacts, p: AnyPipelineDefinition): readonly SqlFile[] {
  const files = facts.pipelineSqlFiles?.[p.name];
  if (files === undefined) throw new Error(`no DDL files read for pipeline ${p.name}`);
  return files;
}

/**
 * The booking pipeline's teardown (its hand-written resources), with the shared accounts when `deleteShared`. Covers
 * every function of FUNCTION_SPECS (registered or not), so a function removed from the code is removed from the
 * cloud too.
 */
function bookingTeardown(
  o: TeardownOptions,
  facts: RepoFacts,
  deleteShared: boolean,
  steps: Step[],
): void {
  const names = new Names(o);
  const p = `--project=${o.project}`;
  const specs = [...FUNCTION_SPECS.values()];
  const targets = monitoringTargets({ ...o, notificationChannels: [] }, specs);
  const deleteIfPresent = (title: string, probe: string[], remove: string[]): void => {
    steps.push({
      kind: 'ensure',
      title,
      probe: { kind: 'status', command: probe },
      present: remove,
    });
  };

  for (const spec of specs.filter((s) => s.trigger === 'http')) {
    const name = names.functionName(spec.baseName);
    const where = [`--location=${o.region}`, p];
    deleteIfPresent(
      `Delete Cloud Scheduler job ${name}`,
      gcloud('scheduler jobs describe', name, ...where),
      gcloud('scheduler jobs delete', name, ...where, '--quiet'),
    );
  }
  for (const policy of alertPolicies(targets)) {
    const variable = policyVariable(o, policy.displayName);
    steps.push({
      kind: 'ensure',
      title: `Delete alert policy ${policy.displayName}`,
      probe: { kind: 'lookup', variable, command: findPolicy(p, policy.displayName) },
      present: gcloud('alpha monitoring policies delete', `\${${variable}}`, p, '--quiet'),
    });
  }
  for (const metric of logMetrics(targets)) {
    deleteIfPresent(
      `Delete log-based metric ${metric.name}`,
      gcloud('logging metrics describe', metric.name, p),
      gcloud('logging metrics delete', metric.name, p, '--quiet'),
    );
  }
  for (const spec of specs) {
    const name = names.functionName(spec.baseName);
    const where = [`--region=${o.region}`, p];
    deleteIfPresent(
      `Delete function ${name}${spec.trigger === 'topic' ? ' (and its Eventarc trigger and subscription)' : ''}`,
      gcloud('functions describe', name, ...where),
      gcloud('functions delete', name, ...where, '--quiet'),
    );
  }
  for (const subscription of [
    BRONZE_SUBSCRIPTION,
    ...(o.deleteData ? [BOOKING_DLQ_SUBSCRIPTION, BRONZE_DLQ_SUBSCRIPTION] : []),
  ]) {
    steps.push({
      kind: 'ensure',
      title: `Delete subscription ${subscription}`,
      probe: describeSubscription(p, subscription),
      present: gcloud('pubsub subscriptions delete', subscription, p, '--quiet'),
    });
  }

  // Project-level bindings go before their accounts: a deleted account's bindings can no longer be removed by
  // email. Dataset and resource bindings go away with the account (or the resource).
  const projectBindings = [
    ...specs.map((spec) => ({
      base: spec.serviceAccount,
      roles: functionProjectRoles(spec, o.project, o.firestoreDatabase),
    })),
    ...(deleteShared ? [{ base: BUILD_SA, roles: [...BUILD_ROLES] }] : []),
  ];
  for (const { base, roles } of projectBindings) {
    const email = names.serviceAccountEmail(base);
    for (const { role, condition } of roles) {
      if (condition !== undefined) {
        steps.push(
          removeUnconditionedStep(
            o.project,
            `serviceAccount:${email}`,
            role,
            `Remove an unconditioned ${role} on the project from ${names.serviceAccountId(base)} (earlier deploys)`,
          ),
        );
      }
      steps.push({
        kind: 'ensure',
        title: `Remove ${role} on the project from ${names.serviceAccountId(base)}`,
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
  for (const base of ACCOUNT_BASES) {
    if (!deleteShared && SHARED_ACCOUNT_BASES.includes(base)) continue;
    const email = names.serviceAccountEmail(base);
    deleteIfPresent(
      `Delete service account ${names.serviceAccountId(base)}`,
      gcloud('iam service-accounts describe', email, p),
      gcloud('iam service-accounts delete', email, p, '--quiet'),
    );
  }

  const datasets = datasetsCreated(facts.sqlFiles);
  if (o.deleteData) {
    for (const topic of [BRONZE_DLQ_TOPIC, BOOKING_DLQ_TOPIC, BOOKING_TOPIC]) {
      deleteIfPresent(
        `Delete topic ${topic}`,
        gcloud('pubsub topics describe', topic, p),
        gcloud('pubsub topics delete', topic, p, '--quiet'),
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
    // Firestore keeps the window store (watermark, lease, dedup ledger, panes) and the drift store: a redeploy
    // would inherit the old watermark and ledger. bulk-delete works on collection groups: every collection with
    // one of these ids anywhere in the database it names, so it names only the system's own database, which
    // nothing else writes (validateOptions refuses `(default)`).
    const ids = firestoreCollectionIds(o.project, o.envOverrides, o.firestoreDatabase);
    if (!deleteShared) {
      // Booking alone: its roots, recursively; the collection groups are shared with the other pipelines' stores.
      const { config } = functionEnv(o.project, o.envOverrides, o.firestoreDatabase);
      for (const root of [config.window.firestoreRoot, config.drift.firestoreRoot]) {
        steps.push({
          kind: 'run',
          title: `Delete every Firestore document under ${root} (pipeline booking) in database ${o.firestoreDatabase}`,
          command: deleteFirestoreRootCommand(o, root),
        });
      }
    } else {
      steps.push({
        kind: 'run',
        title:
          `Delete the Firestore documents of the window and drift stores in database ${o.firestoreDatabase} ` +
          `(collection groups ${ids.join(', ')})`,
        command: gcloud(
          'firestore bulk-delete',
          `--collection-ids=${ids.join(',')}`,
          `--database=${o.firestoreDatabase}`,
          p,
          '--quiet',
        ),
      });
    }
  } else {
    steps.push({
      kind: 'note',
      title:
        `kept (data; --delete-data removes them): Firestore documents of the window and drift stores in database ${o.firestoreDatabase}; datasets ${datasets.join(', ')}; topics ` +
        `${BOOKING_TOPIC}, ${BOOKING_DLQ_TOPIC}, ${BRONZE_DLQ_TOPIC}; subscriptions ${BOOKING_DLQ_SUBSCRIPTION}, ${BRONZE_DLQ_SUBSCRIPTION}`,
    });
  }
}
