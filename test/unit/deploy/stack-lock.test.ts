// stack.sh's lock on its state directory: `up` refuses at once while another command holds it; `down` and the fault
// commands wait for the holder (bounded by OFFVIA_STACK_LOCK_WAIT_S), so a `down` right after an interrupted
// `start` still runs. The holder is a real `flock` process; no emulator is started (the state directory is empty).
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Runs stack.sh with the given state directory; resolves with its exit code, stderr and duration (ms). */
async function stackSh(
  dir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stderr: string; ms: number }> {
  const started = Date.now();
  try {
    const { stderr } = await run('bash', ['deploy/local/stack.sh', ...args], {
      env: { ...process.env, OFFVIA_STACK_DIR: dir, ...env },
    });
    return { code: 0, stderr, ms: Date.now() - started };
  } catch (error) {
    const e = error as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '', ms: Date.now() - started };
  }
}

/** Holds `dir/.lock` for `ms` in a `flock` child; resolves once the lock is taken. */
async function holdLock(dir: string, ms: number): Promise<ChildProcess> {
  const holder = spawn('flock', [join(dir, '.lock'), 'sh', '-c', `echo held; sleep ${ms / 1000}`]);
  await new Promise<void>((resolve, reject) => {
    holder.stdout?.once('data', () => resolve());
    holder.once('error', reject);
  });
  return holder;
}

describe('stack.sh: the state directory lock', function () {
  this.timeout(30_000);
  let dir: string;
  let holder: ChildProcess | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'offvia-stack-lock-'));
  });
  afterEach(() => {
    holder?.kill();
    holder = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('down waits for the command holding the lock, then runs', async () => {
    holder = await holdLock(dir, 2_000);
    const result = await stackSh(dir, ['down']);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /stack\.sh down: waiting up to 120 s/);
    assert.match(result.stderr, /nothing to stop/);
    assert.ok(result.ms >= 1_500, `down returned after ${result.ms} ms, before the holder let go`);
  });

  it('up refuses at once while another command holds the lock', async () => {
    holder = await holdLock(dir, 5_000);
    const result = await stackSh(dir, ['up']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /another stack\.sh command is running/);
    assert.ok(result.ms < 4_000, `up took ${result.ms} ms: it waited`);
  });

  it('a fault command gives up after OFFVIA_STACK_LOCK_WAIT_S with a clear error', async () => {
    holder = await holdLock(dir, 5_000);
    const result = await stackSh(dir, ['start', 'fn-ingestBooking'], {
      OFFVIA_STACK_LOCK_WAIT_S: '1',
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /still holds .*\.lock after 1 s/);
  });

  it('refuses a wait that is not a whole number of seconds', async () => {
    const result = await stackSh(dir, ['down'], { OFFVIA_STACK_LOCK_WAIT_S: 'soon' });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /OFFVIA_STACK_LOCK_WAIT_S must be a whole number of seconds, got soon/,
    );
  });
});
