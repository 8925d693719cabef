// BigQueryTableAdmin against the BigQuery emulator, and the emulator differences it works around.
import assert from 'node:assert/strict';
import { BigQueryTableAdmin, DdlError } from '../../../shared/drift';
import { addColumnDdlStatements, addColumnsDdl, type BqField } from '../../../shared/schema';
import {
  createSilverLikeTable,
  requireStack,
  rowsOf,
  runTag,
  stackClients,
} from '../../support/drift-stack';

const ROW = {
  booking_id: 'BK-1',
  passenger_id: 'PAX-1',
  flight_number: 'OF-1',
  origin_airport: 'JFK',
  destination_airport: 'LHR',
  fare_amount: '1.5',
  currency: 'USD',
  booking_status: 'CONFIRMED',
  event_timestamp: '2026-10-07T14:10:00.000000Z',
  ingestion_timestamp: '2026-10-07T14:10:00.000000Z',
  source_message_id: 'm-1',
  event_id: 'e-1',
};

describe('integration: BigQueryTableAdmin on the BigQuery emulator', function () {
  this.timeout(60_000);
  const { projectId, bigquery } = stackClients();
  const admin = new BigQueryTableAdmin(bigquery);
  const tag = runTag();

  before(requireStack);
  // The emulator resets the connection after an HTTP 500 (the last test makes one); the next request in this
  // process, from any client, fails once with ECONNRESET. Spend that failure here, not in the next test file.
  after(async () => {
    await bigquery.getDatasets().catch(() => undefined);
  });

  it('reads the table schema (legacy API type names normalised)', async () => {
    const table = await createSilverLikeTable(bigquery, projectId, `drift_ta_read_${tag}`);
    const schema = await admin.getSchema(table);
    assert.deepEqual(schema.fields.slice(0, 1), [
      { name: 'booking_id', type: 'STRING', mode: 'REQUIRED' },
    ]);
    assert.deepEqual(
      schema.fields.find((f) => f.name === 'event_id'),
      { name: 'event_id', type: 'STRING', mode: 'NULLABLE' },
    );
    await assert.rejects(admin.getSchema({ datasetId: 'offvia_silver', tableId: `nope_${tag}` }));
  });

  it('emulator: several ALTER commands in one statement are refused (one per statement works)', async () => {
    const table = await createSilverLikeTable(bigquery, projectId, `drift_ta_multi_${tag}`);
    const columns: BqField[] = [
      { name: 'a_col', type: 'STRING', mode: 'NULLABLE' },
      { name: 'b_col', type: 'INT64', mode: 'NULLABLE' },
    ];
    await assert.rejects(
      admin.addColumns(table, columns, [addColumnsDdl({ projectId, ...table }, columns)]),
      (err: unknown) =>
        err instanceof DdlError && /Only one ALTER command per statement/.test(err.message),
    );
  });

  it('adds columns one statement each, patches the stale catalog, and rows with and without them insert', async () => {
    const table = await createSilverLikeTable(bigquery, projectId, `drift_ta_add_${tag}`);
    const columns: BqField[] = [
      { name: 'loyalty_points', type: 'INT64', mode: 'NULLABLE' },
      { name: 'promo_code', type: 'STRING', mode: 'NULLABLE' },
      { name: 'seat_pref', type: 'JSON', mode: 'NULLABLE' },
    ];
    const result = await admin.addColumns(
      table,
      columns,
      addColumnDdlStatements({ projectId, ...table }, columns),
    );
    assert.deepEqual(result.catalogPatched, ['loyalty_points', 'promo_code', 'seat_pref']);
    const schema = await admin.getSchema(table);
    assert.deepEqual(schema.fields.slice(-3), columns);
    const [info] = await bigquery.query({
      query: `SELECT column_name FROM \`${projectId}.offvia_silver.INFORMATION_SCHEMA.COLUMNS\` WHERE table_name = @t`,
      params: { t: table.tableId },
    });
    assert.ok((info as { column_name: string }[]).some((r) => r.column_name === 'seat_pref'));
    const t = bigquery.dataset(table.datasetId).table(table.tableId);
    await t.insert(
      [
        {
          insertId: 'r1',
          json: { ...ROW, loyalty_points: 5, promo_code: 'S', seat_pref: '{"aisle":true}' },
        },
        { insertId: 'r2', json: { ...ROW, booking_id: 'BK-2' } },
      ],
      { raw: true, skipInvalidRows: true },
    );
    const rows = await rowsOf(bigquery, projectId, table, [
      'booking_id',
      'loyalty_points',
      'promo_code',
      'TO_JSON_STRING(seat_pref) AS seat_pref',
    ]);
    assert.deepEqual(
      rows.sort((a, b) => String(a.booking_id).localeCompare(String(b.booking_id))),
      [
        { booking_id: 'BK-1', loyalty_points: 5, promo_code: 'S', seat_pref: '{"aisle":true}' },
        { booking_id: 'BK-2', loyalty_points: null, promo_code: null, seat_pref: null },
      ],
    );
    // IF NOT EXISTS: applying the same change again is harmless and patches nothing.
    const again = await admin.addColumns(
      table,
      columns,
      addColumnDdlStatements({ projectId, ...table }, columns),
    );
    assert.deepEqual(again.catalogPatched, []);
  });
  // Last: after an HTTP 500 the emulator resets the client's kept-alive connection, which fails the next request.
  it('emulator: ALTER ADD COLUMN alone leaves tables.get stale and breaks every insertAll', async () => {
    const table = await createSilverLikeTable(bigquery, projectId, `drift_ta_raw_${tag}`);
    const [job] = await bigquery.createQueryJob({
      query:
        addColumnDdlStatements({ projectId, ...table }, [
          { name: 'promo_code', type: 'STRING', mode: 'NULLABLE' },
        ])[0] ?? '',
    });
    await job.getQueryResults();
    const names = (await admin.getSchema(table)).fields.map((f) => f.name);
    assert.ok(!names.includes('promo_code'), 'the catalog does not list the new column');
    // Not even a row without the new column gets in (HTTP 500: binder error, 13 columns vs 12 values).
    await assert.rejects(
      bigquery
        .dataset(table.datasetId)
        .table(table.tableId)
        .insert([{ insertId: 'r1', json: ROW }], {
          raw: true,
        }),
    );
  });
});
