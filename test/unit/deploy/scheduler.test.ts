// The local scheduler loop: jobs from deploy/schedules.ts and the environment, cron-like alignment, the call.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SCHEDULES } from '../../../deploy/schedules';
import { callJob, localJobs, nextRunMs, runJob } from '../../../deploy/local/scheduler';
import { functionEnvName as envName } from '../../../deploy/local/resources';

/** The schemaSweep job alone (fireWindows is scheduled too; test/unit/state/fire-windows.test.ts covers it). */
const SWEEP_ONLY = SCHEDULES.filter((s) => s.functionName === 'schemaSweep');

describe('local scheduler', () => {
  it('runs schemaSweep every minute by default, on the URL the stack exports', () => {
    assert.deepEqual(
      SCHEDULES.find((s) => s.functionName === 'schemaSweep'),
      { functionName: 'schemaSweep', cron: '* * * * *', everySeconds: 60 },
    );
    assert.equal(envName('schemaSweep'), 'SCHEMA_SWEEP');
    assert.deepEqual(localJobs(SWEEP_ONLY, { OFFVIA_SCHEMA_SWEEP_URL: 'http://h:1' }), [
      { functionName: 'schemaSweep', url: 'http://h:1', everySeconds: 60 },
    ]);
  });

  it('takes the cadence from OFFVIA_SCHEDULE_<NAME>_SECONDS (0 pauses) and names bad variables', () => {
    const env = {
      OFFVIA_SCHEMA_SWEEP_URL: 'http://h:1',
      OFFVIA_SCHEDULE_SCHEMA_SWEEP_SECONDS: '5',
    };
    assert.equal(localJobs(SWEEP_ONLY, env)[0]?.everySeconds, 5);
    assert.deepEqual(
      localJobs(SWEEP_ONLY, { ...env, OFFVIA_SCHEDULE_SCHEMA_SWEEP_SECONDS: '0' }),
      [],
    );
    assert.throws(
      () => localJobs(SWEEP_ONLY, { ...env, OFFVIA_SCHEDULE_SCHEMA_SWEEP_SECONDS: 'often' }),
      /OFFVIA_SCHEDULE_SCHEMA_SWEEP_SECONDS/,
    );
    assert.throws(() => localJobs(SWEEP_ONLY, {}), /OFFVIA_SCHEMA_SWEEP_URL/);
  });

  it('aligns calls to multiples of the cadence, like cron', () => {
    assert.equal(nextRunMs(Date.UTC(2026, 0, 1, 0, 0, 59, 999), 60), Date.UTC(2026, 0, 1, 0, 1));
    assert.equal(nextRunMs(Date.UTC(2026, 0, 1, 0, 1), 60), Date.UTC(2026, 0, 1, 0, 2));
  });

  it("POSTs with Cloud Scheduler's headers, on every tick, and stops when aborted", async () => {
    const seen: { method?: string | undefined; headers: IncomingHttpHeaders }[] = [];
    const server = createServer((req, res) => {
      seen.push({ method: req.method, headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      assert.equal(await callJob({ functionName: 'schemaSweep', url, everySeconds: 1 }, 5000), 200);
      assert.equal(seen[0]?.method, 'POST');
      assert.equal(seen[0]?.headers['x-cloudscheduler'], 'true');
      assert.equal(seen[0]?.headers['user-agent'], 'Google-Cloud-Scheduler');
      const controller = new AbortController();
      const loop = runJob(
        { functionName: 'schemaSweep', url, everySeconds: 1 },
        controller.signal,
        5000,
      );
      await new Promise((r) => setTimeout(r, 2100));
      controller.abort();
      await loop;
      assert.ok(seen.length >= 3, `${seen.length} calls`);
    } finally {
      server.close();
    }
  });
});
