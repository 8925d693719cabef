// The session layout of the keyed store against the pure core: every session scenario of the differential test
// (hand-written and generated) gives the same panes through SessionWindows + the in-memory store as through the core
// alone, with and without redeliveries; and the layout's once-only counting, timers and size limit.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { TransientError } from '../../../shared/errors';
import type { WindowElement } from '../../../shared/state/keyed-windows';
import { MemorySessionStore } from '../../support/memory-session-store';
import { SessionWindows } from '../../../shared/state/session-windows';
import { createReduceFnRunner, type WindowingStrategy } from '../../../shared/windowing';
import { collectFn, runCore, type Scenario, type ScenarioStep } from '../../beam/differential';
import { generateScenarios } from '../../beam/generate';
import { HAND_WRITTEN_SCENARIOS } from '../../beam/hand-written';
import { runSessionStore } from '../../beam/session-store-run';

const S = 1000;
const isSessions = (s: Scenario): boolean => s.strategy.windowFn.kind === 'sessions';
const HAND = HAND_WRITTEN_SCENARIOS.filter(isSessions);
const GENERATED = generateScenarios(20261007, 300).filter(isSessions);

const STRATEGY: WindowingStrategy = {
  windowFn: { kind: 'sessions', gapMs: 10 * S },
  allowedLatenessMs: 60 * S,
  trigger: { earlyFirings: { processingTimeDelayMs: 30 * S }, lateFirings: { elementCount: 1 } },
  accumulationMode: 'ACCUMULATING',
};

function layout(store: MemorySessionStore<number[]>, limits: { ids?: number } = {}) {
  return new SessionWindows({
    pipeline: 'p',
    runner: createReduceFnRunner(STRATEGY, collectFn),
    combineFn: collectFn,
    store,
    droppedTtlMs: 60_000,
    paneRow: (pane) => ({ values: pane.value, timing: pane.timing, index: pane.index }),
    ...(limits.ids !== undefined && { maxDedupIdsPerKey: limits.ids }),
  });
}

function element(id: string, timestampMs: number, receivedAtMs = 0): WindowElement<number> {
  return { eventId: id, messageId: `m-${id}`, value: timestampMs, timestampMs, receivedAtMs };
}

