// The keyed window store on the Firestore emulator (real client): the exactly-once property, the watermark's
// compare-and-set, and gold rows in BigQuery (key groups' own documents: key-groups.test.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { stackBigQuery, stackEnv } from '../../../deploy/local/layers';
import { fireWindowsDepsOf } from '../../support/booking-window-assembly';
import { parseNumeric } from '../../../shared/contract';
import { fireWindows } from '../../../shared/state/fire-windows';
import { WatermarkTracker } from '../../../shared/state/watermark-tracker';
import { MIN, record, S, T } from '../../support/booking-windows';
import {
  suiteFirestore,
  firestoreBookingWindows,
  uniqueRoot,
} from '../../support/firestore-windows';
import { checkOrderIndependence, windowScenarios } from '../../support/window-properties';

/** A NUMERIC as the client returns it (Big.js) → canonical text ("749.500" from the emulator → "749.5"). */
function numericText(value: unknown): string {
  const text = (value as { toFixed(): string }).toFixed();
  const parsed = parseNumeric(text);
  if (!parsed.ok) throw new Error(`not a NUMERIC: ${text}`);
  return parsed.canonical;
}

describe('integration: keyed window store on the Firestore emulator', function () {
  this.timeout(120_000);
  const db = suiteFirestore();

  it('ends every permutation/duplication of events with the sorted single-delivery panes (emulator run)', async () => {
    await fc.assert(
      fc.asyncProperty(windowScenarios(12), async (scenario) => {
        const env = {
          OFFVIA_WINDOW_GROUP_SHARDS: String(scenario.shards),
          OFFVIA_WINDOW_ACCUMULATION_MODE: scenario.mode,
        };
        await checkOrderIndependence(
          scenario,
          firestoreBookingWindows(db(), env),
          firestoreBookingWindows(db(), env),
        );
      }),
      { numRuns: 4, seed: 20261007 },
    );
  });

  it('never moves the stored watermark back under concurrent compare-and-set writers', async () => {
    const { store } = firestoreBookingWindows(db());
    const policy = { maxOutOfOrdernessMs: 10 * S, idleTimeoutMs: MIN, maxFutureSkewMs: 5 * MIN };
    const trackers = [0, 1, 2, 3].map(
      () => new WatermarkTracker(store, { policy, cacheMs: 0, minWriteIntervalMs: 0 }),
    );
    const seen: number[] = [];
    await Promise.all(
      trackers.map(async (tracker, i) => {
        for (let k = 0; k < 10; k++) {
          const eventMs = T + ((k * 7 + i * 13) % 40) * S;
          await tracker.observe(eventMs, T + k * S);
          seen.push((await store.readWatermark())?.state.watermarkMs ?? -Infinity);
        }
      }),
    );
    const final = await store.readWatermark();
    assert.equal(final?.state.maxEventTimeMs, T + 39 * S);
    assert.equal(final?.state.watermarkMs, T + 29 * S);
    assert.ok(seen.every((w) => w <= (final?.state.watermarkMs ?? 0)));
  });

  it('writes pane rows to the gold table (BigQuery emulator) and the view keeps the latest pane per window', async function () {
    if (!process.env.BIGQUERY_EMULATOR_HOST) this.skip();
    const pipeline = `it_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
    const { windows, clock, sink } = firestoreBookingWindows(
      db(),
      { OFFVIA_WINDOW_PIPELINE: pipeline, OFFVIA_WINDOW_FIRESTORE_ROOT: uniqueRoot() },
      { writer: 'bigquery' },
    );
    await record(sink, { id: 'g1', fare: '749.50', at: T + 1 * S }, T + 2 * S);
    await record(sink, { id: 'g2', fare: '250.25', at: T + 20 * S }, T + 40 * S); // EARLY pane (38 s after g1)
    await record(
      sink,
      { id: 'g3', route: ['SFO', 'HND', 'USD'], fare: '1', at: T + 80 * S },
      T + 81 * S,
    );
    clock.nowMs = T + 85 * S;
    const run = await fireWindows(fireWindowsDepsOf(windows));
    assert.equal(run.panesEmitted, 1, 'the ON_TIME pane of JFK-LHR-USD');
    const env = stackEnv();
    const bq = stackBigQuery(env);
    const [rows] = await bq.query({
      query: `SELECT pane_timing, pane_index, booking_count, fare_total, fare_mean, is_final, insert_id
              FROM \`${env.projectId}.offvia_gold.route_panes\`
              WHERE pipeline = @pipeline AND route_key = 'JFK-LHR-USD' ORDER BY pane_index`,
      params: { pipeline },
    });
    assert.deepEqual(
      (rows as Record<string, unknown>[]).map((r) => [
        r.pane_timing,
        r.pane_index,
        r.booking_count,
        numericText(r.fare_total),
        numericText(r.fare_mean),
      ]),
      [
        ['EARLY', 0, 1, '749.5', '749.5'],
        ['ON_TIME', 1, 2, '999.75', '499.875'],
      ],
    );
    const [latest] = await bq.query({
      query: `SELECT pane_timing, pane_index FROM \`${env.projectId}.offvia_gold.route_panes_latest\`
              WHERE pipeline = @pipeline AND route_key = 'JFK-LHR-USD'`,
      params: { pipeline },
    });
    assert.deepEqual(latest, [{ pane_timing: 'ON_TIME', pane_index: 1 }]);
  });
});
