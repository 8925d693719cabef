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

  it('rows without errors are returned as they are', async () => {
    const ctx = contextAnswering('local', [[{ x: 1 }], null, { jobComplete: true }]);
    assert.deepEqual(await query(ctx, 'SELECT 1 AS x'), [{ x: 1 }]);
  });
});
