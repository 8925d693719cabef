// AfterWatermark with early/late firings as pure decisions over one window's state: when to fire, and the
// pane and next state a firing produces (Java AfterWatermarkStateMachine + ReduceFnRunner.onTrigger).
import type { CombineFn, JsonValue } from './combine-fn';
import { describePane, type FiringCause, type Pane } from './pane';
import type { FiringSpec, WindowingStrategy } from './strategy';
import { maxTimestampMs } from './window';
import { emptyContribution, type WindowState } from './window-state';

/** The repeated sub-trigger that runs in the window's current phase, if any. */
function activeFiring(
  strategy: WindowingStrategy,
  state: WindowState<JsonValue>,
): FiringSpec | null {
  switch (state.pane.phase) {
    case 'EARLY':
      return strategy.trigger.earlyFirings ?? null;
    case 'LATE':
      return strategy.trigger.lateFirings ?? null;
    case 'CLOSED':
      return null;
  }
}

/**
 * Processing time (epoch ms) at which the current phase's `AfterProcessingTime.pastFirstElementInPane()
 * .plusDelayOf(d)` fires: first element of the pane + d; `null` when no such sub-trigger runs or the pane is
 * empty. Due at processing time >= the deadline, as in Python (Java asks for strictly after).
 */
export function processingTimeDeadlineMs(
  strategy: WindowingStrategy,
  state: WindowState<JsonValue>,
): number | null {
  const delay = activeFiring(strategy, state)?.processingTimeDelayMs;
  const first = state.contribution.firstElementInPaneAtMs;
  return delay === undefined || first === null ? null : first + delay;
}

/**
 * Java `AfterWatermarkEarlyAndLate.shouldFire` outside timers: EARLY fires once the watermark is past the window's
 * max timestamp or the early sub-trigger is ready; LATE when the late one is; CLOSED never. A sub-trigger is ready
 * at `elementCount` new elements in the pane or at its processing-time deadline.
 */
export function shouldFire(
  strategy: WindowingStrategy,
  state: WindowState<JsonValue>,
  watermarkMs: number,
  processingTimeMs: number,
): boolean {
  if (state.pane.phase === 'CLOSED') return false;
  if (state.pane.phase === 'EARLY' && watermarkMs > maxTimestampMs(state.window)) return true;
  const firing = activeFiring(strategy, state);
  if (firing === null) return false;
  const count = firing.elementCount;
  if (count !== undefined && state.contribution.elementsInPane >= count) return true;
  const deadline = processingTimeDeadlineMs(strategy, state);
  return deadline !== null && processingTimeMs >= deadline;
}

/** What a firing produced: the pane (if one is emitted) and the window's next state (`null`: state deleted). */
export interface Firing<Acc extends JsonValue, Out> {
  /** The emitted pane; `null` when Beam would not emit (an empty pane at garbage collection). */
  readonly pane: Pane<Out> | null;
  /** The window's state after the firing; `null` once garbage-collected. */
  readonly next: WindowState<Acc> | null;
}

/** The moment and cause of a firing. */
export interface FiringContext {
  readonly key: string;
  readonly cause: FiringCause;
  /** Input watermark at the firing, epoch ms. */
  readonly watermarkMs: number;
  /** Processing time at the firing, epoch ms. */
  readonly processingTimeMs: number;
}

/**
 * Fires one window (Java `ReduceFnRunner.emit` / `onTrigger` / garbage collection in `onTimers`):
 * - a pane is emitted when it has new elements, or when ON_TIME even if empty (Beam's `FIRE_ALWAYS` on time,
 *   `FIRE_IF_NON_EMPTY` on closing);
 * - the watermark firing moves EARLY to LATE, or to CLOSED with `isLast` when no late firings are configured;
 * - garbage collection (end − 1 + allowed lateness < watermark) emits a last pane if non-empty and deletes the state
 *   (with allowed lateness 0 it is also the end-of-window timer, so that ON_TIME pane is the last);
 * - afterwards the pane counters reset, and the accumulator too when DISCARDING or CLOSED.
 */
export function fireWindow<Acc extends JsonValue, Out>(
  strategy: WindowingStrategy,
  combineFn: CombineFn<never, Acc, Out>,
  state: WindowState<Acc>,
  ctx: FiringContext,
): Firing<Acc, Out> {
  const { window, pane, contribution } = state;
  const description = describePane(
    pane,
    window,
    ctx.watermarkMs,
    ctx.cause,
    strategy.allowedLatenessMs,
  );
  const isGarbageCollection = ctx.cause === 'GARBAGE_COLLECTION';
  const watermarkFiring =
    pane.phase === 'EARLY' &&
    (ctx.cause === 'END_OF_WINDOW' || ctx.watermarkMs > maxTimestampMs(window));
  const nextPhase = watermarkFiring
    ? strategy.trigger.lateFirings
      ? 'LATE'
      : 'CLOSED'
    : pane.phase;
  const isLast = isGarbageCollection || nextPhase === 'CLOSED';
  const emit = contribution.elementsInPane > 0 || description.timing === 'ON_TIME';
  const emitted: Pane<Out> | null = emit
    ? {
        key: ctx.key,
        window,
        value: combineFn.extractOutput(contribution.accumulator),
        timing: description.timing,
        index: description.index,
        onTimeIndex: description.onTimeIndex,
        isFirst: description.isFirst,
        isLast,
        firedAtProcessingTimeMs: ctx.processingTimeMs,
        watermarkMs: ctx.watermarkMs,
      }
    : null;
  if (isGarbageCollection) return { pane: emitted, next: null };
  const keepAccumulator = nextPhase !== 'CLOSED' && strategy.accumulationMode === 'ACCUMULATING';
  const next: WindowState<Acc> = {
    window,
    pane: {
      phase: nextPhase,
      panesEmitted: pane.panesEmitted + (emitted ? 1 : 0),
      nonEarlyPanesEmitted:
        pane.nonEarlyPanesEmitted + (emitted && emitted.timing !== 'EARLY' ? 1 : 0),
    },
    contribution: keepAccumulator
      ? { accumulator: contribution.accumulator, elementsInPane: 0, firstElementInPaneAtMs: null }
      : emptyContribution(combineFn),
  };
  return { pane: emitted, next };
}
