// stack.sh's fault injection (kill|stop|start SERVICE), used by the reliability harness: a killed function is down
// until started again, and the Firestore emulator keeps its documents across a stop and a start.
// Runs inside deploy/local/with-stack.sh, which exports the stack's environment.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { readFirestoreDatabase } from '../../../shared/config/ingest-config';
import { loadWindowConfig } from '../../../shared/config/window-config';
import { firestoreClient } from '../../../shared/drift/runtime';
import { projectIdFromEnv } from '../../../deploy/local/resources';

const run = promisify(execFile);

function stack(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run('bash', ['deploy/local/stack.sh', ...args], { env: process.env });
}

/** HTTP status of a POST to the URL, or the connection error's code. */
async function probe(url: string): Promise<string> {
  try {
    const response = await fetch(url, { method: 'PUT', signal: AbortSignal.timeout(5_000) });
    await response.arrayBuffer();
    return String(response.status);
  } catch (error) {
    const code = (error as { cause?: { code?: unknown } }).cause?.code;
    return typeof code === 'string' ? code : String(error);
  }
}

/** POSTs to fireWindows until a run is not `busy` (another run holds the lease); false if none was by `withinMs`. */
async function fireWindowsFreeWithin(url: string, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (res.status === 200 && (JSON.parse(text) as { status?: string }).status !== 'busy')
      return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

describe('local stack: fault injection (stack.sh kill|stop|start)', function () {
  this.timeout(180_000);

  before(function () {
    for (const name of ['FIRESTORE_EMULATOR_HOST', 'OFFVIA_FIRE_WINDOWS_URL']) {
      assert.ok(
        process.env[name],
        `${name} is not set: run inside bash deploy/local/with-stack.sh`,
      );
    }
  });

  it('kill SIGKILLs a function: it refuses connections until start brings it back', async function () {
    this.timeout(300_000); // a lease left by the killed run takes up to 2 minutes to lapse (below)
    const url = String(process.env.OFFVIA_FIRE_WINDOWS_URL);
    assert.equal(await probe(url), '405'); // fireWindows answers 405 to anything but POST
    const killed = await stack('kill', 'fn-fireWindows');
    assert.match(killed.stderr, /killed fn-fireWindows \(SIGKILL/);
    assert.equal(await probe(url), 'ECONNREFUSED');
    await assert.rejects(stack('status'), (err: { stdout?: string }) =>
      /fn-fireWindows +NOT RUNNING/.test(err.stdout ?? ''),
    );
    await stack('start', 'fn-fireWindows');
    assert.equal(await probe(url), '405');
    await stack('status'); // exit 0: every service up again
    // The kill can cut short a run in progress (the stack's scheduler calls fireWindows every minute): that run's
    // fireWindows lease stays taken until it expires (OFFVIA_FIRE_WINDOWS_LEASE_MS, 2 minutes), and until then every
    // run answers `busy` and fires nothing, as after a crash in the cloud. Later tests on this stack (the windows
    // e2e) need fireWindows to fire: leave it free, waiting for such a lease to lapse.
    assert.equal(
      await fireWindowsFreeWithin(url, loadWindowConfig(process.env).fireLeaseMs + 15_000),
      true,
    );
  });

  it('refuses unknown services and starting a running one', async () => {
    await assert.rejects(stack('kill', 'no-such-service'), /unknown service 'no-such-service'/);
    await assert.rejects(stack('start', 'fn-fireWindows'), /already running/);
  });

  it('stop and start of the Firestore emulator keep its documents', async () => {
    const firestore = firestoreClient(projectIdFromEnv(), readFirestoreDatabase(process.env));
    const ref = firestore.collection('faultInjectionTest').doc(randomUUID());
    await ref.set({ written: 'before the stop' });
    await firestore.terminate();
    let stopped: { stderr: string } | undefined;
    let down: string | undefined;
    try {
      stopped = await stack('stop', 'firestore-emulator');
      // The port is free once the emulator's JVM is gone: poll (a loaded machine takes a moment).
      const host = String(process.env.FIRESTORE_EMULATOR_HOST);
      for (let i = 0; i < 40 && down !== 'ECONNREFUSED'; i++) {
        down = await probe(`http://${host}/`);
        if (down !== 'ECONNREFUSED') await new Promise((r) => setTimeout(r, 250));
      }
    } finally {
      // Whatever failed above, the emulator is started again: later tests need it.
      await stack('start', 'firestore-emulator').catch(() =>
        stack('restart', 'firestore-emulator'),
      );
    }
    assert.match(stopped.stderr, /exported Firestore to .*overall_export_metadata/);
    assert.equal(down, 'ECONNREFUSED');
    const again = firestoreClient(projectIdFromEnv(), readFirestoreDatabase(process.env));
    try {
      const snap = await again.doc(ref.path).get();
      assert.equal(snap.get('written'), 'before the stop');
    } finally {
      await again.terminate();
    }
  });
});
