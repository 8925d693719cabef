// The runtime we deploy is the runtime we test: under the local stack (with-stack.sh), the test process and the
// functions the stack serves run on the Node.js major of the deployed Cloud Functions runtime.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../../deploy/gcloud/cli';
import { DEFAULT_RUNTIME } from '../../../deploy/gcloud/functions';

/** `nodejs22` → 22. */
const deployedMajor = Number(/^nodejs(\d+)$/.exec(DEFAULT_RUNTIME)?.[1]);
const majorOf = (version: string): number => Number(/^v(\d+)\./.exec(version)?.[1]);

describe('the local runtime matches the deployed runtime', () => {
  before(function () {
    // Only meaningful under the stack; a bare `mocha` on the machine's Node is not what CI runs.
    if (!process.env.FIRESTORE_EMULATOR_HOST) this.skip();
  });

  it(`runs the tests on Node.js ${deployedMajor} (${DEFAULT_RUNTIME})`, () => {
    assert.equal(Number.isInteger(deployedMajor), true, DEFAULT_RUNTIME);
    assert.equal(majorOf(process.version), deployedMajor, `tests run on ${process.version}`);
  });

  it(`serves every function of the stack on Node.js ${deployedMajor}`, () => {
    const stackDir = process.env.OFFVIA_STACK_DIR ?? path.join(REPO_ROOT, '.local', 'stack');
    const services = readFileSync(path.join(stackDir, 'services'), 'utf8')
      .split('\n')
      .filter((s) => s.startsWith('fn-'));
    assert.ok(services.length >= 3, services.join(', '));
    for (const service of services) {
      // The recorded pid is the session leader, which is the node process itself (setsid does not fork).
      const pid = readFileSync(path.join(stackDir, 'pids', `${service}.pid`), 'utf8').split(
        '\n',
      )[0];
      const exe = readlinkSync(`/proc/${pid}/exe`);
      const version = execFileSync(exe, ['--version'], { encoding: 'utf8' }).trim();
      assert.equal(majorOf(version), deployedMajor, `${service} runs ${exe} ${version}`);
    }
  });
});
