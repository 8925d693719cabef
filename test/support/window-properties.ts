// The exactly-once / order-independence property of the keyed store, shared by the in-memory and emulator suites:
// any permutation and duplication of events within allowed lateness, delivered in concurrent bursts with fireWindows
// runs in between, ends with the same final panes as sorted single delivery, and with the exact aggregates.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  bookingAggregatesFn,
  parseScaledText,
  type BookingAggregate,
} from '../../shared/aggregates/booking-aggregates';
import { formatScaled } from '../../shared/contract';
import type { AccumulationMode } from '../../shared/windowing';
import { bookingEvent, Clock, fire, record, S, T, type BookingSpec } from './booking-windows';
import type { BookingWindows } from './booking-window-assembly';
import type { BookingWindowSink } from './booking-window-assembly';
import type { RecordingWriter } from './booking-windows';
import type { WindowStore } from '../../shared/state/window-store';
import type { BookingAccumulator } from '../../shared/aggregates/booking-aggregates';
import { prng } from './events';

const ROUTES: [string, string, string][] = [
  ['JFK', 'LHR', 'USD'],
  ['SFO', 'HND', 'USD'],
  ['CDG', 'FCO', 'EUR'],
];

/** A generated scenario. */
export interface WindowScenario {
  events: BookingSpec[];
  /** Event indexes in delivery order (each at least once). */
  deliveries: number[];
  /** Sizes of the concurrent bursts the deliveries are cut into. */
  bursts: number[];
  /** Processing-time step before each burst, ms. */
  steps: number[];
  /** Run fireWindows after these bursts. */
  firesAfter: number[];
  shards: number;
  mode: AccumulationMode;
  seed: number;
}

/** Scenarios within allowed lateness: event times span < 4 min (lateness 5 min), processing time < 60 s (idle). */
export function windowScenarios(maxEvents = 25): fc.Arbitrary<WindowScenario> {
  const event = fc.record({
    // Mostly one hot route and few windows, so concurrent deliveries share transactions (bundles).
    route: fc.constantFrom(0, 0, 0, 1, 2),
    offsetMs: fc.oneof(
      fc.integer({ min: 0, max: 2 * 60 * S - 1 }),
      fc.integer({ min: 0, max: 4 * 60 * S - 1 }),
    ),
    fareScaled: fc.bigInt({ min: 1n, max: 10n ** 13n }),
  });
  return fc
    .record({
      events: fc.array(event, { minLength: 1, maxLength: maxEvents }),
      copies: fc.array(fc.integer({ min: 1, max: 3 }), {
        minLength: maxEvents,
        maxLength: maxEvents,
      }),
      order: fc.array(fc.nat(), { minLength: 3 * maxEvents, maxLength: 3 * maxEvents }),
      burstSizes: fc.array(fc.integer({ min: 1, max: 10 }), {
        minLength: 3 * maxEvents,
        maxLength: 3 * maxEvents,
      }),
      stepMs: fc.array(fc.integer({ min: 0, max: 700 }), {
        minLength: 3 * maxEvents,
        maxLength: 3 * maxEvents,
      }),
      fires: fc.array(fc.nat(), { maxLength: 4 }),
      shards: fc.integer({ min: 1, max: 4 }),
      mode: fc.constantFrom<AccumulationMode>('ACCUMULATING', 'DISCARDING'),
      seed: fc.integer(),
    })
    .map((g) => {
      const events = g.events.map((e, i): BookingSpec => ({
        id: `p${i}`,
        route: ROUTES[e.route] ?? ['JFK', 'LHR', 'USD'],
        fare: formatScaled(e.fareScaled),
        at: T + e.offsetMs,
      }));
      const deliveries = events.flatMap((_, i) =>
        Array.from({ length: g.copies[i] ?? 1 }, () => i),
      );
      // A permutation driven by the generated keys (stable sort by key).
      const keyed = deliveries.map((d, i) => ({ d, k: g.order[i] ?? 0, i }));
      keyed.sort((a, b) => a.k - b.k || a.i - b.i);
      const ordered = keyed.map((x) => x.d);
      const bursts: number[] = [];
      let left = ordered.length;
      for (let i = 0; left > 0; i++) {
        const size = Math.min(left, g.burstSizes[i] ?? 1);
        bursts.push(size);
        left -= size;
      }
      return {
        events,
        deliveries: ordered,
        bursts,
        steps: bursts.map((_, i) => g.stepMs[i] ?? 0),
        firesAfter: g.fires.map((f) => f % bursts.length),
        shards: g.shards,
        mode: g.mode,
        seed: g.seed,
      };
    });
}

/** A seeded PRNG for shard picks (mulberry32). */
export function seededPick(seed: number): (n: number) => number {
  const next = prng(seed);
  return (n) => Math.floor(next() * n);
}

/** One pipeline under test. */
export interface PipelineUnderTest {
  windows: BookingWindows;
  sink: BookingWindowSink;
  writer: RecordingWriter;
  clock: Clock;
  store: WindowStore<BookingAccumulator>;
}

