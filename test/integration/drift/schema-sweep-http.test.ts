// schemaSweep through the Functions Framework's real HTTP server, against the emulators.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import '../../../functions';
import { requireStack } from '../../support/drift-stack';
import { closeServer, listenLocal, schedulerPost } from '../../support/fire-windows-http';

describe('integration: schemaSweep on the Functions Framework', function () {
  this.timeout(60_000);
  let server: Server;
  let base: string;

  before(async function () {
    requireStack();
    server = getTestServer('schemaSweep');
    base = await listenLocal(server);
  });
  after(() => closeServer(server));

  it('answers a POST with 200 and the JSON summary of every configured target table', async () => {
    const res = await schedulerPost(base);
    const body = (await res.json()) as {
      ok: boolean;
      mode: string;
      tables: { table: string; status: string }[];
    };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.ok, true);
    assert.equal(body.mode, 'apply');
    assert.deepEqual(
      body.tables.map((t) => t.table),
      [`${process.env.OFFVIA_PROJECT_ID ?? 'offvia-local'}.offvia_silver.fact_bookings`],
    );
    assert.ok(['swept', 'busy'].includes(body.tables[0]?.status ?? ''));
  });

  it('refuses other methods with 405', async () => {
    const res = await fetch(base, { method: 'GET' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
  });
});
