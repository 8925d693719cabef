// PaneEmitter's bad-data path: a pane row BigQuery refuses goes to bad data, and its paneRowRefused line (one per
// bad-data row, counted by the bad-data-rows metric) is written only once that insert succeeded.
import assert from 'node:assert/strict';
import { TransientError } from '../../../shared/errors';
import { type LogEntry, Logger } from '../../../shared/logging/logger';
import type { InsertRow, RowResult, RowWriter } from '../../../shared/sinks/row-writer';
import { PaneEmitter } from '../../../shared/state/pane-emitter';
import type { OutboxPane } from '../../../shared/state/window-store';
import type { TableRef } from '../../../shared/config/env';

const GOLD: TableRef = { datasetId: 'offvia_gold', tableId: 'route_panes' };
const BAD: TableRef = { datasetId: 'offvia_quarantine', tableId: 'bad_data' };

function pane(insertId: string): OutboxPane {
  return {
    key: 'JFK-LHR-USD',
    window: { startMs: 0, endMs: 60_000 },
    insertId,
    row: { insert_id: insertId },
    timing: 'ON_TIME',
    index: 0,
    isLast: false,
    createdAtMs: 1_000,
  };
}

/** Gold refuses every row; the bad-data insert succeeds, is refused, or fails as a call. */
function setup(badData: 'ok' | 'refused' | 'throws') {
  const entries: LogEntry[] = [];
  const calls: { table: string; rows: readonly InsertRow[] }[] = [];
  const writer: RowWriter = {
    insertRows(table, rows): Promise<RowResult[]> {
      calls.push({ table: table.tableId, rows });
      if (table.tableId === GOLD.tableId) {
        return Promise.resolve(
          rows.map(() => ({ ok: false, kind: 'rejected', error: 'invalid', missingFields: [] })),
        );
      }
      if (badData === 'throws') return Promise.reject(new TransientError('insertAll', 'down'));
      return Promise.resolve(
        rows.map(() =>
          badData === 'ok'
            ? { ok: true }
            : { ok: false, kind: 'rejected', error: 'too', missingFields: [] },
        ),
      );
    },
  };
  const deleted: string[] = [];
  const emitter = new PaneEmitter({
    pipeline: 'bookings',
    writer,
    goldTable: GOLD,
    badDataTable: BAD,
    projectId: 'p',
    store: {
      deleteOutbox: (ids: readonly string[]) => {
        deleted.push(...ids);
        return Promise.resolve();
      },
    },
    logger: new Logger(
      't',
      (e) => entries.push(e),
      () => 0,
    ),
    now: () => 2_000,
  });
  const refusedLines = (): LogEntry[] =>
    entries.filter((e) => e.message === 'pane row refused by BigQuery, routed to bad data');
  return { emitter, calls, deleted, refusedLines };
}

describe('PaneEmitter bad-data routing', () => {
  it('logs paneRowRefused once per row, after the bad-data insert succeeded', async () => {
    const { emitter, calls, deleted, refusedLines } = setup('ok');
    const result = await emitter.emit([pane('a'), pane('b')]);
    assert.deepEqual(result, { written: 0, badData: 2 });
    assert.deepEqual(
      calls.map((c) => c.table),
      ['route_panes', 'bad_data'],
    );
    assert.deepEqual(
      refusedLines().map((e) => e.insert_id),
      ['a', 'b'],
    );
    assert.deepEqual(deleted, ['a', 'b']);
  });

  for (const outcome of ['refused', 'throws'] as const) {
    it(`logs no paneRowRefused and keeps the outbox when the bad-data insert is ${outcome === 'throws' ? 'a failed call' : 'refused'}`, async () => {
      const { emitter, deleted, refusedLines } = setup(outcome);
      await assert.rejects(emitter.emit([pane('a')]), TransientError);
      assert.equal(refusedLines().length, 0);
      assert.deepEqual(deleted, []);
    });
  }
});
