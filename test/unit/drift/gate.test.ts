// RetryStoreDriftGate with an in-memory store, a fake table admin and an injected clock; and its place in ingest.
import assert from 'node:assert/strict';
import sinon from 'sinon';
import { BigQuery, Table } from '@google-cloud/bigquery';
import {
  MAX_RETRY_ROW_BYTES,
  ProposalMerger,
  RetryStoreDriftGate,
  TableSchemaCache,
  retryRowId,
} from '../../../shared/drift';
import {
  ingestPipelineMessage as ingestMessage,
  type PipelineIngestDeps,
} from '../../../shared/pipeline/runtime/ingest';
import { bookingIngestDeps } from '../../support/booking-ingest';
import { Logger } from '../../../shared/logging/logger';
import { schemaWindowOf } from '../../../shared/schema';
import { BigQueryRowWriter } from '../../../shared/sinks/bigquery-writer';
import {
  BAD_DATA,
  PROJECT,
  SILVER,
  SILVER_FIELDS,
  SILVER_KEY,
  bookingPayload,
  driftConfig,
  messageOf,
} from '../../support/drift-fixtures';
import { driftRig, routeThrough } from '../../support/drift-rig';

const T0 = Date.UTC(2026, 9, 7, 14, 10, 30);

function setup(
  options: { fields?: typeof SILVER_FIELDS; config?: Parameters<typeof driftConfig>[0] } = {},
) {
  return driftRig({ ...options, startMs: T0 });
}

/** Routes through `gate` received at `receivedAtMs`, by default T0 whatever the clock says. */
function route(gate: RetryStoreDriftGate, payload: string, messageId: string, receivedAtMs = T0) {
  return routeThrough(gate, payload, messageId, receivedAtMs);
}

