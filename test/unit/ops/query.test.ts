// offvia's query helper: a query the local BigQuery emulator refuses is an error, not an empty result.
import assert from 'node:assert/strict';
import type { BigQuery } from '@google-cloud/bigquery';
import { query, type OpsContext } from '../../../shared/ops/context';
import { EXIT, OpsError } from '../../../shared/ops/errors';

/** A context whose BigQuery client resolves every query with `result` (rows, job, raw jobs.query response). */
function contextAnswering(mode: 'local' | 'cloud', result: unknown[]): OpsContext {
  const bigquery = { query: () => Promise.resolve(result) } as unknown as BigQuery;
  return {
    mode,
    bigquery,
    describe: { bigquery: 'the BigQuery emulator (x)', firestore: 'f', hint: 'is the stack up?' },
    env: {},
  } as unknown as OpsContext;
}

describe('offvia: query', () => {
  it("the emulator's refusal in a 200 answer (errors, no rows) fails with its message", async () => {
    // What bqemulator answers on jobs.query for `SELEC 1` (HTTP 200).
    const response = {
      jobComplete: true,
      totalRows: '0',
      errors: [{ reason: 'invalidQuery', message: 'Syntax error: Unexpected identifier "SELEC"' }],
    };
    const ctx = contextAnswering('local', [[], null, response]);
    await assert.rejects(
      query(ctx, 'SELEC 1'),
      (err: unknown) =>
        err instanceof OpsError &&
        err.exitCode === EXIT.failure &&
        /^the BigQuery emulator \(x\): (invalidQuery: )?Syntax error: Unexpected identifier "SELEC"$/.test(
          err.message,
        ),
    );
  });

  it('against a project, names no job location unless OFFVIA_BQ_LOCATION does (BigQuery infers it from the tables)', async () => {
    // A deployment's datasets are in --bq-location (default: the region, e.g. europe-west1); a job sent to US finds
    // none of them.
    const asked: Record<string, unknown>[] = [];
    const answering = (env: Record<string, string>): OpsContext =>
      ({
        mode: 'cloud',
        bigquery: {
          query: (q: Record<string, unknown>) => {
            asked.push(q);
            return Promise.resolve([[], null, { jobComplete: true }]);
          },
        } as unknown as BigQuery,
        describe: { bigquery: 'BigQuery', firestore: 'f', hint: 'h' },
        env,
      }) as unknown as OpsContext;
    await query(answering({}), 'SELECT 1');
    await query(answering({ OFFVIA_BQ_LOCATION: 'europe-west1' }), 'SELECT 1');
    assert.equal('location' in (asked[0] ?? {}), false, JSON.stringify(asked[0]));
    assert.equal(asked[1]?.location, 'europe-west1');
  });

  it('rows without errors are returned as they are', async () => {
    const ctx = contextAnswering('local', [[{ x: 1 }], null, { jobComplete: true }]);
    assert.deepEqual(await query(ctx, 'SELECT 1 AS x'), [{ x: 1 }]);
  });
});