describe('session windows in the keyed store', () => {
  it('covers the differential session scenarios (hand-written and generated)', () => {
    assert.ok(HAND.length >= 5, `hand-written session scenarios: ${HAND.length}`);
    assert.ok(GENERATED.length >= 20, `generated session scenarios: ${GENERATED.length}`);
  });

  it('gives the core’s panes for every hand-written session scenario', async () => {
    for (const scenario of HAND) {
      const { panes } = await runSessionStore(scenario);
      assert.deepEqual(panes, runCore(scenario), scenario.id);
    }
  });

  it('gives the core’s panes for every generated session scenario', async () => {
    for (const scenario of GENERATED) {
      const { panes, store } = await runSessionStore(scenario);
      assert.deepEqual(panes, runCore(scenario), scenario.id);
      assert.equal(store.records.size, 0, `${scenario.id}: every session garbage-collected`);
    }
  });

  it('counts redelivered events once (in the same bundle and in later bundles)', async () => {
    for (const scenario of [...HAND, ...GENERATED]) {
      const { panes } = await runSessionStore(scenario, { redeliver: (s, i) => (s + i) % 2 === 0 });
      assert.deepEqual(panes, runCore(scenario), scenario.id);
    }
  });

  it('property: random session streams with random redeliveries give the core’s panes', async () => {
    const step: fc.Arbitrary<ScenarioStep> = fc.oneof(
      fc.record({
        kind: fc.constant('elements' as const),
        elements: fc.array(
          fc.record({
            key: fc.constantFrom('a', 'b'),
            value: fc.integer({ min: 0, max: 99 }),
            timestampMs: fc.integer({ min: 0, max: 120 }).map((t) => t * S),
          }),
          { minLength: 1, maxLength: 4 },
        ),
      }),
      fc.record({
        kind: fc.constant('processingTime' as const),
        advanceByMs: fc.integer({ min: 1, max: 40 }).map((t) => t * S),
      }),
      fc.record({ kind: fc.constant('watermark' as const), watermarkMs: fc.constant(0) }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 14 }),
        fc.func(fc.boolean()),
        fc.constantFrom<WindowingStrategy['accumulationMode']>('ACCUMULATING', 'DISCARDING'),
        fc.boolean(),
        async (raw, redeliver, accumulationMode, lateFirings) => {
          // Watermark steps move strictly forward, in 5 s steps.
          let wm = -1;
          const steps = raw.map((st): ScenarioStep => {
            if (st.kind !== 'watermark') return st;
            wm += 5 * S;
            return { kind: 'watermark', watermarkMs: wm };
          });
          const scenario: Scenario = {
            id: 'property',
            strategy: {
              ...STRATEGY,
              accumulationMode,
              trigger: {
                earlyFirings: { processingTimeDelayMs: 30 * S },
                lateFirings: lateFirings ? { elementCount: 1 } : null,
              },
            },
            steps,
          };
          const { panes } = await runSessionStore(scenario, {
            redeliver: (s, i) => redeliver(s, i),
          });
          assert.deepEqual(panes, runCore(scenario));
        },
      ),
      { numRuns: 150, seed: 20261202 },
    );
  });

  it('merges two sessions bridged by a later element into one record, with their dedup ids', async () => {
    const store = new MemorySessionStore<number[]>();
    const s = layout(store);
    const at = (ms: number) => () => Promise.resolve(ms);
    await s.processBundle('k', [element('e1', 0)], at(-1));
    await s.processBundle('k', [element('e2', 15 * S)], at(-1));
    assert.equal(store.records.get('k')?.record.state.windows.length, 2);
    await s.processBundle('k', [element('e3', 8 * S)], at(-1));
    const record = store.records.get('k')?.record;
    assert.deepEqual(
      record?.state.windows.map((w) => [w.window.startMs, w.window.endMs]),
      [[0, 25 * S]],
    );
    assert.equal(Object.keys(record?.seen ?? {}).length, 1);
    assert.equal(Object.values(record?.seen ?? {})[0]?.length, 3 * 16);
    const again = await s.processBundle('k', [element('e1', 0), element('e2', 15 * S)], at(-1));
    assert.deepEqual(
      again.outcomes.map((o) => o.kind),
      ['duplicate', 'duplicate'],
    );
    assert.deepEqual(store.records.get('k')?.record.state.windows[0]?.contribution.accumulator, [
      0,
      8 * S,
      15 * S,
    ]);
  });

  it('keeps the timers the firing query needs, and deletes the record at garbage collection', async () => {
    const store = new MemorySessionStore<number[]>();
    const s = layout(store);
    await s.processBundle('k', [element('e1', 0, 1_000)], () => Promise.resolve(-1));
    assert.deepEqual(store.records.get('k')?.timers, {
      eventTimerMs: 10 * S - 1,
      processingTimerMs: 1_000 + 30 * S,
    });
    assert.deepEqual(await store.findSessionKeysDue(null, 10 * S - 1, 0, 10), []);
    assert.deepEqual(await store.findSessionKeysDue(null, 10 * S, 0, 10), ['k']);
    assert.deepEqual(await store.findSessionKeysDue(null, 0, 31_000, 10), ['k']);
    const onTime = await s.fireKey('k', 10 * S, 2_000);
    assert.deepEqual(
      onTime.panes.map((p) => p.timing),
      ['ON_TIME'],
    );
    assert.equal(store.records.get('k')?.timers.eventTimerMs, 10 * S - 1 + 60 * S);
    const gc = await s.fireKey('k', 71 * S, 3_000);
    assert.equal(gc.closed, 1);
    assert.equal(store.records.has('k'), false);
    // A redelivery after garbage collection is behind the watermark: dropped, not counted again.
    const late = await s.processBundle('k', [element('e1', 0, 4_000)], () =>
      Promise.resolve(71 * S),
    );
    assert.equal(late.outcomes[0]?.kind, 'dropped');
    assert.equal(late.outcomes[0]?.dropped[0]?.reason, 'EXPIRED_WINDOW');
    assert.equal(store.dropped.get(`0_${10 * S}|EXPIRED_WINDOW`), 1);
  });

  it('refuses a bundle that would exceed the per-key limit, with a one-line error, and writes nothing', async () => {
    const store = new MemorySessionStore<number[]>();
    const s = layout(store, { ids: 3 });
    await s.processBundle('k', [element('e1', 0), element('e2', 1)], () => Promise.resolve(-1));
    await assert.rejects(
      s.processBundle('k', [element('e3', 2), element('e4', 3)], () => Promise.resolve(-1)),
      (err: unknown) =>
        err instanceof TransientError &&
        /would hold 1 open sessions and 4 dedup ids, above the session layout's limits/.test(
          err.message,
        ) &&
        !err.message.includes('\n'),
    );
    assert.deepEqual(
      store.records.get('k')?.record.state.windows[0]?.contribution.accumulator,
      [0, 1],
    );
  });
});
