// The pure per-key state machine (Beam's ReduceFnRunner + LateDataDroppingDoFnRunner): elements, watermark and
// processing time in; new state, panes and dropped elements out. No I/O, no clock: time is always an argument.
import type { CombineFn, JsonValue } from './combine-fn';
import { WindowingInputError } from './errors';
import type {
  DroppedElement,
  KeyState,
  ReduceFnRunner,
  StepResult,
  TimeContext,
  TimestampedElement,
} from './key-state';
import type { Pane } from './pane';
import { mergeSessions } from './session-merge';
import { validateWindowingStrategy, type WindowingStrategy } from './strategy';
import { fireWindow, processingTimeDeadlineMs, shouldFire, type FiringContext } from './trigger';
import {
  assertTimeMs,
  compareWindows,
  maxTimestampMs,
  MIN_WATERMARK_MS,
  windowId,
  type IntervalWindow,
} from './window';
import { assignWindows, isMerging } from './window-fns';
import { addToContribution, emptyContribution, FRESH_PANE, type WindowState } from './window-state';

interface Scheduled {
  readonly atMs: number;
  readonly window: IntervalWindow;
  readonly cause: FiringContext['cause'];
}

/**
 * Builds the windowing core for `strategy` (validated here) and `combineFn`.
 * @throws WindowingConfigError when the strategy is invalid
 */
