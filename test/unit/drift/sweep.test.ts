// runSchemaSweep with an in-memory store, a fake table admin, a recording writer and injected clocks.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import sinon from 'sinon';
import type { SchemaDriftConfig } from '../../../shared/config/schema-drift-config';
import { runSchemaSweep } from '../../../shared/drift';
import { schemaWindowOf, type BqField } from '../../../shared/schema';
import {
  AFTER_W0,
  BAD_DATA,
  MIN,
  SILVER,
  SILVER_FIELDS,
  SILVER_KEY,
  W0,
  bookingPayload,
} from '../../support/drift-fixtures';
import { driftRig } from '../../support/drift-rig';

function setup(
  overrides: Partial<SchemaDriftConfig> = {},
  fields: readonly BqField[] = SILVER_FIELDS,
) {
  // TTL 0: the gate always sees the table as the sweep left it.
  const rig = driftRig({ config: overrides, fields, startMs: W0, schemaTtlMs: 0 });
  const { clock } = rig;
  /** Ingests one event at `atMs` through the gate; returns its event id. */
  function hold(i: number | string, extra: Record<string, unknown>, atMs = clock.now()) {
    return holdPayload(i, bookingPayload(i, extra), atMs);
  }
  /** Ingests one payload text (e.g. with numbers JSON.stringify cannot write) at `atMs` through the gate. */
  async function holdPayload(i: number | string, payload: string, atMs = clock.now()) {
    const before = clock.now();
    clock.set(atMs);
    const { event, out } = await rig.route(payload, `m-${i}`, atMs);
    clock.set(Math.max(before, atMs));
    return { eventId: event.eventId, out };
  }
  return {
    config: rig.config,
    store: rig.store,
    admin: rig.admin,
    writer: rig.writer,
    lines: rig.lines,
    deps: rig.deps,
    hold,
    holdPayload,
    at: clock.set,
    leaseAt: rig.leaseClock.set,
    rows: rig.waiting,
  };
}

const WITH_INT = [...SILVER_FIELDS, { name: 'points', type: 'INT64', mode: 'NULLABLE' } as const];

