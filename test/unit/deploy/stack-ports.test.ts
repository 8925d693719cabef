// The local stack's port rules (deploy/local/lib.sh): every port below the kernel's ephemeral range, the gated
// Firestore emulator's port chosen there too, and `up` refusing a configured port inside the range in one line.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Runs `script` in bash after sourcing lib.sh; resolves with its exit code and output. */
async function withLib(
  script: string,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('bash', ['-c', `source deploy/local/lib.sh; ${script}`], {
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('local stack ports', function () {
  this.timeout(20_000);

  it('accepts ports below 32768 and refuses 32768-60999 and non-ports, one line each', async () => {
    for (const port of ['1', '8080', '29000', '32767', '61000']) {
      assert.equal((await withLib(`offvia_port_problem fn ${port}`)).stdout, '', port);
    }
    for (const port of ['32768', '45000', '60999']) {
      const { stdout } = await withLib(`offvia_port_problem ingestBooking ${port}`);
      assert.equal(
        stdout,
        `port ${port} for ingestBooking is in the kernel's ephemeral range (32768-60999), where a stopped service may not get it back; choose one below 32768\n`,
      );
    }
    for (const port of ['0', '65536', 'x80', '']) {
      const { stdout } = await withLib(`offvia_port_problem fn '${port}'`);
      assert.equal(stdout, `port '${port}' for fn is not a port number\n`);
    }
  });

  it('picks the first free port from a start, skipping one in use, and none at or above 32768', async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // A listening port below the range to skip: find one the test can hold.
    server.close();
    const held = createServer();
    const start = 31_000 + Math.floor(Math.random() * 1_000);
    await new Promise<void>((resolve, reject) => {
      held.once('error', reject);
      held.listen(start, '127.0.0.1', resolve);
    });
    try {
      const { stdout, code } = await withLib(`offvia_free_port ${start}`);
      assert.equal(code, 0);
      const chosen = Number(stdout.trim());
      assert.ok(chosen > start && chosen < 32_768, `chose ${chosen}`);
      const none = await withLib('offvia_free_port 32768');
      assert.equal(none.code, 1);
      assert.equal(none.stdout, '');
    } finally {
      held.close();
    }
  });

  it('stack.sh up refuses a configured function port in the ephemeral range before starting anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'offvia-stack-ports-'));
    try {
      const { code, stderr } = await withLib('bash deploy/local/stack.sh up', {
        OFFVIA_STACK_DIR: dir,
        OFFVIA_INGEST_BOOKING_PORT: '40123',
      });
      assert.equal(code, 1);
      assert.match(
        stderr,
        /ERROR: port 40123 for ingestBooking is in the kernel's ephemeral range \(32768-60999\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
