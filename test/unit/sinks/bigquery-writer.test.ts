// BigQueryRowWriter against BigQuery's documented insertAll responses, stubbed at the HTTP edge of the real client.
import assert from 'node:assert/strict';
import sinon from 'sinon';
import { BigQuery, Table } from '@google-cloud/bigquery';
import {
  BigQueryRowWriter,
  classifyInsertErrors,
  missingFieldsOf,
} from '../../../shared/sinks/bigquery-writer';
import { PartialInsertError } from '../../../shared/sinks/row-writer';
import { TransientError } from '../../../shared/errors';

const table = { datasetId: 'offvia_silver', tableId: 'fact_bookings' };
const rows = [
  { insertId: 'e1', json: { a: 1 } },
  { insertId: 'e2', json: { a: 2 } },
  { insertId: 'e3', json: { a: 3 } },
];

/** An error shaped like @google-cloud/common's ApiError for an HTTP failure. */
function apiError(code: number, reason: string, message: string) {
  return Object.assign(new Error(message), { code, errors: [{ reason, message }] });
}

describe('BigQueryRowWriter', () => {
  let request: sinon.SinonStub;
  const writer = new BigQueryRowWriter(new BigQuery({ projectId: 'p' }));

  beforeEach(() => {
    request = sinon.stub(Table.prototype, 'request');
  });
  afterEach(() => sinon.restore());

  it('sends raw rows with our insertIds, skipInvalidRows and no unknown-value ignoring', async () => {
    request.resolves([{ kind: 'bigquery#tableDataInsertAllResponse' }]);
    const results = await writer.insertRows(table, rows);
    assert.deepEqual(results, [{ ok: true }, { ok: true }, { ok: true }]);
    sinon.assert.calledOnce(request);
    const body = (request.firstCall.args[0] as { json: Record<string, unknown> }).json;
    assert.deepEqual(body.rows, rows);
    assert.equal(body.skipInvalidRows, true);
    assert.equal(body.ignoreUnknownValues, false);
    assert.equal('raw' in body, false);
  });

  it('maps per-row "invalid" insertErrors to rejected rows by index, others ok', async () => {
    request.resolves([
      {
        insertErrors: [
          {
            index: 1,
            errors: [
              { reason: 'invalid', location: 'fare_amount', message: 'Invalid NUMERIC value: x' },
            ],
          },
        ],
      },
    ]);
    const results = await writer.insertRows(table, rows);
    assert.deepEqual(results[0], { ok: true });
    const refused = results[1];
    assert.ok(refused && !refused.ok);
    assert.match(refused.error, /Invalid NUMERIC/);
    assert.deepEqual(results[2], { ok: true });
    sinon.assert.calledOnce(request); // partialRetries: 0 — the refused row is not re-sent
  });

  it('reports the unknown columns of a "no such field" rejection', async () => {
    request.resolves([
      {
        insertErrors: [
          {
            index: 0,
            errors: [
              {
                reason: 'invalid',
                location: 'loyalty_tier',
                message: 'no such field: loyalty_tier.',
              },
            ],
          },
        ],
      },
    ]);
    const [r] = await writer.insertRows(table, rows.slice(0, 1));
    assert.ok(r && !r.ok);
    assert.deepEqual(r.missingFields, ['loyalty_tier']);
  });

  it('throws TransientError when a row failed for a non-data reason (backendError, stopped)', async () => {
    request.resolves([
      { insertErrors: [{ index: 2, errors: [{ reason: 'backendError', message: 'try again' }] }] },
    ]);
    await assert.rejects(writer.insertRows(table, rows), TransientError);
    request.resolves([
      { insertErrors: [{ index: 0, errors: [{ reason: 'stopped', message: '' }] }] },
    ]);
    await assert.rejects(writer.insertRows(table, rows), TransientError);
  });

  it('gives every row its outcome when one is `invalid` and its neighbours `stopped` (a PartialInsertError)', async () => {
    // BigQuery's "None of the rows inserted successfully" response: the refused row has `invalid`, the others
    // `stopped` ("can be re-sent as-is").
    request.resolves([
      {
        insertErrors: [
          { index: 1, errors: [{ reason: 'invalid', message: 'Invalid NUMERIC value: 1e400' }] },
          { index: 0, errors: [{ reason: 'stopped', message: '' }] },
          { index: 2, errors: [{ reason: 'stopped', message: '' }] },
        ],
      },
    ]);
    const err = await writer.insertRows(table, rows).then(
      () => assert.fail('expected a PartialInsertError'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof PartialInsertError);
    assert.ok(
      err instanceof TransientError,
      'callers that know only TransientError still redeliver',
    );
    assert.deepEqual(
      err.outcomes.map((o) => (o.ok ? 'ok' : o.kind)),
      ['not_written', 'rejected', 'not_written'],
    );
    const [stopped, invalid] = err.outcomes;
    assert.ok(stopped && !stopped.ok && stopped.kind === 'not_written');
    assert.deepEqual(stopped.reasons, ['stopped']);
    assert.ok(invalid && !invalid.ok && invalid.kind === 'rejected');
    assert.match(invalid.error, /Invalid NUMERIC value/);
  });

  it('throws TransientError for 5xx, 429/quota and missing tables', async () => {
    for (const err of [
      apiError(503, 'backendError', 'unavailable'),
      apiError(403, 'quotaExceeded', 'Exceeded rate limits'),
      apiError(404, 'notFound', 'Not found: Table p:offvia_silver.fact_bookings'),
      Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
    ]) {
      request.rejects(err);
      await assert.rejects(
        writer.insertRows(table, rows),
        (e: unknown) => e instanceof TransientError,
      );
    }
  });

  it('isolates a request refused as a whole (400 invalid) by re-sending rows one at a time', async () => {
    request.onCall(0).rejects(apiError(400, 'invalid', 'Request payload size exceeds the limit'));
    request.onCall(1).resolves([{}]);
    request.onCall(2).rejects(apiError(400, 'invalid', 'Row larger than the maximum allowed size'));
    request.onCall(3).resolves([{}]);
    const results = await writer.insertRows(table, rows);
    assert.deepEqual(
      results.map((r) => r.ok),
      [true, false, true],
    );
    sinon.assert.callCount(request, 4);
  });

  it('never calls BigQuery for an empty batch', async () => {
    assert.deepEqual(await writer.insertRows(table, []), []);
    sinon.assert.notCalled(request);
  });
});

describe('classifyInsertErrors', () => {
  it('is `data` only when every reason is `invalid`, `stopped` when all are, else `transient`', () => {
    assert.equal(classifyInsertErrors(['invalid']), 'data');
    assert.equal(classifyInsertErrors(['invalid', 'invalid']), 'data');
    assert.equal(classifyInsertErrors(['stopped']), 'stopped');
    assert.equal(classifyInsertErrors(['timeout']), 'transient');
    assert.equal(classifyInsertErrors(['backendError']), 'transient');
    assert.equal(classifyInsertErrors(['invalid', 'backendError']), 'transient');
    assert.equal(classifyInsertErrors(['somethingNew']), 'transient');
    assert.equal(classifyInsertErrors([]), 'transient');
  });
});

describe('missingFieldsOf', () => {
  it('extracts sorted unique names, and nothing from other messages', () => {
    assert.deepEqual(missingFieldsOf('no such field: b.; no such field: a.; no such field: b.'), [
      'a',
      'b',
    ]);
    assert.deepEqual(missingFieldsOf('Invalid NUMERIC value'), []);
  });
});
