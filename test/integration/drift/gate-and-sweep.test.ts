// The drift gate and the schema sweep with their real adapters on the emulators, on scratch Silver-shaped tables.
import assert from 'node:assert/strict';
import sinon from 'sinon';
import { Table } from '@google-cloud/bigquery';
import { tableName, type TableRef } from '../../../shared/config/env';
import {
  loadSchemaDriftConfig,
  type SchemaDriftConfig,
} from '../../../shared/config/schema-drift-config';
import {
  BigQueryTableAdmin,
  FirestoreDriftStore,
  ProposalMerger,
  RetryStoreDriftGate,
  TableSchemaCache,
  runSchemaSweep,
  type SweepDeps,
} from '../../../shared/drift';
import { Logger } from '../../../shared/logging/logger';
import { schemaWindowOf } from '../../../shared/schema';
import { BigQueryRowWriter } from '../../../shared/sinks/bigquery-writer';
import { baseRowOf, bookingPayload, messageOf, validEvent } from '../../support/drift-fixtures';
import {
  createSilverLikeTable,
  requireStack,
  rowsOf,
  runTag,
  stackClients,
} from '../../support/drift-stack';

const MIN = 60_000;
const BAD_DATA: TableRef = { datasetId: 'offvia_quarantine', tableId: 'bad_data' };

