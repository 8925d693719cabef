// The real gcloud CLI accepts the plan's commands: each distinct gcloud command group of the deploy and teardown
// plans (the call with the most flags of each) runs with an empty configuration and no account. gcloud parses
// every argument before it looks for credentials, so "You do not currently have an active account selected" means
// the command, its flags and their values were accepted; a wrong flag fails earlier ("unrecognized arguments",
// "argument --x: ..."). Nothing reaches Google Cloud. Skipped when gcloud is not installed, and unless
// OFFVIA_GCLOUD_CLI_CHECK=1: ~35 gcloud start-ups take 1–3 minutes on a small shared machine (docs/deploy.md).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT, readRepoFacts } from '../../../deploy/gcloud/cli';
import { buildDeployPlan, DEFAULT_TTL_COLLECTION_GROUPS } from '../../../deploy/gcloud/deploy-plan';
import { DEFAULT_RUNTIME } from '../../../deploy/gcloud/functions';
import type { DeployOptions } from '../../../deploy/gcloud/options';
import { commandsOf, type Command } from '../../../deploy/gcloud/steps';
import { buildTeardownPlan } from '../../../deploy/gcloud/teardown-plan';

const NO_ACCOUNT = /You do not currently have an active account selected/;
/** Parallel gcloud processes (each is a Python start-up: mostly waiting, ~1.5 s of CPU). */
const PARALLEL = 4;

/** Values for the variables capture and lookup steps set at run time. */
function fillVariables(arg: string): string {
  return arg.replace(/\$\{([A-Z0-9_]+)\}/g, (_m, name: string) => {
    if (name === 'PROJECT_NUMBER') return '123456789012';
    if (name.endsWith('_URL')) return 'https://offvia-fn-abc123-ew.a.run.app';
    if (name.endsWith('_TRIGGER')) return 'offvia-ingest-booking-123456';
    if (name.endsWith('_SUBSCRIPTION'))
      return 'projects/offvia-test/subscriptions/eventarc-europe-west1-x-sub-1';
    if (name.startsWith('POLICY_')) return 'projects/offvia-test/alertPolicies/123';
    if (name.endsWith('_STARTED_AT')) return '2026-12-01T21:00:00Z';
    if (name === 'MONITORING_DASHBOARD') return 'projects/123456789012/dashboards/abc-123';
    throw new Error(`no test value for \${${name}}`);
  });
}

/**
 * The command group (the command words before the first flag, without resource names) and the flags it is called
 * with: two calls of one group with different flags (the Bronze subscription's update and the function
 * subscription's) are both checked.
 */
function group(command: Command): string {
  const first = command.findIndex((a) => a.startsWith('--'));
  const words = command
    .slice(0, first === -1 ? command.length : first)
    .filter((w) => /^[a-z][a-z-]*$/.test(w) && !/^(offvia|booking)/.test(w));
  const flags = command.filter((a) => a.startsWith('--')).map((a) => a.replace(/=.*$/, ''));
  return `${words.join(' ')} ${[...new Set(flags)].sort().join(' ')}`;
}

function runGcloud(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('gcloud', args, {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

describe('the real gcloud CLI accepts the plan', function () {
  const hasGcloud = spawnSync('gcloud', ['--version'], { stdio: 'ignore' }).status === 0;
  let dir = '';

  before(function () {
    if (!hasGcloud || process.env.OFFVIA_GCLOUD_CLI_CHECK !== '1') this.skip();
    dir = mkdtempSync(path.join(tmpdir(), 'offvia-gcloud-cli-'));
  });
  after(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('parses one call of every gcloud command group and stops only for the missing account', async function () {
    const options: DeployOptions = {
      project: 'offvia-test',
      region: 'europe-west1',
      bqLocation: 'EU',
      firestoreLocation: 'eur3',
      firestoreDatabase: 'offvia',
      namePrefix: 'offvia-',
      notificationChannels: ['projects/offvia-test/notificationChannels/123'],
      publishers: ['serviceAccount:booking@offvia-test.iam.gserviceaccount.com'],
      quarantineRetentionDays: 90,
      topicRetention: '7d',
      envOverrides: {},
      ttlCollectionGroups: DEFAULT_TTL_COLLECTION_GROUPS,
      outDir: path.join(dir, 'generated'),
      runtime: DEFAULT_RUNTIME,
    };
    const facts = readRepoFacts(REPO_ROOT, options.project, options.bqLocation);
    const deploy = buildDeployPlan(options, facts);
    const teardown = buildTeardownPlan({ ...options, deleteData: true }, facts);
    // The optional flags' commands: a customer-managed key (its location must be the region's, so regional
    // datasets and database here) and the passenger_id key secret.
    const regional = { ...options, bqLocation: 'europe-west1', firestoreLocation: 'europe-west1' };
    const keyed = buildDeployPlan(
      {
        ...regional,
        kmsKey: 'projects/offvia-test/locations/europe-west1/keyRings/offvia/cryptoKeys/data',
        passengerIdHmacSecret: 'offvia-passenger-id-key:1',
      },
      readRepoFacts(REPO_ROOT, regional.project, regional.bqLocation),
    );
    for (const file of deploy.files) {
      mkdirSync(path.dirname(file.path), { recursive: true });
      writeFileSync(file.path, file.content);
    }
    const byGroup = new Map<string, Command>();
    for (const command of [...deploy.steps, ...teardown.steps, ...keyed.steps].flatMap(
      commandsOf,
    )) {
      if (command[0] !== 'gcloud') continue;
      const key = group(command);
      const seen = byGroup.get(key);
      if (seen === undefined || command.length > seen.length) byGroup.set(key, command);
    }
    assert.ok(byGroup.size >= 25, `only ${byGroup.size} command groups`);
    const env = {
      ...process.env,
      CLOUDSDK_CONFIG: path.join(dir, 'gcloud-config'),
      CLOUDSDK_CORE_DISABLE_PROMPTS: '1',
      CLOUDSDK_CORE_DISABLE_USAGE_REPORTING: '1',
      CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK: '1',
    };
    const queue = [...byGroup.values()];
    const refused: string[] = [];
    const worker = async (): Promise<void> => {
      for (let c = queue.shift(); c !== undefined; c = queue.shift()) {
        const args = c.slice(1).map(fillVariables);
        const { status, stderr } = await runGcloud(args, env);
        if (status === 0 || !NO_ACCOUNT.test(stderr)) {
          refused.push(
            `gcloud ${args.join(' ')}\n  → exit ${status}: ${stderr.trim().split('\n')[0]}`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    assert.deepEqual(refused, [], refused.join('\n'));
  });
});
