// Properties of the keyed store over the in-memory implementation: order independence and exactly-once under
// permutation, duplication and concurrency; the stored watermark never goes backwards; future-dated events do not
// move it.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { BookingAccumulator } from '../../../shared/aggregates/booking-aggregates';
import { loadWindowConfig } from '../../../shared/config/window-config';
import { WatermarkTracker } from '../../../shared/state/watermark-tracker';
import type { StoredWatermark } from '../../../shared/state/window-store';
import type { WatermarkState } from '../../../shared/windowing';
import { memoryBookingWindows, MIN, T } from '../../support/booking-windows';
import { MemoryWindowStore } from '../../support/memory-window-store';
import {
  checkOrderIndependence,
  windowScenarios,
  type PipelineUnderTest,
} from '../../support/window-properties';

function pipelineFor(shards: number, mode: string): PipelineUnderTest {
  const built = memoryBookingWindows({ OFFVIA_WINDOW_ACCUMULATION_MODE: mode }, { shards });
  return { ...built };
}

describe('state properties (in-memory store)', function () {
  this.timeout(60_000);

  it('final panes do not depend on delivery order, duplication or bursts (exactly once)', async () => {
    await fc.assert(
      fc.asyncProperty(windowScenarios(), async (scenario) => {
        await checkOrderIndependence(
          scenario,
          pipelineFor(scenario.shards, scenario.mode),
          pipelineFor(scenario.shards, scenario.mode),
        );
      }),
      { numRuns: 150 },
    );
  });

  // The production default (watermark future skew 0): the properties hold for what users run.
  const POLICY = loadWindowConfig({}).watermarkPolicy;

  it('the stored watermark never goes backwards, whatever several instances observe and when', async () => {
    const op = fc.record({
      tracker: fc.integer({ min: 0, max: 2 }),
      kind: fc.constantFrom('observe', 'advance'),
      eventOffsetMs: fc.integer({ min: -10 * MIN, max: 20 * MIN }),
      ptOffsetMs: fc.integer({ min: 0, max: 15 * MIN }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 0, max: 2000 }),
        fc.integer({ min: 0, max: 2000 }),
        async (groups, cacheMs, minWriteIntervalMs) => {
          const store = new MemoryWindowStore<BookingAccumulator>();
          const written: WatermarkState[] = [];
          const write = store.writeWatermark.bind(store);
          store.writeWatermark = async (state, at, expected: StoredWatermark | null) => {
            const result = await write(state, at, expected);
            if (result) written.push(state);
            return result;
          };
          const trackers = [0, 1, 2].map(
            () => new WatermarkTracker(store, { policy: POLICY, cacheMs, minWriteIntervalMs }),
          );
          let acceptedMax = -Infinity;
          let latestPt = -Infinity;
          for (const group of groups) {
            latestPt = Math.max(latestPt, ...group.map((o) => T + o.ptOffsetMs));
            await Promise.all(
              group.map(async (o) => {
                const tracker = trackers[o.tracker] as WatermarkTracker;
                const pt = T + o.ptOffsetMs;
                if (o.kind === 'advance') return tracker.advance(pt);
                const eventMs = T + o.eventOffsetMs;
                const update = await tracker.observe(eventMs, pt);
                assert.equal(update.futureDated, eventMs > pt + POLICY.maxFutureSkewMs);
                if (!update.futureDated) acceptedMax = Math.max(acceptedMax, eventMs);
                return update;
              }),
            );
          }
          for (const state of written) {
            assert.ok(
              state.watermarkMs <= latestPt - POLICY.maxOutOfOrdernessMs,
              `watermark ${state.watermarkMs} ran ahead of processing time ${latestPt} - the bound`,
            );
          }
          for (let i = 1; i < written.length; i++) {
            assert.ok(
              (written[i]?.watermarkMs ?? 0) >= (written[i - 1]?.watermarkMs ?? 0),
              `write ${i} moved the watermark back`,
            );
          }
          const max = store.state.watermark?.state.maxEventTimeMs ?? null;
          if (max !== null) assert.ok(max <= acceptedMax, 'a future-dated event moved the maximum');
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a future-dated event changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 10 * MIN }),
        fc.integer({ min: 1, max: 10 * MIN }),
        async (ptOffsetMs, beyondMs) => {
          const store = new MemoryWindowStore<BookingAccumulator>();
          const a = new WatermarkTracker(store, {
            policy: POLICY,
            cacheMs: 0,
            minWriteIntervalMs: 0,
          });
          await a.observe(T, T + 1000);
          const before = store.state.watermark?.state;
          const pt = T + 1000 + ptOffsetMs;
          const update = await a.observe(pt + POLICY.maxFutureSkewMs + beyondMs, pt);
          assert.equal(update.futureDated, true);
          assert.equal(update.written, false);
          assert.deepEqual(store.state.watermark?.state, before);
          // Nor later: the next advance applies the idle rule only, as if the event had never come.
          await a.advance(pt);
          const reference = new MemoryWindowStore<BookingAccumulator>();
          const b = new WatermarkTracker(reference, {
            policy: POLICY,
            cacheMs: 0,
            minWriteIntervalMs: 0,
          });
          await b.observe(T, T + 1000);
          await b.advance(pt);
          assert.deepEqual(store.state.watermark?.state, reference.state.watermark?.state);
        },
      ),
      { numRuns: 200 },
    );
  });
});
