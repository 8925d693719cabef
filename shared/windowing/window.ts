// Event-time windows as half-open [startMs, endMs) intervals, their stable id, ordering and the time bounds.
import { WindowingInputError } from './errors';

/**
 * Beam's `IntervalWindow`: the half-open interval [startMs, endMs) in epoch milliseconds (UTC).
 * Plain JSON data, so it can be stored as-is in Firestore.
 */
export interface IntervalWindow {
  /** First instant inside the window, epoch ms UTC (inclusive). */
  readonly startMs: number;
  /** First instant after the window, epoch ms UTC (exclusive). */
  readonly endMs: number;
}

/** The earliest input watermark (Beam's `TIMESTAMP_MIN_VALUE`, at the bound of JavaScript `Date`'s range). */
export const MIN_WATERMARK_MS = -8_640_000_000_000_000;

/** The input watermark at "end of time" (TestStream's `advanceWatermarkToInfinity`): it fires and closes all. */
export const MAX_WATERMARK_MS = 8_640_000_000_000_000;

/** Beam's `IntervalWindow.maxTimestamp()` (Java): the last millisecond inside the window, `endMs - 1`. */
export function maxTimestampMs(window: IntervalWindow): number {
  return window.endMs - 1;
}

/**
 * Stable text id of a window, `"<startMs>_<endMs>"`, e.g. `"1791382200000_1791382260000"`. Valid as a
 * Firestore document id and as part of a BigQuery insertId; `parseWindowId` inverts it.
 */
export function windowId(window: IntervalWindow): string {
  return `${window.startMs}_${window.endMs}`;
}

const WINDOW_ID = /^(-?\d+)_(-?\d+)$/;

/**
 * Inverse of `windowId`.
 * @throws WindowingInputError when `id` is not `"<startMs>_<endMs>"` with safe integers and start < end.
 */
export function parseWindowId(id: string): IntervalWindow {
  const match = WINDOW_ID.exec(id);
  const startMs = Number(match?.[1]);
  const endMs = Number(match?.[2]);
  if (
    !match ||
    !Number.isSafeInteger(startMs) ||
    !Number.isSafeInteger(endMs) ||
    startMs >= endMs
  ) {
    throw new WindowingInputError(`not a window id: ${JSON.stringify(id)}`);
  }
  return { startMs, endMs };
}

/** True when both windows cover the same interval. */
export function sameWindow(a: IntervalWindow, b: IntervalWindow): boolean {
  return a.startMs === b.startMs && a.endMs === b.endMs;
}

/** Window order of state and emitted panes: by end, then start (the order Beam's end-of-window timers come due). */
export function compareWindows(a: IntervalWindow, b: IntervalWindow): number {
  return a.endMs - b.endMs || a.startMs - b.startMs;
}

/**
 * Checks that a time argument is a safe integer number of epoch milliseconds.
 * @throws WindowingInputError naming `what` otherwise.
 */
export function assertTimeMs(what: string, value: number): void {
  if (!Number.isSafeInteger(value)) {
    throw new WindowingInputError(
      `${what} must be a safe integer of epoch milliseconds, got ${value}`,
    );
  }
}
