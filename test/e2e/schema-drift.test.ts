// End to end on the local stack: events with new fields published to Pub/Sub, held by ingestBooking in the
// Firestore retry store, swept (with an advanced clock, not real minutes) into Silver or the bad-data table.
import assert from 'node:assert/strict';
import { PubSub } from '@google-cloud/pubsub';
import { tableName } from '../../shared/config/env';
import {
  FirestoreDriftStore,
  runSchemaSweep,
  type RetryRow,
  type SweepDeps,
  type SweepResult,
} from '../../shared/drift';
import { BOOKING_PIPELINE } from '../../shared/pipelines/booking/definition';
import { createSchemaSweepDeps } from '../../shared/drift/sweep-runtime';
import { Logger } from '../../shared/logging/logger';
import { bookingPayload } from '../support/drift-fixtures';
import { requireStack, rowsOf, runTag, stackClients } from '../support/drift-stack';

const MIN = 60_000;
// Long enough that rows waiting for a window swept with an advanced clock stay within it, short enough to test.
const RETRY_MINUTES = 20;

describe('e2e: schema drift on the local stack (Pub/Sub → ingestBooking → retry store → schemaSweep)', function () {
  this.timeout(180_000);
  const { projectId, bigquery, firestore } = stackClients();
  const pubsub = new PubSub({ projectId });
  const topic = pubsub.topic('booking-events');
  const tag = runTag();
  const silver = { datasetId: 'offvia_silver', tableId: 'fact_bookings' };
  const badData = { datasetId: 'offvia_quarantine', tableId: 'bad_data' };
  const silverKey = tableName(silver, projectId);
  let base: SweepDeps;
  let store: FirestoreDriftStore;

  before(function () {
    requireStack();
    // The stack's own configuration (as schemaSweep reads it), with a 20-minute retry budget for this test.
    base = createSchemaSweepDeps(
      BOOKING_PIPELINE,
      {
        ...process.env,
        OFFVIA_SCHEMA_RETRY_MINUTES: String(RETRY_MINUTES),
        // The emulator has no table metadata-update rate, and this test's updates come seconds apart; the rate
        // guard itself is covered by the unit tests.
        OFFVIA_SCHEMA_MIN_UPDATE_INTERVAL_MS: '0',
      },
      new Logger('e2e-sweep', () => undefined),
    );
    store = new FirestoreDriftStore(firestore, base.config.firestoreRoot);
  });
  after(() => pubsub.close());

  /**
   * A sweep at processing time `nowMs`. Tried again while the table is busy with the stack's scheduled sweep, or
   * while its update waits for the metadata-update rate (a test's updates come seconds apart).
   */
  async function sweepAt(nowMs: number): Promise<SweepResult> {
    for (let attempt = 0; ; attempt++) {
      const result = await runSchemaSweep({ ...base, now: () => nowMs });
      const table = result.tables[0];
      const again = table?.status === 'busy' || table?.notAppliedReason === 'update_rate';
      if (!again || attempt >= 60) return result;
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** Publishes payloads concurrently; resolves with their message ids. */
  function publish(payloads: readonly string[]): Promise<string[]> {
    return Promise.all(payloads.map((p) => topic.publishMessage({ data: Buffer.from(p) })));
  }

  /** Polls the retry store until every message id has a waiting row; returns them by message id. */
  async function waitHeld(
    ids: readonly string[],
    timeoutMs = 60_000,
  ): Promise<Map<string, RetryRow>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await store.waitingRows(silverKey, 10_000);
      const mine = new Map(
        rows.filter((r) => ids.includes(r.sourceMessageId)).map((r) => [r.sourceMessageId, r]),
      );
      if (mine.size === ids.length) return mine;
      if (Date.now() > deadline)
        throw new Error(`only ${mine.size} of ${ids.length} rows were held`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  /** Polls the bad-data table until every message id has a row; returns them by message id. */
  async function waitBadData(
    ids: readonly string[],
    timeoutMs = 60_000,
  ): Promise<Map<unknown, Record<string, unknown>>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const rows = await rowsOf(
        bigquery,
        projectId,
        badData,
        ['*'],
        `source_message_id IN (${ids.map((id) => `'${id}'`).join(', ')})`,
      );
      const byId = new Map(rows.map((r) => [r.source_message_id, r]));
      if (byId.size === ids.length) return byId;
      if (Date.now() > deadline) {
        throw new Error(`only ${byId.size} of ${ids.length} rows reached the bad-data table`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** End of a schema window from its id (`<start ISO>_<n>m`), ms since the epoch. */
  function windowEndMs(windowId: string): number {
    const [start = '', length = ''] = windowId.split('_');
    return Date.parse(start) + Number.parseInt(length, 10) * MIN;
  }

  /**
   * Processing time past the windows of every row, plus the grace. A row's window is the one its proposal went
   * to: the window of its receipt, or the next one when that was already swept (e.g. by an earlier test).
   */
  function afterWindows(rows: Iterable<RetryRow>): number {
    let end = 0;
    for (const r of rows) end = Math.max(end, windowEndMs(r.windowId));
    return end + base.config.windowGraceMs;
  }

  it('200 concurrent events over 3 new fields: one table update per window (two sweeps at once), all 200 in Silver', async () => {
    const promo = `promo_${tag}`;
    const points = `points_${tag}`;
    const seat = `seat_${tag}`;
    const payloads = Array.from({ length: 200 }, (_, i) => {
      const extra: Record<string, unknown> = {};
      if (i % 3 === 0 || i % 5 === 0) extra[promo] = `P${i}`;
      if (i % 3 === 1) extra[points] = i;
      if (i % 3 === 2) extra[seat] = { aisle: i % 2 === 0, row: i };
      return bookingPayload(`${tag}-${i}`, extra);
    });
    const ids = await publish(payloads);
    const held = await waitHeld(ids);
    const windows = new Set([...held.values()].map((r) => r.windowId));

    const nowMs = afterWindows(held.values());
    const [a, b] = await Promise.all([sweepAt(nowMs), sweepAt(nowMs)]);
    assert.ok(a.ok && b.ok, JSON.stringify([a, b]));
    // Whatever swept last (also the stack's scheduler), every row must be out of the store now.
    let left = (await store.waitingRows(silverKey, 10_000)).rows.filter((r) =>
      ids.includes(r.sourceMessageId),
    );
    for (let i = 0; left.length > 0 && i < 5; i++) {
      await sweepAt(nowMs);
      left = (await store.waitingRows(silverKey, 10_000)).rows.filter((r) =>
        ids.includes(r.sourceMessageId),
      );
    }
    assert.equal(left.length, 0);

    const updates = (await store.updates(silverKey)).filter((u) =>
      u.windowIds.some((w) => windows.has(w)),
    );
    for (const w of windows) {
      assert.equal(
        updates.filter((u) => u.windowIds.includes(w)).length,
        1,
        `window ${w}: one update`,
      );
    }
    const ours = (await store.updates(silverKey)).filter((u) =>
      u.addColumns.some((c) => c.endsWith(tag)),
    );
    assert.equal(ours.length, 1, 'one table update added the new columns');
    assert.equal(ours[0]?.status, 'applied');
    // One update per table per window batches every pending change of that window: on a shared stack another
    // test's new field may ride along in the same update, so only this test's columns are compared.
    assert.deepEqual([...(ours[0]?.addColumns ?? [])].filter((c) => c.endsWith(tag)).sort(), [
      points,
      promo,
      seat,
    ]);

    const rows = await rowsOf(
      bigquery,
      projectId,
      silver,
      [
        'source_message_id',
        'event_id',
        'booking_id',
        promo,
        points,
        `TO_JSON_STRING(${seat}) AS seat`,
      ],
      `source_message_id IN (${ids.map((id) => `'${id}'`).join(', ')})`,
    );
    assert.equal(rows.length, 200, 'every row once');
    assert.equal(new Set(rows.map((r) => r.event_id)).size, 200);
    const byBooking = new Map(rows.map((r) => [r.booking_id, r]));
    for (let i = 0; i < 200; i++) {
      const r = byBooking.get(`BK-${tag}-${i}`);
      assert.ok(r, `BK-${tag}-${i} is in Silver`);
      assert.equal(r[promo], i % 3 === 0 || i % 5 === 0 ? `P${i}` : null);
      assert.equal(r[points], i % 3 === 1 ? i : null);
      assert.equal(r.seat, i % 3 === 2 ? JSON.stringify({ aisle: i % 2 === 0, row: i }) : null);
    }
  });

  it('a field conflicting in type with its column: a widenable one is retried (exact counts) and, past the budget, lands in bad data; an impossible one at once', async () => {
    const field = `tc_${tag}`;
    const [first] = await publish([bookingPayload(`${tag}-tc-1`, { [field]: 5 })]);
    const heldFirst = await waitHeld([first ?? '']);
    await sweepAt(afterWindows(heldFirst.values())); // adds the INT64 column and writes the first event

    // 5.5 needs the INT64 column widened to FLOAT64, which BigQuery allows and an operator may do: it waits.
    // "five" can never fit an INT64 column: bad data at ingest (or at the next sweep if ingest's cached schema
    // did not have the column yet), not after the budget.
    const [id, never] = await publish([
      bookingPayload(`${tag}-tc-2`, { [field]: 5.5 }),
      bookingPayload(`${tag}-tc-3`, { [field]: 'five' }),
    ]);
    const row = (await waitHeld([id ?? ''])).get(id ?? '');
    assert.ok(row);
    await sweepAt(Date.now());
    const impossible = (await waitBadData([never ?? ''])).get(never);
    assert.match(
      String(impossible?.error),
      new RegExp(
        `^INCOMPATIBLE_WITH_COLUMN: field "${field}" has a STRING value; column is NULLABLE INT64`,
      ),
    );
    assert.equal(impossible?.retry_count, 0);

    const processed = row.processedTimestampMs;
    for (const offset of [3 * MIN + 10_000, 6 * MIN + 30_000]) {
      await sweepAt(processed + offset);
      const now = (await waitHeld([id ?? ''])).get(id ?? '');
      assert.equal(now?.retryCount, Math.floor(offset / (3 * MIN)), `retry count at +${offset} ms`);
      assert.match(now?.lastError ?? '', /NEEDS_COLUMN_WIDENING/);
    }
    const at = processed + RETRY_MINUTES * MIN;
    const result = await sweepAt(at);
    assert.ok((result.tables[0]?.rows.badData ?? 0) >= 1);
    const bad = (await waitBadData([id ?? ''])).get(id);
    assert.ok(bad, 'the row is in the bad-data table');
    assert.equal(bad.target_dest, silverKey);
    assert.equal(bad.retry_count, Math.floor((RETRY_MINUTES * MIN) / (3 * MIN)));
    assert.equal((bad.insert_time as { value: string }).value, new Date(at).toISOString());
    assert.match(
      String(bad.error),
      new RegExp(`field "${field}" has a FLOAT64 value; column is NULLABLE INT64`),
    );
    assert.match(String(bad.bad_data), new RegExp(`"extra_fields":\\{"${field}":5.5\\}`));
    const [silverRow] = await rowsOf(
      bigquery,
      projectId,
      silver,
      [field],
      `source_message_id = '${first}'`,
    );
    assert.equal(silverRow?.[field], 5);
  });

  it('big integers keep every digit from the payload to Silver', async () => {
    const id64 = `ext_id_${tag}`;
    const payload = bookingPayload(`${tag}-big`).replace('{', `{"${id64}":9007199254740993,`);
    const [id] = await publish([payload]);
    const held = await waitHeld([id ?? '']);
    assert.equal(held.get(id ?? '')?.extraFieldsJson, `{"${id64}":9007199254740993}`);
    await sweepAt(afterWindows(held.values()));
    const [row] = await rowsOf(
      bigquery,
      projectId,
      silver,
      [`CAST(${id64} AS STRING) AS v`],
      `source_message_id = '${id}'`,
    );
    assert.equal(row?.v, '9007199254740993');
  });

  it('hostile field names create no column and lose no row', async () => {
    const flood = Object.fromEntries(
      Array.from({ length: 500 }, (_, i) => [`flood_${tag}_${i}`, i]),
    );
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'reserved',
        { select: 1, _TABLE_x: 2, _PARTITIONTIME: 3 },
        /RESERVED_KEYWORD.*RESERVED_PREFIX/,
      ],
      ['too-long', { ['h'.repeat(301)]: 1 }, /NAME_TOO_LONG/],
      [
        'illegal',
        { [`bad-name-${tag}`]: 1, 'émoji😀': 2, 'has space': 3, '1leading': 4 },
        /ILLEGAL_CHARACTERS/,
      ],
      ['case', { [`PROMO_${tag}`]: 'x', [`dup_${tag}`]: 1, [`DUP_${tag}`]: 2 }, /CASE_COLLISION/],
      ['protected', { fare_amount: '1.00', ORIGIN: 'JFK', Event_Id: 'x' }, /PROTECTED_NAME/],
      ['flood', flood, /FIELD_FLOOD: the event carries 500 fields/],
    ];
    const before = await base.admin.getSchema(silver);
    const ids = await publish(
      cases.map(([name, extra]) => bookingPayload(`${tag}-${name}`, extra)),
    );
    // Every case is a permanent rejection: bad data at ingest, without waiting out the retry budget.
    const byId = await waitBadData(ids);
    const waiting = (await store.waitingRows(silverKey, 10_000)).rows.filter((r) =>
      ids.includes(r.sourceMessageId),
    );
    assert.deepEqual(waiting, [], 'nothing waits for a budget it cannot use');

    const hostile = new Set(
      cases.flatMap(([, extra]) => Object.keys(extra).map((k) => k.toLowerCase())),
    );
    await sweepAt(Date.now());
    const after = await base.admin.getSchema(silver);
    assert.deepEqual(after.fields.slice(0, before.fields.length), before.fields);
    const added = after.fields.slice(before.fields.length).map((f) => f.name);
    assert.deepEqual(
      added.filter((name) => hostile.has(name.toLowerCase())),
      [],
      'no hostile name became a column',
    );
    cases.forEach(([name, extra, expected], i) => {
      const r = byId.get(ids[i]);
      assert.match(String(r?.error), expected, name);
      const original = JSON.parse(String(r?.bad_data)) as { extra_fields: Record<string, unknown> };
      assert.deepEqual(original.extra_fields, extra, `${name}: the original fields are kept`);
    });
  });
});
