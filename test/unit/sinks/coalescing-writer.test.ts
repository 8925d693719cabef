// CoalescingRowWriter: concurrent callers share insertAll calls, each gets its own rows' results, and a failed batch
// fails every caller in it (none may ack). The wrapped writer is a sinon stub (fault injection), or, for the
// group-commit rules (calls in flight per table), a writer whose calls the test settles by hand under fake timers.
import assert from 'node:assert/strict';
import sinon from 'sinon';
import type { TableRef } from '../../../shared/config/env';
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
  maxInFlight: 1,
  maxHoldMs: 1000,
  ...o,
});

/** One call of the hand-settled writer: what it was asked, when (fake clock), and how to settle it. */
interface ManualCall {
  readonly table: TableRef;
  readonly ids: readonly string[];
  readonly at: number;
  /** Answers every row `ok`. */
  readonly succeed: () => void;
  readonly fail: (error: unknown) => void;
}

/** A wrapped writer whose calls stay in flight until the test settles them (`calls[i].succeed()` / `.fail(e)`). */
function manualWriter() {
  const calls: ManualCall[] = [];
  const insertRows = sinon.spy(
    (table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> =>
      new Promise<RowResult[]>((resolve, reject) => {
        calls.push({
          table,
          ids: rows.map((r) => r.insertId),
          at: Date.now(),
          succeed: () => resolve(rows.map(() => ({ ok: true }) as const)),
          fail: reject,
        });
      }),
  );
  return { writer: { insertRows } satisfies RowWriter, insertRows, calls };
}

/** Records how each caller's promise settled, without awaiting it (so the test can look before it settles). */
function track(promise: Promise<RowResult[]>) {
  const state: {
    status: 'pending' | 'fulfilled' | 'rejected';
    value?: RowResult[];
    reason?: unknown;
  } = { status: 'pending' };
  promise.then(
    (value) => Object.assign(state, { status: 'fulfilled', value }),
    (reason: unknown) => Object.assign(state, { status: 'rejected', reason }),
  );
  return state;
}

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

  it('refuses maxInFlight outside [1, 100] and maxHoldMs outside [lingerMs, 60000]', () => {
    const { writer } = innerWriter();
    for (const bad of [0, 101, 1.5, Number.NaN]) {
      assert.throws(
        () => new CoalescingRowWriter(writer, options({ maxInFlight: bad })),
        (err: unknown) => err instanceof RangeError && /maxInFlight/.test(err.message),
        `maxInFlight ${bad}`,
      );
    }
    for (const bad of [4, 60_001, 10.5, Number.NaN]) {
      assert.throws(
        () => new CoalescingRowWriter(writer, options({ lingerMs: 5, maxHoldMs: bad })),
        (err: unknown) => err instanceof RangeError && /maxHoldMs/.test(err.message),
        `maxHoldMs ${bad}`,
      );
    }
    // The bounds themselves are allowed.
    new CoalescingRowWriter(writer, options({ maxInFlight: 1, lingerMs: 5, maxHoldMs: 5 }));
    new CoalescingRowWriter(writer, options({ maxInFlight: 100, maxHoldMs: 60_000 }));
  });
});

