// How each function is deployed: trigger, sizing, identity and the BigQuery datasets it writes. README.md
// ("Deploy to Google Cloud") explains every number; change them here, not in the scripts.
import type { TableRef } from '../../shared/config/env';
import type { IngestConfig } from '../../shared/config/ingest-config';
import type { SchemaDriftConfig } from '../../shared/config/schema-drift-config';
import type { WindowConfig } from '../../shared/config/window-config';
import type { SignatureType } from './registry';

/**
 * The Cloud Functions runtime a deploy uses unless `--runtime` says otherwise. Google's runtime support schedule
 * (cloud.google.com/functions/docs/runtime-support): nodejs20 deprecated 2026-04-30 and decommissioned
 * 2026-10-30 (no new deploys); nodejs22 decommissioned 2027-10-31; nodejs24 2028-10-31. Local development and
 * tests run on Node 20; the code uses nothing Node 22 removed (package.json `engines` is `>=20`).
 */
export const DEFAULT_RUNTIME = 'nodejs22';
/** The runtimes `--runtime` accepts: those still deployable on the schedule above. */
export const SUPPORTED_RUNTIMES: readonly string[] = ['nodejs22', 'nodejs24'];

/**
 * Project-level roles of the build service account (`<prefix>build`), as Google documents them for a custom
 * Cloud Build service account of Cloud Run functions ("Custom Service Account for Cloud Build",
 * cloud.google.com/functions/docs/securing/build-custom-sa): build logs, the build images in Artifact Registry
 * (the `gcf-artifacts` repository, created by the first deploy, so not grantable earlier), and the function
 * source in Cloud Storage, limited by an IAM condition to the `gcf-v2-sources-*` and `gcf-v2-uploads-*`
 * buckets Cloud Functions creates.
 */
export const BUILD_ROLES: readonly ProjectRole[] = [
  { role: 'roles/logging.logWriter' },
  { role: 'roles/artifactregistry.writer' },
  {
    role: 'roles/storage.objectAdmin',
    condition: {
      expression:
        'resource.name.startsWith("projects/_/buckets/gcf-v2-sources-") || ' +
        'resource.name.startsWith("projects/_/buckets/gcf-v2-uploads-")',
      title: 'offvia-gcf-source-buckets',
    },
  },
];

/**
 * `--ingress-settings` of every function: the most private setting. Cloud Run's `internal` ingress still admits
 * requests from Cloud Scheduler, Cloud Tasks, Eventarc, Pub/Sub, Workflows and BigQuery in the same project (or
 * VPC Service Controls perimeter), so the Eventarc Pub/Sub push to ingestBooking and the Scheduler OIDC calls to
 * the HTTP functions arrive; the internet does not (cloud.google.com/run/docs/securing/ingress, "Available
 * ingress settings"). IAM (`run.invoker`) is still enforced on top.
 */
export const INGRESS_SETTINGS = 'internal-only';

/** A project-level role with the IAM condition that narrows it, if any. */
export interface ProjectRole {
  readonly role: string;
  readonly condition?: { readonly expression: string; readonly title: string };
}

/**
 * The IAM condition confining a Firestore role to one database. Firestore evaluates IAM conditions on the
 * database's resource name, so a project-level `roles/datastore.user` with this condition reaches only that
 * database ("Configure per-database access permissions", cloud.google.com/firestore/docs/manage-databases;
 * Firestore IAM, cloud.google.com/firestore/docs/security/iam).
 */
export function firestoreDatabaseCondition(
  project: string,
  database: string,
): NonNullable<ProjectRole['condition']> {
  return {
    expression: `resource.name=="projects/${project}/databases/${database}"`,
    title: `offvia-firestore-${database}`,
  };
}

/**
 * The project-level roles of a function's runtime account: Firestore (no finer-grained IAM than the project,
 * hence the database condition) and BigQuery jobs (jobs exist only at project level).
 */
export function functionProjectRoles(
  spec: FunctionSpec,
  project: string,
  firestoreDatabase: string,
): ProjectRole[] {
  return [
    ...(spec.usesFirestore
      ? [
          {
            role: 'roles/datastore.user',
            condition: firestoreDatabaseCondition(project, firestoreDatabase),
          },
        ]
      : []),
    ...(spec.runsQueryJobs ? [{ role: 'roles/bigquery.jobUser' }] : []),
  ];
}

/** The functions' configuration, parsed by the same loaders the functions run at cold start. */
export interface FunctionsConfig {
  readonly ingest: IngestConfig;
  readonly drift: SchemaDriftConfig;
  readonly window: WindowConfig;
}

