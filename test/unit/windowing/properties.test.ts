// Properties of the core over random strategies and deliveries: order independence of final panes, pane-info
// invariants, JSON-only state, purity and determinism.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import {
  assignWindows,
  createReduceFnRunner,
  fixed,
  isMerging,
  MIN_WATERMARK_MS,
  mergeOverlappingWindows,
  sessions,
  sliding,
  windowId,
  type FiringSpec,
  type IntervalWindow,
  type KeyState,
  type Pane,
  type WindowingStrategy,
} from '../../../shared/windowing';
import { runTestStream, type TestStreamEvent } from '../../support/test-stream';
import { collectFn, END, MINUTE, SECOND, T0 } from './helpers';

const FIRING: fc.Arbitrary<FiringSpec> = fc.oneof(
  fc.record({ processingTimeDelayMs: fc.integer({ min: 1, max: 60 }).map((s) => s * SECOND) }),
  fc.record({ elementCount: fc.integer({ min: 1, max: 3 }) }),
  fc.record({
    processingTimeDelayMs: fc.integer({ min: 1, max: 60 }).map((s) => s * SECOND),
    elementCount: fc.integer({ min: 1, max: 3 }),
  }),
);

const STRATEGY: fc.Arbitrary<WindowingStrategy> = fc.record({
  windowFn: fc.constantFrom(
    fixed(10 * SECOND),
    fixed(MINUTE, 15 * SECOND),
    sliding(MINUTE, 20 * SECOND),
    sessions(15 * SECOND),
  ),
  allowedLatenessMs: fc.constantFrom(0, 30 * SECOND, 5 * MINUTE),
  trigger: fc.record(
    { earlyFirings: FIRING, lateFirings: fc.option(FIRING, { nil: null }) },
    { requiredKeys: ['lateFirings'] },
  ),
  accumulationMode: fc.constantFrom('ACCUMULATING' as const, 'DISCARDING' as const),
});

interface Event {
  key: string;
  value: number;
  timestampMs: number;
}

/** Distinct values 0..n-1 on two keys, event times on a 1 s grid over five minutes (collisions included). */
const EVENTS: fc.Arbitrary<Event[]> = fc
  .array(fc.record({ key: fc.constantFrom('a', 'b'), second: fc.integer({ min: 0, max: 300 }) }), {
    minLength: 1,
    maxLength: 25,
  })
  .map((es) => es.map((e, value) => ({ key: e.key, value, timestampMs: T0 + e.second * SECOND })));

/** How to deliver: a shuffle, bundle cuts, and what happens between bundles. */
const PLAN = fc.record({
  order: fc.array(fc.nat(), { minLength: 25, maxLength: 25 }),
  cuts: fc.array(fc.boolean(), { minLength: 25, maxLength: 25 }),
  steps: fc.array(
    fc.array(
      fc.oneof(
        fc.record({
          kind: fc.constant('watermark' as const),
          fraction: fc.double({ min: 0, max: 1, noNaN: true }),
        }),
        fc.record({
          kind: fc.constant('processingTime' as const),
          seconds: fc.integer({ min: 0, max: 90 }),
        }),
      ),
      { maxLength: 2 },
    ),
    { minLength: 26, maxLength: 26 },
  ),
});

type Plan = typeof PLAN extends fc.Arbitrary<infer T> ? T : never;

/**
 * A shuffled, bundled delivery whose watermark steps never make a remaining element droppable: the watermark
 * stays <= t + allowed lateness (t alone without late firings, so no window closes) for every undelivered t.
 */
function shuffledDelivery(
  strategy: WindowingStrategy,
  events: Event[],
  plan: Plan,
): TestStreamEvent<number>[] {
  const order = events
    .map((e, i) => ({ e, rank: plan.order[i] ?? 0 }))
    .sort((a, b) => a.rank - b.rank || a.e.value - b.e.value)
    .map((x) => x.e);
  const slack = strategy.trigger.lateFirings ? strategy.allowedLatenessMs : 0;
  const out: TestStreamEvent<number>[] = [];
  let watermarkMs = MIN_WATERMARK_MS;
  let bundle: Event[] = [];
  const flush = (): void => {
    if (bundle.length > 0) out.push({ kind: 'elements', elements: bundle });
    bundle = [];
  };
  order.forEach((event, i) => {
    for (const step of plan.steps[i] ?? []) {
      flush();
      // Steps that would not move a clock are left out: runTestStream, like Beam's TestStream, refuses them.
      if (step.kind === 'processingTime') {
        if (step.seconds > 0)
          out.push({ kind: 'processingTime', advanceByMs: step.seconds * SECOND });
        continue;
      }
      const bound = Math.min(...order.slice(i).map((e) => e.timestampMs + slack));
      const from = Math.max(watermarkMs, T0 - MINUTE);
      if (bound <= from) continue;
      const nextMs = from + Math.floor((bound - from) * step.fraction);
      if (nextMs <= watermarkMs) continue;
      watermarkMs = nextMs;
      out.push({ kind: 'watermark', watermarkMs });
    }
    bundle.push(event);
    if (plan.cuts[i]) flush();
  });
  flush();
  out.push(END);
  return out;
}

