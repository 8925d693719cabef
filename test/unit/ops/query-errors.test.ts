// offvia's BigQuery reads: a query the backend answers with errors is a failure, never "0 rows".
import assert from 'node:assert/strict';
import { type OpsContext, query } from '../../../shared/ops/context';
import { OpsError } from '../../../shared/ops/errors';

/** A context whose BigQuery client answers `query` with `answer` (rows, options, API response). */
function contextAnswering(answer: unknown[]): OpsContext {
  return {
    bigquery: { query: () => Promise.resolve(answer) },
    describe: { bigquery: 'BigQuery emulator http://127.0.0.1:9050', firestore: '', hint: 'hint' },
  } as unknown as OpsContext;
}

describe('offvia: query errors', () => {
  it('fails when the backend completes the query with errors and no schema (the emulator: HTTP 200)', async () => {
    // What the local BigQuery emulator answers for `SELEC garbage` or an unknown column: jobComplete, no rows.
    const ctx = contextAnswering([
      [],
      {},
      {
        jobComplete: true,
        schema: { fields: [] },
        totalRows: '0',
        errors: [
          {
            reason: 'invalidQuery',
            message: 'Query execution failed: Binder Error: Referenced column "nosuch" not found',
          },
        ],
      },
    ]);
    await assert.rejects(
      query(ctx, 'SELECT nosuch FROM t'),
      (err: unknown) =>
        err instanceof OpsError && /invalidQuery.*Referenced column "nosuch"/.test(err.message),
    );
  });

  it('returns the rows of a query that has a schema, also when the response lists warnings', async () => {
    const ctx = contextAnswering([
      [{ n: 1 }],
      {},
      { jobComplete: true, schema: { fields: [{ name: 'n' }] }, errors: [{ message: 'warning' }] },
    ]);
    assert.deepEqual(await query(ctx, 'SELECT 1 AS n'), [{ n: 1 }]);
  });
});
