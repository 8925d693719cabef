// A hot key on the Firestore emulator: 4 writer processes send 2,000 bookings of one route and one window (plus
// duplicates, within and across processes) at once; counts and exact sums must come out exactly.
import assert from 'node:assert/strict';
import {
  bookingAggregatesFn,
  parseBookingAccumulator,
} from '../../../shared/aggregates/booking-aggregates';
import { formatScaled } from '../../../shared/contract';
import type { BookingAccumulator } from '../../../shared/aggregates/booking-aggregates';
import type { FirestoreWindowStore } from '../../../shared/state/firestore-window-store';
import { GROUP_COLLECTIONS } from '../../../shared/state/grouped-window-store';
import { bookingEvent, fire, S, T, type BookingSpec } from '../../support/booking-windows';
import {
  suiteFirestore,
  firestoreBookingWindows,
  uniqueRoot,
} from '../../support/firestore-windows';
import { runWriterProcesses } from '../../support/fork-writers';
import type { WriterJob } from '../../support/hot-window-writer';
import { seededPick } from '../../support/window-properties';

const EVENTS = 2000;
const PROCESSES = 4;

/** The accumulators of the hot window's shards and how many events its dedup state knows, as stored. */
async function storedState(
  store: FirestoreWindowStore<BookingAccumulator>,
): Promise<{ accumulators: BookingAccumulator[]; dedupIds: number }> {
  const groupDocs = (await store.collection(GROUP_COLLECTIONS.groups).get()).docs;
  const accumulators: BookingAccumulator[] = [];
  let dedupIds = 0;
  for (const d of groupDocs) {
    const parts = d.get('c') as Record<string, { a: string }>;
    for (const part of Object.values(parts)) {
      accumulators.push(parseBookingAccumulator(JSON.parse(part.a)));
    }
    dedupIds += String(d.get('seen')).length / 16;
  }
  return { accumulators, dedupIds };
}

describe('integration: a hot route window written by 4 processes at once (Firestore emulator)', function () {
  // Key groups put each event on shard hash(event id), so every process writes every shard document (that is what
  // makes a redelivery land where its id is), and the emulator serialises them.
  this.timeout(360_000);
  const db = suiteFirestore();

  it('counts 2,000 events exactly once with the exact fare total, despite duplicates', async () => {
    const rnd = seededPick(4242);
    // Fares in units of 10^-9, kept to check the total without the code under test.
    const scaled = Array.from(
      { length: EVENTS },
      () => BigInt(1 + rnd(1_000_000)) * 1_000_000_007n,
    );
    const events: BookingSpec[] = scaled.map((units, i) => ({
      id: `hot-${i}`,
      // Up to 9 fraction digits: any binary float would lose these.
      fare: formatScaled(units),
      at: T + Math.floor((i * 59_000) / EVENTS),
    }));
    const independentTotal = scaled.reduce((a, b) => a + b, 0n);
    const env = {
      OFFVIA_WINDOW_FIRESTORE_ROOT: uniqueRoot('itHot'),
      OFFVIA_WINDOW_GROUP_SHARDS: '4',
    };
    // Each process gets its quarter, 10% of its own again and 10% of another's: ~2,400 deliveries in all.
    const jobs: WriterJob[] = Array.from({ length: PROCESSES }, (_, p) => {
      const own = events.filter((_, i) => i % PROCESSES === p);
      const other = events.filter((_, i) => i % PROCESSES === (p + 1) % PROCESSES);
      const specs = [
        ...own,
        ...own.filter((_, i) => i % 10 === 0),
        ...other.filter((_, i) => i % 10 === 5),
      ];
      return {
        env,
        concurrency: 32,
        deliveries: specs.map((spec, i) => ({
          spec,
          // Processing times over 55 s: an early pane fires (30 s after the first element) while writes go on.
          receivedAtMs: T + 2 * S + Math.floor((i * 55_000) / specs.length),
          messageId: `p${p}-${i}`,
        })),
      };
    });
    const deliveries = jobs.reduce((n, j) => n + j.deliveries.length, 0);
    const reports = await runWriterProcesses(jobs, 300_000);

    const counted = reports.reduce((n, r) => n + r.counted, 0);
    const duplicates = reports.reduce((n, r) => n + r.duplicates, 0);
    assert.equal(counted, EVENTS, 'each event counted by exactly one delivery');
    assert.equal(duplicates, deliveries - EVENTS, 'every other delivery is a duplicate');
    assert.equal(
      reports.reduce((n, r) => n + r.dropped, 0),
      0,
    );

    // The shards merge to the exact aggregate of the 2,000 events.
    const { windows, store, writer, clock } = firestoreBookingWindows(db(), env);
    const state = await storedState(store);
    assert.ok(
      state.accumulators.length > 1 && state.accumulators.length <= 4,
      `${state.accumulators.length} shards used`,
    );
    const merged = bookingAggregatesFn.mergeAccumulators(state.accumulators);
    const expected = events.reduce(
      (acc, e) => bookingAggregatesFn.addInput(acc, bookingEvent(e).fareScaled),
      bookingAggregatesFn.createAccumulator(),
    );
    assert.deepEqual(merged, expected);
    assert.equal(state.dedupIds, EVENTS, 'one dedup id per event, whatever its deliveries');

    // Closing the window emits the final pane with the same numbers.
    await fire(windows, clock, T + 2 * 24 * 3600 * S);
    const early = reports.flatMap((r) => r.panes).sort((a, b) => a[1] - b[1]);
    assert.ok(early.length >= 1, 'an EARLY pane fired while the writers were writing');
    assert.deepEqual(
      early,
      early.map((_, i) => ['EARLY', i]),
    );
    const panes = writer.gold();
    const last = panes[panes.length - 1];
    assert.equal(last?.pane_timing, 'ON_TIME');
    assert.equal(last?.pane_index, early.length);
    assert.equal(last?.booking_count, EVENTS);
    assert.equal(last?.fare_total, expected.total);
    // An oracle that shares no code with the aggregates: plain BigInt sum vs the gold row's decimal text.
    const [whole = '', fraction = ''] = String(last?.fare_total).split('.');
    assert.equal(BigInt(whole) * 10n ** 9n + BigInt(fraction.padEnd(9, '0')), independentTotal);
    const total = reports.reduce(
      (m, r) => ({
        attempts: m.attempts + r.metrics.attempts,
        tx: m.tx + r.metrics.transactions,
      }),
      { attempts: 0, tx: 0 },
    );
    // For the record (the benchmark prints more): transactions, attempts, redeliveries.
    console.log(
      `      ${deliveries} deliveries in ${Math.max(...reports.map((r) => r.elapsedMs))} ms: ` +
        `${total.tx} transactions, ${total.attempts} attempts, ` +
        `${reports.reduce((n, r) => n + r.redeliveries, 0)} redeliveries, ${early.length} EARLY panes`,
    );
  });
});