describe('CoalescingRowWriter group commit (calls in flight per table)', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => {
    clock = sinon.useFakeTimers();
  });
  afterEach(() => {
    clock.restore();
  });

  it('gathers the rows that arrive while a call is in flight and sends them in one call when it settles', async () => {
    const { writer, insertRows, calls } = manualWriter();
    const coalescing = new CoalescingRowWriter(writer, options({ lingerMs: 5 }));
    const a = track(coalescing.insertRows(silver, [row('a')]));
    await clock.tickAsync(5);
    assert.equal(insertRows.callCount, 1, 'a lone row goes after the linger');
    assert.equal(calls[0]?.at, 5);

    const b = track(coalescing.insertRows(silver, [row('b')]));
    await clock.tickAsync(20);
    const c = track(coalescing.insertRows(silver, [row('c1'), row('c2')]));
    await clock.tickAsync(100);
    const d = track(coalescing.insertRows(silver, [row('d')]));
    await clock.tickAsync(300);
    // Long past the linger, but the table's one call is still in flight: the rows wait, together.
    assert.equal(insertRows.callCount, 1);
    assert.equal(coalescing.waitingRows, 4);
    assert.equal(coalescing.callsInFlight(silver), 1);

    calls[0]?.succeed();
    await clock.tickAsync(0);
    assert.equal(insertRows.callCount, 2, 'the waiting batch goes when the call settles');
    assert.deepEqual(calls[1]?.ids, ['b', 'c1', 'c2', 'd']);
    assert.equal(calls[1]?.at, 425, 'at once, without another linger');
    assert.equal(a.status, 'fulfilled');
    assert.deepEqual([b.status, c.status, d.status], ['pending', 'pending', 'pending']);

    calls[1]?.succeed();
    await clock.tickAsync(0);
    assert.deepEqual(c.value, [{ ok: true }, { ok: true }]);
    assert.deepEqual([b.status, d.status], ['fulfilled', 'fulfilled']);
    assert.equal(coalescing.callsInFlight(silver), 0);
    assert.equal(coalescing.waitingRows, 0);

    // Light load again: a lone row pays only the linger.
    coalescing.insertRows(silver, [row('e')]).catch(() => undefined);
    await clock.tickAsync(4);
    assert.equal(insertRows.callCount, 2);
    await clock.tickAsync(1);
    assert.equal(insertRows.callCount, 3);
    assert.deepEqual(calls[2]?.ids, ['e']);
  });

  it('sends a full batch, and a caller too big to share, at once while a call is in flight', async () => {
    const { writer, insertRows, calls } = manualWriter();
    const coalescing = new CoalescingRowWriter(writer, options({ maxRows: 3 }));
    void coalescing.insertRows(silver, [row('a')]);
    await clock.tickAsync(5);
    assert.equal(insertRows.callCount, 1);

    // maxRows reached: goes at once, though a call is in flight.
    void coalescing.insertRows(silver, [row('b')]);
    void coalescing.insertRows(silver, [row('c'), row('d')]);
    assert.equal(insertRows.callCount, 2);
    assert.deepEqual(calls[1]?.ids, ['b', 'c', 'd']);

    // The next caller would overflow the open batch: the open batch goes at once.
    void coalescing.insertRows(silver, [row('e1'), row('e2')]);
    void coalescing.insertRows(silver, [row('f1'), row('f2')]);
    assert.equal(insertRows.callCount, 3);
    assert.deepEqual(calls[2]?.ids, ['e1', 'e2']);

    // Too big to share a call: alone, at once.
    void coalescing.insertRows(silver, [row('g1'), row('g2'), row('g3'), row('g4')]);
    assert.equal(insertRows.callCount, 4);
    assert.deepEqual(calls[3]?.ids, ['g1', 'g2', 'g3', 'g4']);
    assert.ok(calls.every((c) => c.at === 5));
    assert.equal(coalescing.callsInFlight(silver), 4);

    // f waits behind the calls in flight; every one must settle before it goes (maxInFlight 1).
    await clock.tickAsync(100);
    assert.equal(insertRows.callCount, 4);
    for (const call of calls.slice(0, 3)) call.succeed();
    await clock.tickAsync(0);
    assert.equal(insertRows.callCount, 4, '1 call still in flight: f keeps waiting');
    calls[3]?.succeed();
    await clock.tickAsync(0);
    assert.equal(insertRows.callCount, 5);
    assert.deepEqual(calls[4]?.ids, ['f1', 'f2']);
  });

  it('sends a waiting batch maxHoldMs after its first row although the call in flight never settles', async () => {
    const { writer, insertRows, calls } = manualWriter();
    const coalescing = new CoalescingRowWriter(writer, options({ lingerMs: 5, maxHoldMs: 200 }));
    void coalescing.insertRows(silver, [row('a')]);
    await clock.tickAsync(5); // a's call goes, and hangs.
    await clock.tickAsync(5);
    void coalescing.insertRows(silver, [row('b')]); // opens a batch at 10
    await clock.tickAsync(150);
    void coalescing.insertRows(silver, [row('c')]);
    await clock.tickAsync(49);
    assert.equal(insertRows.callCount, 1, 'held behind the call in flight until 210');
    await clock.tickAsync(1);
    assert.equal(insertRows.callCount, 2);
    assert.deepEqual(calls[1]?.ids, ['b', 'c']);
    assert.equal(calls[1]?.at, 210);
    assert.equal(coalescing.callsInFlight(silver), 2);

    // With maxHoldMs equal to the linger, a batch never waits past the linger.
    const short = manualWriter();
    const noHold = new CoalescingRowWriter(short.writer, options({ lingerMs: 5, maxHoldMs: 5 }));
    void noHold.insertRows(silver, [row('x')]);
    await clock.tickAsync(5);
    void noHold.insertRows(silver, [row('y')]);
    await clock.tickAsync(5);
    assert.equal(short.insertRows.callCount, 2);
    assert.deepEqual(short.calls[1]?.ids, ['y']);
  });

  it('frees the slot of a failed call (the waiting batch goes) and fails only that call’s callers', async () => {
    const { writer, insertRows, calls } = manualWriter();
    const coalescing = new CoalescingRowWriter(writer, options());
    const a = track(coalescing.insertRows(silver, [row('a')]));
    const b = track(coalescing.insertRows(silver, [row('b')]));
    await clock.tickAsync(5);
    const c = track(coalescing.insertRows(silver, [row('c')]));
    await clock.tickAsync(50);
    assert.equal(insertRows.callCount, 1);

    const failure = new TransientError('insertAll offvia_silver.fact_bookings', 'HTTP 503');
    calls[0]?.fail(failure);
    await clock.tickAsync(0);
    assert.equal(a.status, 'rejected');
    assert.equal(a.reason, failure);
    assert.equal(b.reason, failure);
    assert.equal(c.status, 'pending', 'c was not in the failed call');
    assert.equal(insertRows.callCount, 2);
    assert.deepEqual(calls[1]?.ids, ['c']);
    assert.equal(calls[1]?.at, 55);
    assert.equal(coalescing.callsInFlight(silver), 1, 'the failed call released its slot once');

    calls[1]?.succeed();
    await clock.tickAsync(0);
    assert.deepEqual(c.value, [{ ok: true }]);
    assert.equal(coalescing.callsInFlight(silver), 0);
  });

  it('releases the slot when the wrapped writer throws synchronously', async () => {
    const insertRows = sinon.stub<[TableRef, readonly InsertRow[]], Promise<RowResult[]>>();
    insertRows.onFirstCall().throws(new Error('boom'));
    insertRows.callsFake((_t, rows) => Promise.resolve(rows.map(() => ({ ok: true }) as const)));
    const coalescing = new CoalescingRowWriter({ insertRows }, options());
    const a = assert.rejects(coalescing.insertRows(silver, [row('a')]), /boom/);
    await clock.tickAsync(5);
    await a;
    assert.equal(coalescing.callsInFlight(silver), 0);
    const b = coalescing.insertRows(silver, [row('b')]);
    await clock.tickAsync(5);
    assert.deepEqual(await b, [{ ok: true }]);
    assert.equal(insertRows.callCount, 2);
  });

  it('keeps the in-flight cap per table: one table’s call does not hold another’s rows', async () => {
    const { writer, insertRows, calls } = manualWriter();
    const coalescing = new CoalescingRowWriter(writer, options());
    void coalescing.insertRows(silver, [row('s1')]);
    await clock.tickAsync(5);
    void coalescing.insertRows(silver, [row('s2')]);
    void coalescing.insertRows(quarantine, [row('q1')]);
    await clock.tickAsync(5);
    assert.equal(
      insertRows.callCount,
      2,
      'quarantine goes after its linger; s2 waits for silver’s call',
    );
    assert.equal(calls[1]?.table, quarantine);
    assert.deepEqual(calls[1]?.ids, ['q1']);
    assert.equal(calls[1]?.at, 10);
    assert.equal(coalescing.waitingRows, 1);

    calls[1]?.succeed(); // quarantine's call settling does not release silver's batch
    await clock.tickAsync(0);
    assert.equal(insertRows.callCount, 2);
    calls[0]?.succeed();
    await clock.tickAsync(0);
    assert.equal(insertRows.callCount, 3);
    assert.equal(calls[2]?.table, silver);
    assert.deepEqual(calls[2]?.ids, ['s2']);
  });

  it('with maxInFlight 2, runs two calls for a table at once and holds the third batch', async () => {
    const { writer, insertRows, calls } = manualWriter();
    const coalescing = new CoalescingRowWriter(writer, options({ maxInFlight: 2 }));
    void coalescing.insertRows(silver, [row('a')]);
    await clock.tickAsync(5);
    void coalescing.insertRows(silver, [row('b')]);
    await clock.tickAsync(5);
    assert.equal(insertRows.callCount, 2, 'second call goes after its linger: 1 < 2 in flight');
    assert.equal(calls[1]?.at, 10);
    assert.equal(coalescing.callsInFlight(silver), 2);

    void coalescing.insertRows(silver, [row('c')]);
    await clock.tickAsync(5);
    void coalescing.insertRows(silver, [row('d')]);
    await clock.tickAsync(500);
    assert.equal(insertRows.callCount, 2, 'the third batch waits while 2 calls are in flight');

    calls[1]?.succeed();
    await clock.tickAsync(0);
    assert.equal(insertRows.callCount, 3);
    assert.deepEqual(calls[2]?.ids, ['c', 'd']);
    assert.equal(calls[2]?.at, 515);
  });
});