function sortedDelivery(events: Event[]): TestStreamEvent<number>[] {
  const sorted = [...events].sort((a, b) => a.timestampMs - b.timestampMs || a.value - b.value);
  return [
    ...sorted.map((e): TestStreamEvent<number> => ({ kind: 'elements', elements: [e] })),
    END,
  ];
}

/** The windows every element ends up in once all data is in: assigned windows, or the final sessions. */
function finalWindows(
  strategy: WindowingStrategy,
  events: Event[],
): Map<string, { key: string; window: IntervalWindow; values: number[] }> {
  const result = new Map<string, { key: string; window: IntervalWindow; values: number[] }>();
  for (const key of ['a', 'b']) {
    const mine = events.filter((e) => e.key === key);
    const assigned = mine.flatMap((e) =>
      assignWindows(strategy.windowFn, e.timestampMs).map((window) => ({ e, window })),
    );
    const windows = isMerging(strategy.windowFn)
      ? mergeOverlappingWindows(assigned.map((a) => a.window)).map((m) => m.result)
      : assigned.map((a) => a.window);
    for (const window of windows) {
      const values = mine
        .filter((e) =>
          assignWindows(strategy.windowFn, e.timestampMs).some(
            (w) => window.startMs <= w.startMs && w.endMs <= window.endMs,
          ),
        )
        .map((e) => e.value)
        .sort((x, y) => x - y);
      result.set(`${key}/${windowId(window)}`, { key, window, values });
    }
  }
  return result;
}

function within(pane: Pane<number[]>, key: string, window: IntervalWindow): boolean {
  return (
    pane.key === key && window.startMs <= pane.window.startMs && pane.window.endMs <= window.endMs
  );
}

/** What the final windows hold at the end of a run: last pane when accumulating, all panes when discarding. */
function finalContents(
  strategy: WindowingStrategy,
  panes: readonly Pane<number[]>[],
  events: Event[],
): Map<string, number[]> {
  const contents = new Map<string, number[]>();
  for (const [id, { key, window }] of finalWindows(strategy, events)) {
    const mine = panes.filter((pane) => within(pane, key, window));
    if (strategy.accumulationMode === 'ACCUMULATING') {
      const exact = mine.filter((pane) => windowId(pane.window) === windowId(window));
      contents.set(id, exact[exact.length - 1]?.value ?? []);
    } else {
      contents.set(
        id,
        mine.flatMap((pane) => pane.value).sort((a, b) => a - b),
      );
    }
  }
  return contents;
}

/** Beam's PaneInfo invariants for each (key, window): indices, first/last, EARLY* ON_TIME? LATE*. */
function assertPaneInfo(panes: readonly Pane<number[]>[]): void {
  const byWindow = new Map<string, Pane<number[]>[]>();
  for (const pane of panes) {
    const id = `${pane.key}/${windowId(pane.window)}`;
    byWindow.set(id, [...(byWindow.get(id) ?? []), pane]);
  }
  for (const [id, list] of byWindow) {
    let nonEarly = 0;
    list.forEach((pane, i) => {
      assert.equal(pane.index, i, id);
      assert.equal(pane.isFirst, i === 0, id);
      assert.equal(pane.isLast && i !== list.length - 1, false, `${id}: a pane after the last`);
      if (pane.timing === 'EARLY') {
        assert.equal(nonEarly, 0, `${id}: EARLY after a non-EARLY pane`);
        assert.equal(pane.onTimeIndex, -1, id);
      } else {
        if (pane.timing === 'ON_TIME') assert.equal(nonEarly, 0, `${id}: a second ON_TIME pane`);
        assert.equal(pane.onTimeIndex, nonEarly++, id);
      }
    });
  }
}

