// The plan renderer (deploy/gcloud/steps.ts): arguments reach the program exactly as planned, probes choose the
// right branch, and the rendered deploy plan passes shellcheck. Runs bash with printf, never gcloud.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, readRepoFacts } from '../../../deploy/gcloud/cli';
import { buildDeployPlan } from '../../../deploy/gcloud/deploy-plan';
import { GOLDEN_SCENARIOS, OPTIONS, scenarioPlan } from '../../support/deploy-plans';
import { buildTeardownPlan } from '../../../deploy/gcloud/teardown-plan';
import { renderPlan, type Step } from '../../../deploy/gcloud/steps';

function runBash(script: string): { stdout: string; stderr: string; status: number | null } {
  const result = spawnSync('bash', ['-s'], { input: script, encoding: 'utf8' });
  return { stdout: result.stdout, stderr: result.stderr, status: result.status };
}

const hasShellcheck = spawnSync('shellcheck', ['--version']).status === 0;

/** Skips a shellcheck test when shellcheck is missing, except in CI (CI=true), where that is a failure. */
function needShellcheck(ctx: Mocha.Context): void {
  if (hasShellcheck) return;
  if (process.env.CI === 'true')
    assert.fail('shellcheck is not installed, and CI=true: install it');
  ctx.skip();
}

/** The hand-written scripts: the deploy and teardown entry points and the local stack. */
const SCRIPTS = [
  'deploy/gcloud/deploy.sh',
  'deploy/gcloud/teardown.sh',
  'deploy/gcloud/lib.sh',
  ...readdirSync(path.join(REPO_ROOT, 'deploy', 'local'))
    .filter((n) => n.endsWith('.sh'))
    .sort()
    .map((n) => `deploy/local/${n}`),
];

describe('gcloud plan rendering', () => {
  it('passes every argument through bash unchanged: quotes, $, backticks, newlines, variables', () => {
    const tricky = [
      "it's",
      'a "quoted" word',
      '$HOME and `date` and \\n',
      '--flag=va lue',
      '--message-body={}',
      '* * * * *',
      'line one\nline two',
      'ends with a newline\n',
      '',
    ];
    const steps: Step[] = [
      { kind: 'capture', title: 'a value', variable: 'VALUE', command: ['printf', '%s', 'x y$z'] },
      {
        kind: 'run',
        title: 'print',
        command: ['printf', '[%s]\\n', ...tricky, 'pre-${VALUE}-post', '"${VALUE}"'],
      },
    ];
    const result = runBash(renderPlan([], steps));
    assert.equal(result.status, 0, result.stderr);
    const expected = [...tricky, 'pre-x y$z-post', '"x y$z"'].map((a) => `[${a}]`).join('\n');
    assert.equal(result.stdout, `${expected}\n`);
  });

  it('runs absent/present branches by the probe: exit status, exact line, lookup', () => {
    const steps: Step[] = [
      {
        kind: 'ensure',
        title: 's1',
        probe: { kind: 'status', command: ['true'] },
        absent: ['echo', 'no1'],
        present: ['echo', 'yes1'],
      },
      {
        kind: 'ensure',
        title: 's2',
        probe: { kind: 'status', command: ['false'] },
        absent: ['echo', 'no2'],
      },
      {
        kind: 'ensure',
        title: 's3',
        probe: { kind: 'line', command: ['printf', 'a\\nabc\\n'], line: 'ab' },
        absent: ['echo', 'no3'],
      },
      {
        kind: 'ensure',
        title: 's4',
        probe: { kind: 'line', command: ['printf', 'a\\nab\\n'], line: 'ab' },
        absent: ['echo', 'no4'],
        present: ['echo', 'yes4'],
      },
      {
        kind: 'ensure',
        title: 's5',
        probe: { kind: 'lookup', variable: 'ID', command: ['printf', 'id-7'] },
        present: ['echo', 'update', '${ID}'],
      },
      {
        kind: 'ensure',
        title: 's6',
        probe: { kind: 'lookup', variable: 'NONE', command: ['printf', ''] },
        absent: ['echo', 'create6'],
      },
    ];
    const result = runBash(renderPlan([], steps));
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout, 'yes1\nno2\nno3\nyes4\nupdate id-7\ncreate6\n');
    assert.match(result.stderr, /==> \[1\/6\] s1/);
  });

  it('stops the plan when a capture is empty or a command fails', () => {
    const empty = runBash(
      renderPlan(
        [],
        [
          { kind: 'capture', title: 'nothing', variable: 'X', command: ['printf', ''] },
          { kind: 'run', title: 'after', command: ['echo', 'reached'] },
        ],
      ),
    );
    assert.notEqual(empty.status, 0);
    assert.match(empty.stderr, /nothing: empty result/);
    assert.doesNotMatch(empty.stdout, /reached/);
    const failing = runBash(
      renderPlan(
        [],
        [
          { kind: 'run', title: 'fails', command: ['false'] },
          { kind: 'run', title: 'after', command: ['echo', 'reached'] },
        ],
      ),
    );
    assert.notEqual(failing.status, 0);
    assert.doesNotMatch(failing.stdout, /reached/);
  });

  it('refuses a variable no earlier step sets', () => {
    assert.throws(
      () => renderPlan([], [{ kind: 'run', title: 'x', command: ['echo', '${NOT_SET}'] }]),
      /uses \$\{NOT_SET\} before it is set/,
    );
  });

  it('deploy.sh, teardown.sh, lib.sh and every deploy/local script pass shellcheck', function () {
    needShellcheck(this);
    assert.ok(SCRIPTS.length >= 8, SCRIPTS.join(' '));
    // -x follows `source`, resolved from each script's directory (their source-path directives).
    const result = spawnSync('shellcheck', ['-x', '-P', 'SCRIPTDIR', ...SCRIPTS], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    assert.equal(result.status, 0, result.stdout + result.stderr);
  });

  it('renders deploy and teardown plans that pass shellcheck', function () {
    needShellcheck(this);
    // Twelve plans of ~150–300 steps each through shellcheck: about 10 s on an idle machine, more under load.
    this.timeout(60_000);
    // Every pinned dry run (deploy and teardown, each pipeline and all), then one with other locations.
    const options = {
      ...OPTIONS,
      region: 'us-central1',
      bqLocation: 'US',
      firestoreLocation: 'nam5',
      ttlCollectionGroups: ['eventLedger'],
    };
    const facts = readRepoFacts(REPO_ROOT, options.project, options.bqLocation);
    for (const plan of [
      ...GOLDEN_SCENARIOS.map(scenarioPlan),
      buildDeployPlan(options, facts),
      buildTeardownPlan({ ...options, deleteData: true }, facts),
    ]) {
      const result = spawnSync('shellcheck', ['-s', 'bash', '-'], {
        input: renderPlan(plan.header, plan.steps),
        encoding: 'utf8',
      });
      assert.equal(result.status, 0, result.stdout);
    }
  });
});
