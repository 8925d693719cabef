// The teardown plan: everything the deploy plan creates, newest first, each step only if the resource is there.
// Data (datasets, topics, dead letters, the documents of the system's Firestore database) stays unless asked for;
// no other Firestore database, and no API, is ever touched.
import { COLLECTIONS } from '../../shared/state/firestore-window-store';
import { DRIFT_COLLECTIONS } from '../../shared/drift/firestore-store';
import { pipelineSqlFiles } from './deploy-plan';
import { functionEnv } from './env';
import { BUILD_ROLES } from './functions';
import { assertPlanSecure } from './plan-checks';
import {
  BUILD_SA,
  type DeployOptions,
  Names,
  type Plan,
  type RepoFacts,
  validateOptions,
} from './options';
import { gcloud, type Step } from './steps';
import {
  deleteAccountStep,
  deployedBeforeRegistry,
  pipelineTeardownSteps,
  removeProjectRoleSteps,
} from './pipeline-plan';
import { SHARED_ACCOUNT_BASES, selectPipelines } from './pipelines';

/** Options of teardown.sh beyond the deploy options. */
export interface TeardownOptions extends DeployOptions {
  /** Also delete the datasets, topics and the dead-letter subscription (data). */
  readonly deleteData: boolean;
  /**
   * Also delete what every pipeline shares (`--all`): the shared accounts, the build roles, and with `deleteData` the
   * Firestore documents by collection group. Absent: true when `pipelines` is absent too.
   */
  readonly deleteShared?: boolean;
}

/**
 * The collection ids of the window and drift stores (roots from the functions' configuration and subcollections),
 * for `gcloud firestore bulk-delete --collection-ids`.
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
      ...Object.values(DRIFT_COLLECTIONS),
    ]),
  ];
}

/**
 * The teardown plan: each selected pipeline wholly (pipeline-plan.ts), then with `deleteShared` what they share.
 * @throws Error for invalid options, or a selected pipeline without DDL files in the facts.
 */
export function buildTeardownPlan(o: TeardownOptions, facts: RepoFacts): Plan {
  validateOptions(o);
  const selected = selectPipelines(o.pipelines ?? ['booking']);
  const deleteShared = o.deleteShared ?? o.pipelines === undefined;
  const names = new Names(o);
  const proj = `--project=${o.project}`;
  // bulk-delete reaches every collection with these ids in the database: only on the system's own, with --all.
  const ids = firestoreCollectionIds(o.project, o.envOverrides, o.firestoreDatabase);
  const bulkDelete = deleteShared && o.deleteData;
  const steps: Step[] = selected.flatMap((p) =>
    pipelineTeardownSteps(o, p, pipelineSqlFiles(facts, p), o.deleteData, bulkDelete ? ids : []),
  );
  if (deleteShared) {
    for (const role of BUILD_ROLES)
      steps.push(...removeProjectRoleSteps(o, names, BUILD_SA, role, true));
    for (const base of SHARED_ACCOUNT_BASES) steps.push(deleteAccountStep(o, names, base));
  }
  if (bulkDelete) {
    // Firestore keeps the window store (watermark, lease, dedup ledger, panes) and the drift store: a redeploy
    // would inherit the old watermark and ledger.
    steps.push({
      kind: 'run',
      title:
        `Delete the Firestore documents of the window and drift stores in database ${o.firestoreDatabase} ` +
        `(collection groups ${ids.join(', ')})`,
      command: gcloud(
        'firestore bulk-delete',
        `--collection-ids=${ids.join(',')}`,
        `--database=${o.firestoreDatabase}`,
        proj,
        '--quiet',
      ),
    });
  }
  // Deploys before the registry granted the Pub/Sub service agent on booking's Bronze dataset (other pipelines'
  // Bronze writers are their own accounts).
  const agentGrants = selected
    .filter(deployedBeforeRegistry)
    .flatMap((p) => (p.tables.bronze === null ? [] : [p.tables.bronze.datasetId]))
    .map((d) => `, the Pub/Sub service agent grant on ${d} (it goes with the dataset)`)
    .join('');
  steps.push({
    kind: 'note',
    title:
      `never deleted here: the Firestore database ${o.firestoreDatabase} itself and its TTL policies, any other ` +
      `Firestore database, the APIs${agentGrants}, the build images in Artifact Registry (gcf-artifacts) and the ` +
      'gcf-v2-sources-*/gcf-v2-uploads-* buckets (docs/deploy.md, "Teardown")',
  });
  if (!deleteShared) {
    steps.push({
      kind: 'note',
      title:
        `kept (shared by every pipeline; teardown.sh --all removes them): service accounts ` +
        `${SHARED_ACCOUNT_BASES.map((b) => names.serviceAccountId(b)).join(', ')}, custom roles`,
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