describe('windowing: properties of the core', () => {
  it('gives every window the same final content for any shuffled, bundled, non-dropping delivery', () => {
    fc.assert(
      fc.property(STRATEGY, EVENTS, PLAN, (strategy, events, plan) => {
        const runner = createReduceFnRunner(strategy, collectFn);
        const start = { processingTimeMs: T0 };
        const shuffled = runTestStream(runner, shuffledDelivery(strategy, events, plan), start);
        const sorted = runTestStream(runner, sortedDelivery(events), start);
        assert.deepEqual(shuffled.dropped, []);
        assert.deepEqual(sorted.dropped, []);
        const expected = new Map(
          [...finalWindows(strategy, events)].map(([id, w]) => [id, w.values]),
        );
        assert.deepEqual(finalContents(strategy, shuffled.panes, events), expected);
        assert.deepEqual(finalContents(strategy, sorted.panes, events), expected);
        assertPaneInfo(shuffled.panes);
        assertPaneInfo(sorted.panes);
        for (const state of shuffled.states.values())
          assert.deepEqual(state.windows, [], 'all state collected');
      }),
      { numRuns: 300 },
    );
  });

  it('keeps pane info consistent and state plain JSON on every step, without touching its input, deterministically', () => {
    const OPS = fc.array(
      fc.oneof(
        fc.record({
          kind: fc.constant('elements' as const),
          seconds: fc.array(fc.integer({ min: -60, max: 400 }), { minLength: 1, maxLength: 3 }),
        }),
        fc.record({
          kind: fc.constant('watermark' as const),
          seconds: fc.integer({ min: -60, max: 800 }),
        }),
        fc.record({
          kind: fc.constant('processingTime' as const),
          seconds: fc.integer({ min: 0, max: 90 }),
        }),
      ),
      { maxLength: 30 },
    );
    fc.assert(
      fc.property(STRATEGY, OPS, (strategy, ops) => {
        const runner = createReduceFnRunner(strategy, collectFn);
        const replay = (): { panes: Pane<number[]>[]; states: KeyState<number[]>[] } => {
          let state = runner.initialState('k');
          let watermarkMs = MIN_WATERMARK_MS;
          let processingTimeMs = T0;
          let value = 0;
          const panes: Pane<number[]>[] = [];
          const states: KeyState<number[]>[] = [];
          for (const op of ops) {
            const before = JSON.stringify(state);
            const ctx = { inputWatermarkMs: watermarkMs, processingTimeMs };
            let result;
            if (op.kind === 'elements') {
              const elements = op.seconds.map((s) => ({
                key: 'k',
                value: value++,
                timestampMs: T0 + s * SECOND,
              }));
              result = runner.processElements(state, elements, ctx);
              for (const d of result.dropped) {
                assert.ok(elements.includes(d.element));
                if (d.reason === 'EXPIRED_WINDOW') {
                  assert.ok(
                    d.window.endMs - 1 + strategy.allowedLatenessMs < result.state.inputWatermarkMs,
                  );
                }
              }
            } else if (op.kind === 'watermark') {
              watermarkMs = T0 + op.seconds * SECOND; // may go backwards: the core must ignore that
              result = runner.advanceWatermark(state, watermarkMs, processingTimeMs);
            } else {
              processingTimeMs += op.seconds * SECOND;
              result = runner.advanceProcessingTime(state, processingTimeMs);
            }
            assert.equal(JSON.stringify(state), before, 'the input state was modified');
            assert.deepEqual(
              JSON.parse(JSON.stringify(result.state)),
              result.state,
              'state is not plain JSON',
            );
            assert.ok(
              result.state.inputWatermarkMs >= state.inputWatermarkMs,
              'watermark went backwards',
            );
            for (const pane of result.panes) {
              assert.equal(pane.watermarkMs, result.state.inputWatermarkMs);
              assert.equal(pane.firedAtProcessingTimeMs, result.state.processingTimeMs);
            }
            panes.push(...result.panes);
            states.push(result.state);
            state = result.state;
          }
          return { panes, states };
        };
        const first = replay();
        assertPaneInfo(first.panes);
        assert.deepEqual(replay(), first, 'not deterministic');
      }),
      { numRuns: 300 },
    );
  });
});
