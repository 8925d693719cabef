// Prints the deploy or teardown plan (a bash script) for deploy.sh / teardown.sh, after writing the metric and
// policy files it refers to. Reads the repository only; never calls Google Cloud.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { DEFAULT_FIRESTORE_DATABASE } from '../../shared/config/ingest-config';
import { buildDeployPlan, DEFAULT_TTL_COLLECTION_GROUPS } from './deploy-plan';
import { DEFAULT_RUNTIME } from './functions';
import { type DeployOptions, normaliseBqLocation, type Plan, type RepoFacts } from './options';
import { PIPELINES } from '../../shared/pipelines';
import { readPipelineSqlFiles, selectPipelines } from './pipelines';
import { renderPlan } from './steps';
import { buildTeardownPlan } from './teardown-plan';
import { filesForUpload, sourceDigest } from './upload';

export const USAGE = `usage: deploy.sh    --project P --region R [--pipeline NAME]... [options]
       teardown.sh  --project P --region R (--pipeline NAME... | --all) [options] [--yes] [--delete-data]
  --dry-run                 print the plan (a bash script) and exit; nothing is called
  --pipeline NAME           a registered pipeline (repeatable, or a comma list): deploy defaults to every one;
                            teardown deletes only the named pipelines' resources, never the shared ones
  --all                     teardown only: every pipeline and the shared resources (accounts, custom roles)
  --name-prefix S           prefix of function, service account, job, metric and policy names (default offvia-)
  --bq-location L           BigQuery location of the datasets (default: the region, as the lab does)
  --firestore-location L    location if the Firestore database must be created (default: the region)
  --firestore-database D    the system's own named Firestore database, created if missing (default offvia)
  --env KEY=VALUE           override an OFFVIA_* variable of the functions (repeatable)
  --ttl-collection-group G  Firestore collection group with a TTL on expireAt (repeatable; default eventLedger, droppedLate)
  --notification-channel C  projects/P/notificationChannels/ID for the alert policies (repeatable)
  --quarantine-retention-days N  days a quarantine / bad-data partition is kept (default 90; 0: forever)
  --topic-retention D       message retention of the booking topic, for seek and replay (default 7d; 10m–31d)
  --publisher M             principal allowed to publish booking events, e.g. serviceAccount:EMAIL (repeatable):
                            roles/pubsub.publisher on the topic only
  --runtime RT              Cloud Functions runtime: nodejs22 (default) or nodejs24
  --kms-key K               projects/P/locations/L/keyRings/R/cryptoKeys/K: customer-managed key of the datasets,
                            topics, functions and the Firestore database (its location must be the region)
  --passenger-id-hmac-secret S:N  Secret Manager secret and pinned version of the key that replaces passenger_id
                            with its HMAC-SHA256 before Silver (docs/privacy.md)
  --out-dir D               where the metric and policy JSON files go (default deploy/gcloud/generated/<project>)
  --yes                     teardown only: do not ask for confirmation
  --delete-data             teardown only: also delete datasets, topics, dead letters and the documents of the
                            system's Firestore database`;

/** The repository root (this file is deploy/gcloud/cli.ts). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** Reads what the plan depends on from the repository at `root`. */
export function readRepoFacts(root: string, project: string, bqLocation: string): RepoFacts {
  return {
    pipelineSqlFiles: Object.fromEntries(
      PIPELINES.map((p) => [p.name, readPipelineSqlFiles(root, p, project, bqLocation)]),
    ),
    sourceDigest: sourceDigest(root, filesForUpload(root)),
  };
}

/** Parsed command line. */
export interface CliArgs {
  readonly command: 'deploy' | 'teardown';
  readonly options: DeployOptions;
  readonly deleteData: boolean;
  /**
   * Teardown: `--all` (every pipeline and the shared resources), `named` (`--pipeline`: those pipelines' own
   * resources), or `unnamed` (neither: teardown.sh refuses, see teardownScopeProblem). Deploy: `all` or `named`.
   */
  readonly scope: 'all' | 'named' | 'unnamed';
}

/** The flags of USAGE, as node:util parseArgs takes them. */
const CLI_OPTIONS = {
  project: { type: 'string' },
  region: { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
  'name-prefix': { type: 'string', default: 'offvia-' },
  'bq-location': { type: 'string' },
  'firestore-location': { type: 'string' },
  'firestore-database': { type: 'string', default: DEFAULT_FIRESTORE_DATABASE },
  env: { type: 'string', multiple: true, default: [] },
  'ttl-collection-group': { type: 'string', multiple: true },
  'notification-channel': { type: 'string', multiple: true, default: [] },
  publisher: { type: 'string', multiple: true, default: [] },
  'quarantine-retention-days': { type: 'string', default: '90' },
  'topic-retention': { type: 'string', default: '7d' },
  'out-dir': { type: 'string' },
  runtime: { type: 'string', default: DEFAULT_RUNTIME },
  'kms-key': { type: 'string' },
  'passenger-id-hmac-secret': { type: 'string' },
  yes: { type: 'boolean', default: false },
  'delete-data': { type: 'boolean', default: false },
  pipeline: { type: 'string', multiple: true },
  all: { type: 'boolean', default: false },
} as const satisfies ParseArgsConfig['options'];

/**
 * node:util parseArgs with the flags of USAGE, refusing a single-valued flag given twice (the shell scripts read the
 * first, parseArgs the last: teardown would confirm one project and delete in another).
 * @throws TypeError for an unknown flag or a missing value; Error for a repeated single-valued flag.
 */
function parseCliFlags(args: string[]) {
  const parsed = parseArgs({ args, allowPositionals: true, tokens: true, options: CLI_OPTIONS });
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option' || 'multiple' in CLI_OPTIONS[token.name]) continue;
    if (seen.has(token.name)) throw new Error(`--${token.name} is given twice: give it once`);
    seen.add(token.name);
  }
  return parsed;
}

