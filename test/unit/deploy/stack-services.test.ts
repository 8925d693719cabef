// stack.sh's bookkeeping of recorded services, against a state directory of stand-in processes (`sleep` in its own
// session, as stack.sh starts every service): `down` and `status` must work whichever services were stopped one at a
// time before, including the last one in start order. No emulator is started.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Runs stack.sh with the given state directory; resolves with its exit code, stdout and stderr. */
async function stackSh(
  dir: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('bash', ['deploy/local/stack.sh', ...args], {
      env: { ...process.env, OFFVIA_STACK_DIR: dir, OFFVIA_STOP_TIMEOUT_S: '5' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** True while the pid is a live, non-zombie process. */
async function alive(pid: number): Promise<boolean> {
  try {
    const { stdout } = await run('ps', ['-o', 'stat=', '-p', String(pid)]);
    return stdout.trim() !== '' && !stdout.trim().startsWith('Z');
  } catch {
    return false; // ps exits 1 when the pid does not exist
  }
}

describe('stack.sh: recorded services', function () {
  this.timeout(30_000);
  let dir: string;
  const children: ChildProcess[] = [];

  /**
   * Records a running stand-in for the service NAME the way stack.sh's start_service does: its name in the start
   * order file, its pid and start time (as `ps -o lstart=` prints it) in pids/NAME.pid.
   */
  async function recordRunning(name: string): Promise<number> {
    // detached: the child calls setsid(), so it leads its own session like a service stack.sh started.
    const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    children.push(child);
    const pid = child.pid;
    assert.ok(pid, `could not start a stand-in for ${name}`);
    const { stdout } = await run('ps', ['-o', 'lstart=', '-p', String(pid)]);
    writeFileSync(join(dir, 'pids', `${name}.pid`), `${pid}\n${stdout.trim()}\n`);
    return pid;
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'offvia-stack-services-'));
    mkdirSync(join(dir, 'pids'));
    mkdirSync(join(dir, 'logs'));
  });
  afterEach(() => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  // `stack.sh stop scheduler` removes pids/scheduler.pid but keeps the name in the start order, so a restart appends
  // to its log; the scheduler is last in start order.
  for (const stopped of ['scheduler', 'pubsub-emulator']) {
    it(`down stops every running service after ${stopped} alone was stopped`, async () => {
      const order = ['pubsub-emulator', 'bigquery-emulator', 'scheduler'];
      writeFileSync(join(dir, 'services'), order.map((name) => `${name}\n`).join(''));
      writeFileSync(join(dir, 'env'), '# stand-in for the stack environment\n');
      const pids: number[] = [];
      for (const name of order.filter((name) => name !== stopped)) {
        pids.push(await recordRunning(name));
      }

      const status = await stackSh(dir, ['status']);
      assert.equal(status.code, 1, `status of a partly stopped stack: ${status.stderr}`);
      assert.match(status.stdout, /^stack: partial/);
      assert.match(status.stdout, new RegExp(`${stopped} +NOT RUNNING \\(stopped\\)`));
      for (const name of order.filter((name) => name !== stopped)) {
        assert.match(status.stdout, new RegExp(`${name} +running \\(pid`));
      }

      const down = await stackSh(dir, ['down']);
      assert.equal(down.code, 0, `down exited ${down.code}: ${down.stderr}`);
      assert.match(down.stderr, /stack down in \d+ ms/);
      for (const pid of pids) assert.equal(await alive(pid), false, `pid ${pid} survived down`);
      assert.equal(existsSync(join(dir, 'services')), false, 'the start order file was kept');

      const after = await stackSh(dir, ['status']);
      assert.equal(after.code, 3, `status after down: ${after.stdout}`);
      assert.match(after.stdout, /^stack: down/);
    });
  }
});
