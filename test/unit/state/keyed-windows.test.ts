// KeyedWindows over the in-memory store: sharded state equals the core's, sliding windows, closed windows, a change
// of the shard count, duplicates inside a bundle, store failures, the bundler and the ingest wiring.
import assert from 'node:assert/strict';
import sinon from 'sinon';
import { TransientError } from '../../../shared/errors';
import { ingestPipelineMessage } from '../../../shared/pipeline/runtime/ingest';
import { bookingIngestDeps, bookingWindowStub } from '../../support/booking-ingest';
import { Logger, type LogEntry } from '../../../shared/logging/logger';
import { Bundler } from '../../../shared/state/bundler';
import { eventShardOf } from '../../../shared/state/ids';
import {
  bookingEvent,
  fire,
  memoryBookingWindows,
  MIN,
  record,
  routesOf,
  S,
  T,
} from '../../support/booking-windows';

describe('state: keyed windows', () => {
  it('splits a window over N shards (each bundle on its event shard) and merges them into exactly the core state', async () => {
    const { sink, store, windows, clock, writer } = memoryBookingWindows(
      { OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS: '0' },
      { shards: 3 },
    );
    const perShard = new Map<number, number>();
    for (let i = 0; i < 9; i++) {
      const spec = { id: `s${i}`, fare: `${i + 1}.5`, at: T + i * S };
      const shard = eventShardOf(bookingEvent(spec).eventId, 3);
      perShard.set(shard, (perShard.get(shard) ?? 0) + 1);
      await record(sink, spec, T + i * S);
    }
    assert.ok(perShard.size > 1, 'the events spread over several shards');
    const shards = [...store.state.shards.values()];
    assert.deepEqual(
      shards.map((s) => [s.shard, s.contribution.elementsInPane]).sort(),
      [...perShard.entries()].sort(),
    );
    await fire(windows, clock, T + 3 * 24 * 3600 * S);
    assert.deepEqual(
      writer.gold().map((r) => [r.pane_timing, r.booking_count, r.fare_total]),
      [['ON_TIME', 9, '49.5']],
    );
    assert.equal(store.state.shards.size, 0, 'closed: shards deleted');
  });

  it('fires every key of a key group in one transaction that reads all of them before it writes', async () => {
    const { sink, store, windows, clock, writer } = memoryBookingWindows({
      OFFVIA_WINDOW_KEY_GROUPS: '1',
    });
    const routes = routesOf('JFK-LHR-USD SFO-HND-USD CDG-JFK-EUR LHR-DXB-GBP');
    for (const [i, route] of routes.entries()) {
      await record(sink, { id: `g${i}`, route, fare: '10', at: T + i * S }, T + i * S);
    }
    const before = store.metrics.transactions;
    // The in-memory store refuses a read after a write in one transaction, as Firestore does.
    const summary = await fire(windows, clock, T + 3 * MIN);
    assert.equal(summary.windowsFailed, 0);
    assert.equal(store.metrics.transactions - before, 1, 'one transaction for the group');
    assert.deepEqual(
      writer
        .gold()
        .map((r) => [r.route_key, r.pane_timing, r.booking_count])
        .sort(),
      routes.map((r) => [r.join('-'), 'ON_TIME', 1]).sort(),
    );
  });

  it('counts an event in each of its sliding windows and drops it only from the expired one', async () => {
    const { sink, store, windows, clock, writer } = memoryBookingWindows({
      OFFVIA_WINDOW_SIZE_MS: '120000',
      OFFVIA_WINDOW_PERIOD_MS: '60000',
      OFFVIA_WINDOW_ALLOWED_LATENESS_MS: '0',
      OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS: '0',
    });
    await record(sink, { id: 'a', fare: '1', at: T + 90 * S }, T + 91 * S); // windows [0,120) and [60,180)
    await record(
      sink,
      { id: 'clock', route: ['SFO', 'HND', 'USD'], fare: '1', at: T + 135 * S },
      T + 136 * S,
    );
    // Watermark 14:12:05: [14:10, 14:12) has expired (lateness 0); [14:11, 14:13) has not.
    const late = await record(sink, { id: 'b', fare: '2', at: T + 100 * S }, T + 137 * S);
    assert.equal(late.kind, 'counted');
    assert.deepEqual(late.dropped, [
      { window: { startMs: T, endMs: T + 2 * MIN }, reason: 'EXPIRED_WINDOW' },
    ]);
    await fire(windows, clock, T + 3 * 24 * 3600 * S);
    const jfk = writer.gold().filter((r) => r.route_key === 'JFK-LHR-USD');
    assert.deepEqual(
      jfk.map((r) => [
        String(r.window_start).slice(11, 16),
        r.pane_timing,
        r.booking_count,
        r.is_final,
      ]),
      [
        ['14:10', 'ON_TIME', 1, true],
        ['14:11', 'ON_TIME', 2, true],
      ],
    );
    assert.deepEqual(
      (await store.readDropped()).map((d) => [d.windowStartMs, d.count]),
      [[T, 1]],
    );
  });

  it('drops data for a window whose trigger finished (no late firings) as CLOSED_WINDOW', async () => {
    const { sink, windows, clock, store } = memoryBookingWindows({
      OFFVIA_WINDOW_LATE_FIRING_COUNT: '0',
    });
    await record(sink, { id: 'a', fare: '1', at: T + S }, T + 2 * S);
    await record(
      sink,
      { id: 'clock', route: ['SFO', 'HND', 'USD'], fare: '1', at: T + 75 * S },
      T + 76 * S,
    );
    await fire(windows, clock, T + 77 * S); // ON_TIME, final: the window is CLOSED
    const late = await record(sink, { id: 'b', fare: '2', at: T + 30 * S }, T + 80 * S);
    assert.equal(late.kind, 'dropped');
    assert.equal(late.dropped[0]?.reason, 'CLOSED_WINDOW');
    assert.deepEqual(
      (await store.readDropped()).map((d) => [d.count, d.closedWindow]),
      [[1, 1]],
    );
  });

  it('keeps the shard count a window was created with when N changes', async () => {
    const first = memoryBookingWindows({}, { shards: 2 });
    const a = { id: 'a', fare: '1', at: T + S };
    await record(first.sink, a, T + 2 * S);
    // Same store, a new instance configured with 4 shards: b's event shard, reduced mod 2 for this window.
    const second = memoryBookingWindows({}, { shards: 4 });
    Object.assign(second.store.state, first.store.state);
    const store = second.store;
    const b = { id: 'b', fare: '2', at: T + 2 * S };
    await record(second.sink, b, T + 3 * S);
    const shardOf = (spec: typeof a, n: number) => eventShardOf(bookingEvent(spec).eventId, n) % 2;
    const expected = new Map<number, number>();
    for (const shard of [shardOf(a, 2), shardOf(b, 4)]) {
      expected.set(shard, (expected.get(shard) ?? 0) + 1);
    }
    assert.deepEqual(
      [...store.state.shards.values()].map((s) => [s.shard, s.contribution.elementsInPane]).sort(),
      [...expected.entries()].sort(),
    );
    assert.ok(
      [...store.state.shards.values()].every((s) => s.shard < 2),
      'the window keeps its 2 shards',
    );
    await fire(second.windows, second.clock, T + 3 * 24 * 3600 * S);
    assert.deepEqual(
      second.writer.gold().map((r) => r.booking_count),
      [2],
    );
    assert.equal(store.state.shards.size, 0);
  });

  it('counts an event once when a bundle carries it twice, and reports the copy as a duplicate', async () => {
    const { windows, store } = memoryBookingWindows();
    const e = bookingEvent({ id: 'dup', fare: '3', at: T + S });
    const element = {
      eventId: e.eventId,
      messageId: 'm',
      value: e.fareScaled,
      timestampMs: e.eventTimeMs,
      receivedAtMs: T + 2 * S,
    };
    const result = await windows.keyed.processBundle(
      'JFK-LHR-USD',
      [element, { ...element, messageId: 'm2' }],
      () => Promise.resolve(-Infinity),
    );
    assert.deepEqual(
      result.outcomes.map((o) => o.kind),
      ['counted', 'duplicate'],
    );
    assert.equal(store.dedupIds().size, 1);
  });

  it('rejects a bundle mixing windows (a caller bug)', async () => {
    const { windows } = memoryBookingWindows();
    const el = (at: number) => ({
      eventId: `e${at}`,
      messageId: 'm',
      value: 1n,
      timestampMs: at,
      receivedAtMs: T,
    });
    await assert.rejects(
      windows.keyed.processBundle('JFK-LHR-USD', [el(T), el(T + 2 * MIN)], () =>
        Promise.resolve(0),
      ),
      /bundle mixes windows/,
    );
  });

  it('passes a store failure to the caller (redelivery) and logs it; nothing is committed', async () => {
    const logs: LogEntry[] = [];
    const { sink, store } = memoryBookingWindows({}, { logs });
    sinon
      .stub(store, 'transact')
      .rejects(new TransientError('firestore apply bundle', 'UNAVAILABLE'));
    await assert.rejects(record(sink, { id: 'x', fare: '1', at: T }, T + S), TransientError);
    assert.equal(store.dedupIds().size, 0);
    assert.ok(
      logs.some((l) => l.outcome === 'retry' && String(l.operation).includes('apply bundle')),
    );
  });

  it('is called by the ingest after the Silver write, once per event even when redelivered', async () => {
    const { windows, store, writer } = memoryBookingWindows();
    const deps = bookingIngestDeps({
      writer,
      env: { OFFVIA_MAX_EVENT_AGE_MS: String(1800 * 24 * 3600 * 1000) },
      logger: new Logger('test', () => undefined),
      now: () => T + 5 * S,
      aggregations: [{ ...bookingWindowStub(() => Promise.resolve()), pipeline: windows.pipeline }],
    });
    const data = Buffer.from(
      '{"booking_id":"BK-90210","passenger_id":"PAX-4821","flight_number":"OF-104","origin":"JFK","destination":"LHR","fare":"749.50","currency":"USD","status":"CONFIRMED","event_time":"2026-10-07T14:10:00Z"}',
    );
    for (const messageId of ['m1', 'm2']) {
      const message = {
        messageId,
        publishTime: undefined,
        publishTimeMs: undefined,
        attributes: {},
        data,
        subscription: undefined,
      };
      assert.equal(
        (await ingestPipelineMessage({ ok: true, message }, deps)).destination,
        'silver',
      );
    }
    assert.equal(
      writer.rows.get('offvia_silver.fact_bookings')?.length,
      2,
      'Silver is at-least-once (insertId)',
    );
    assert.equal(store.dedupIds().size, 1, 'the window counted it once');
    const shard = [...store.state.shards.values()][0];
    assert.deepEqual(shard?.contribution.accumulator, {
      count: 1,
      total: '749.5',
      min: '749.5',
      max: '749.5',
    });
  });
});

describe('state: bundler', () => {
  it('runs one bundle per key at a time and gives each caller its own result or the bundle error', async () => {
    const seen: string[][] = [];
    const bundler = new Bundler<string, string>(async (_key, items) => {
      seen.push([...items]);
      await new Promise((r) => setTimeout(r, 5));
      if (items.includes('bad')) throw new Error('boom');
      return items.map((i) => i.toUpperCase());
    }, 3);
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd', 'bad', 'e'].map((i) => bundler.submit('k', i)),
    );
    assert.deepEqual(seen, [['a'], ['b', 'c', 'd'], ['bad', 'e']]);
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['A', 'B', 'C', 'D', 'boom', 'boom'],
    );
    assert.equal(bundler.pending, 0);
    assert.throws(() => new Bundler(() => Promise.resolve([]), 0), RangeError);
  });
});
