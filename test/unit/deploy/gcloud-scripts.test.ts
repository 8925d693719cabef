// deploy.sh and teardown.sh end to end with `gcloud` and `bq` replaced by recorders on PATH: the dry run prints
// the plan and calls nothing; teardown asks before deleting; a real run checks the account first.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseCli, planFor, REPO_ROOT } from '../../../deploy/gcloud/cli';
import { renderPlan } from '../../../deploy/gcloud/steps';

describe('deploy.sh and teardown.sh', function () {
  this.timeout(60_000);
  let dir: string;
  let calls: string;
  let env: NodeJS.ProcessEnv;

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'offvia-deploy-scripts-'));
    calls = path.join(dir, 'calls.log');
    for (const tool of ['gcloud', 'bq']) {
      const fake = path.join(dir, tool);
      // Records the call and answers nothing: an "active account" lookup finds none.
      writeFileSync(fake, `#!/usr/bin/env bash\necho "${tool} $*" >> "${calls}"\nexit 0\n`);
      chmodSync(fake, 0o755);
    }
    env = { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` };
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs a script of deploy/gcloud with `args`, space-separated. */
  const script = (name: string, args: string, input = '') =>
    spawnSync('bash', [path.join(REPO_ROOT, 'deploy', 'gcloud', name), ...args.split(' ')], {
      cwd: dir,
      env,
      input,
      encoding: 'utf8',
    });
  const recorded = (): string => (existsSync(calls) ? readFileSync(calls, 'utf8') : '');

  it('deploy.sh --dry-run prints the plan, writes its JSON files, and calls neither gcloud nor bq', () => {
    const outDir = path.join(dir, 'gen');
    const args = `--project offvia-test --region us-central1 --dry-run --out-dir=${outDir}`;
    const first = script('deploy.sh', args);
    assert.equal(first.status, 0, first.stderr);
    const expected = planFor(parseCli(['deploy', ...args.split(' ')]));
    assert.equal(first.stdout, renderPlan(expected.header, expected.steps));
    assert.ok(
      existsSync(path.join(outDir, 'policies', 'quarantine-rate.json')),
      "existsSync(path.join(outDir, 'policies', 'quarantine-rate.json'))",
    );
    const second = script('deploy.sh', args);
    assert.equal(second.stdout, first.stdout, 'a second plan is the same');
    assert.equal(recorded(), '');
  });

  it('teardown.sh --dry-run prints the teardown plan and calls nothing', () => {
    const result = script(
      'teardown.sh',
      '--project=offvia-test --region=us-central1 --all --dry-run',
    );
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /TEARDOWN plan for project offvia-test/);
    assert.match(result.stdout, /gcloud functions delete offvia-ingest-booking/);
    assert.equal(recorded(), '');
  });

  it('teardown.sh refuses without --yes when it cannot ask', () => {
    const result = script('teardown.sh', '--project offvia-test --region us-central1 --all');
    assert.equal(result.status, 1);
    assert.match(result.stderr, /pass --yes to confirm/);
    assert.equal(recorded(), '');
  });

  it('teardown.sh with --project given twice stops before asking, so the project confirmed is the project deleted', () => {
    // The prompt reads the first --project; the plan would have been rendered for the last one.
    const result = spawnSync(
      'script',
      [
        '-qec',
        `bash ${path.join(REPO_ROOT, 'deploy', 'gcloud', 'teardown.sh')} --project offvia-aaaa --region us-central1 --project offvia-bbbb --delete-data`,
        '/dev/null',
      ],
      { cwd: dir, env, input: 'offvia-aaaa\n', encoding: 'utf8' },
    );
    assert.equal(result.status, 2, result.stdout);
    assert.match(result.stdout, /--project is given twice/);
    assert.doesNotMatch(result.stdout, /Type the project id/);
    assert.equal(recorded(), '');
  });

  it('rejects bad flags before anything runs', () => {
    const result = script(
      'deploy.sh',
      '--project offvia-test --region us-central1 --name-prefix BAD',
    );
    assert.equal(result.status, 2);
    assert.match(result.stderr, /--name-prefix/);
    const missing = script('deploy.sh', '--region us-central1 --dry-run');
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /--project and --region are required/);
    assert.equal(recorded(), '');
  });

  it('a real run checks for an active gcloud account before the first step', () => {
    const gen = path.join(dir, 'gen2');
    const result = script(
      'deploy.sh',
      `--project offvia-test --region us-central1 --out-dir=${gen}`,
    );
    assert.equal(result.status, 1);
    assert.match(result.stderr, /no active gcloud account/);
    assert.equal(recorded(), 'gcloud auth list --filter=status:ACTIVE --format=value(account)\n');
  });
});
