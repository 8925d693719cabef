// Random differential scenarios (fast-check): strategies from a fixed menu, random bundles, watermark and
// processing-time steps, steered clear of the documented divergences from Python's DirectRunner.
import fc from 'fast-check';

import type { FiringSpec, WindowFnSpec, WindowingStrategy } from '../../shared/windowing';
import type { Scenario, ScenarioStep } from './differential';

const S = 1000;

const WINDOW_FNS: readonly WindowFnSpec[] = [
  { kind: 'fixed', sizeMs: 10 * S, offsetMs: 0 },
  { kind: 'fixed', sizeMs: 60 * S, offsetMs: 0 },
  { kind: 'fixed', sizeMs: 60 * S, offsetMs: 15 * S },
  { kind: 'sliding', sizeMs: 60 * S, periodMs: 20 * S, offsetMs: 0 },
  { kind: 'sliding', sizeMs: 30 * S, periodMs: 10 * S, offsetMs: 5 * S },
  { kind: 'sessions', gapMs: 15 * S },
  { kind: 'sessions', gapMs: 30 * S },
];

/**
 * Early firings: none, a processing-time delay, or an element count; never both together (divergence 5:
 * Python's `AfterAny` is not reset by a processing-time firing).
 */
const EARLY: readonly (FiringSpec | undefined)[] = [
  undefined,
  { processingTimeDelayMs: 5 * S },
  { processingTimeDelayMs: 30 * S },
  { elementCount: 1 },
  { elementCount: 2 },
  { elementCount: 3 },
];

/**
 * Allowed lateness and late firings. Late firings are only `elementCount: 1`, so no late data is ever pending
 * when a window expires (divergence 2: Python never emits it and stalls), and never with allowed lateness 0
 * (divergence 3: the end-of-window timer is then the GC timer). Without late firings the trigger finishes
 * on time (an unsafe trigger in Python, allowed with `--allow_unsafe_triggers`; divergence 10).
 */
const LATENESS: readonly { allowedLatenessMs: number; lateFirings: FiringSpec | null }[] = [
  { allowedLatenessMs: 0, lateFirings: null },
  { allowedLatenessMs: 30 * S, lateFirings: { elementCount: 1 } },
  { allowedLatenessMs: 300 * S, lateFirings: { elementCount: 1 } },
  { allowedLatenessMs: 30 * S, lateFirings: null },
  { allowedLatenessMs: 90 * S, lateFirings: { elementCount: 1 } },
];

type RawStep =
  | { kind: 'elements'; elements: { key: string; timeMs: number }[] }
  | { kind: 'watermark'; watermarkMs: number }
  | { kind: 'processingTime'; advanceByMs: number };

const rawStep: fc.Arbitrary<RawStep> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('elements' as const),
      elements: fc.array(
        fc.record({
          key: fc.constantFrom('a', 'b'),
          // Whole or quarter seconds in [0, 240 s]: window bounds and session ends land on whole or quarter
          // seconds, never on a watermark (always x.5 s), so no element meets the drop boundary (divergence 1).
          timeMs: fc
            .tuple(fc.integer({ min: 0, max: 240 }), fc.constantFrom(0, 0, 250))
            .map(([s, q]) => s * S + q),
        }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('watermark' as const),
      watermarkMs: fc.integer({ min: 0, max: 400 }).map((s) => s * S + 500),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('processingTime' as const),
      advanceByMs: fc.constantFrom(5 * S, 10 * S, 30 * S, 60 * S),
    }),
  },
);

/**
 * The steps: values numbered in order, watermark steps that would not advance it skipped. Sessions need care
 * with late data: a late element can merge a late session into one that reaches past the watermark
 * (divergence 6), into a closed session (7) or into one Java has garbage-collected (9). So for sessions an
 * element behind the watermark goes to a key of its own bundle (`<key>-late<step>`, never used again) and is
 * made wholly late (its proto-window ends at or before the watermark), so its session and every merge in the
 * bundle stay behind the watermark; it may also be beyond the allowed lateness and dropped.
 */