describe('integration: drift gate and schema sweep on the emulators', function () {
  this.timeout(90_000);
  const { projectId, bigquery, firestore } = stackClients();
  const tag = runTag();
  const writer = new BigQueryRowWriter(bigquery);
  const logger = new Logger('it-drift', () => undefined);

  before(requireStack);

  /** The bad-data row of one of this run's messages (`<name>-<tag>-<suffix>`), if any. */
  const badDataRow = async (name: string, suffix: string) =>
    (
      await rowsOf(
        bigquery,
        projectId,
        BAD_DATA,
        ['*'],
        `source_message_id = '${name}-${tag}-${suffix}'`,
      )
    )[0];

  /** A scratch target table with its own gate, sweep deps and clocks. */
  async function scenario(name: string, env: Record<string, string> = {}) {
    const target = await createSilverLikeTable(bigquery, projectId, `drift_${name}_${tag}`);
    const config: SchemaDriftConfig = loadSchemaDriftConfig(
      {
        ...process.env,
        OFFVIA_SCHEMA_TARGET_TABLES: `${target.datasetId}.${target.tableId}`,
        OFFVIA_SCHEMA_FIRESTORE_ROOT: `itDrift${tag}`,
        ...env,
      },
      target,
      projectId,
    );
    const store = new FirestoreDriftStore(firestore, config.firestoreRoot);
    const admin = new BigQueryTableAdmin(bigquery);
    let nowMs = Date.now();
    const clock = () => nowMs;
    const gate = new RetryStoreDriftGate({
      config,
      store,
      schemas: new TableSchemaCache(admin, config.schemaCacheTtlMs, clock),
      merger: new ProposalMerger(
        store,
        config.windowMinutes,
        config.maxProposedFieldsPerWindow,
        clock,
      ),
      writer,
      badDataTable: BAD_DATA,
      target,
      projectId,
      logger,
      now: clock,
    });
    const deps: SweepDeps = {
      config,
      store,
      admin,
      writer,
      badDataTable: BAD_DATA,
      projectId,
      logger,
      now: clock,
      leaseNow: Date.now,
    };
    const key = tableName(target, projectId);
    async function hold(i: string, extra: Record<string, unknown>) {
      const payload = bookingPayload(`${name}-${i}`, extra);
      const messageId = `${name}-${tag}-${i}`;
      const event = validEvent(payload, messageId, nowMs);
      return gate.route(event, messageOf(payload, messageId), nowMs, baseRowOf(event));
    }
    return {
      target,
      key,
      config,
      store,
      admin,
      deps,
      hold,
      setNow: (ms: number) => (nowMs = ms),
      now: clock,
      /** Past the current window's end plus the grace. */
      afterWindow: () => schemaWindowOf(nowMs, config.windowMinutes).endMs + config.windowGraceMs,
    };
  }

  it('holds 60 concurrent events over 3 new fields in one change; one update adds the columns; all rows land', async () => {
    const s = await scenario('flow');
    const fields = ['promo_code', 'loyalty_points', 'seat_pref'];
    const value = (i: number) => [`P${i}`, i, { aisle: i % 2 === 0 }][i % 3];
    const outs = await Promise.all(
      Array.from({ length: 60 }, (_, i) => s.hold(String(i), { [fields[i % 3] ?? '']: value(i) })),
    );
    assert.ok(outs.every((o) => o.action === 'held'));
    const changes = await s.store.pendingChanges(s.key);
    assert.equal(changes.length, 1);
    assert.deepEqual(
      [...(changes[0]?.proposed.keys() ?? [])],
      ['loyalty_points', 'promo_code', 'seat_pref'],
    );

    s.setNow(s.afterWindow());
    const result = await runSchemaSweep(s.deps);
    const [table] = result.tables;
    assert.equal(table?.status, 'swept', table?.error ?? '');
    assert.deepEqual(table?.update?.columns, ['loyalty_points', 'promo_code', 'seat_pref']);
    assert.equal(table?.update?.statements.length, 3, 'one ALTER per column on the emulator');
    assert.deepEqual(table?.update?.catalogPatched, ['loyalty_points', 'promo_code', 'seat_pref']);
    assert.deepEqual(table?.rows, { inserted: 60, waiting: 0, badData: 0, malformed: 0 });
    const updates = await s.store.updates(s.key);
    assert.equal(updates.length, 1);
    assert.equal(updates[0]?.status, 'applied');

    const rows = await rowsOf(bigquery, projectId, s.target, [
      'booking_id',
      'event_id',
      'promo_code',
      'loyalty_points',
      'TO_JSON_STRING(seat_pref) AS seat_pref',
    ]);
    assert.equal(rows.length, 60);
    assert.equal(new Set(rows.map((r) => r.event_id)).size, 60);
    const byId = new Map(rows.map((r) => [r.booking_id, r]));
    assert.equal(byId.get('BK-flow-3')?.promo_code, 'P3');
    assert.equal(byId.get('BK-flow-4')?.loyalty_points, 4);
    assert.equal(byId.get('BK-flow-5')?.seat_pref, '{"aisle":false}');
    assert.equal((await s.store.waitingRows(s.key, 100)).rows.length, 0);

    // Now the gate writes the new fields straight away (the cache is read again after 5 s at most).
    s.setNow(s.now() + 6000);
    const direct = await s.hold('late', { promo_code: 'LATE' });
    assert.deepEqual(direct, { action: 'write', extraColumns: { promo_code: 'LATE' } });
  });

  it('two concurrent sweeps apply one update and insert no row twice', async () => {
    const s = await scenario('twin');
    await Promise.all(Array.from({ length: 40 }, (_, i) => s.hold(String(i), { twin_field: i })));
    s.setNow(s.afterWindow());
    const ddl = sinon.spy(s.admin, 'addColumns');
    const insert = sinon.spy(writer, 'insertRows');
    try {
      const results = await Promise.all([runSchemaSweep(s.deps), runSchemaSweep(s.deps)]);
      // Either the second waited for the lease and found the work done, or it found the table busy.
      for (const r of results) assert.ok(['busy', 'swept'].includes(r.tables[0]?.status ?? ''));
      assert.equal(results.filter((r) => r.tables[0]?.update !== null).length, 1);
      assert.equal(ddl.callCount, 1);
      const silverInserts = insert.getCalls().filter((c) => c.args[0].tableId === s.target.tableId);
      assert.equal(
        silverInserts.reduce((n, c) => n + c.args[1].length, 0),
        40,
      );
    } finally {
      sinon.restore();
    }
    // A third sweep afterwards has nothing to do.
    const third = await runSchemaSweep(s.deps);
    assert.equal(third.tables[0]?.update, null);
    assert.equal((await s.store.updates(s.key)).length, 1);
    const rows = await rowsOf(bigquery, projectId, s.target, ['event_id']);
    assert.equal(rows.length, 40);
    assert.equal(new Set(rows.map((r) => r.event_id)).size, 40);
  });

  it('in propose mode records the change and adds no column; the rows wait', async () => {
    const s = await scenario('prop', { OFFVIA_SCHEMA_MODE: 'propose' });
    await s.hold('1', { proposed_only: 'x' });
    s.setNow(s.afterWindow());
    const result = await runSchemaSweep(s.deps);
    assert.deepEqual(result.tables[0]?.notApplied, ['proposed_only']);
    assert.equal(result.tables[0]?.notAppliedReason, 'propose_mode');
    const schema = await s.admin.getSchema(s.target);
    assert.ok(!schema.fields.some((f) => f.name === 'proposed_only'));
    assert.equal((await s.store.waitingRows(s.key, 10)).rows.length, 1);
    // The swept window's change is closed as `proposed`; the waiting row proposes again in the current window.
    const swept = result.tables[0]?.windows[0];
    const pending = await s.store.pendingChanges(s.key);
    assert.ok(swept !== undefined && !pending.some((c) => c.windowId === swept));
    assert.deepEqual(
      pending.map((c) => c.windowId),
      [schemaWindowOf(s.now(), 3).id],
    );
  });

  it('retries a row whose column an operator may widen with exact retry counts, then writes it to bad data past the budget; an impossible type at once', async () => {
    const s = await scenario('conflict', { OFFVIA_SCHEMA_RETRY_MINUTES: '7' });
    await s.hold('a', { conflict_points: 5 });
    s.setNow(s.afterWindow());
    await runSchemaSweep(s.deps); // adds conflict_points INT64
    s.setNow(s.now() + 6000);
    const processed = s.now();
    const held = await s.hold('b', { conflict_points: 7.5 });
    assert.equal(held.action, 'held');
    // A STRING can never fit the INT64 column: bad data at ingest, not after the budget.
    await s.hold('c', { conflict_points: 'lots' });
    const now = await badDataRow('conflict', 'c');
    assert.equal(now?.retry_count, 0);
    assert.match(
      String(now?.error),
      /^INCOMPATIBLE_WITH_COLUMN: field "conflict_points" has a STRING value/,
    );

    for (const offset of [3 * MIN + 10_000, 6 * MIN + 30_000]) {
      s.setNow(processed + offset);
      await runSchemaSweep(s.deps);
      const [row] = (await s.store.waitingRows(s.key, 10)).rows;
      assert.equal(row?.retryCount, Math.floor(offset / (3 * MIN)));
      assert.match(row?.lastError ?? '', /NEEDS_COLUMN_WIDENING/);
    }
    s.setNow(processed + 7 * MIN);
    const result = await runSchemaSweep(s.deps);
    assert.equal(result.tables[0]?.rows.badData, 1);
    const bad = await badDataRow('conflict', 'b');
    assert.equal(bad?.target_dest, s.key);
    assert.equal(bad?.retry_count, 2);
    assert.match(
      String(bad?.error),
      /NEEDS_COLUMN_WIDENING: field "conflict_points" has a FLOAT64 value; column is NULLABLE INT64/,
    );
    assert.match(String(bad?.bad_data), /"extra_fields":\{"conflict_points":7.5\}/);
    assert.equal((await s.store.waitingRows(s.key, 10)).rows.length, 0);
  });

  it('one `invalid` row among `stopped` neighbours: one sweep puts the neighbours in Silver, the row in bad data, leaves nothing waiting', async () => {
    const s = await scenario('stopped');
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => s.hold(String(i), { stopped_code: `S${i}` })),
    );
    s.setNow(s.afterWindow());
    // The emulator fails a refused insertAll as a whole (HTTP 500): the first Silver insert gets BigQuery's
    // documented answer instead (BK-stopped-3 `invalid`, every other row `stopped`, nothing written); every later
    // call, and every other table, goes to the emulator.
    let faked = 0;
    const stub = sinon.stub(Table.prototype, 'request') as unknown as sinon.SinonStub<
      unknown[],
      unknown
    >;
    stub.callsFake(function (this: Table, ...args: unknown[]) {
      const reqOpts = args[0] as {
        uri?: string;
        json?: { rows?: { json: Record<string, unknown> }[] };
      };
      const rows = reqOpts.json?.rows ?? [];
      if (this.id === s.target.tableId && reqOpts.uri === '/insertAll' && faked === 0) {
        faked++;
        return Promise.resolve([
          {
            kind: 'bigquery#tableDataInsertAllResponse',
            insertErrors: rows.map((r, index) =>
              r.json.booking_id === 'BK-stopped-3'
                ? {
                    index,
                    errors: [
                      {
                        reason: 'invalid',
                        location: 'stopped_code',
                        message: 'Invalid NUMERIC value: 1e400',
                      },
                    ],
                  }
                : { index, errors: [{ reason: 'stopped', message: '' }] },
            ),
          },
        ]);
      }
      return stub.wrappedMethod.apply(this, args);
    });
    let result;
    try {
      result = await runSchemaSweep(s.deps);
    } finally {
      sinon.restore();
    }
    const [table] = result.tables;
    assert.equal(faked, 1);
    assert.equal(table?.status, 'swept', table?.error ?? '');
    assert.deepEqual(table?.rows, { inserted: 5, waiting: 0, badData: 1, malformed: 0 });
    const silver = await rowsOf(bigquery, projectId, s.target, ['booking_id', 'stopped_code']);
    assert.deepEqual(silver.map((r) => r.booking_id).sort(), [
      'BK-stopped-0',
      'BK-stopped-1',
      'BK-stopped-2',
      'BK-stopped-4',
      'BK-stopped-5',
    ]);
    const bad = await badDataRow('stopped', '3');
    assert.equal(bad?.target_dest, s.key);
    assert.match(String(bad?.error), /^INSERT_INVALID: invalid: Invalid NUMERIC value: 1e400/);
    assert.equal((await s.store.waitingRows(s.key, 10)).rows.length, 0);
  });
});
