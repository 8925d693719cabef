// How each function is deployed: trigger, sizing, identity and the BigQuery datasets it writes. docs/deploy.md
// explains every number; change them here, not in the scripts.
import type { TableRef } from '../../shared/config/env';
import type { IngestConfig } from '../../shared/config/ingest-config';
import type { SchemaDriftConfig } from '../../shared/config/schema-drift-config';
import type { WindowConfig } from '../../shared/config/window-config';

/**
 * The runtime unless `--runtime` says otherwise. Google's runtime support schedule: nodejs20 decommissioned
 * 2026-10-30, nodejs22 2027-10-31, nodejs24 2028-10-31. The local stack and CI run Node.js 22 too.
 */
export const DEFAULT_RUNTIME = 'nodejs22';
/** The runtimes `--runtime` accepts: those still deployable on the schedule above. */
export const SUPPORTED_RUNTIMES: readonly string[] = ['nodejs22', 'nodejs24'];

/**
 * Project roles of the build account (`<prefix>build`), as "Custom Service Account for Cloud Build" documents them:
 * logs, build images, and the source buckets Cloud Functions creates (by IAM condition).
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
 * `--ingress-settings` of every function: internal ingress still admits Pub/Sub, Eventarc and Cloud Scheduler of the
 * project, not the internet (Cloud Run, "Available ingress settings"); `run.invoker` is enforced on top.
 */
export const INGRESS_SETTINGS = 'internal-only';

/** A project-level role with the IAM condition that narrows it, if any. */
export interface ProjectRole {
  readonly role: string;
  readonly condition?: { readonly expression: string; readonly title: string };
}

/** The IAM condition confining a Firestore role to one database ("Configure per-database access permissions"). */
export function firestoreDatabaseCondition(
  project: string,
  database: string,
): NonNullable<ProjectRole['condition']> {
  return {
    expression: `resource.name=="projects/${project}/databases/${database}"`,
    title: `offvia-firestore-${database}`,
  };
}

/** Project roles of a function's account, where IAM has nothing finer: Firestore (by condition), jobs, metrics. */
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
    ...(spec.readsBacklogMetric === true ? [{ role: 'roles/monitoring.viewer' }] : []),
  ];
}

/** The functions' configuration, parsed by the same loaders the functions run at cold start. */
export interface FunctionsConfig {
  readonly ingest: IngestConfig;
  readonly drift: SchemaDriftConfig;
  readonly window: WindowConfig;
}

/** What a function does to a BigQuery table: `rows` streams rows and reads metadata; `schema` also adds columns. */
export type TableAccess = 'rows' | 'schema';

/** A BigQuery table a function writes, and how. */
export interface TableWrite {
  readonly table: TableRef;
  readonly access: TableAccess;
  /** Granted only once `sql/` creates the table. */
  readonly whenCreatedBySql?: boolean;
}

/** A project-level custom role of the deployment, `projects/P/roles/<prefix>_<key>`. */
export interface CustomRole {
  /** The role id after the name prefix (`offvia_tableRowWriter`). */
  readonly id: string;
  readonly title: string;
  readonly description: string;
  readonly permissions: readonly string[];
}

/**
 * The custom roles on single tables, instead of `roles/bigquery.dataEditor` (which reads every row and deletes
 * tables). Permissions from the BigQuery API reference (`tabledata.insertAll`, `tables.get`, "Modifying table
 * schemas"); none reads rows (`bigquery.tables.getData`) or deletes a table.
 */
export const CUSTOM_ROLES: Readonly<Record<TableAccess, CustomRole>> = {
  rows: {
    id: 'tableRowWriter',
    title: 'Offvia table row writer',
    description:
      'Streams rows into one table and reads its metadata; cannot read rows or delete the table',
    permissions: ['bigquery.tables.get', 'bigquery.tables.updateData'],
  },
  schema: {
    id: 'tableSchemaEditor',
    title: 'Offvia table schema editor',
    description:
      'Adds columns to one table and streams rows into it; cannot read rows or delete the table',
    permissions: ['bigquery.tables.get', 'bigquery.tables.update', 'bigquery.tables.updateData'],
  },
};

