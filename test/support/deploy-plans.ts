// The deploy and teardown plans as the unit tests build them in process: the options deploy.sh would parse for the
// test project, the repository's facts (with a fixed source digest where a test compares plans across commits),
// the dry-run scenarios whose step lists are kept as golden files (test/unit/deploy/golden/), and a fake gcloud
// to run rendered steps against.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseCli, planFor, REPO_ROOT, readRepoFacts } from '../../deploy/gcloud/cli';
import { DEFAULT_TTL_COLLECTION_GROUPS } from '../../deploy/gcloud/deploy-plan';
import { DEFAULT_RUNTIME } from '../../deploy/gcloud/functions';
import type { MonitoringTargets } from '../../deploy/gcloud/monitoring';
import type { DeployOptions, Plan, RepoFacts } from '../../deploy/gcloud/options';

/** The test project. */
export const P = 'offvia-test';

/** The options of `deploy.sh --project offvia-test --region europe-west1 --bq-location EU …` for the unit tests. */
export const OPTIONS: DeployOptions = {
  project: P,
  region: 'europe-west1',
  bqLocation: 'EU',
  firestoreLocation: 'eur3',
  firestoreDatabase: 'offvia',
  namePrefix: 'offvia-',
  notificationChannels: [],
  publishers: [],
  quarantineRetentionDays: 90,
  topicRetention: '7d',
  envOverrides: {},
  ttlCollectionGroups: DEFAULT_TTL_COLLECTION_GROUPS,
  outDir: 'deploy/gcloud/generated/test',
  runtime: DEFAULT_RUNTIME,
};

/** Monitoring targets of one ingest function, for tests of single metrics and policies. */
export const MONITORING_TARGETS: MonitoringTargets = {
  prefix: 'offvia-',
  region: 'europe-west1',
  services: ['ingestbooking'],
  ingestService: 'ingestbooking',
  schedulerJobs: [],
  bronzeSubscription: 'b',
  deadLetterHoldSubscription: 'd',
  bronzeDeadLetterHoldSubscription: 'bd',
  notificationChannels: [],
};

/** The repository's facts for the test project. */
export function repoFacts(project: string = P, bqLocation: string = OPTIONS.bqLocation): RepoFacts {
  return readRepoFacts(REPO_ROOT, project, bqLocation);
}

/** A source digest that does not change with the repository: plans compared across commits use it. */
export const FIXED_SOURCE_DIGEST = '0'.repeat(64);

/** A dry run kept as a golden file: the argument vector of `deploy.sh` or `teardown.sh` after the command. */
export interface GoldenScenario {
  /** File name under test/unit/deploy/golden/, without `.json`. */
  readonly name: string;
  /** `deploy` or `teardown`, then the flags. */
  readonly argv: readonly string[];
}

const WHERE = ['--project', 'offvia-golden', '--region', 'europe-west1'];

/** The dry runs whose step lists are pinned. */
export const GOLDEN_SCENARIOS: readonly GoldenScenario[] = [
  { name: 'deploy-all', argv: ['deploy', ...WHERE] },
  { name: 'deploy-booking', argv: ['deploy', ...WHERE, '--pipeline', 'booking'] },
  { name: 'deploy-telemetry', argv: ['deploy', ...WHERE, '--pipeline', 'telemetry'] },
  {
    name: 'deploy-all-kms-publisher-hmac',
    argv: [
      'deploy',
      ...WHERE,
      '--kms-key',
      'projects/offvia-golden/locations/europe-west1/keyRings/offvia/cryptoKeys/data',
      '--publisher',
      'serviceAccount:booking@other.iam.gserviceaccount.com',
      '--passenger-id-hmac-secret',
      'offvia-passenger-id-key:3',
      '--notification-channel',
      'projects/offvia-golden/notificationChannels/123',
    ],
  },
  { name: 'teardown-all', argv: ['teardown', ...WHERE, '--all'] },
  { name: 'teardown-booking', argv: ['teardown', ...WHERE, '--pipeline', 'booking'] },
  { name: 'teardown-telemetry', argv: ['teardown', ...WHERE, '--pipeline', 'telemetry'] },
  {
    name: 'teardown-all-delete-data',
    argv: ['teardown', ...WHERE, '--all', '--delete-data'],
  },
  {
    name: 'teardown-booking-delete-data',
    argv: ['teardown', ...WHERE, '--pipeline', 'booking', '--delete-data'],
  },
  {
    name: 'teardown-telemetry-delete-data',
    argv: ['teardown', ...WHERE, '--pipeline', 'telemetry', '--delete-data'],
  },
];

/** The plan of a scenario, as the dry run prints it, with FIXED_SOURCE_DIGEST in the deploy labels. */
export function scenarioPlan(scenario: GoldenScenario): Plan {
  return planFor(parseCli(scenario.argv), REPO_ROOT, { sourceDigest: FIXED_SOURCE_DIGEST });
}

/**
 * The plan deploy.sh / teardown.sh would render for `--project offvia-test --region europe-west1` and `flags`; a
 * deploy covers booking alone (`--pipeline booking`), whose exact resources these tests assert.
 */
export function renderCli(
  command: 'deploy' | 'teardown',
  ...flags: string[]
): { plan: Plan; options: DeployOptions } {
  const base = ['--project', P, '--region', OPTIONS.region];
  const args = parseCli([
    command,
    ...base,
    ...(command === 'deploy' ? ['--pipeline', 'booking'] : []),
    ...flags,
  ]);
  return { plan: planFor(args), options: args.options };
}

/** The body of a fake `gcloud` that prints `$DESCRIBED` whatever it is asked: a describe probe's answer. */
export const PRINT_DESCRIBED = 'printf "%s\\n" "$DESCRIBED"';

/**
 * Runs `use` with a fake `gcloud` (a bash script whose body is `body`) in a fresh folder; `run(script, env)` runs a
 * rendered plan `script` in bash with that folder first on PATH and `env` added to the environment. The folder
 * (also passed as `dir`, e.g. for a call log) is removed when `use` returns or throws.
 */
export function withFakeGcloud<T>(
  body: string,
  use: (
    run: (script: string, env?: NodeJS.ProcessEnv) => SpawnSyncReturns<string>,
    dir: string,
  ) => T,
): T {
  const bin = mkdtempSync(path.join(tmpdir(), 'offvia-fake-gcloud-'));
  try {
    writeFileSync(path.join(bin, 'gcloud'), `#!/usr/bin/env bash\n${body}\n`, { mode: 0o755 });
    const run = (script: string, env: NodeJS.ProcessEnv = {}) =>
      spawnSync('bash', ['-c', script], {
        encoding: 'utf8',
        env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, ...env },
      });
    return use(run, bin);
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
}
