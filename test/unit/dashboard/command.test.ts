// `offvia dashboard` through the CLI: flags are checked before anything connects, a taken port is one line.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer, type Server } from 'node:net';
import sinon from 'sinon';
import { main } from '../../../shared/ops/cli';
import type { OpsContext } from '../../../shared/ops/context';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t) }, out, err };
}

describe('offvia dashboard (command line)', () => {
  for (const [flags, message] of [
    [['--port', '0'], /--port: expected an integer from 1 to 65535/],
    [['--port', 'http'], /--port/],
    [['--since', '5x'], /--since: expected a duration/],
    [['--refresh', '-1'], /--refresh/],
  ] as const) {
    it(`refuses ${flags.join(' ')} with exit 2, without connecting`, async () => {
      const { io, err } = capture();
      const connect = sinon.stub().throws(new Error('must not connect'));
      const code = await main(['dashboard', ...flags], { io, connect, now: () => 0, cwd: '.' });
      assert.equal(code, 2);
      assert.match(err.join('\n'), message);
      assert.equal(connect.callCount, 0);
    });
  }

  it('reports a port in use as one line with exit 1', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const address = blocker.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const { io, err } = capture();
    const ctx = { close: () => Promise.resolve() } as unknown as OpsContext;
    try {
      const code = await main(['dashboard', '--port', String(port)], {
        io,
        connect: () => ctx,
        now: () => 0,
        cwd: '.',
      });
      assert.equal(code, 1);
      assert.deepEqual(err, [
        `offvia: port ${port} on 127.0.0.1 is in use: pick another with --port`,
      ]);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('--check (hidden) checks the flags and binds the port, without connecting', async () => {
    const { io, err } = capture();
    const connect = sinon.stub().throws(new Error('must not connect'));
    const probe: Server = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const address = probe.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    await new Promise((resolve) => probe.close(resolve));
    const free = await main(['dashboard', '--check', '--port', String(port)], {
      io,
      connect,
      now: () => 0,
      cwd: '.',
    });
    assert.equal(free, 0);
    assert.deepEqual(err, []);
    assert.equal(connect.callCount, 0);
  });

  it('npm run dashboard with no stack refuses a bad flag in one line, before starting a stack', function () {
    this.timeout(30_000);
    const root = path.resolve(__dirname, '..', '..', '..');
    const stackDir = mkdtempSync(path.join(tmpdir(), 'offvia-dashboard-sh-'));
    try {
      const run = spawnSync(
        'bash',
        [path.join(root, 'deploy/local/dashboard.sh'), '--port', 'abc'],
        {
          env: { ...process.env, OFFVIA_STACK_DIR: stackDir },
          encoding: 'utf8',
          timeout: 20_000,
        },
      );
      assert.equal(run.status, 2, run.stderr);
      assert.deepEqual(run.stderr.trim().split('\n'), [
        'offvia: --port: expected an integer from 1 to 65535, got "abc"',
      ]);
    } finally {
      rmSync(stackDir, { recursive: true, force: true });
    }
  });
});