/**
 * Parses `deploy|teardown` and the flags of USAGE (`--dry-run` and `--yes` are the shell scripts' business and
 * accepted here without effect). Deploy covers every registered pipeline unless `--pipeline` names some; a teardown
 * without `--pipeline` or `--all` parses (scope `unnamed`) and is refused by teardownScopeProblem.
 * @throws Error for a missing or unknown flag, a malformed `--env`, an unknown `--pipeline` (one line naming the
 * registered pipelines), `--all` with `--pipeline`, or `--all` on a deploy.
 */
export function parseCli(argv: readonly string[]): CliArgs {
  const [command, ...rest] = argv;
  if (command !== 'deploy' && command !== 'teardown')
    throw new Error(`expected deploy or teardown\n${USAGE}`);
  let parsed;
  try {
    parsed = parseCliFlags(rest);
  } catch (err) {
    // An unknown flag or a flag without its value: say which, then how to call.
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`, {
      cause: err,
    });
  }
  const { values, positionals } = parsed;
  if (positionals.length > 0) throw new Error(`unexpected argument ${positionals[0]}\n${USAGE}`);
  const { project, region } = values;
  if (project === undefined || region === undefined)
    throw new Error(`--project and --region are required\n${USAGE}`);
  if (values.all && values.pipeline !== undefined) {
    throw new Error(
      '--all and --pipeline: give one (--all tears down every pipeline and the shared resources)',
    );
  }
  if (values.all && command === 'deploy') {
    throw new Error(
      '--all is a teardown flag: deploy covers every pipeline unless --pipeline names some',
    );
  }
  // Checked here so an unknown name is one line naming the registered ones.
  const pipelines = selectPipelines(values.pipeline).map((p) => p.name);
  const scope =
    values.all || (command === 'deploy' && values.pipeline === undefined)
      ? 'all'
      : values.pipeline === undefined
        ? 'unnamed'
        : 'named';
  const envOverrides: Record<string, string> = {};
  for (const pair of values.env) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--env expects KEY=VALUE, got ${JSON.stringify(pair)}`);
    envOverrides[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return {
    command,
    deleteData: values['delete-data'],
    scope,
    options: {
      // Teardown without a scope keeps the API's default (booking and the shared resources); main() refuses it.
      ...(scope === 'unnamed' ? {} : { pipelines }),
      project,
      region,
      bqLocation: normaliseBqLocation(values['bq-location'] ?? region),
      firestoreLocation: values['firestore-location'] ?? region,
      firestoreDatabase: values['firestore-database'],
      namePrefix: values['name-prefix'],
      notificationChannels: values['notification-channel'],
      publishers: values.publisher,
      quarantineRetentionDays: /^\d+$/.test(values['quarantine-retention-days'])
        ? Number(values['quarantine-retention-days'])
        : NaN,
      topicRetention: values['topic-retention'],
      envOverrides,
      ttlCollectionGroups: values['ttl-collection-group'] ?? DEFAULT_TTL_COLLECTION_GROUPS,
      outDir: values['out-dir'] ?? `deploy/gcloud/generated/${project}`,
      runtime: values.runtime,
      ...(values['kms-key'] === undefined ? {} : { kmsKey: values['kms-key'] }),
      ...(values['passenger-id-hmac-secret'] === undefined
        ? {}
        : { passengerIdHmacSecret: values['passenger-id-hmac-secret'] }),
    },
  };
}

/**
 * Builds the plan for parsed arguments against the repository at `root`; `override` replaces facts read from it (a
 * fixed source digest, for plans compared across commits).
 */
export function planFor(
  args: CliArgs,
  root: string = REPO_ROOT,
  override: Partial<RepoFacts> = {},
): Plan {
  const facts = {
    ...readRepoFacts(root, args.options.project, args.options.bqLocation),
    ...override,
  };
  return args.command === 'deploy'
    ? buildDeployPlan(args.options, facts)
    : buildTeardownPlan(
        {
          ...args.options,
          deleteData: args.deleteData,
          ...(args.scope === 'unnamed' ? {} : { deleteShared: args.scope === 'all' }),
        },
        facts,
      );
}

/** Why teardown.sh must not go on (no `--pipeline` and no `--all`: never guessed); undefined otherwise. */
export function teardownScopeProblem(args: CliArgs): string | undefined {
  if (args.command !== 'teardown' || args.scope !== 'unnamed') return undefined;
  return `teardown: name the pipelines to delete with --pipeline NAME (registered: ${PIPELINES.map((p) => p.name).join(', ')}) or pass --all`;
}

function main(): void {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  try {
    const args = parseCli(process.argv.slice(2));
    const problem = teardownScopeProblem(args);
    if (problem !== undefined) throw new Error(problem);
    const plan = planFor(args);
    for (const file of plan.files) {
      const target = path.resolve(REPO_ROOT, file.path);
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, file.content);
    }
    process.stdout.write(renderPlan(plan.header, plan.steps));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  }
}

if (require.main === module) main();
