// The windowing strategy (window function, allowed lateness, trigger, accumulation mode) and its validation.
import * as v from 'valibot';

import { parseOrThrow } from './errors';
import type { WindowFnSpec } from './window-fns';

/** Beam's `AccumulationMode`: after a pane fires, `DISCARDING` starts the next empty, `ACCUMULATING` keeps it all. */
export type AccumulationMode = 'ACCUMULATING' | 'DISCARDING';

/**
 * A repeated speculative firing (the sub-trigger of `AfterWatermark.withEarlyFirings` / `withLateFirings`).
 * With one field it is that trigger; with both it is `AfterFirst.of(both)` — whichever comes first fires, and a
 * firing resets both (Java `AfterFirstStateMachine` + `AfterWatermarkStateMachine` clearing the sub-trigger).
 */
export interface FiringSpec {
  /**
   * `AfterProcessingTime.pastFirstElementInPane().plusDelayOf(d)`: fire `d` ms of processing time after the
   * first element of the pane arrived (integer >= 1).
   */
  readonly processingTimeDelayMs?: number;
  /** `AfterPane.elementCountAtLeast(n)`: fire once the pane holds at least `n` new elements (integer >= 1). */
  readonly elementCount?: number;
}

/**
 * Beam's `AfterWatermark.pastEndOfWindow()` with optional early and late firings (the only trigger family the
 * pipelines use). The on-time pane fires when the input watermark passes the end of the window.
 */
export interface TriggerSpec {
  /** Speculative panes before the watermark passes the end of the window; absent: none. */
  readonly earlyFirings?: FiringSpec;
  /**
   * Panes for late data after the on-time pane; absent or `null`: none, and the trigger finishes with the
   * on-time pane (later data within the allowed lateness is then dropped as `CLOSED_WINDOW`, as in Beam).
   */
  readonly lateFirings?: FiringSpec | null;
}

/** Beam's `WindowingStrategy` restricted to what this project configures. Plain JSON data. */
export interface WindowingStrategy {
  readonly windowFn: WindowFnSpec;
  /**
   * Beam's allowed lateness in ms (integer >= 0): a window keeps state until the input watermark passes
   * end − 1 + allowedLatenessMs; data for it after that is dropped as `EXPIRED_WINDOW`.
   */
  readonly allowedLatenessMs: number;
  readonly trigger: TriggerSpec;
  readonly accumulationMode: AccumulationMode;
}

function integerMs(min: number): v.GenericSchema<unknown, number> {
  return v.pipe(
    v.number('must be a number'),
    v.integer('must be an integer'),
    v.safeInteger('must be a safe integer'),
    v.minValue(min, `must be >= ${min}`),
  );
}

const FIXED = v.pipe(
  v.strictObject({
    kind: v.literal('fixed'),
    sizeMs: integerMs(1),
    offsetMs: v.optional(integerMs(0), 0),
  }),
  v.forward(
    v.check((w) => w.offsetMs < w.sizeMs, 'must be < sizeMs'),
    ['offsetMs'],
  ),
);

const SLIDING = v.pipe(
  v.strictObject({
    kind: v.literal('sliding'),
    sizeMs: integerMs(1),
    periodMs: integerMs(1),
    offsetMs: v.optional(integerMs(0), 0),
  }),
  v.forward(
    v.check((w) => w.offsetMs < w.periodMs, 'must be < periodMs'),
    ['offsetMs'],
  ),
);

const SESSIONS = v.strictObject({ kind: v.literal('sessions'), gapMs: integerMs(1) });

const WINDOW_FN = v.variant(
  'kind',
  [FIXED, SLIDING, SESSIONS],
  'must be one of {kind: "fixed" | "sliding" | "sessions"}',
);

const FIRING = v.pipe(
  v.strictObject({
    processingTimeDelayMs: v.optional(integerMs(1)),
    elementCount: v.optional(integerMs(1)),
  }),
  v.check(
    (f) => f.processingTimeDelayMs !== undefined || f.elementCount !== undefined,
    'must set processingTimeDelayMs and/or elementCount',
  ),
);

const STRATEGY = v.strictObject({
  windowFn: WINDOW_FN,
  allowedLatenessMs: integerMs(0),
  trigger: v.strictObject({
    earlyFirings: v.optional(FIRING),
    lateFirings: v.nullish(FIRING),
  }),
  accumulationMode: v.picklist(
    ['ACCUMULATING', 'DISCARDING'],
    'must be "ACCUMULATING" or "DISCARDING"',
  ),
});

function firing(spec: {
  processingTimeDelayMs?: number | undefined;
  elementCount?: number | undefined;
}): FiringSpec {
  return {
    ...(spec.processingTimeDelayMs !== undefined && {
      processingTimeDelayMs: spec.processingTimeDelayMs,
    }),
    ...(spec.elementCount !== undefined && { elementCount: spec.elementCount }),
  };
}

/**
 * Checks a window function spec (e.g. parsed from JSON) and returns it normalised (`offsetMs` defaults to 0).
 * @throws WindowingConfigError listing every problem (paths relative to `windowFn`)
 */
export function validateWindowFn(input: unknown): WindowFnSpec {
  return parseOrThrow(WINDOW_FN, input, 'windowFn');
}

/**
 * Checks a windowing strategy and returns a clean, JSON-safe copy: unknown keys are rejected, absent optional
 * fields are omitted, `lateFirings: undefined` becomes `null`.
 * @throws WindowingConfigError listing every problem with its path
 */
export function validateWindowingStrategy(input: unknown): WindowingStrategy {
  const parsed = parseOrThrow(STRATEGY, input, '');
  const { earlyFirings, lateFirings } = parsed.trigger;
  return {
    windowFn: parsed.windowFn,
    allowedLatenessMs: parsed.allowedLatenessMs,
    trigger: {
      ...(earlyFirings !== undefined && { earlyFirings: firing(earlyFirings) }),
      lateFirings: lateFirings === undefined || lateFirings === null ? null : firing(lateFirings),
    },
    accumulationMode: parsed.accumulationMode,
  };
}