/** Final result per `route|window`: the aggregate of everything, as the panes tell it. */
function finalAggregates(
  rows: readonly Record<string, unknown>[],
  mode: AccumulationMode,
): Map<string, BookingAggregate> {
  const byWindow = new Map<string, Record<string, unknown>[]>();
  for (const r of rows) {
    const id = `${String(r.route_key)}|${String(r.window_start)}`;
    byWindow.set(id, [...(byWindow.get(id) ?? []), r]);
  }
  const result = new Map<string, BookingAggregate>();
  for (const [id, panes] of byWindow) {
    panes.sort((a, b) => Number(a.pane_index) - Number(b.pane_index));
    assert.deepEqual(
      panes.map((p) => Number(p.pane_index)),
      panes.map((_, i) => i),
      `pane indices of ${id} are 0..n-1`,
    );
    if (mode === 'ACCUMULATING') {
      const last = panes[panes.length - 1] ?? {};
      result.set(id, {
        count: Number(last.booking_count),
        total: String(last.fare_total),
        min: last.fare_min as string | null,
        max: last.fare_max as string | null,
        mean: last.fare_mean as string | null,
      });
    } else {
      const acc = bookingAggregatesFn.mergeAccumulators(
        panes.map((p) => ({
          count: Number(p.booking_count),
          total: String(p.fare_total),
          min: p.fare_min as string | null,
          max: p.fare_max as string | null,
        })),
      );
      result.set(id, bookingAggregatesFn.extractOutput(acc));
    }
  }
  return result;
}

/** The aggregates computed directly from the distinct events. */
function expectedAggregates(events: readonly BookingSpec[]): Map<string, BookingAggregate> {
  const byWindow = new Map<string, bigint[]>();
  for (const e of events) {
    const v = bookingEvent(e);
    const start = Math.floor(e.at / 60_000) * 60_000;
    const id = `${(e.route ?? []).join('-')}|${new Date(start).toISOString().replace('Z', '000Z')}`;
    byWindow.set(id, [...(byWindow.get(id) ?? []), v.fareScaled]);
  }
  const result = new Map<string, BookingAggregate>();
  for (const [id, fares] of byWindow) {
    const acc = fares.reduce(
      (a, f) => bookingAggregatesFn.addInput(a, f),
      bookingAggregatesFn.createAccumulator(),
    );
    result.set(id, bookingAggregatesFn.extractOutput(acc));
  }
  return result;
}

/** Delivers the scenario (bursts concurrently), then fires everything with a clock two days on. */
export async function deliver(
  p: PipelineUnderTest,
  scenario: WindowScenario,
  sorted: boolean,
): Promise<void> {
  let pt = T + 5 * S;
  if (sorted) {
    const order = scenario.events
      .map((_, i) => i)
      .sort((a, b) => {
        const ea = scenario.events[a];
        const eb = scenario.events[b];
        return (ea?.at ?? 0) - (eb?.at ?? 0) || a - b;
      });
    for (const i of order) {
      pt += 1;
      p.clock.nowMs = pt;
      await record(p.sink, scenario.events[i] as BookingSpec, pt);
    }
  } else {
    let next = 0;
    for (let b = 0; b < scenario.bursts.length; b++) {
      pt += scenario.steps[b] ?? 0;
      p.clock.nowMs = pt;
      const burst = scenario.deliveries.slice(next, next + (scenario.bursts[b] ?? 1));
      next += burst.length;
      await Promise.all(
        burst.map((i, j) => record(p.sink, scenario.events[i] as BookingSpec, pt, `m-${b}-${j}`)),
      );
      if (scenario.firesAfter.includes(b)) await fire(p.windows, p.clock, pt);
    }
  }
  await fire(p.windows, p.clock, pt + 2 * 24 * 3600 * S);
}

/**
 * Checks the property for one scenario: `shuffled` got the permuted, duplicated delivery, `reference` the sorted
 * single one; both must end with the exact aggregates of the distinct events, window by window, and no drops.
 */
export async function checkOrderIndependence(
  scenario: WindowScenario,
  shuffled: PipelineUnderTest,
  reference: PipelineUnderTest,
): Promise<void> {
  await deliver(shuffled, scenario, false);
  await deliver(reference, scenario, true);
  const expected = expectedAggregates(scenario.events);
  const got = finalAggregates(shuffled.writer.gold(), scenario.mode);
  const ref = finalAggregates(reference.writer.gold(), scenario.mode);
  const sortedEntries = (m: Map<string, BookingAggregate>) =>
    [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
  assert.deepEqual(
    sortedEntries(got),
    sortedEntries(expected),
    'permuted+duplicated vs the events',
  );
  assert.deepEqual(
    sortedEntries(ref),
    sortedEntries(expected),
    'sorted single delivery vs the events',
  );
  assert.deepEqual(
    await shuffled.store.readDropped(),
    [],
    'nothing dropped within allowed lateness',
  );
  const totals = [...got.values()].reduce((n, a) => n + a.count, 0);
  assert.equal(totals, scenario.events.length, 'every distinct event counted once');
  for (const [id, agg] of got) {
    assert.ok(parseScaledText(agg.total) > 0n, `${id} total is positive`);
  }
}
