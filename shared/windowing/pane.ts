// Panes (Beam's PaneInfo plus the value) and the rule that names a firing EARLY, ON_TIME or LATE.
import type { PaneBookkeeping } from './window-state';
import { maxTimestampMs, type IntervalWindow } from './window';

/** Beam's `PaneInfo.Timing` (UNKNOWN is never produced). */
export type PaneTiming = 'EARLY' | 'ON_TIME' | 'LATE';

/** One firing of one (key, window): Beam's `PaneInfo` with the window, the value and when it fired. */
export interface Pane<Out> {
  /** The grouping key. */
  readonly key: string;
  readonly window: IntervalWindow;
  /** `extractOutput` of the pane's accumulator (all data so far when accumulating, new data when discarding). */
  readonly value: Out;
  /** EARLY before the watermark passed the window, ON_TIME for the watermark's firing, LATE after it. */
  readonly timing: PaneTiming;
  /** 0 for the first pane of the window, then +1 per emitted pane (`PaneInfo.getIndex()`). */
  readonly index: number;
  /**
   * `PaneInfo.getNonSpeculativeIndex()`: −1 for EARLY panes; 0 for the first non-EARLY pane (the ON_TIME pane,
   * or the first LATE one when there was none), then +1 per non-EARLY pane.
   */
  readonly onTimeIndex: number;
  /** True for the window's first pane (`PaneInfo.isFirst()`). */
  readonly isFirst: boolean;
  /**
   * True when no other pane will follow (`PaneInfo.isLast()`): the trigger finished (no late firings
   * configured), or the pane was emitted by garbage collection at end + allowed lateness.
   */
  readonly isLast: boolean;
  /** Processing time of the firing, epoch ms. */
  readonly firedAtProcessingTimeMs: number;
  /** Input watermark at the firing, epoch ms. */
  readonly watermarkMs: number;
}

/** What caused a firing, which is what decides its timing. */
export type FiringCause = 'END_OF_WINDOW' | 'GARBAGE_COLLECTION' | 'ELEMENT_OR_PROCESSING_TIME';

/** The timing and index fields (as in `Pane`) of the next pane of a window. */
export interface PaneDescription {
  readonly timing: PaneTiming;
  readonly index: number;
  readonly onTimeIndex: number;
  readonly isFirst: boolean;
}

/**
 * Java `PaneInfoTracker.describePane` for a sequential run (timers fire before the next input):
 * - after a non-EARLY pane, only LATE panes;
 * - the end-of-window firing (or garbage collection with allowed lateness 0, the same timer) is ON_TIME;
 * - any other firing is EARLY while `watermarkMs <= end − 1`, else LATE (a window whose first element arrives
 *   late gets a LATE pane with index 0, as on Beam's Python DirectRunner).
 */
export function describePane(
  pane: PaneBookkeeping,
  window: IntervalWindow,
  watermarkMs: number,
  cause: FiringCause,
  allowedLatenessMs: number,
): PaneDescription {
  const onlyEarlySoFar = pane.nonEarlyPanesEmitted === 0;
  const endOfWindowTimer =
    cause === 'END_OF_WINDOW' || (cause === 'GARBAGE_COLLECTION' && allowedLatenessMs === 0);
  let timing: PaneTiming;
  if (!onlyEarlySoFar) timing = 'LATE';
  else if (endOfWindowTimer) timing = 'ON_TIME';
  else timing = watermarkMs <= maxTimestampMs(window) ? 'EARLY' : 'LATE';
  return {
    timing,
    index: pane.panesEmitted,
    onTimeIndex: timing === 'EARLY' ? -1 : pane.nonEarlyPanesEmitted,
    isFirst: pane.panesEmitted === 0,
  };
}
