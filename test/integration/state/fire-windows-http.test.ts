// fireWindows through the Functions Framework's real HTTP server, on the stack's emulators: POST runs a sweep and
// answers its JSON summary; other methods are refused.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import '../../../functions';

describe('integration: fireWindows on the Functions Framework', function () {
  this.timeout(60_000);
  let server: Server;
  let base: string;

  before(async function () {
    if (!process.env.FIRESTORE_EMULATOR_HOST || !process.env.BIGQUERY_EMULATOR_HOST) {
      throw new Error('run through `npm test`: the local stack is not up');
    }
    server = getTestServer('fireWindows');
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers a Cloud Scheduler POST with the run summary', async () => {
    const res = await fetch(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-cloudscheduler': 'true' },
      body: '{}',
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as Record<string, unknown>;
    // The stack's own scheduler may hold the lease this minute: then the run is `busy`, which is fine.
    assert.ok(['done', 'busy'].includes(String(body.status)), JSON.stringify(body));
    assert.equal(body.pipeline, 'booking_routes_1m');
  });

  it('refuses GET with 405', async () => {
    const res = await fetch(base);
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
  });
});
