// offvia's re-drive runs against a Silver of pseudonyms: a run whose environment would store passenger_id raw is
// refused before it writes, since the operator's shell, not the deployment, decides how the run hashes the id.
import assert from 'node:assert/strict';
import type { BigQuery } from '@google-cloud/bigquery';
import { PassengerIdKey } from '../../../shared/config/passenger-id-config';
import type { OpsContext } from '../../../shared/ops/context';
import { EXIT, UsageError } from '../../../shared/ops/errors';
import { assertPassengerIdModeFitsSilver } from '../../../shared/ops/run';
import { BOOKING_PIPELINE } from '../../../shared/pipelines/booking/definition';
import { TELEMETRY_PIPELINE } from '../../../shared/pipelines/telemetry/definition';

/** A context whose Silver answers `rows` to every query, recording the SQL and parameters asked. */
function contextWithSilver(rows: unknown[]): { ctx: OpsContext; asked: unknown[] } {
  const asked: unknown[] = [];
  const bigquery = {
    query: (q: unknown) => {
      asked.push(q);
      return Promise.resolve([rows, null, { jobComplete: true }]);
    },
  } as unknown as BigQuery;
  const ctx = {
    mode: 'local',
    bigquery,
    env: {},
    pipeline: BOOKING_PIPELINE,
    tables: { silver: 'p.offvia_silver.fact_bookings' },
    describe: { bigquery: 'the BigQuery emulator', firestore: 'f', hint: 'is the stack up?' },
  } as unknown as OpsContext;
  return { ctx, asked };
}

describe('offvia: a re-drive run keeps passenger_id as the deployment stores it', () => {
  it('refuses a raw-mode run when Silver holds pseudonyms (hmac1:), naming the variables to export', async () => {
    const { ctx, asked } = contextWithSilver([{ hashed: 1 }]);
    await assert.rejects(
      assertPassengerIdModeFitsSilver(ctx, { mode: 'raw' }),
      (err: unknown) =>
        err instanceof UsageError &&
        err.exitCode === EXIT.usage &&
        /OFFVIA_PASSENGER_ID_MODE=hmac-sha256/.test(err.message) &&
        /OFFVIA_PASSENGER_ID_HMAC_KEY/.test(err.message),
    );
    assert.equal(asked.length, 1);
    assert.match(JSON.stringify(asked[0]), /STARTS_WITH\(passenger_id, @prefix\)/);
    assert.match(JSON.stringify(asked[0]), /"prefix":"hmac1:"/);
  });

  it('lets a raw-mode run through when Silver holds no pseudonym (a raw deployment)', async () => {
    const { ctx } = contextWithSilver([]);
    await assertPassengerIdModeFitsSilver(ctx, { mode: 'raw' });
  });

  it('asks nothing for a pipeline whose Silver has no pseudonymised column', async () => {
    const { ctx, asked } = contextWithSilver([{ hashed: 1 }]);
    const telemetry = { ...ctx, pipeline: TELEMETRY_PIPELINE } as unknown as OpsContext;
    await assertPassengerIdModeFitsSilver(telemetry, { mode: 'raw' });
    assert.equal(asked.length, 0);
  });

  it('asks nothing when the run hashes the id itself', async () => {
    const { ctx, asked } = contextWithSilver([{ hashed: 1 }]);
    const key = new PassengerIdKey(Buffer.alloc(32, 7));
    await assertPassengerIdModeFitsSilver(ctx, { mode: 'hmac-sha256', key });
    assert.equal(asked.length, 0);
  });
});
