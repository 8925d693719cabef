// Window functions as plain, serialisable specs (fixed, sliding, sessions): assignment and session merging.
import { validateWindowFn } from './strategy';
import { compareWindows, type IntervalWindow } from './window';

/** Beam's `FixedWindows.of(size).withOffset(offset)`: tumbling windows [offset + k·size, offset + (k+1)·size). */
export interface FixedWindowsSpec {
  readonly kind: 'fixed';
  /** Window length in ms, an integer >= 1. */
  readonly sizeMs: number;
  /** Shift of the window grid from the epoch in ms, an integer with 0 <= offsetMs < sizeMs. */
  readonly offsetMs: number;
}

/**
 * Beam's `SlidingWindows.of(size).every(period).withOffset(offset)`: windows of `sizeMs` starting every
 * `periodMs`; an element belongs to every window containing it (ceil(size / period) when period <= size).
 */
export interface SlidingWindowsSpec {
  readonly kind: 'sliding';
  /** Window length in ms, an integer >= 1. */
  readonly sizeMs: number;
  /** Distance between window starts in ms, an integer >= 1. */
  readonly periodMs: number;
  /** Shift of the window starts from the epoch in ms, an integer with 0 <= offsetMs < periodMs. */
  readonly offsetMs: number;
}

/**
 * Beam's `Sessions.withGapDuration(gap)`: each element gets the proto-window [t, t + gap); overlapping windows of
 * one key merge into one session (a merging window function).
 */
export interface SessionsSpec {
  readonly kind: 'sessions';
  /** Gap duration in ms, an integer >= 1. */
  readonly gapMs: number;
}

/** A window function: which windows an element's event time falls into, and whether they merge. */
export type WindowFnSpec = FixedWindowsSpec | SlidingWindowsSpec | SessionsSpec;

/**
 * Fixed (tumbling) windows; ms, ranges as in {@link FixedWindowsSpec}.
 * @throws WindowingConfigError on a bad size or offset
 */
export function fixed(sizeMs: number, offsetMs = 0): FixedWindowsSpec {
  return validateWindowFn({ kind: 'fixed', sizeMs, offsetMs }) as FixedWindowsSpec;
}

/**
 * Sliding (hopping) windows; ms, ranges as in {@link SlidingWindowsSpec}.
 * @throws WindowingConfigError on a bad size, period or offset
 */
export function sliding(sizeMs: number, periodMs: number, offsetMs = 0): SlidingWindowsSpec {
  return validateWindowFn({ kind: 'sliding', sizeMs, periodMs, offsetMs }) as SlidingWindowsSpec;
}

/**
 * Session windows with a gap of `gapMs` (integer ms >= 1).
 * @throws WindowingConfigError on a bad gap
 */
export function sessions(gapMs: number): SessionsSpec {
  return validateWindowFn({ kind: 'sessions', gapMs }) as SessionsSpec;
}

/** True for window functions whose windows merge (Beam's `WindowFn.isNonMerging() == false`): sessions. */
export function isMerging(windowFn: WindowFnSpec): boolean {
  return windowFn.kind === 'sessions';
}

function floorMod(value: number, modulus: number): number {
  return ((value % modulus) + modulus) % modulus;
}

/**
 * The windows an element stamped `timestampMs` belongs to, ordered by (end, start), by the arithmetic of Beam's
 * `FixedWindows.assignWindow`, `SlidingWindows.assignWindows` and `Sessions.assignWindows`.
 */
export function assignWindows(windowFn: WindowFnSpec, timestampMs: number): IntervalWindow[] {
  switch (windowFn.kind) {
    case 'fixed': {
      const startMs = timestampMs - floorMod(timestampMs - windowFn.offsetMs, windowFn.sizeMs);
      return [{ startMs, endMs: startMs + windowFn.sizeMs }];
    }
    case 'sliding': {
      const windows: IntervalWindow[] = [];
      const lastStartMs =
        timestampMs - floorMod(timestampMs - windowFn.offsetMs, windowFn.periodMs);
      for (let s = lastStartMs; s > timestampMs - windowFn.sizeMs; s -= windowFn.periodMs) {
        windows.push({ startMs: s, endMs: s + windowFn.sizeMs });
      }
      return windows.sort(compareWindows);
    }
    case 'sessions':
      return [{ startMs: timestampMs, endMs: timestampMs + windowFn.gapMs }];
  }
}

/** One merge produced by `mergeOverlappingWindows`: the windows that become `result`. */
export interface WindowMerge {
  /** The merged window: the span from the earliest start to the latest end of `members`. */
  readonly result: IntervalWindow;
  /** The windows merged into `result`, ordered by (start, end); at least one. */
  readonly members: readonly IntervalWindow[];
}

/**
 * Groups windows into sessions as Beam's `MergeOverlappingIntervalWindows.mergeWindows` does: by start, a window
 * joins the current group when it strictly overlaps its span (touching windows stay apart). Returns every group,
 * singletons included, ordered by start; duplicates in `windows` count once.
 */
export function mergeOverlappingWindows(windows: readonly IntervalWindow[]): WindowMerge[] {
  const sorted = [...windows].sort((a, b) => a.startMs - b.startMs || a.endMs - b.endMs);
  const groups: { startMs: number; endMs: number; members: IntervalWindow[] }[] = [];
  for (const window of sorted) {
    const current = groups[groups.length - 1];
    if (current && window.startMs < current.endMs) {
      const last = current.members[current.members.length - 1];
      if (!last || last.startMs !== window.startMs || last.endMs !== window.endMs) {
        current.members.push(window);
      }
      current.endMs = Math.max(current.endMs, window.endMs);
    } else {
      groups.push({ startMs: window.startMs, endMs: window.endMs, members: [window] });
    }
  }
  return groups.map((g) => ({
    result: { startMs: g.startMs, endMs: g.endMs },
    members: g.members,
  }));
}
