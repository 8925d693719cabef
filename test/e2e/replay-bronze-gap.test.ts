// offvia replay over a range Bronze no longer holds, on the local stack: bookings go through Pub/Sub to Bronze and
// Silver, their minute's Bronze rows are deleted, and the replay of that minute warns in one line with the numbers
// and exits 4 (Silver holds messages written in the range that Bronze lacks). A quiet range is no gap. Then a stopped
// ingest function is started again while the Pub/Sub emulator keeps retrying its push (its port is below the
// kernel's ephemeral range), and the booking published while it was down reaches Silver.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { bookingJson, bookingStackClients, testRoute } from '../support/booking-stack';
import { EXIT } from '../../shared/ops/errors';
import type { ReplayReport } from '../../shared/ops/replay';
import { offvia } from '../support/offvia-cli';

const run = promisify(execFile);

describe('e2e: offvia replay of a range Bronze lacks; a stopped function restarts', function () {
  this.timeout(600_000);
  const { env, topic, bq } = bookingStackClients();
  const p = env.projectId;
  const bronze = `\`${p}.offvia_bronze.raw_bookings\``;
  const silver = `\`${p}.offvia_silver.fact_bookings\``;

  before(function () {
    if (!process.env.OFFVIA_INGEST_BOOKING_URL) {
      throw new Error('the local stack is not running: run through deploy/local/with-stack.sh');
    }
  });

  const count = async (sql: string, params: Record<string, unknown>): Promise<number> => {
    const [rows] = await bq.query({ query: sql, params });
    return Number((rows as { n: unknown }[])[0]?.n);
  };

  /** Polls every second until Bronze and Silver each hold every id. */
  async function waitInBronzeAndSilver(ids: readonly string[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      const inBronze = await count(
        `SELECT COUNT(DISTINCT message_id) AS n FROM ${bronze} WHERE message_id IN UNNEST(@ids)`,
        { ids },
      );
      const inSilver = await count(
        `SELECT COUNT(DISTINCT source_message_id) AS n FROM ${silver} WHERE source_message_id IN UNNEST(@ids)`,
        { ids },
      );
      last = `${inBronze} in Bronze, ${inSilver} in Silver of ${ids.length}`;
      if (inBronze === ids.length && inSilver === ids.length) return;
      assert.ok(Date.now() < deadline, `not every message arrived in ${timeoutMs} ms: ${last}`);
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }

  const publish = (tag: string, n: number) => {
    const route = testRoute('G');
    return Promise.all(
      Array.from({ length: n }, (_, i) =>
        topic.publishMessage({
          data: Buffer.from(
            bookingJson(tag, i, {
              flight_number: 'OF-7',
              ...route,
              fare: '12.50',
              currency: 'EUR',
              event_time: new Date().toISOString(),
            }),
          ),
          attributes: { test: tag },
        }),
      ),
    );
  };

  it('warns with the numbers and exits 4 when a minute of Bronze was deleted; a quiet range is no gap', async () => {
    const fromMs = Math.floor(Date.now() / 1000) * 1000 - 1000;
    const ids = await publish('bronze-gap', 30);
    await waitInBronzeAndSilver(ids, 120_000);
    const toMs = Date.now() + 1000;
    while (Date.now() <= toMs) await new Promise((r) => setTimeout(r, 200));
    const range = { fromMs, toMs };
    const deleted = await count(
      `SELECT COUNT(*) AS n FROM ${bronze}
       WHERE publish_time >= TIMESTAMP_MILLIS(@fromMs) AND publish_time < TIMESTAMP_MILLIS(@toMs)`,
      range,
    );
    assert.ok(deleted >= ids.length, `${deleted} Bronze rows in the range`);
    await bq.query({
      query: `DELETE FROM ${bronze}
              WHERE publish_time >= TIMESTAMP_MILLIS(@fromMs) AND publish_time < TIMESTAMP_MILLIS(@toMs)`,
      params: range,
    });
    const from = new Date(fromMs).toISOString();
    const to = new Date(toMs).toISOString();

    const text = await offvia('replay', '--from', from, '--to', to);
    assert.equal(text.code, EXIT.bronzeGap, `exit ${text.code}: ${text.err}`);
    const warning = text.out.split('\n').filter((l) => l.startsWith('warning: Bronze holds'));
    assert.equal(warning.length, 1, text.out);
    assert.match(
      warning[0] ?? '',
      new RegExp(
        `^warning: Bronze holds 0 row\\(s\\) from ${from.replace(/\./g, '\\.')} to .*, but Silver and quarantine hold ${ids.length} message\\(s\\) written in the range \\(of ${ids.length} checked\\) that Bronze does not hold`,
      ),
    );

    const dry = await offvia('replay', '--from', from, '--to', to, '--dry-run', '--json');
    assert.equal(dry.code, EXIT.bronzeGap, dry.err);
    assert.match((JSON.parse(dry.out) as ReplayReport).bronzeGap ?? '', /hold 30 message/);

    // Before any of this test's traffic: nothing written, nothing missing.
    const quiet = await offvia(
      'replay',
      '--from',
      new Date(fromMs - 3_600_000).toISOString(),
      '--to',
      new Date(fromMs - 3_540_000).toISOString(),
      '--json',
    );
    assert.equal(quiet.code, EXIT.ok, quiet.err);
    const report = JSON.parse(quiet.out) as ReplayReport;
    assert.equal(report.bronzeGap, null);
    assert.equal(report.bronzeRows, 0);
  });

  it('starts a stopped ingest function again while Pub/Sub retries its push', async () => {
    const stack = (...args: string[]) =>
      run('bash', ['deploy/local/stack.sh', ...args], { env: process.env });
    await stack('stop', 'fn-ingestBooking');
    let ids: string[] = [];
    try {
      ids = await publish('restart', 3);
      // Long enough for the emulator's push to fail and be retried against the stopped port.
      await new Promise((r) => setTimeout(r, 5_000));
    } finally {
      await stack('start', 'fn-ingestBooking');
    }
    await waitInBronzeAndSilver(ids, 180_000);
  });
});
