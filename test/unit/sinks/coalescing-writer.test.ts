// CoalescingRowWriter: concurrent callers share insertAll calls, each gets its own rows' results, and a failed batch
// fails every caller in it (none may ack). The wrapped writer is a sinon stub (fault injection).
import assert from 'node:assert/strict';
import sinon from 'sinon';
import { TransientError } from '../../../shared/errors';
import {
  CoalescingRowWriter,
  requestBytes,
  type CoalescingOptions,
} from '../../../shared/sinks/coalescing-writer';
import type { InsertRow, RowResult, RowWriter } from '../../../shared/sinks/row-writer';

const silver = { datasetId: 'offvia_silver', tableId: 'fact_bookings' };
const quarantine = { datasetId: 'offvia_quarantine', tableId: 'poisoned_events' };

function row(id: string, size = 10): InsertRow {
  return { insertId: id, json: { id, pad: 'x'.repeat(size) } };
}

/** A wrapped writer that answers every row `ok`, except the insertIds listed as refused. */
function innerWriter(refused: ReadonlySet<string> = new Set()) {
  const insertRows = sinon.spy(
    (_table: unknown, rows: readonly InsertRow[]): Promise<RowResult[]> =>
      Promise.resolve(
        rows.map((r) =>
          refused.has(r.insertId)
            ? { ok: false, kind: 'rejected', error: `invalid: ${r.insertId}`, missingFields: [] }
            : { ok: true },
        ),
      ),
  );
  return { writer: { insertRows } satisfies RowWriter, insertRows };
}

const options = (o: Partial<CoalescingOptions> = {}): CoalescingOptions => ({
  maxRows: 500,
  maxBytes: 5 * 1024 * 1024,
  lingerMs: 5,
  ...o,
});