function finishSteps(raw: readonly RawStep[], strategy: WindowingStrategy): ScenarioStep[] {
  const steps: ScenarioStep[] = [];
  const gapMs = strategy.windowFn.kind === 'sessions' ? strategy.windowFn.gapMs : undefined;
  let watermarkMs = -1;
  let value = 0;
  for (const [index, step] of raw.entries()) {
    if (step.kind === 'watermark') {
      if (step.watermarkMs <= watermarkMs) continue;
      watermarkMs = step.watermarkMs;
      steps.push({ kind: 'watermark', watermarkMs });
    } else if (step.kind === 'processingTime') {
      steps.push(step);
    } else {
      steps.push({
        kind: 'elements',
        elements: step.elements.map(({ key, timeMs }) => {
          if (gapMs === undefined || timeMs >= watermarkMs)
            return { key, value: value++, timestampMs: timeMs };
          const whollyLateMs = Math.min(timeMs, watermarkMs - 500 - gapMs);
          return whollyLateMs >= 0
            ? { key: `${key}-late${index}`, value: value++, timestampMs: whollyLateMs }
            : { key, value: value++, timestampMs: watermarkMs + 500 + (timeMs % (10 * S)) };
        }),
      });
    }
  }
  return steps;
}

/** How many strategies one run draws (one Beam pipeline each: the main cost of a run besides its steps). */
export const STRATEGIES_PER_RUN = 12;

function cycle<T>(values: readonly T[], length: number): T[] {
  return Array.from({ length }, (_, i) => values[i % values.length] as T);
}

/**
 * `STRATEGIES_PER_RUN` strategies in which every window function, early firing, lateness setting and
 * accumulation mode of the menus appears at least once (each menu shuffled, then repeated).
 */
const strategyMenuArb: fc.Arbitrary<WindowingStrategy[]> = fc
  .tuple(
    fc.shuffledSubarray([...WINDOW_FNS], { minLength: WINDOW_FNS.length }),
    fc.shuffledSubarray([...EARLY], { minLength: EARLY.length }),
    fc.shuffledSubarray([...LATENESS], { minLength: LATENESS.length }),
    fc.shuffledSubarray(['ACCUMULATING' as const, 'DISCARDING' as const], { minLength: 2 }),
  )
  .map(([windowFns, earlies, latenesses, modes]) => {
    const n = STRATEGIES_PER_RUN;
    // Early firings shift by one per round of window functions, so each meets several window functions.
    const w = cycle(windowFns, n);
    const e = Array.from(
      { length: n },
      (_, i) => earlies[(i + Math.floor(i / windowFns.length)) % earlies.length],
    );
    const l = cycle(latenesses, n);
    // Modes alternate every other strategy so that they do not pair with window functions in lockstep.
    const m = Array.from({ length: n }, (_, i) => modes[Math.floor(i / 2) % 2] ?? 'ACCUMULATING');
    return Array.from({ length: n }, (_, i) => {
      const windowFn = w[i] as WindowFnSpec;
      // Sessions never get an early processing-time delay (divergence 11: Python keeps one timer per merged
      // proto-window and emits empty EARLY panes); they get an element count instead.
      const early =
        windowFn.kind === 'sessions' && e[i]?.processingTimeDelayMs !== undefined
          ? { elementCount: 2 }
          : e[i];
      const { allowedLatenessMs, lateFirings } = l[i] ?? {
        allowedLatenessMs: 0,
        lateFirings: null,
      };
      return {
        windowFn,
        allowedLatenessMs,
        trigger: { ...(early && { earlyFirings: early }), lateFirings },
        accumulationMode: m[i] ?? 'ACCUMULATING',
      };
    });
  });

/** Random steps for a strategy; see `finishSteps`. */
function stepsFor(strategy: WindowingStrategy, raw: readonly RawStep[]): Omit<Scenario, 'id'> {
  return { strategy, steps: finishSteps(raw, strategy) };
}

/**
 * `count` scenarios drawn deterministically from `seed`, with ids `gen/<seed>/<n>` (n from 0), over
 * `STRATEGIES_PER_RUN` strategies drawn from the same seed: the same seed always gives the same scenarios,
 * and the n-th does not depend on `count` (fast-check's samples are a stream), so
 * `OFFVIA_BEAM_SCENARIO=gen/<seed>/<n>` reruns one alone whatever `OFFVIA_BEAM_RUNS` was.
 */
export function generateScenarios(seed: number, count: number): Scenario[] {
  const [menu] = fc.sample(strategyMenuArb, { seed, numRuns: 1 });
  if (!menu) throw new Error('fast-check drew no strategy menu');
  const pick = fc.tuple(
    fc.nat({ max: menu.length - 1 }),
    fc.array(rawStep, { minLength: 3, maxLength: 16 }),
  );
  return fc.sample(pick, { seed: seed + 1, numRuns: count }).map(([m, raw], n) => ({
    id: `gen/${seed}/${n}`,
    ...stepsFor(menu[m] as WindowingStrategy, raw),
  }));
}