/** A dataset a function writes to (roles/bigquery.dataEditor on it). */
export interface DatasetWrite {
  /** `dataset`, or `project:dataset` for another project's dataset. */
  readonly dataset: string;
  /**
   * Granted only when `sql/` creates the dataset: for a table another issue is still adding (the gold table of
   * the windowing issue), so the grant appears by itself once its DDL lands.
   */
  readonly whenCreatedBySql?: boolean;
}

/** Deployment settings of one registered function. */
export interface FunctionSpec {
  /** Name registered in functions/index.ts (`--entry-point`). */
  readonly entryPoint: string;
  /** The function (and Cloud Run service) name after the name prefix: lowercase, hyphens. */
  readonly baseName: string;
  /** `topic`: Pub/Sub via Eventarc with `--retry`; `http`: private HTTP, called by Cloud Scheduler. */
  readonly trigger: 'topic' | 'http';
  /** The runtime service account id after the name prefix; one per function. */
  readonly serviceAccount: string;
  /** `--memory`. */
  readonly memory: string;
  /** `--cpu`: gen2 needs at least 1 vCPU for a concurrency above 1. */
  readonly cpu: string;
  /** `--concurrency`: requests one instance serves at once. */
  readonly concurrency: number;
  /** `--max-instances`. */
  readonly maxInstances: number;
  /** `--min-instances`. */
  readonly minInstances: number;
  /** `--timeout`, seconds. */
  readonly timeoutSeconds: number;
  /** Datasets written (insertAll, DDL): roles/bigquery.dataEditor at dataset level. */
  readonly writes: (config: FunctionsConfig) => DatasetWrite[];
  /** Runs BigQuery query jobs (DDL): roles/bigquery.jobUser, which exists only at project level. */
  readonly runsQueryJobs: boolean;
  /** Reads and writes Firestore documents: roles/datastore.user, conditioned on the system's database. */
  readonly usesFirestore: boolean;
}

/** `dataset` or `project:dataset` of a configured table. */
export function datasetOf(table: TableRef): string {
  return table.projectId === undefined ? table.datasetId : `${table.projectId}:${table.datasetId}`;
}

const SPECS: readonly FunctionSpec[] = [
  {
    entryPoint: 'ingestBooking',
    baseName: 'ingest-booking',
    trigger: 'topic',
    serviceAccount: 'ingest',
    memory: '512Mi',
    cpu: '1',
    concurrency: 80,
    maxInstances: 20,
    minInstances: 0,
    timeoutSeconds: 60,
    writes: ({ ingest, window }) => [
      { dataset: datasetOf(ingest.silverTable) },
      { dataset: datasetOf(ingest.quarantineTable) },
      { dataset: datasetOf(ingest.badDataTable) },
      // Element-driven early/late panes (windowing issue) are written by ingestBooking too.
      { dataset: datasetOf(window.goldTable), whenCreatedBySql: true },
    ],
    runsQueryJobs: false,
    usesFirestore: true,
  },
  {
    entryPoint: 'schemaSweep',
    baseName: 'schema-sweep',
    trigger: 'http',
    serviceAccount: 'sweep',
    memory: '1Gi',
    cpu: '1',
    concurrency: 1,
    maxInstances: 2,
    minInstances: 0,
    timeoutSeconds: 300,
    writes: ({ ingest, drift }) => [
      ...drift.targetTables.map((t) => ({ dataset: datasetOf(t) })),
      { dataset: datasetOf(ingest.badDataTable) },
    ],
    runsQueryJobs: true,
    usesFirestore: true,
  },
  {
    entryPoint: 'fireWindows',
    baseName: 'fire-windows',
    trigger: 'http',
    serviceAccount: 'windows',
    memory: '512Mi',
    cpu: '1',
    concurrency: 1,
    maxInstances: 2,
    minInstances: 0,
    timeoutSeconds: 180,
    writes: ({ ingest, window }) => [
      { dataset: datasetOf(window.goldTable) },
      { dataset: datasetOf(ingest.badDataTable) },
    ],
    runsQueryJobs: false,
    usesFirestore: true,
  },
];

/** The spec of every function this deployment knows, by entry point. */
export const FUNCTION_SPECS: ReadonlyMap<string, FunctionSpec> = new Map(
  SPECS.map((s) => [s.entryPoint, s]),
);

/** The Functions Framework signature a trigger needs. */
export function signatureFor(trigger: FunctionSpec['trigger']): SignatureType {
  return trigger === 'topic' ? 'cloudevent' : 'http';
}
