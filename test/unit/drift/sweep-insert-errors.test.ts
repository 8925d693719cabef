// The schema sweep against BigQuery's per-row insertErrors (invalid, stopped, timeout) and whole-call failures:
// the real BigQueryRowWriter and client, stubbed at the HTTP edge with BigQuery's documented response shapes
// (the local emulator fails the whole call with HTTP 500 instead of answering per row).
import assert from 'node:assert/strict';
import sinon from 'sinon';
import { BigQuery, Table } from '@google-cloud/bigquery';
import type { SchemaDriftConfig } from '../../../shared/config/schema-drift-config';
import { runSchemaSweep } from '../../../shared/drift';
import { BigQueryRowWriter } from '../../../shared/sinks/bigquery-writer';
import {
  AFTER_W0,
  BAD_DATA,
  MIN,
  PROJECT,
  SILVER,
  W0,
  bookingPayload,
} from '../../support/drift-fixtures';
import { driftRig } from '../../support/drift-rig';

/** One insertAll request as BigQuery received it. */
interface InsertAllCall {
  readonly table: string;
  readonly insertIds: string[];
}

/** What BigQuery says about one row of a request: written, or one insertErrors reason with its message. */
type RowAnswer = null | { reason: string; message: string };

/**
 * A BigQuery insertAll endpoint in memory, behind the real client (`Table.prototype.request`). `answer` decides
 * each row; `allOrNothing` models a request in which one `invalid` row stops the others: every other row gets
 * reason `stopped` and nothing is written (BigQuery's "None of the rows inserted successfully" response).
 * `failCall` makes a whole call fail with an HTTP error (e.g. 503 backendError).
 */
class InsertAllStub {
  readonly calls: InsertAllCall[] = [];
  readonly written = new Map<string, { insertId: string; json: Record<string, unknown> }[]>();
  answer: (table: string, json: Record<string, unknown>, call: number) => RowAnswer = () => null;
  allOrNothing = false;
  failCall: (table: string) => Error | null = () => null;

  install(): void {
    // The client calls `request` with the table as `this` and awaits its promise (as the writer test stubs it).
    const stub = sinon.stub(Table.prototype, 'request') as unknown as sinon.SinonStub<
      [unknown],
      Promise<unknown[]>
    >;
    const respond = (table: string, reqOpts: unknown) => this.respond(table, reqOpts);
    stub.callsFake(function (this: Table, reqOpts: unknown) {
      return respond(`${this.dataset.id ?? ''}.${this.id ?? ''}`, reqOpts);
    });
  }

  private respond(table: string, reqOpts: unknown): Promise<unknown[]> {
    const body = (
      reqOpts as { json: { rows: { insertId: string; json: Record<string, unknown> }[] } }
    ).json;
    this.calls.push({ table, insertIds: body.rows.map((r) => r.insertId) });
    const failure = this.failCall(table);
    if (failure !== null) return Promise.reject(failure);
    const answers = body.rows.map((r) => this.answer(table, r.json, this.calls.length));
    const stopsAll = this.allOrNothing && answers.some((a) => a?.reason === 'invalid');
    const insertErrors: { index: number; errors: { reason: string; message: string }[] }[] = [];
    body.rows.forEach((row, index) => {
      const a = answers[index] ?? null;
      if (a !== null) insertErrors.push({ index, errors: [a] });
      else if (stopsAll) insertErrors.push({ index, errors: [{ reason: 'stopped', message: '' }] });
      else this.written.set(table, [...(this.written.get(table) ?? []), row]);
    });
    return Promise.resolve([
      insertErrors.length === 0
        ? { kind: 'bigquery#tableDataInsertAllResponse' }
        : { kind: 'bigquery#tableDataInsertAllResponse', insertErrors },
    ]);
  }

  rows(table: string) {
    return this.written.get(table) ?? [];
  }
}

const SILVER_ID = `${SILVER.datasetId}.${SILVER.tableId}`;
const BAD_ID = `${BAD_DATA.datasetId}.${BAD_DATA.tableId}`;

/**
 * An `answer` that refuses Silver's row of booking `bookingId` with insertErrors `reason` and `message`, on every
 * call or only on call number `onCall` (1-based); every other row is written.
 */
function refuseInSilver(
  bookingId: string,
  reason: string,
  message: string,
  onCall?: number,
): InsertAllStub['answer'] {
  return (table, json, call) =>
    table === SILVER_ID &&
    json.booking_id === bookingId &&
    (onCall === undefined || call === onCall)
      ? { reason, message }
      : null;
}

