// Shared fixtures for the windowing tests: a set-collecting combiner, times, event builders and pane summaries.
import {
  createReduceFnRunner,
  MAX_WATERMARK_MS,
  type CombineFn,
  type Pane,
  type WindowingStrategy,
} from '../../../shared/windowing';
import {
  runTestStream,
  type TestStreamEvent,
  type TestStreamResult,
} from '../../support/test-stream';

/** Collects the distinct inputs in ascending order: panes show exactly which elements they contain. */
export const collectFn: CombineFn<number, number[], number[]> = {
  createAccumulator: () => [],
  addInput: (acc, input) => [...acc, input].sort((a, b) => a - b),
  mergeAccumulators: (accs) => accs.flat().sort((a, b) => a - b),
  extractOutput: (acc) => acc,
};

/** 2026-10-07T14:10:00Z, the lab's event time, in epoch ms. */
export const T0 = Date.parse('2026-10-07T14:10:00Z');
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;

/** Epoch ms of T0 plus the given seconds. */
export function at(seconds: number): number {
  return T0 + seconds * SECOND;
}

/** A TestStream bundle of (key, value, event time) triples. */
export function add(...elements: [string, number, number][]): TestStreamEvent<number> {
  return {
    kind: 'elements',
    elements: elements.map(([key, value, timestampMs]) => ({ key, value, timestampMs })),
  };
}

/** advanceWatermarkTo. */
export function watermark(watermarkMs: number): TestStreamEvent<number> {
  return { kind: 'watermark', watermarkMs };
}

/** advanceProcessingTime. */
export function clock(advanceByMs: number): TestStreamEvent<number> {
  return { kind: 'processingTime', advanceByMs };
}

/** The watermark going to infinity, as at the end of a Beam pipeline. */
export const END: TestStreamEvent<number> = watermark(MAX_WATERMARK_MS);

/** A pane in the shape the Beam reference harness prints, window bounds relative to T0 in seconds. */
export interface PaneSummary {
  key: string;
  window: [number, number];
  values: number[];
  timing: Pane<number[]>['timing'];
  index: number;
  onTimeIndex: number;
  first: boolean;
  last: boolean;
}

export function summarize(pane: Pane<number[]>): PaneSummary {
  return {
    key: pane.key,
    window: [(pane.window.startMs - T0) / SECOND, (pane.window.endMs - T0) / SECOND],
    values: pane.value,
    timing: pane.timing,
    index: pane.index,
    onTimeIndex: pane.onTimeIndex,
    first: pane.isFirst,
    last: pane.isLast,
  };
}

/** Runs a TestStream with `collectFn`, processing time starting at `startProcessingTimeMs` (default T0). */
export function run(
  strategy: WindowingStrategy,
  events: readonly TestStreamEvent<number>[],
  startProcessingTimeMs = T0,
): TestStreamResult<number, number[], number[]> {
  return runTestStream(createReduceFnRunner(strategy, collectFn), events, {
    processingTimeMs: startProcessingTimeMs,
  });
}

/** Shorthand for a pane summary. */
export function p(
  window: [number, number],
  values: number[],
  timing: PaneSummary['timing'],
  index: number,
  onTimeIndex: number,
  last = false,
  key = 'k',
): PaneSummary {
  return { key, window, values, timing, index, onTimeIndex, first: index === 0, last };
}
