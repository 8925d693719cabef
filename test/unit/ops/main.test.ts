// The `offvia` process (bin/offvia.cjs): with Firestore unreachable, one line and exit 1, no stack trace from the
// client's background retry after the command closed it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

describe('offvia: the process', function () {
  this.timeout(120_000);
  let server: Server;

  // A BigQuery stand-in answering every query with no rows, so the command gets as far as Firestore.
  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            kind: 'bigquery#queryResponse',
            jobReference: { projectId: 'offvia-local', jobId: 'j' },
            jobComplete: true,
            schema: { fields: [{ name: 'n', type: 'INTEGER' }] },
            rows: [{ f: [{ v: '0' }] }],
            totalRows: '1',
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  after(() => server.close());

  it('status with the Firestore emulator down: one line, exit 1', async () => {
    const port = (server.address() as AddressInfo).port;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'offvia-no-firestore-'));
    writeFileSync(
      path.join(dir, 'env'),
      [
        `export BIGQUERY_EMULATOR_HOST=http://127.0.0.1:${port}/bigquery/v2`,
        // Port 1 on the loopback: nothing listens there.
        'export FIRESTORE_EMULATOR_HOST=127.0.0.1:1',
        'export OFFVIA_PROJECT_ID=offvia-local',
        'export METADATA_SERVER_DETECTION=none',
      ].join('\n'),
    );
    const bin = path.join(__dirname, '..', '..', '..', 'bin', 'offvia.cjs');
    const child = spawn(process.execPath, [bin, 'status', '--stack-dir', dir], {
      env: { ...process.env, OFFVIA_DEBUG: '' },
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(code, 1, err);
    assert.equal(err.trim().split('\n').length, 1, `one line: ${err}`);
    assert.match(err, /^offvia: cannot reach the Firestore emulator \(127\.0\.0\.1:1\)/);
  });
});
