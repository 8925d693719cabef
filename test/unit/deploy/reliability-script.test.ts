// deploy/local/reliability.sh checks the flags before anything starts. It runs here from a copy next to a stand-in
// with-stack.sh that only records how it was called, so no test can start the stack, even when the check is broken.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../../deploy/gcloud/cli';
import { USAGE } from '../../../deploy/local/reliability/args';

describe('reliability harness: reliability.sh', function () {
  // Each case starts node with tsx once (about a second; more on a busy machine).
  this.timeout(30_000);
  let dir = '';

  before(() => {
    // The real path: the script names its own directory after `cd` and `pwd`.
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'offvia-reliability-sh-')));
    copyFileSync(
      path.join(REPO_ROOT, 'deploy/local/reliability.sh'),
      path.join(dir, 'reliability.sh'),
    );
    symlinkSync(path.join(REPO_ROOT, 'deploy/local/reliability'), path.join(dir, 'reliability'));
    writeFileSync(
      path.join(dir, 'with-stack.sh'),
      'echo "with-stack BQ=${OFFVIA_BQ_PERSISTENT:-} GATE=${OFFVIA_FIRESTORE_GATE:-} $*"\n',
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  function script(...args: string[]) {
    const r = spawnSync('bash', [path.join(dir, 'reliability.sh'), ...args], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  it('exits 2 on a bad flag with one line and the usage, before the stack', () => {
    for (const [args, line] of [
      [['--events', 'abc'], 'reliability: --events must be a positive integer, got "abc"'],
      [['--event', '300'], 'reliability: unknown flag --event'],
      [['--rate', '10', '--events'], 'reliability: --events needs a value'],
    ] as const) {
      const r = script(...args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stderr, `${line}\n\n${USAGE}\n`);
      assert.equal(r.stdout, '', 'with-stack.sh was run');
    }
  });

  it('prints the usage and exits 0 on --help, before the stack', () => {
    const r = script('--events', '5', '--help');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${USAGE}\n`);
    assert.equal(r.stderr, '');
  });

  it('runs the harness through with-stack.sh with the flags, the persistent BigQuery and the gate', () => {
    const r = script('--events=5', '--scenarios', 'redelivery');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      r.stdout,
      `with-stack BQ=1 GATE=1 node --import tsx ${dir}/reliability.ts --events=5 --scenarios redelivery\n`,
    );
  });
});