/** The dataset-level role that gives `bigquery.datasets.get` (insertAll needs it) and table metadata, no data. */
export const DATASET_METADATA_ROLE = 'roles/bigquery.metadataViewer';

/** What a function does in its pipeline (the definition's `functions` key). */
export type FunctionRole = 'ingest' | 'fireWindows' | 'schemaSweep';

/** Deployment settings of one function of a pipeline. */
export interface FunctionSpec {
  readonly role: FunctionRole;
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
  /** Tables written (insertAll, DDL): a custom role on each table (CUSTOM_ROLES). */
  readonly writes: (config: FunctionsConfig) => TableWrite[];
  /** Runs BigQuery query jobs (DDL): roles/bigquery.jobUser, which exists only at project level. */
  readonly runsQueryJobs: boolean;
  /** Reads and writes Firestore documents: roles/datastore.user, conditioned on the system's database. */
  readonly usesFirestore: boolean;
  /** Reads the ingest subscription's backlog metric (the watermark hold): roles/monitoring.viewer. */
  readonly readsBacklogMetric?: boolean;
}

/** What booking's three functions share: one vCPU, no warm instance, Firestore access. */
const COMMON = {
  memory: '512Mi',
  cpu: '1',
  minInstances: 0,
  runsQueryJobs: false,
  usesFirestore: true,
} as const;

/** A scheduled function's: one request at a time (a pass holds the lease), at most two instances. */
const SCHEDULED = { ...COMMON, trigger: 'http', concurrency: 1, maxInstances: 2 } as const;

const SPECS: readonly FunctionSpec[] = [
  {
    ...COMMON,
    role: 'ingest',
    entryPoint: 'ingestBooking',
    baseName: 'ingest-booking',
    trigger: 'topic',
    serviceAccount: 'ingest',
    concurrency: 80,
    maxInstances: 20,
    timeoutSeconds: 60,
    writes: ({ ingest, window }) => [
      // Silver: rows, and its schema read by the drift gate (tables.get); the sweep adds its columns.
      { table: ingest.silverTable, access: 'rows' },
      { table: ingest.quarantineTable, access: 'rows' },
      { table: ingest.badDataTable, access: 'rows' },
      // Element-driven early/late panes (windowing issue) are written by ingestBooking too.
      { table: window.goldTable, access: 'rows', whenCreatedBySql: true },
    ],
  },
  {
    ...SCHEDULED,
    role: 'schemaSweep',
    entryPoint: 'schemaSweep',
    baseName: 'schema-sweep',
    serviceAccount: 'sweep',
    memory: '1Gi',
    timeoutSeconds: 300,
    writes: ({ ingest, drift }) => [
      ...drift.targetTables.map((table) => ({ table, access: 'schema' as const })),
      { table: ingest.badDataTable, access: 'rows' },
    ],
    runsQueryJobs: true,
  },
  {
    ...SCHEDULED,
    role: 'fireWindows',
    entryPoint: 'fireWindows',
    baseName: 'fire-windows',
    serviceAccount: 'windows',
    timeoutSeconds: 180,
    writes: ({ ingest, window }) => [
      { table: window.goldTable, access: 'rows' },
      { table: ingest.badDataTable, access: 'rows' },
    ],
  },
];

/** Booking's functions by entry point; their sizes serve every other pipeline's function of the same role. */
export const FUNCTION_SPECS: ReadonlyMap<string, FunctionSpec> = new Map(
  SPECS.map((s) => [s.entryPoint, s]),
);

/** Booking's function of each role: the sizes a new pipeline's function of that role starts from. */
export function roleTemplate(role: FunctionRole): FunctionSpec {
  const spec = SPECS.find((s) => s.role === role);
  if (spec === undefined) throw new Error(`no deploy spec for the ${role} role`);
  return spec;
}