describe('runSchemaSweep', () => {
  afterEach(() => sinon.restore());

  it('applies one update for a closed window and inserts every waiting row with its new columns', async () => {
    const s = setup();
    const fields = ['promo_code', 'loyalty_points', 'seat_pref'];
    const values = (i: number) => [`P${i}`, i, { aisle: i % 2 === 0 }];
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        s.hold(i, { [fields[i % 3] ?? '']: values(i)[i % 3] }, W0 + i * 1000),
      ),
    );
    assert.equal(s.rows().length, 30);

    s.at(AFTER_W0);
    const result = await runSchemaSweep(s.deps);
    assert.equal(result.ok, true);
    const [table] = result.tables;
    assert.equal(table?.status, 'swept');
    assert.deepEqual(table?.windows, [schemaWindowOf(W0, 3).id]);
    assert.deepEqual(table?.update?.columns, ['loyalty_points', 'promo_code', 'seat_pref']);
    assert.equal(s.admin.addColumnsCalls.length, 1, 'one table update');
    assert.deepEqual(s.admin.addColumnsCalls[0]?.statements, [
      'ALTER TABLE `p-test.offvia_silver.fact_bookings` ADD COLUMN IF NOT EXISTS `loyalty_points` INT64, ' +
        'ADD COLUMN IF NOT EXISTS `promo_code` STRING, ADD COLUMN IF NOT EXISTS `seat_pref` JSON',
    ]);
    assert.deepEqual(table?.rows, { inserted: 30, waiting: 0, badData: 0, malformed: 0 });
    assert.equal(s.rows().length, 0, 'inserted rows leave the store');
    const silver = s.writer.rows(SILVER);
    assert.equal(new Set(silver.map((r) => r.insertId)).size, 30);
    const byBooking = new Map(silver.map((r) => [r.json.booking_id, r.json]));
    assert.equal(byBooking.get('BK-3')?.promo_code, 'P3');
    assert.equal(byBooking.get('BK-4')?.loyalty_points, 4);
    assert.equal(byBooking.get('BK-5')?.seat_pref, '{"aisle":false}');
    const [update] = await s.store.updates(SILVER_KEY);
    assert.equal(update?.status, 'applied');
    assert.deepEqual(update?.windowIds, [schemaWindowOf(W0, 3).id]);

    // Swept again: nothing left to do, no second update.
    s.at(AFTER_W0 + MIN);
    await runSchemaSweep(s.deps);
    assert.equal(s.admin.addColumnsCalls.length, 1);
  });

  it('leaves a window alone until it has closed and the grace has passed', async () => {
    const s = setup();
    await s.hold(1, { promo_code: 'A' }, W0);
    s.at(W0 + 3 * MIN + 9_999);
    const result = await runSchemaSweep(s.deps);
    assert.deepEqual(result.tables[0]?.windows, []);
    assert.equal(s.admin.addColumnsCalls.length, 0);
    assert.equal(s.rows()[0]?.retryCount, 1);
  });

  it('derives retry counts as floor((now − processed) / window) exactly, for any times', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 30 * MIN }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.integer({ min: 0, max: 20 * MIN }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 5 }),
        async (offsets, steps, windowMinutes) => {
          const s = setup({ windowMinutes, retryMinutes: 7 * 24 * 60 }, WITH_INT);
          const processed = offsets.map((o) => W0 + o);
          // "points" is an INT64 column; 1.5 needs it widened to FLOAT64 (an operator's call, retryable), so
          // every row keeps failing and keeps waiting.
          for (const [i, p] of processed.entries()) await s.hold(i, { points: 1.5 }, p);
          let now = Math.max(...processed);
          for (const step of steps) {
            now += step;
            s.at(now);
            await runSchemaSweep(s.deps);
            const counts = new Map(s.rows().map((r) => [r.processedTimestampMs, r.retryCount]));
            for (const p of processed) {
              assert.equal(counts.get(p), Math.floor((now - p) / (windowMinutes * MIN)));
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('sends a row past its budget to bad data with its error, target, times and retry count', async () => {
    const s = setup({ retryMinutes: 7 }, WITH_INT);
    const processed = W0 + 12_345;
    const { eventId } = await s.hold(1, { points: 1.5 }, processed);

    s.at(processed + 7 * MIN - 1);
    await runSchemaSweep(s.deps);
    assert.equal(s.rows()[0]?.retryCount, 2);
    assert.equal(s.writer.rows(BAD_DATA).length, 0);

    const now = processed + 7 * MIN;
    s.at(now);
    const result = await runSchemaSweep(s.deps);
    assert.equal(result.tables[0]?.rows.badData, 1);
    assert.equal(s.rows().length, 0);
    const [bad] = s.writer.rows(BAD_DATA);
    assert.equal(bad?.insertId, `bad:${eventId}`);
    assert.equal(bad?.json.target_dest, SILVER_KEY);
    assert.equal(bad?.json.insert_time, new Date(now).toISOString());
    assert.equal(bad?.json.processed_timestamp, new Date(processed).toISOString());
    assert.equal(bad?.json.retry_count, Math.floor((7 * MIN) / (3 * MIN)));
    assert.equal(bad?.json.source_message_id, 'm-1');
    assert.equal(bad?.json.insert_id, eventId);
    assert.match(
      String(bad?.json.error),
      /NEEDS_COLUMN_WIDENING: field "points" has a FLOAT64 value; column is NULLABLE INT64/,
    );
    const original = JSON.parse(String(bad?.json.bad_data)) as {
      row: object;
      extra_fields: object;
    };
    assert.deepEqual(original.extra_fields, { points: 1.5 });
    assert.equal((original.row as { booking_id: string }).booking_id, 'BK-1');
  });

  it('keeps a row BigQuery refuses with "no such field" after the column was added, and counts it', async () => {
    const s = setup({ retryMinutes: 10 });
    await s.hold(1, { promo_code: 'A' }, W0);
    s.writer.respond = (table) =>
      table === 'offvia_silver.fact_bookings'
        ? {
            ok: false,
            kind: 'rejected',
            error: 'invalid: no such field: promo_code.',
            missingFields: ['promo_code'],
          }
        : { ok: true };
    s.at(AFTER_W0);
    const first = await runSchemaSweep(s.deps);
    assert.equal(first.tables[0]?.update?.columns[0], 'promo_code');
    assert.deepEqual(first.tables[0]?.rows, { inserted: 0, waiting: 1, badData: 0, malformed: 0 });
    const [row] = s.rows();
    assert.equal(row?.retryCount, 1);
    assert.match(row?.lastError ?? '', /INSERT_REJECTED: invalid: no such field: promo_code/);

    s.writer.respond = () => ({ ok: true });
    s.at(AFTER_W0 + MIN);
    const second = await runSchemaSweep(s.deps);
    assert.equal(second.tables[0]?.rows.inserted, 1);
    assert.equal(s.writer.rows(SILVER)[0]?.json.promo_code, 'A');
  });

  it('in propose mode records the plan on the change and adds no column; rows keep waiting', async () => {
    const s = setup({ mode: 'propose' });
    await s.hold(1, { promo_code: 'A' }, W0);
    s.at(AFTER_W0);
    const result = await runSchemaSweep(s.deps);
    assert.equal(s.admin.addColumnsCalls.length, 0);
    assert.deepEqual(result.tables[0]?.notApplied, ['promo_code']);
    assert.equal(result.tables[0]?.notAppliedReason, 'propose_mode');
    const change = s.store.table(SILVER_KEY).changes.get(schemaWindowOf(W0, 3).id);
    assert.equal(change?.status, 'proposed');
    assert.deepEqual(
      change?.plan?.addColumns.map((c) => c.name),
      ['promo_code'],
    );
    assert.equal(s.rows().length, 1);
  });

  it('merges every closed window of a table into one update', async () => {
    const s = setup();
    await s.hold(1, { a_field: 1 }, W0);
    await s.hold(2, { b_field: 'x' }, W0 + 3 * MIN);
    s.at(W0 + 6 * MIN + 10_000);
    const result = await runSchemaSweep(s.deps);
    assert.equal(s.admin.addColumnsCalls.length, 1);
    assert.equal(result.tables[0]?.windows.length, 2);
    assert.equal(result.tables[0]?.rows.inserted, 2);
  });

  it("defers an update within minUpdateIntervalMs of the table's last one (metadata-update rate)", async () => {
    const s = setup({ minUpdateIntervalMs: 10_000 });
    await s.hold(1, { a_field: 1 }, W0);
    s.at(AFTER_W0);
    s.leaseAt(5_000_000);
    await runSchemaSweep(s.deps);
    await s.hold(2, { b_field: 1 }, AFTER_W0);
    s.at(AFTER_W0 + 3 * MIN + 10_000);
    s.leaseAt(5_009_999);
    const deferred = await runSchemaSweep(s.deps);
    assert.equal(deferred.tables[0]?.notAppliedReason, 'update_rate');
    assert.equal(s.admin.addColumnsCalls.length, 1);
    s.leaseAt(5_010_000);
    await runSchemaSweep(s.deps);
    assert.equal(s.admin.addColumnsCalls.length, 2);
  });

  it('re-plans when a change grew between planning and beginning the update', async () => {
    const s = setup();
    await s.hold(1, { a_field: 1 }, W0);
    const begin = sinon.stub(s.store, 'beginUpdate');
    begin.onFirstCall().resolves('stale');
    begin.callThrough();
    s.at(AFTER_W0);
    await runSchemaSweep(s.deps);
    assert.equal(begin.callCount, 2);
    assert.equal(s.admin.addColumnsCalls.length, 1);
  });

  it('a table update that cannot be begun does not skip the row retries: the budget check still runs', async () => {
    const s = setup({ retryMinutes: 7 }, WITH_INT);
    const processed = W0 + 1_000;
    await s.hold(1, { points: 1.5 }, processed); // waits: an operator may widen the column
    await s.hold(2, { new_field: 'x' }, processed); // proposes a column
    // The change keeps growing under the planner (every begin is stale): the update phase gives up.
    sinon.stub(s.store, 'beginUpdate').resolves('stale');
    s.at(processed + 7 * MIN);
    const result = await runSchemaSweep(s.deps);
    const [table] = result.tables;
    assert.equal(table?.status, 'failed');
    assert.match(table?.error ?? '', /kept changing while being planned/);
    assert.equal(table?.rows.badData, 2, 'both rows are past their budget and were judged');
    assert.equal(s.rows().length, 0);
  });

  it('a failed DDL leaves the change pending and fails the sweep; the next sweep applies it', async () => {
    const s = setup();
    await s.hold(1, { a_field: 1 }, W0);
    // Not the table-update rate (a deferral, see sweep-ddl-rate.test.ts): a failure an operator should see.
    s.admin.failNextAdd = 'backendError: the DDL job failed';
    s.at(AFTER_W0);
    const failed = await runSchemaSweep(s.deps);
    assert.equal(failed.ok, false);
    assert.match(failed.tables[0]?.error ?? '', /backendError/);
    assert.equal(
      s.store.table(SILVER_KEY).changes.get(schemaWindowOf(W0, 3).id)?.status,
      'pending',
    );
    assert.equal(s.rows().length, 1, 'the row is kept');
    s.leaseAt(10_000_000);
    const ok = await runSchemaSweep(s.deps);
    assert.equal(ok.ok, true);
    assert.equal(ok.tables[0]?.rows.inserted, 1);
    const [update] = await s.store.updates(SILVER_KEY);
    assert.equal(update?.attempts, 2);
    assert.equal(update?.status, 'applied');
  });

  it('leaves a table leased by another sweep alone (busy)', async () => {
    const s = setup();
    await s.hold(1, { a_field: 1 }, W0);
    await s.store.acquireLease(SILVER_KEY, 'someone-else', 1_000_000, 60_000);
    s.at(AFTER_W0);
    const result = await runSchemaSweep(s.deps);
    assert.equal(result.tables[0]?.status, 'busy');
    assert.equal(result.ok, true);
    assert.equal(s.admin.addColumnsCalls.length, 0);
  });

  it('two concurrent sweeps apply one update and insert no row twice', async () => {
    const s = setup();
    await Promise.all(Array.from({ length: 50 }, (_, i) => s.hold(i, { a_field: i }, W0 + i)));
    s.at(AFTER_W0);
    const results = await Promise.all([runSchemaSweep(s.deps), runSchemaSweep(s.deps)]);
    assert.deepEqual(results.map((r) => r.tables[0]?.status).sort(), ['busy', 'swept']);
    assert.equal(s.admin.addColumnsCalls.length, 1);
    const ids = s.writer.rows(SILVER).map((r) => r.insertId);
    assert.equal(ids.length, 50);
    assert.equal(new Set(ids).size, 50);
  });

  it('stops writing as soon as its lease was taken over (fencing)', async () => {
    const s = setup();
    await Promise.all(Array.from({ length: 500 }, (_, i) => s.hold(i, { a_field: i }, W0)));
    const insert = sinon.spy(s.writer, 'insertRows');
    // Another sweep takes the table over right after the first batch settles.
    const original = s.store.settleRows.bind(s.store);
    sinon.stub(s.store, 'settleRows').callsFake(async (lease, deletes, updates) => {
      await original(lease, deletes, updates);
      const t = s.store.table(SILVER_KEY);
      t.fence++;
      t.holder = 'usurper';
    });
    s.at(AFTER_W0);
    const result = await runSchemaSweep(s.deps);
    assert.equal(result.tables[0]?.status, 'failed');
    assert.match(result.tables[0]?.error ?? '', /LeaseLostError/);
    assert.equal(insert.callCount, 1, 'no insert after the lease was lost');
    assert.equal(s.writer.rows(SILVER).length, 400);
    assert.equal(s.rows().length, 100);
  });

  it('carries a field held back by the window cap over to a later window, which adds it', async () => {
    const s = setup({ maxNewColumnsPerWindow: 1 });
    await s.hold(1, { a_field: 1, b_field: 2 }, W0);
    s.at(AFTER_W0);
    const first = await runSchemaSweep(s.deps);
    assert.deepEqual(first.tables[0]?.update?.columns, ['a_field']);
    assert.deepEqual(
      first.tables[0]?.rejected.map((r) => r.code),
      ['WINDOW_CAP'],
    );
    assert.match(s.rows()[0]?.lastError ?? '', /WINDOW_CAP/);
    const next = schemaWindowOf(AFTER_W0, 3);
    assert.deepEqual(
      [...(s.store.table(SILVER_KEY).changes.get(next.id)?.proposed.keys() ?? [])],
      ['b_field'],
    );
    s.at(next.endMs + 10_000);
    s.leaseAt(9_000_000);
    const second = await runSchemaSweep(s.deps);
    assert.deepEqual(second.tables[0]?.update?.columns, ['b_field']);
    assert.equal(second.tables[0]?.rows.inserted, 1);
  });

  it('keeps a row whose bad-data write is refused, and says so', async () => {
    const s = setup({ retryMinutes: 0 }, WITH_INT);
    await s.hold(1, { points: 1.5 }, W0);
    s.writer.respond = (table) =>
      table === 'offvia_quarantine.bad_data'
        ? { ok: false, kind: 'rejected', error: 'invalid: too big', missingFields: [] }
        : { ok: true };
    s.at(AFTER_W0);
    const result = await runSchemaSweep(s.deps);
    assert.equal(result.ok, false);
    assert.equal(s.rows().length, 1);
    assert.match(s.rows()[0]?.lastError ?? '', /bad-data table refused the row: invalid: too big/);
    assert.ok(s.lines.some((l) => l.message.startsWith('bad-data row refused')));
  });

  it('clock skew: a proposal from an instance whose clock lags the sweep goes to the next window, which adds the column', async () => {
    const s = setup();
    await s.hold(1, { a_field: 1 }, W0);
    s.at(AFTER_W0);
    await runSchemaSweep(s.deps); // window W0 swept by a sweep whose clock is past its end
    // An ingesting instance 20 s behind still computes W0 for its event.
    const lagging = W0 + 3 * MIN - 5_000;
    await s.hold(2, { b_field: 'x' }, lagging);
    const w1 = schemaWindowOf(W0 + 3 * MIN, 3);
    const [row] = s.rows();
    assert.equal(row?.windowId, w1.id, 'never into the swept window');
    // Not closed before W1 has ended (plus grace) by the sweep's own clock.
    s.at(w1.endMs + 9_999);
    s.leaseAt(2_000_000);
    assert.deepEqual((await runSchemaSweep(s.deps)).tables[0]?.windows, []);
    s.at(w1.endMs + 10_000);
    s.leaseAt(3_000_000);
    const [table] = (await runSchemaSweep(s.deps)).tables;
    assert.deepEqual(table?.update?.columns, ['b_field']);
    assert.equal(table?.rows.inserted, 1);
  });

  describe('contests and permanent errors (issue 5 findings)', () => {
    it('one rogue case variant does not block the column: the majority spelling wins, the rogue row goes to bad data at once', async () => {
      const s = setup();
      await s.hold('rogue', { Loyalty_Tier: 'silver' }, W0 + 1_000);
      await s.hold('a', { loyalty_tier: 'gold' }, W0 + 2_000);
      await s.hold('b', { loyalty_tier: 'gold' }, W0 + 3_000);
      s.at(AFTER_W0);
      const result = await runSchemaSweep(s.deps);
      const [table] = result.tables;
      assert.deepEqual(table?.update?.columns, ['loyalty_tier']);
      assert.deepEqual(
        table?.resolved.map((c) => [c.kind, c.winner, c.contenders.map((x) => x.support.rows)]),
        [['case', 'loyalty_tier', [2, 1]]],
      );
      assert.ok(
        s.lines.some((l) => l.message === 'schema contest resolved' && l.winner === 'loyalty_tier'),
      );
      assert.deepEqual(table?.rows, { inserted: 2, waiting: 0, badData: 1, malformed: 0 });
      assert.deepEqual(
        s.writer.rows(SILVER).map((r) => r.json.loyalty_tier),
        ['gold', 'gold'],
      );
      const [bad] = s.writer.rows(BAD_DATA);
      assert.equal(bad?.json.source_message_id, 'm-rogue');
      assert.equal(bad?.json.retry_count, 1, 'one window, not the whole 30-minute budget');
      assert.match(
        String(bad?.json.error),
        /^CASE_COLLISION: field "Loyalty_Tier" differs only in case from column "loyalty_tier"$/,
      );
      assert.equal(s.rows().length, 0);
      // The rogue spelling is not proposed again.
      const next = schemaWindowOf(AFTER_W0, 3);
      assert.equal(s.store.table(SILVER_KEY).changes.get(next.id), undefined);
    });

    it('one event each: the earlier spelling wins (then name order), not neither', async () => {
      const s = setup();
      await s.hold('gold', { loyalty_tier: 'gold' }, W0 + 1_000);
      await s.hold('silver', { Loyalty_Tier: 'silver' }, W0 + 2_000);
      s.at(AFTER_W0);
      const [table] = (await runSchemaSweep(s.deps)).tables;
      assert.deepEqual(table?.update?.columns, ['loyalty_tier']);
      assert.equal(s.writer.rows(SILVER)[0]?.json.loyalty_tier, 'gold');
      assert.equal(s.writer.rows(BAD_DATA)[0]?.json.source_message_id, 'm-silver');
    });

    it('a type conflict in one window: the type with most rows becomes the column, the others go to bad data at once', async () => {
      const s = setup();
      await s.hold(1, { seats: 'two' }, W0 + 1_000);
      await s.hold(2, { seats: 2 }, W0 + 2_000);
      await s.hold(3, { seats: 3 }, W0 + 3_000);
      s.at(AFTER_W0);
      const [table] = (await runSchemaSweep(s.deps)).tables;
      assert.deepEqual(s.admin.addColumnsCalls[0]?.statements, [
        'ALTER TABLE `p-test.offvia_silver.fact_bookings` ADD COLUMN IF NOT EXISTS `seats` INT64',
      ]);
      assert.deepEqual(table?.rows, { inserted: 2, waiting: 0, badData: 1, malformed: 0 });
      assert.match(
        String(s.writer.rows(BAD_DATA)[0]?.json.error),
        /^INCOMPATIBLE_WITH_COLUMN: field "seats" has a STRING value; column is NULLABLE INT64$/,
      );
    });

    it('sends a row whose field became permanently impossible to bad data at the next sweep, not after the budget', async () => {
      const s = setup({ retryMinutes: 30 });
      await s.hold(1, { points: 'many' }, W0);
      assert.equal(s.rows().length, 1, 'no column yet: it waits');
      // An operator adds the column with another type meanwhile.
      s.admin.schemas.get(SILVER_KEY.split('.').slice(1).join('.'))?.push({
        name: 'points',
        type: 'INT64',
        mode: 'NULLABLE',
      });
      s.at(W0 + MIN);
      const [table] = (await runSchemaSweep(s.deps)).tables;
      assert.equal(table?.rows.badData, 1);
      assert.equal(s.rows().length, 0);
      assert.equal(s.writer.rows(BAD_DATA)[0]?.json.retry_count, 0);
      assert.ok(
        s.lines.some((l) => l.message === 'row with a permanent schema error, written to bad data'),
      );
    });

    it('keeps big integers exact from the retry store to Silver', async () => {
      const s = setup();
      const payload = bookingPayload('big').replace(
        '{',
        '{"ext_id":9007199254740993,"bignum":123456789012345678901234567890,',
      );
      const { eventId } = await s.holdPayload('big', payload, W0);
      assert.equal(
        s.rows()[0]?.extraFieldsJson,
        '{"ext_id":9007199254740993,"bignum":123456789012345678901234567890}',
      );
      s.at(AFTER_W0);
      await runSchemaSweep(s.deps);
      assert.deepEqual(s.admin.addColumnsCalls[0]?.statements, [
        'ALTER TABLE `p-test.offvia_silver.fact_bookings` ADD COLUMN IF NOT EXISTS `bignum` BIGNUMERIC, ' +
          'ADD COLUMN IF NOT EXISTS `ext_id` INT64',
      ]);
      const [big] = s.writer.rows(SILVER);
      assert.equal(big?.insertId, eventId);
      assert.equal(big?.json.ext_id, '9007199254740993');
      assert.equal(big?.json.bignum, '123456789012345678901234567890');
    });
  });
});
