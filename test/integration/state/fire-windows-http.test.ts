// fireWindows through the Functions Framework's real HTTP server, on the stack's emulators: POST runs a sweep and
// answers booking's JSON summary (one per aggregation: booking has one) (a Cloud Scheduler call loops for the timer budget, any other call is one pass); other
// methods are refused.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import '../../../functions';
import { closeServer, listenLocal, schedulerPost } from '../../support/fire-windows-http';

/** The run summary of booking's route aggregation in the answer `{ pipeline: 'booking', status, aggregations }`. */
async function routeSummary(res: Response): Promise<Record<string, unknown>> {
  const answer = (await res.json()) as {
    pipeline: string;
    status: string;
    aggregations: Record<string, Record<string, unknown>>;
  };
  assert.equal(answer.pipeline, 'booking');
  const summary = answer.aggregations.booking_routes_1m;
  assert.ok(summary, JSON.stringify(answer));
  assert.equal(answer.status, summary.status === 'busy' ? 'busy' : 'ok', JSON.stringify(answer));
  return summary;
}

describe('integration: fireWindows on the Functions Framework', function () {
  this.timeout(60_000);
  let server: Server;
  let base: string;
  const loopBefore = process.env.OFFVIA_FIRE_WINDOWS_LOOP_MS;

  before(async function () {
    if (!process.env.FIRESTORE_EMULATOR_HOST || !process.env.BIGQUERY_EMULATOR_HOST) {
      throw new Error('run through `npm test`: the local stack is not up');
    }
    // A 3 s timer loop instead of 58 s: read once, at the first call.
    process.env.OFFVIA_FIRE_WINDOWS_LOOP_MS = '3000';
    server = getTestServer('fireWindows');
    base = await listenLocal(server);
  });
  after(() => {
    if (loopBefore === undefined) delete process.env.OFFVIA_FIRE_WINDOWS_LOOP_MS;
    else process.env.OFFVIA_FIRE_WINDOWS_LOOP_MS = loopBefore;
    return closeServer(server);
  });

  it('answers a Cloud Scheduler POST with the run summary', async () => {
    const res = await schedulerPost(base);
    assert.equal(res.status, 200);
    const body = await routeSummary(res);
    // The stack's own scheduler may hold the lease this minute: then the run is `busy`, which is fine.
    assert.ok(['done', 'busy'].includes(String(body.status)), JSON.stringify(body));
    assert.equal(body.pipeline, 'booking_routes_1m');
    const loop = body.loop as { loopMs: number; passes: number };
    assert.equal(loop.loopMs, 3000);
    assert.ok(loop.passes >= 1, JSON.stringify(loop));
    // It lasts its budget (or longer, when a cold first pass alone took more; then it polls no more).
    assert.ok(Number(body.durationMs) >= 3000, JSON.stringify(body));
  });

  it('answers any other POST with one pass', async () => {
    const res = await schedulerPost(base, false);
    assert.equal(res.status, 200);
    const body = await routeSummary(res);
    assert.ok(['done', 'busy'].includes(String(body.status)), JSON.stringify(body));
    assert.equal(body.loop, undefined);
  });

  it('refuses GET with 405', async () => {
    const res = await fetch(base);
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
  });
});