describe('CoalescingRowWriter', () => {
  it('sends the rows of concurrent callers for one table in one call, in arrival order', async () => {
    const { writer, insertRows } = innerWriter();
    const coalescing = new CoalescingRowWriter(writer, options());
    const results = await Promise.all(
      ['a', 'b', 'c'].map((id) => coalescing.insertRows(silver, [row(id)])),
    );
    assert.equal(insertRows.callCount, 1);
    assert.deepEqual(
      insertRows.firstCall.args[1].map((r) => r.insertId),
      ['a', 'b', 'c'],
    );
    assert.deepEqual(results, [[{ ok: true }], [{ ok: true }], [{ ok: true }]]);
  });

  it('keeps tables apart', async () => {
    const { writer, insertRows } = innerWriter();
    const coalescing = new CoalescingRowWriter(writer, options());
    await Promise.all([
      coalescing.insertRows(silver, [row('s1')]),
      coalescing.insertRows(quarantine, [row('q1')]),
      coalescing.insertRows(silver, [row('s2')]),
    ]);
    assert.equal(insertRows.callCount, 2);
    const byTable = new Map(
      insertRows.getCalls().map((c) => [c.args[0], c.args[1].map((r) => r.insertId)]),
    );
    assert.deepEqual(byTable.get(silver), ['s1', 's2']);
    assert.deepEqual(byTable.get(quarantine), ['q1']);
  });

  it("hands each caller its own rows' per-row errors", async () => {
    const { writer } = innerWriter(new Set(['b2']));
    const coalescing = new CoalescingRowWriter(writer, options());
    const [a, b, c] = await Promise.all([
      coalescing.insertRows(silver, [row('a1')]),
      coalescing.insertRows(silver, [row('b1'), row('b2')]),
      coalescing.insertRows(silver, [row('c1')]),
    ]);
    assert.deepEqual(a, [{ ok: true }]);
    assert.deepEqual(b, [
      { ok: true },
      { ok: false, kind: 'rejected', error: 'invalid: b2', missingFields: [] },
    ]);
    assert.deepEqual(c, [{ ok: true }]);
  });

  it('fails every caller of a failed batch, and only those', async () => {
    const failure = new TransientError('insertAll offvia_silver.fact_bookings', 'HTTP 503');
    const insertRows = sinon.stub<[unknown, readonly InsertRow[]], Promise<RowResult[]>>();
    insertRows.onFirstCall().rejects(failure);
    insertRows.callsFake((_t, rows) => Promise.resolve(rows.map(() => ({ ok: true }) as const)));
    const coalescing = new CoalescingRowWriter({ insertRows }, options({ maxRows: 2 }));
    const settled = await Promise.allSettled(
      ['a', 'b', 'c'].map((id) => coalescing.insertRows(silver, [row(id)])),
    );
    // a and b shared the failed call: neither may be acked. c went in the next call and landed.
    assert.deepEqual(
      settled.map((s) => s.status),
      ['rejected', 'rejected', 'fulfilled'],
    );
    assert.equal((settled[0] as PromiseRejectedResult).reason, failure);
    assert.equal((settled[1] as PromiseRejectedResult).reason, failure);
    assert.deepEqual(
      insertRows.secondCall.args[1].map((r) => r.insertId),
      ['c'],
    );
  });

  it('fails the batch when the wrapped writer answers a wrong number of results', async () => {
    const insertRows = sinon.stub<[unknown, readonly InsertRow[]], Promise<RowResult[]>>();
    insertRows.resolves([{ ok: true }]);
    const coalescing = new CoalescingRowWriter({ insertRows }, options());
    const settled = await Promise.allSettled([
      coalescing.insertRows(silver, [row('a')]),
      coalescing.insertRows(silver, [row('b')]),
    ]);
    assert.deepEqual(
      settled.map((s) => s.status),
      ['rejected', 'rejected'],
    );
    assert.match(String((settled[0] as PromiseRejectedResult).reason), /2 rows sent, 1 results/);
  });

  it('closes a batch at maxRows and at maxBytes, never splitting a caller', async () => {
    const { writer, insertRows } = innerWriter();
    const byRows = new CoalescingRowWriter(writer, options({ maxRows: 3 }));
    await Promise.all([
      byRows.insertRows(silver, [row('a'), row('b')]),
      byRows.insertRows(silver, [row('c'), row('d')]),
      byRows.insertRows(silver, [row('e')]),
    ]);
    assert.deepEqual(
      insertRows.getCalls().map((c) => c.args[1].map((r) => r.insertId)),
      [
        ['a', 'b'],
        ['c', 'd', 'e'],
      ],
    );

    insertRows.resetHistory();
    const one = requestBytes([row('x', 600)]);
    const byBytes = new CoalescingRowWriter(writer, options({ maxBytes: Math.max(1024, one * 2) }));
    await Promise.all(['x', 'y', 'z'].map((id) => byBytes.insertRows(silver, [row(id, 600)])));
    const sizes = insertRows.getCalls().map((c) => requestBytes(c.args[1]));
    assert.ok(
      insertRows.callCount >= 2,
      `expected the byte limit to split, got ${insertRows.callCount} call`,
    );
    for (const size of sizes) assert.ok(size <= Math.max(1024, one * 2));
  });

  it('sends a caller larger than one batch alone, at once', async () => {
    const { writer, insertRows } = innerWriter();
    const coalescing = new CoalescingRowWriter(writer, options({ maxRows: 2 }));
    const result = await coalescing.insertRows(silver, [row('a'), row('b'), row('c')]);
    assert.equal(insertRows.callCount, 1);
    assert.equal(result.length, 3);
    assert.equal(coalescing.waitingRows, 0);
  });

  it('waits at most the linger for company', async () => {
    const clock = sinon.useFakeTimers();
    try {
      const { writer, insertRows } = innerWriter();
      const coalescing = new CoalescingRowWriter(writer, options({ lingerMs: 20 }));
      const pending = coalescing.insertRows(silver, [row('a')]);
      await clock.tickAsync(19);
      assert.equal(insertRows.callCount, 0);
      assert.equal(coalescing.waitingRows, 1);
      await clock.tickAsync(1);
      assert.equal(insertRows.callCount, 1);
      assert.deepEqual(await pending, [{ ok: true }]);
    } finally {
      clock.restore();
    }
  });

  it('refuses limits outside BigQuery’s', () => {
    const { writer } = innerWriter();
    assert.throws(() => new CoalescingRowWriter(writer, options({ maxRows: 501 })), RangeError);
    assert.throws(
      () => new CoalescingRowWriter(writer, options({ maxBytes: 10 * 1024 * 1024 })),
      RangeError,
    );
    assert.throws(() => new CoalescingRowWriter(writer, options({ lingerMs: -1 })), RangeError);
  });
});