describe('RetryStoreDriftGate.route', () => {
  it('writes an event without extra fields with no I/O at all', async () => {
    const { gate, admin, store } = setup();
    const { out } = await route(gate, bookingPayload(1), 'm1');
    assert.deepEqual(out, { action: 'write', extraColumns: {} });
    assert.equal(admin.getSchemaCalls, 0);
    assert.equal(store.calls.putRow + store.calls.mergeProposal, 0);
  });

  it('writes extra fields that are columns as values (one schema read for many events)', async () => {
    const { gate, admin } = setup({
      fields: [...SILVER_FIELDS, { name: 'promo_code', type: 'STRING', mode: 'NULLABLE' }],
    });
    const outs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        route(gate, bookingPayload(i, { promo_code: `P${i}` }), `m${i}`),
      ),
    );
    assert.deepEqual(outs[3]?.out, { action: 'write', extraColumns: { promo_code: 'P3' } });
    assert.equal(admin.getSchemaCalls, 1);
  });

  it('holds a row with a new field: row in the retry store, proposal merged into the current window', async () => {
    const { gate, store, clock } = setup();
    const payload = bookingPayload(7, { loyalty_points: 5, promo_code: 'SUMMER' });
    clock.set(T0 + 250);
    const { event, out } = await route(gate, payload, 'm7');
    assert.equal(out.action, 'held');
    const window = schemaWindowOf(T0 + 250, 3);
    const table = store.table(SILVER_KEY);
    const change = table.changes.get(window.id);
    assert.deepEqual(
      [...(change?.proposed ?? [])],
      [
        ['loyalty_points', { ok: true, type: 'INT64' }],
        ['promo_code', { ok: true, type: 'STRING' }],
      ],
    );
    const row = table.rows.get(retryRowId(event.eventId));
    assert.ok(row);
    assert.equal(row.processedTimestampMs, T0, 'processed_timestamp is the receipt time');
    assert.equal(row.insertId, event.eventId);
    assert.equal(row.sourceMessageId, 'm7');
    assert.equal(row.targetTable, SILVER_KEY);
    assert.equal(row.windowId, window.id);
    assert.deepEqual(JSON.parse(row.rowJson), { ...event.row, event_id: event.eventId });
    assert.deepEqual(JSON.parse(row.extraFieldsJson), { loyalty_points: 5, promo_code: 'SUMMER' });
    assert.deepEqual(
      row.errors.map((e) => e.code),
      ['NO_COLUMN', 'NO_COLUMN'],
    );
  });

  it('keeps the first processed_timestamp when a held event is redelivered', async () => {
    const { gate, store } = setup();
    const payload = bookingPayload(8, { loyalty_points: 5 });
    const { event } = await route(gate, payload, 'm8', T0);
    await route(gate, payload, 'm8', T0 + 60_000);
    const rows = [...store.table(SILVER_KEY).rows.values()];
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.processedTimestampMs, T0);
    assert.equal(rows[0]?.insertId, event.eventId);
  });

  it('sends a row with a permanent error to bad data at ingest, with every reason, proposing nothing', async () => {
    const { gate, store, writer, lines } = setup();
    const { event, out } = await route(
      gate,
      bookingPayload(9, { select: 1, 'bad-name': 2, fare_amount: 3, ok_field: true }),
      'm9',
    );
    assert.equal(out.action, 'bad_data');
    assert.equal(out.action === 'bad_data' && out.targetDest, SILVER_KEY);
    assert.equal(store.table(SILVER_KEY).rows.size, 0, 'nothing waits for a budget it cannot use');
    assert.equal(store.table(SILVER_KEY).changes.size, 0, 'nothing is proposed');
    const [bad] = writer.rows(BAD_DATA);
    assert.equal(bad?.json.insert_id, event.eventId);
    assert.equal(bad?.json.retry_count, 0);
    assert.equal(bad?.json.source_message_id, 'm9');
    // Permanent reasons first, then the rest; every field is accounted for.
    assert.match(
      String(bad?.json.error),
      /^RESERVED_KEYWORD: .*"select".*; ILLEGAL_CHARACTERS: .*"bad-name".*; PROTECTED_NAME: .*"fare_amount".*; NO_COLUMN: .*"ok_field"/,
    );
    assert.match(
      String(bad?.json.bad_data),
      /"extra_fields":\{"select":1,"bad-name":2,"fare_amount":3,"ok_field":true\}/,
    );
    assert.ok(
      lines.some(
        (l) => l.message === 'row with a permanent schema error, routed to bad data at ingest',
      ),
    );
  });

  it('never proposes a name special to JavaScript objects: __proto__ and constructor make the row bad data', async () => {
    const { gate, store, writer } = setup();
    const { out } = await route(
      gate,
      bookingPayload(10, { ['__proto__']: { isAdmin: true }, constructor: 'x' }),
      'm10',
    );
    assert.equal(out.action, 'bad_data');
    assert.equal(store.table(SILVER_KEY).changes.size, 0, 'nothing is proposed');
    const [bad] = writer.rows(BAD_DATA);
    assert.match(String(bad?.json.error), /^JS_SPECIAL_NAME: .*"__proto__".*"constructor"/);
  });

  it('holds (does not reject) a row whose errors may still clear: a column an operator may widen', async () => {
    const { gate, store, writer } = setup({
      fields: [...SILVER_FIELDS, { name: 'points', type: 'INT64', mode: 'NULLABLE' }],
    });
    const { event } = await route(gate, bookingPayload(9, { points: 1.5 }), 'm9');
    assert.equal(writer.rows(BAD_DATA).length, 0);
    const row = store.table(SILVER_KEY).rows.get(retryRowId(event.eventId));
    assert.deepEqual(
      row?.errors.map((e) => e.code),
      ['NEEDS_COLUMN_WIDENING'],
    );
  });

  it('sends a STRING for an INT64 column to bad data at ingest (no change BigQuery allows makes it fit)', async () => {
    const { gate, store, writer } = setup({
      fields: [...SILVER_FIELDS, { name: 'points', type: 'INT64', mode: 'NULLABLE' }],
    });
    await route(gate, bookingPayload(9, { points: 'many' }), 'm9');
    assert.equal(store.table(SILVER_KEY).rows.size, 0);
    assert.match(
      String(writer.rows(BAD_DATA)[0]?.json.error),
      /^INCOMPATIBLE_WITH_COLUMN: field "points" has a STRING value; column is NULLABLE INT64$/,
    );
  });

  it('writes an INT64 beyond 2^53 exactly, and stores a held big integer with every digit', async () => {
    const { gate, store } = setup({
      fields: [...SILVER_FIELDS, { name: 'ext_id', type: 'INT64', mode: 'NULLABLE' }],
    });
    const text = (extra: string) => bookingPayload(1).replace('{', `{${extra},`);
    const { out } = await route(gate, text('"ext_id":9007199254740993'), 'm1');
    assert.deepEqual(out, { action: 'write', extraColumns: { ext_id: '9007199254740993' } });

    const { event } = await route(gate, text('"bignum":123456789012345678901234567890'), 'm2');
    const row = store.table(SILVER_KEY).rows.get(retryRowId(event.eventId));
    assert.equal(row?.extraFieldsJson, '{"bignum":123456789012345678901234567890}');
    const [change] = store.table(SILVER_KEY).changes.values();
    assert.deepEqual([...(change?.proposed ?? [])], [['bignum', { ok: true, type: 'BIGNUMERIC' }]]);
  });

  it('logs null extra fields that are no column once, at INFO, and writes the row without them', async () => {
    const { gate, lines, store } = setup();
    const { out } = await route(gate, bookingPayload(1, { gift: null, note: null }), 'm1');
    assert.deepEqual(out, { action: 'write', extraColumns: {} });
    assert.equal(store.table(SILVER_KEY).rows.size, 0);
    const logged = lines.filter((l) => l.message === 'null extra fields left out of the row');
    assert.equal(logged.length, 1);
    assert.equal(logged[0]?.severity, 'INFO');
    assert.deepEqual(logged[0]?.null_fields, ['gift', 'note']);
  });

  it('re-reads a cached schema older than 5 s before holding, so a column just added is used', async () => {
    const { gate, admin, clock } = setup({ config: { schemaCacheTtlMs: 60_000 } });
    await route(gate, bookingPayload(1, { promo_code: 'A' }), 'a'); // held; schema cached at T0
    admin.schemas.get('offvia_silver.fact_bookings')?.push({
      name: 'promo_code',
      type: 'STRING',
      mode: 'NULLABLE',
    });
    clock.set(T0 + 6000);
    const { out } = await route(gate, bookingPayload(2, { promo_code: 'B' }), 'b', T0 + 6000);
    assert.deepEqual(out, { action: 'write', extraColumns: { promo_code: 'B' } });
    assert.equal(admin.getSchemaCalls, 2);
  });

  it('marks fields past the window proposal cap as PROPOSAL_CAP on the row', async () => {
    const { gate, store } = setup({ config: { maxProposedFieldsPerWindow: 2 } });
    const { event } = await route(gate, bookingPayload(1, { a_1: 1, b_1: 1, c_1: 1 }), 'm1');
    const row = store.table(SILVER_KEY).rows.get(retryRowId(event.eventId));
    assert.deepEqual(
      row?.errors.map((e) => [e.field, e.code]),
      [
        ['a_1', 'NO_COLUMN'],
        ['b_1', 'NO_COLUMN'],
        ['c_1', 'PROPOSAL_CAP'],
      ],
    );
  });

  it('sends a row too large for a Firestore document straight to bad data, with the reason', async () => {
    const { gate, writer, store } = setup();
    const { event, out } = await route(
      gate,
      bookingPayload(1, { big_text: 'x'.repeat(MAX_RETRY_ROW_BYTES) }),
      'm-big',
    );
    assert.equal(out.action, 'bad_data');
    assert.match(
      out.action === 'bad_data' ? out.error : '',
      /more than the schema-retry store holds/,
    );
    const [bad] = writer.rows(BAD_DATA);
    assert.equal(bad?.json.insert_id, event.eventId);
    assert.match(String(bad?.json.error), /more than the schema-retry store holds/);
    assert.equal(store.table(SILVER_KEY).rows.size, 0);
  });

  it('lets a store failure propagate (redelivery) and logs it with the message id', async () => {
    const { gate, store, lines } = setup();
    sinon.stub(store, 'putRow').rejects(new Error('unavailable'));
    await assert.rejects(route(gate, bookingPayload(1, { x_1: 1 }), 'm-fail'), /unavailable/);
    assert.ok(lines.some((l) => l.outcome === 'retry' && l.message_id === 'm-fail'));
    sinon.restore();
  });

  it('refuses to serve a target that is not configured', () => {
    const { store, admin, writer, lines } = setup();
    const config = driftConfig({ targetTables: [{ datasetId: 'other', tableId: 't' }] });
    assert.throws(
      () =>
        new RetryStoreDriftGate({
          config,
          store,
          schemas: new TableSchemaCache(admin, 0, Date.now),
          merger: new ProposalMerger(store, 3, 200, Date.now),
          writer,
          badDataTable: BAD_DATA,
          target: SILVER,
          projectId: PROJECT,
          logger: new Logger('t', (e) => lines.push(e)),
          now: Date.now,
        }),
      /not a configured target table/,
    );
  });
});

