// The stored state of one (key, window): pane/trigger bookkeeping plus a shardable, mergeable contribution.
import type { CombineFn, JsonValue } from './combine-fn';
import type { IntervalWindow } from './window';

/**
 * Where a window's `AfterWatermark` trigger is (Java `AfterWatermarkStateMachine`): `EARLY` before the on-time
 * firing, `LATE` after it until garbage collection, `CLOSED` once finished (on-time pane without late firings):
 * new data is then dropped as `CLOSED_WINDOW` until garbage collection removes the record.
 */
export type TriggerPhase = 'EARLY' | 'LATE' | 'CLOSED';

/**
 * Trigger and pane bookkeeping of one window. Changes only when a pane fires, windows merge or the window closes,
 * never per element, so a store can keep it in one document while elements go to sharded contributions.
 */
export interface PaneBookkeeping {
  readonly phase: TriggerPhase;
  /** Panes emitted so far: the next pane's `index` (Java `PaneInfoTracker`, Python `INDEX` state). */
  readonly panesEmitted: number;
  /** Non-EARLY panes emitted so far: the next non-EARLY pane's `onTimeIndex` (nonspeculative index). */
  readonly nonEarlyPanesEmitted: number;
}

/**
 * What elements contributed to a window since the last reset. Each field merges associatively
 * (`mergeContributions`), so a hot key's window can be split into `key#N` shards and re-assembled when a pane
 * fires; the core itself always holds the merged form.
 */
export interface WindowContribution<Acc extends JsonValue> {
  /** The combiner accumulator (everything since the window opened, or since the last pane when discarding). */
  readonly accumulator: Acc;
  /**
   * Elements added since the last firing: drives `AfterPane.elementCountAtLeast` and decides whether a closing
   * pane is empty (Java `NonEmptyPanes`). Merges by sum.
   */
  readonly elementsInPane: number;
  /**
   * Processing time (epoch ms) of the first element since the last firing, `null` when none: drives
   * `AfterProcessingTime.pastFirstElementInPane()`. Merges by minimum.
   */
  readonly firstElementInPaneAtMs: number | null;
}

/** The whole stored record of one (key, window): plain JSON, one Firestore document when unsharded. */
export interface WindowState<Acc extends JsonValue> {
  readonly window: IntervalWindow;
  readonly pane: PaneBookkeeping;
  readonly contribution: WindowContribution<Acc>;
}

/** Bookkeeping of a window nothing has fired for yet. */
export const FRESH_PANE: PaneBookkeeping = {
  phase: 'EARLY',
  panesEmitted: 0,
  nonEarlyPanesEmitted: 0,
};

/** An empty contribution. */
export function emptyContribution<Acc extends JsonValue>(
  combineFn: CombineFn<unknown, Acc, unknown>,
): WindowContribution<Acc> {
  return {
    accumulator: combineFn.createAccumulator(),
    elementsInPane: 0,
    firstElementInPaneAtMs: null,
  };
}

/**
 * The contribution with one element added, arriving at processing time `processingTimeMs` (epoch ms). Pure;
 * this is the only per-element write, so a sharded store applies it to one shard.
 */
export function addToContribution<In, Acc extends JsonValue>(
  combineFn: CombineFn<In, Acc, unknown>,
  contribution: WindowContribution<Acc>,
  value: In,
  processingTimeMs: number,
): WindowContribution<Acc> {
  return {
    accumulator: combineFn.addInput(contribution.accumulator, value),
    elementsInPane: contribution.elementsInPane + 1,
    firstElementInPaneAtMs: contribution.firstElementInPaneAtMs ?? processingTimeMs,
  };
}

/**
 * One contribution equal to all `parts` (shards of one window, or windows merged into a session): accumulators
 * merged with the combiner, counts summed, first-arrival times minimised (as Java merges trigger state).
 */
export function mergeContributions<Acc extends JsonValue>(
  combineFn: CombineFn<never, Acc, unknown>,
  parts: readonly WindowContribution<Acc>[],
): WindowContribution<Acc> {
  let first: number | null = null;
  for (const part of parts) {
    const at = part.firstElementInPaneAtMs;
    if (at !== null && (first === null || at < first)) first = at;
  }
  return {
    accumulator: combineFn.mergeAccumulators(parts.map((p) => p.accumulator)),
    elementsInPane: parts.reduce((n, p) => n + p.elementsInPane, 0),
    firstElementInPaneAtMs: first,
  };
}