export function createReduceFnRunner<In, Acc extends JsonValue, Out>(
  strategyInput: WindowingStrategy,
  combineFn: CombineFn<In, Acc, Out>,
): ReduceFnRunner<In, Acc, Out> {
  const strategy = validateWindowingStrategy(strategyInput);
  const latenessMs = strategy.allowedLatenessMs;
  const gcTimeMs = (w: IntervalWindow): number => maxTimestampMs(w) + latenessMs;

  function sorted(windows: Iterable<WindowState<Acc>>): WindowState<Acc>[] {
    return [...windows].sort((a, b) => compareWindows(a.window, b.window));
  }

  function fire(
    state: KeyState<Acc>,
    byId: Map<string, WindowState<Acc>>,
    window: IntervalWindow,
    cause: FiringContext['cause'],
    panes: Pane<Out>[],
  ): void {
    const current = byId.get(windowId(window));
    if (!current) return;
    const { pane, next } = fireWindow(strategy, combineFn, current, {
      key: state.key,
      cause,
      watermarkMs: state.inputWatermarkMs,
      processingTimeMs: state.processingTimeMs,
    });
    if (pane) panes.push(pane);
    if (next) byId.set(windowId(window), next);
    else byId.delete(windowId(window));
  }

  function runScheduled(state: KeyState<Acc>, scheduled: Scheduled[]): StepResult<In, Acc, Out> {
    if (scheduled.length === 0) return { state, panes: [], dropped: [] };
    scheduled.sort((a, b) => a.atMs - b.atMs || compareWindows(a.window, b.window));
    const byId = new Map(state.windows.map((w) => [windowId(w.window), w] as const));
    const panes: Pane<Out>[] = [];
    for (const s of scheduled) fire(state, byId, s.window, s.cause, panes);
    return { state: { ...state, windows: sorted(byId.values()) }, panes, dropped: [] };
  }

  function advanceWatermark(
    state: KeyState<Acc>,
    watermarkMs: number,
    processingTimeMs: number,
  ): StepResult<In, Acc, Out> {
    assertTimeMs('watermarkMs', watermarkMs);
    assertTimeMs('processingTimeMs', processingTimeMs);
    const at: KeyState<Acc> = {
      ...state,
      inputWatermarkMs: Math.max(state.inputWatermarkMs, watermarkMs),
      processingTimeMs: Math.max(state.processingTimeMs, processingTimeMs),
    };
    const scheduled: Scheduled[] = [];
    for (const { window, pane } of at.windows) {
      const endOfWindowDue = pane.phase === 'EARLY' && maxTimestampMs(window) < at.inputWatermarkMs;
      const gcDue = gcTimeMs(window) < at.inputWatermarkMs;
      // With zero allowed lateness the end-of-window timer is the garbage-collection timer (one firing).
      if (endOfWindowDue && latenessMs > 0) {
        scheduled.push({ atMs: maxTimestampMs(window), window, cause: 'END_OF_WINDOW' });
      }
      if (gcDue) scheduled.push({ atMs: gcTimeMs(window), window, cause: 'GARBAGE_COLLECTION' });
    }
    return runScheduled(at, scheduled);
  }

  function advanceProcessingTime(
    state: KeyState<Acc>,
    processingTimeMs: number,
  ): StepResult<In, Acc, Out> {
    assertTimeMs('processingTimeMs', processingTimeMs);
    const at: KeyState<Acc> = {
      ...state,
      processingTimeMs: Math.max(state.processingTimeMs, processingTimeMs),
    };
    const scheduled: Scheduled[] = [];
    for (const w of at.windows) {
      const deadline = processingTimeDeadlineMs(strategy, w);
      if (deadline !== null && deadline <= at.processingTimeMs) {
        scheduled.push({ atMs: deadline, window: w.window, cause: 'ELEMENT_OR_PROCESSING_TIME' });
      }
    }
    return runScheduled(at, scheduled);
  }

  function advanceTime(state: KeyState<Acc>, ctx: TimeContext): StepResult<In, Acc, Out> {
    const byWatermark = advanceWatermark(state, ctx.inputWatermarkMs, ctx.processingTimeMs);
    const byClock = advanceProcessingTime(byWatermark.state, ctx.processingTimeMs);
    return {
      state: byClock.state,
      panes: [...byWatermark.panes, ...byClock.panes],
      dropped: [],
    };
  }

  function processElements(
    state: KeyState<Acc>,
    elements: readonly TimestampedElement<In>[],
    ctx: TimeContext,
  ): StepResult<In, Acc, Out> {
    for (const e of elements) {
      if (e.key !== state.key) {
        throw new WindowingInputError(
          `element for key ${JSON.stringify(e.key)} given to the state of ${JSON.stringify(state.key)}`,
        );
      }
      assertTimeMs('timestampMs', e.timestampMs);
    }
    const advanced = advanceTime(state, ctx);
    const at = advanced.state;
    const watermarkMs = at.inputWatermarkMs;
    const dropped: DroppedElement<In>[] = [];
    const accepted: { element: TimestampedElement<In>; window: IntervalWindow }[] = [];
    for (const element of elements) {
      for (const window of assignWindows(strategy.windowFn, element.timestampMs)) {
        if (gcTimeMs(window) < watermarkMs)
          dropped.push({ element, window, reason: 'EXPIRED_WINDOW' });
        else accepted.push({ element, window });
      }
    }
    const byId = new Map(at.windows.map((w) => [windowId(w.window), w] as const));
    const target = isMerging(strategy.windowFn)
      ? mergeSessions(
          combineFn,
          byId,
          accepted.map((a) => a.window),
          watermarkMs,
        )
      : new Map<string, IntervalWindow>();
    const touched = new Map<string, IntervalWindow>();
    for (const { element, window: assigned } of accepted) {
      const window = target.get(windowId(assigned)) ?? assigned;
      const id = windowId(window);
      const current = byId.get(id) ?? {
        window,
        pane: FRESH_PANE,
        contribution: emptyContribution(combineFn),
      };
      if (current.pane.phase === 'CLOSED') {
        dropped.push({ element, window, reason: 'CLOSED_WINDOW' });
        continue;
      }
      byId.set(id, {
        ...current,
        contribution: addToContribution(
          combineFn,
          current.contribution,
          element.value,
          at.processingTimeMs,
        ),
      });
      touched.set(id, window);
    }
    const panes: Pane<Out>[] = [...advanced.panes];
    for (const window of [...touched.values()].sort(compareWindows)) {
      const current = byId.get(windowId(window));
      if (current && shouldFire(strategy, current, watermarkMs, at.processingTimeMs)) {
        fire(at, byId, window, 'ELEMENT_OR_PROCESSING_TIME', panes);
      }
    }
    return { state: { ...at, windows: sorted(byId.values()) }, panes, dropped };
  }

  return {
    strategy,
    initialState: (key) => ({
      key,
      inputWatermarkMs: MIN_WATERMARK_MS,
      processingTimeMs: MIN_WATERMARK_MS,
      windows: [],
    }),
    processElements,
    processElement: (state, element, ctx) => processElements(state, [element], ctx),
    advanceWatermark,
    advanceProcessingTime,
    advanceTime,
  };
}
