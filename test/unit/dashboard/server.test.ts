// The dashboard server without backends: the page and its assets are served from the project (no CDN), and a
// failing backend gives the page a 503 with the one-line error instead of a hung request.
import assert from 'node:assert/strict';
import sinon from 'sinon';
import type { OpsContext } from '../../../shared/ops/context';
import { OpsError } from '../../../shared/ops/errors';
import { buildDashboardApp } from '../../../shared/dashboard/server';

/** A context whose every BigQuery query fails as an unreachable emulator does. */
function unreachableContext(): OpsContext {
  const failing = sinon.stub().rejects(new Error('connect ECONNREFUSED 127.0.0.1:1'));
  return {
    mode: 'local',
    projectId: 'p',
    tables: new Proxy({}, { get: (_t, name) => `p.d.${String(name)}` }),
    windows: { pipeline: 'bookings', firestoreRoot: 'w' },
    drift: { enabled: false },
    env: {},
    bigquery: { query: failing },
    firestore: () => {
      throw new OpsError('Firestore unreachable in this test');
    },
    logsDir: undefined,
    describe: { bigquery: 'BigQuery (test)', firestore: 'Firestore (test)', hint: '' },
    close: () => Promise.resolve(),
  } as unknown as OpsContext;
}

describe('dashboard server', () => {
  const options = { port: 0, host: '127.0.0.1', lookBackMs: 3_600_000, refreshMs: 5000 };

  it('serves the page, its script and style, and Chart.js from node_modules', async () => {
    const app = buildDashboardApp(unreachableContext(), options);
    const page = await app.inject({ url: '/' });
    assert.equal(page.statusCode, 200);
    assert.match(page.headers['content-type'] as string, /text\/html/);
    // Every script and stylesheet the page loads is local and served.
    const refs = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
    assert.ok(refs.length >= 3, refs.join());
    for (const ref of refs) {
      assert.ok(ref.startsWith('/assets/'), `${ref} is not served by the dashboard`);
      const asset = await app.inject({ url: ref });
      assert.equal(asset.statusCode, 200, ref);
      assert.ok(asset.body.length > 100, ref);
    }
    assert.match((await app.inject({ url: '/assets/chart.umd.min.js' })).body, /Chart/);
    assert.equal((await app.inject({ url: '/assets/nope.js' })).statusCode, 404);
    await app.close();
  });

  it('answers 503 with the error line when a backend fails', async () => {
    const errors: unknown[] = [];
    const app = buildDashboardApp(unreachableContext(), {
      ...options,
      onError: (err) => errors.push(err),
    });
    const res = await app.inject({ url: '/api/dashboard' });
    assert.equal(res.statusCode, 503);
    const body = res.json<{ error: string; refreshMs: number }>();
    assert.match(body.error, /BigQuery \(test\)|Firestore/);
    assert.equal(body.refreshMs, 5000);
    assert.equal(errors.length, 1);
    await app.close();
  });
});
