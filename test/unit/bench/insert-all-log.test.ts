// The benchmark's count of insertAll calls from the BigQuery emulator's request log: only POSTs to the named tables,
// only from the given byte offset, and tolerant of non-JSON and half-written lines.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countInsertAllCalls } from '../../../bench/lib/stack-run';

const request = (method: string, dataset: string, table: string, verb = 'insertAll'): string =>
  JSON.stringify({
    method,
    path: `/bigquery/v2/projects/offvia-local/datasets/${dataset}/tables/${table}/${verb}`,
    status: 200,
    event: 'http.request',
  }) + '\n';

describe('bench: insertAll calls from the BigQuery emulator request log', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'offvia-bq-log-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('counts POST insertAll to the named tables after the offset, nothing else', async () => {
    const path = join(dir, 'bigquery-emulator.log');
    writeFileSync(
      path,
      'bqemulator starting\n' + request('POST', 'offvia_silver', 'fact_bookings'),
    );
    const from = statSync(path).size; // the run starts here: the line above is not counted
    appendFileSync(
      path,
      request('POST', 'offvia_silver', 'fact_bookings') +
        request('POST', 'offvia_silver', 'fact_bookings') +
        request('POST', 'offvia_quarantine', 'poisoned_events') +
        request('POST', 'offvia_bronze', 'raw_bookings') + // Bronze stand-in: not the function's
        request('POST', 'offvia_gold', 'route_panes') + // gold panes: not counted
        request('GET', 'offvia_silver', 'fact_bookings') +
        request('POST', 'offvia_silver', 'fact_bookings_dedup') + // another table, same prefix
        'Traceback (most recent call last): insertAll\n' +
        '{"method": "POST", "path": "/bigquery/v2/projects/p/datasets/offvia_silver/tables/fact_bookings/insertAll"', // cut
    );
    const calls = await countInsertAllCalls(
      { path, tables: ['offvia_silver.fact_bookings', 'offvia_quarantine.poisoned_events'] },
      from,
    );
    assert.equal(calls, 3);
  });

  it('is 0 when nothing was appended', async () => {
    const path = join(dir, 'bigquery-emulator.log');
    writeFileSync(path, request('POST', 'offvia_silver', 'fact_bookings'));
    const calls = await countInsertAllCalls(
      { path, tables: ['offvia_silver.fact_bookings'] },
      statSync(path).size,
    );
    assert.equal(calls, 0);
  });
});
