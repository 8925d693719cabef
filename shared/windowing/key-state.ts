// The per-key state machine's data: inputs, keyed state, step results and the runner interface (all JSON-safe).
import type { JsonValue } from './combine-fn';
import type { Pane } from './pane';
import type { WindowingStrategy } from './strategy';
import type { IntervalWindow } from './window';
import type { WindowState } from './window-state';

/** One input: a keyed value stamped with its event time. */
export interface TimestampedElement<In> {
  /**
   * The logical grouping key (e.g. a route). Hot-key sharding (`key#N`) happens below the trigger, on window
   * contributions (`mergeContributions`), so each window still fires once per logical key.
   */
  readonly key: string;
  /** The value handed to `CombineFn.addInput`. */
  readonly value: In;
  /** Event time, epoch ms UTC. */
  readonly timestampMs: number;
}

/** Why an element was left out of a window's aggregate. */
export type DropReason =
  /** end − 1 + allowed lateness < input watermark (Java `LateDataUtils.dropExpiredWindows`). */
  | 'EXPIRED_WINDOW'
  /** The window's trigger already finished (Java `ReduceFnRunner.processElement`, `droppedDueToClosedWindow`). */
  | 'CLOSED_WINDOW';

/** An element left out of one of its windows; with sliding windows it may still count in the others. */
export interface DroppedElement<In> {
  readonly element: TimestampedElement<In>;
  /** The window it was not added to. */
  readonly window: IntervalWindow;
  readonly reason: DropReason;
}

/**
 * All windowing state of one key: plain JSON. `windows` holds one record per live (key, window), ordered by
 * (end, start); a store may keep each record as its own document.
 */
export interface KeyState<Acc extends JsonValue> {
  readonly key: string;
  /** Highest input watermark applied, epoch ms (`MIN_WATERMARK_MS` initially); lower inputs are ignored. */
  readonly inputWatermarkMs: number;
  /** Highest processing time applied, epoch ms; lower inputs are ignored. */
  readonly processingTimeMs: number;
  /** Live windows, ordered by (end, start). */
  readonly windows: readonly WindowState<Acc>[];
}

/** The times a step runs at. Both are clamped to never go backwards for the key. */
export interface TimeContext {
  /** Input watermark, epoch ms. */
  readonly inputWatermarkMs: number;
  /** Processing time (wall clock of the caller), epoch ms. */
  readonly processingTimeMs: number;
}

/** What a step produced. */
export interface StepResult<In, Acc extends JsonValue, Out> {
  /** The key's new state (the input state is never modified). */
  readonly state: KeyState<Acc>;
  /** Panes emitted, in firing order. */
  readonly panes: readonly Pane<Out>[];
  /** Elements (per window) left out of aggregates; empty for time-only steps. */
  readonly dropped: readonly DroppedElement<In>[];
}

/** The windowing core for one strategy and combiner; every method is a pure function of its arguments. */
export interface ReduceFnRunner<In, Acc extends JsonValue, Out> {
  readonly strategy: WindowingStrategy;
  /** State of a key that has seen nothing. */
  initialState(key: string): KeyState<Acc>;
  /**
   * Processes one bundle of elements of the state's key at `ctx`: fires what time makes due (`advanceTime`), drops
   * elements of expired windows, merges sessions, adds the rest, and fires the windows whose trigger is ready, once
   * per bundle as Beam does (an `elementCount` firing fires once for a bundle crossing it).
   * @throws WindowingInputError for an element of another key or a non-integer time
   */
  processElements(
    state: KeyState<Acc>,
    elements: readonly TimestampedElement<In>[],
    ctx: TimeContext,
  ): StepResult<In, Acc, Out>;
  /** `processElements` with a bundle of one. */
  processElement(
    state: KeyState<Acc>,
    element: TimestampedElement<In>,
    ctx: TimeContext,
  ): StepResult<In, Acc, Out>;
  /**
   * Advances the input watermark: fires each EARLY window whose max timestamp it passed (ON_TIME pane), then
   * garbage-collects each whose end − 1 + allowed lateness it passed, in timer order; `processingTimeMs` stamps panes
   * (processing-time triggers are not run: `advanceProcessingTime`).
   * @throws WindowingInputError for a non-integer time
   */
  advanceWatermark(
    state: KeyState<Acc>,
    watermarkMs: number,
    processingTimeMs: number,
  ): StepResult<In, Acc, Out>;
  /**
   * Advances processing time: fires every window whose processing-time sub-trigger deadline has come, in
   * deadline order.
   * @throws WindowingInputError for a non-integer time
   */
  advanceProcessingTime(state: KeyState<Acc>, processingTimeMs: number): StepResult<In, Acc, Out>;
  /** `advanceWatermark` then `advanceProcessingTime` (the watermark first: an on-time pane subsumes an early one). */
  advanceTime(state: KeyState<Acc>, ctx: TimeContext): StepResult<In, Acc, Out>;
}