describe('booking ingest with the drift gate', () => {
  afterEach(() => sinon.restore());

  function ingestDeps(
    gate: RetryStoreDriftGate,
    writer: PipelineIngestDeps['writer'],
  ): PipelineIngestDeps {
    return bookingIngestDeps({
      writer,
      env: { OFFVIA_PROJECT_ID: PROJECT },
      logger: new Logger('test', () => undefined),
      now: () => T0,
      schemaDrift: gate,
    });
  }

  it('answers schema_retry for a held event and writes nothing to Silver', async () => {
    const { gate, writer } = setup();
    const out = await ingestMessage(
      { ok: true, message: messageOf(bookingPayload(1, { loyalty_points: 3 }), 'm1') },
      ingestDeps(gate, writer),
    );
    assert.equal(out.destination, 'schema_retry');
    assert.equal(writer.rows(SILVER).length, 0);
  });

  it('holds a row BigQuery refuses with "no such field" (stale cache) instead of sending it to bad data', async () => {
    // The real writer against BigQuery's documented insertAll response for an unknown field.
    const request = sinon.stub(Table.prototype, 'request').resolves([
      {
        insertErrors: [
          {
            index: 0,
            errors: [
              { reason: 'invalid', location: 'promo_code', message: 'no such field: promo_code.' },
            ],
          },
        ],
      },
    ]);
    const { gate, store } = setup({
      fields: [...SILVER_FIELDS, { name: 'promo_code', type: 'STRING', mode: 'NULLABLE' }],
    });
    const writer = new BigQueryRowWriter(new BigQuery({ projectId: PROJECT }));
    const payload = bookingPayload(1, { promo_code: 'SUMMER' });
    const out = await ingestMessage(
      { ok: true, message: messageOf(payload, 'm1') },
      ingestDeps(gate, writer),
    );
    assert.equal(out.destination, 'schema_retry');
    sinon.assert.calledOnce(request); // one Silver insert, no bad-data insert
    const body = (
      request.firstCall.args[0] as { json: { rows: { json: Record<string, unknown> }[] } }
    ).json;
    assert.equal(body.rows[0]?.json.promo_code, 'SUMMER');
    const [row] = store.table(SILVER_KEY).rows.values();
    assert.equal(row?.errors[0]?.code, 'INSERT_REJECTED');
    assert.match(row?.errors[0]?.reason ?? '', /no such field: promo_code/);
    assert.ok(
      !('promo_code' in JSON.parse(row?.rowJson ?? '{}')),
      'stored row has no extra columns',
    );
    assert.deepEqual(JSON.parse(row?.extraFieldsJson ?? '{}'), { promo_code: 'SUMMER' });
  });

  it('still sends other refusals to bad data', async () => {
    // First the Silver insert (refused as data, not for an unknown field), then the bad-data insert.
    const request = sinon.stub(Table.prototype, 'request');
    request.onFirstCall().resolves([
      {
        insertErrors: [
          { index: 0, errors: [{ reason: 'invalid', message: 'Invalid NUMERIC value: x' }] },
        ],
      },
    ]);
    request.onSecondCall().resolves([{}]);
    const { gate, store } = setup({
      fields: [...SILVER_FIELDS, { name: 'promo_code', type: 'STRING', mode: 'NULLABLE' }],
    });
    const writer = new BigQueryRowWriter(new BigQuery({ projectId: PROJECT }));
    const out = await ingestMessage(
      { ok: true, message: messageOf(bookingPayload(1, { promo_code: 'S' }), 'm1') },
      ingestDeps(gate, writer),
    );
    assert.equal(out.destination, 'bad_data');
    assert.equal(store.table(SILVER_KEY).rows.size, 0);
  });

  it('writes a column named __proto__ as a column, not as a prototype', async () => {
    const { gate, writer } = setup({
      fields: [...SILVER_FIELDS, { name: '__proto__', type: 'INT64', mode: 'NULLABLE' }],
    });
    const payload = bookingPayload(1).replace(/}$/, ',"__proto__":42}');
    const out = await ingestMessage(
      { ok: true, message: messageOf(payload, 'm1') },
      ingestDeps(gate, writer),
    );
    assert.equal(out.destination, 'silver');
    const [row] = writer.rows(SILVER);
    assert.ok(row && Object.hasOwn(row.json, '__proto__'));
    assert.match(JSON.stringify(row.json), /"__proto__":42/);
  });
});