function setup(overrides: Partial<SchemaDriftConfig> = {}) {
  const rig = driftRig({
    config: overrides,
    writer: new BigQueryRowWriter(new BigQuery({ projectId: PROJECT })),
    startMs: W0,
    schemaTtlMs: 0,
  });
  const { store, lines, deps, clock, leaseClock } = rig;
  return {
    store,
    lines,
    deps,
    /** Holds booking `i` with an extra field at `atMs`; the row waits for its column. */
    async hold(i: number, extra: Record<string, unknown>, atMs: number) {
      clock.set(atMs);
      const { event, out } = await rig.route(bookingPayload(i, extra), `m-${i}`, atMs);
      assert.equal(out.action, 'held', `booking ${i} waits for its column`);
      return event.eventId;
    },
    at(ms: number) {
      clock.set(ms);
      leaseClock.set(leaseClock.now() + 60_000);
    },
    waiting: rig.waiting,
  };
}

describe('runSchemaSweep and BigQuery per-row insert errors', () => {
  let bq: InsertAllStub;
  beforeEach(() => {
    bq = new InsertAllStub();
    bq.install();
  });
  afterEach(() => sinon.restore());

  it('one `invalid` row among `stopped` neighbours: finished within ONE sweep (bad data, Silver, nothing waiting)', async () => {
    const s = setup();
    for (let i = 0; i < 6; i++) await s.hold(i, { promo_code: `P${i}` }, W0 + i * 1000);
    bq.allOrNothing = true;
    bq.answer = refuseInSilver(
      'BK-3',
      'invalid',
      'Invalid NUMERIC value: 1e400 Field: fare_amount; Value: 1e400',
    );
    s.at(AFTER_W0);
    const result = await runSchemaSweep(s.deps);

    const [table] = result.tables;
    assert.equal(result.ok, true, table?.error ?? '');
    assert.equal(table?.status, 'swept');
    assert.deepEqual(table?.rows, { inserted: 5, waiting: 0, badData: 1, malformed: 0 });
    assert.deepEqual(
      bq.rows(SILVER_ID).map((r) => r.json.booking_id),
      ['BK-0', 'BK-1', 'BK-2', 'BK-4', 'BK-5'],
    );
    const [bad] = bq.rows(BAD_ID);
    assert.equal(bq.rows(BAD_ID).length, 1);
    assert.equal(bad?.json.source_message_id, 'm-3');
    assert.match(String(bad?.json.error), /^INSERT_INVALID: invalid: Invalid NUMERIC value: 1e400/);
    assert.equal(s.waiting().length, 0, 'nothing left waiting');
    // The first call was refused as a whole; the stopped rows went again at once, without the invalid one.
    const silverCalls = bq.calls.filter((c) => c.table === SILVER_ID);
    assert.equal(silverCalls.length, 2);
    assert.equal(silverCalls[0]?.insertIds.length, 6);
    assert.equal(silverCalls[1]?.insertIds.length, 5);
    assert.ok(
      s.lines.some((l) => l.message === 'row refused by BigQuery as invalid, written to bad data'),
    );
    assert.ok(s.lines.some((l) => l.message === 'waiting rows not written, re-sent at once'));
  });

  it('an `invalid` row (skipInvalidRows: its neighbours written) goes to bad data at once, not after the budget', async () => {
    const s = setup({ retryMinutes: 30 });
    for (let i = 0; i < 3; i++) await s.hold(i, { promo_code: `P${i}` }, W0 + i * 1000);
    bq.answer = refuseInSilver(
      'BK-1',
      'invalid',
      'Invalid NUMERIC value: 12345678901234567890123456789012345678901',
    );
    s.at(AFTER_W0);
    const [table] = (await runSchemaSweep(s.deps)).tables;
    assert.deepEqual(table?.rows, { inserted: 2, waiting: 0, badData: 1, malformed: 0 });
    const [bad] = bq.rows(BAD_ID);
    assert.equal(bad?.json.source_message_id, 'm-1');
    assert.equal(bad?.json.retry_count, 1, 'one window old, not the 30-minute budget');
    assert.equal(s.waiting().length, 0);
  });

  it('keeps a "no such field" refusal waiting (the new column propagating), within the budget', async () => {
    const s = setup({ retryMinutes: 30 });
    await s.hold(1, { promo_code: 'A' }, W0);
    bq.answer = (table) =>
      table === SILVER_ID ? { reason: 'invalid', message: 'no such field: promo_code.' } : null;
    s.at(AFTER_W0);
    const [table] = (await runSchemaSweep(s.deps)).tables;
    assert.deepEqual(table?.rows, { inserted: 0, waiting: 1, badData: 0, malformed: 0 });
    assert.match(s.waiting()[0]?.lastError ?? '', /^INSERT_REJECTED: invalid: no such field/);
    bq.answer = () => null;
    s.at(AFTER_W0 + MIN);
    await runSchemaSweep(s.deps);
    assert.equal(bq.rows(SILVER_ID).length, 1);
    assert.equal(s.waiting().length, 0);
  });

  it('re-sends a row BigQuery answered with `timeout` within the same sweep', async () => {
    const s = setup();
    for (let i = 0; i < 3; i++) await s.hold(i, { promo_code: `P${i}` }, W0 + i * 1000);
    bq.answer = refuseInSilver('BK-2', 'timeout', 'Timed out', 1);
    s.at(AFTER_W0);
    const result = await runSchemaSweep(s.deps);
    assert.equal(result.ok, true);
    assert.deepEqual(result.tables[0]?.rows, { inserted: 3, waiting: 0, badData: 0, malformed: 0 });
    assert.equal(bq.rows(SILVER_ID).length, 3);
  });

  it('a row never written (`backendError` on every re-send) waits, then reaches bad data when its budget is spent', async () => {
    const s = setup({ retryMinutes: 9 });
    await s.hold(1, { promo_code: 'A' }, W0);
    await s.hold(2, { promo_code: 'B' }, W0 + 1000);
    bq.answer = refuseInSilver('BK-2', 'backendError', 'Backend error. Please try again.');
    s.at(AFTER_W0);
    const first = await runSchemaSweep(s.deps);
    assert.deepEqual(first.tables[0]?.rows, { inserted: 1, waiting: 1, badData: 0, malformed: 0 });
    assert.match(s.waiting()[0]?.lastError ?? '', /^INSERT_NOT_WRITTEN: backendError/);
    const attempts = bq.calls.filter((c) => c.table === SILVER_ID && c.insertIds.length === 1);
    assert.equal(attempts.length, 2, 'two re-sends of the one row, three calls in all');

    s.at(W0 + 1000 + 9 * MIN);
    const last = await runSchemaSweep(s.deps);
    assert.deepEqual(last.tables[0]?.rows, { inserted: 0, waiting: 0, badData: 1, malformed: 0 });
    assert.match(String(bq.rows(BAD_ID)[0]?.json.error), /INSERT_NOT_WRITTEN: backendError/);
  });

  it('a Silver insert failing as a whole (HTTP 503) does not stop the budget check: old rows reach bad data', async () => {
    const s = setup({ retryMinutes: 6 });
    await s.hold(1, { promo_code: 'A' }, W0);
    bq.failCall = (table) =>
      table === SILVER_ID
        ? Object.assign(new Error('Service unavailable'), {
            code: 503,
            errors: [{ reason: 'backendError', message: 'Service unavailable' }],
          })
        : null;
    s.at(AFTER_W0);
    const first = await runSchemaSweep(s.deps);
    assert.equal(first.tables[0]?.status, 'failed', 'an operator hears of BigQuery failing');
    assert.deepEqual(first.tables[0]?.rows, { inserted: 0, waiting: 1, badData: 0, malformed: 0 });
    assert.equal(s.waiting()[0]?.retryCount, 1);

    s.at(W0 + 6 * MIN);
    const second = await runSchemaSweep(s.deps);
    assert.deepEqual(second.tables[0]?.rows, { inserted: 0, waiting: 0, badData: 1, malformed: 0 });
    assert.match(
      String(bq.rows(BAD_ID)[0]?.json.error),
      /INSERT_NOT_WRITTEN: .*Service unavailable/,
    );
    assert.equal(s.waiting().length, 0);
  });

  it('a bad-data row BigQuery refuses does not keep its `stopped` neighbours out of the bad-data table', async () => {
    const s = setup();
    for (let i = 0; i < 3; i++) await s.hold(i, { promo_code: `P${i}` }, W0 + i * 1000);
    bq.allOrNothing = true;
    // Every Silver row is refused as invalid; in the bad-data table, BK-0's row is refused too.
    bq.answer = (table, json) => {
      if (table === SILVER_ID) return { reason: 'invalid', message: 'Invalid NUMERIC value: x' };
      return String(json.bad_data).includes('"BK-0"')
        ? { reason: 'invalid', message: 'Row larger than the maximum allowed size' }
        : null;
    };
    s.at(AFTER_W0);
    const result = await runSchemaSweep(s.deps);
    assert.deepEqual(result.tables[0]?.rows, { inserted: 0, waiting: 1, badData: 2, malformed: 0 });
    assert.deepEqual(
      bq.rows(BAD_ID).map((r) => r.json.source_message_id),
      ['m-1', 'm-2'],
    );
    assert.equal(result.ok, false, 'a row with nowhere durable to go is reported');
    assert.match(s.waiting()[0]?.lastError ?? '', /bad-data table refused the row/);
  });
});
