// Drives the windowing core over many keys from TestStream-like steps (Beam's TestStream events), for scenario tests
// and the differential test against Beam; plus Beam's count and integer-sum combiners for those tests.
import {
  WindowingInputError,
  type CombineFn,
  type DroppedElement,
  type JsonValue,
  type KeyState,
  type Pane,
  type ReduceFnRunner,
  type TimestampedElement,
} from '../../shared/windowing';
import { assertTimeMs, MIN_WATERMARK_MS } from '../../shared/windowing/window';

/** Beam's `Count.combineFn()`: the number of inputs, any input type. */
export const countCombineFn: CombineFn<unknown, number, number> = {
  createAccumulator: () => 0,
  addInput: (acc) => acc + 1,
  mergeAccumulators: (accs) => accs.reduce((a, b) => a + b, 0),
  extractOutput: (acc) => acc,
};

/** Beam's `Sum.ofIntegers()`: exact while the total stays within `Number.MAX_SAFE_INTEGER`. */
export const sumCombineFn: CombineFn<number, number, number> = {
  createAccumulator: () => 0,
  addInput: (acc, input) => acc + input,
  mergeAccumulators: (accs) => accs.reduce((a, b) => a + b, 0),
  extractOutput: (acc) => acc,
};

/**
 * One TestStream event: `elements` = `addElements` (one bundle, delivered at the current watermark and
 * processing time), `watermark` = `advanceWatermarkTo`, `processingTime` = `advanceProcessingTime(by)`.
 * End a scenario with `{ kind: 'watermark', watermarkMs: MAX_WATERMARK_MS }` to mirror the end of a Beam
 * pipeline, whose watermark then goes to infinity.
 */
export type TestStreamEvent<In> =
  | { readonly kind: 'elements'; readonly elements: readonly TimestampedElement<In>[] }
  | { readonly kind: 'watermark'; readonly watermarkMs: number }
  | { readonly kind: 'processingTime'; readonly advanceByMs: number };

/** Everything a TestStream run produced. */
export interface TestStreamResult<In, Acc extends JsonValue, Out> {
  /** Panes of all keys in emission order (keys in sorted order within one event). */
  readonly panes: readonly Pane<Out>[];
  /** Elements left out of a window, in order. */
  readonly dropped: readonly DroppedElement<In>[];
  /** Final state per key. */
  readonly states: ReadonlyMap<string, KeyState<Acc>>;
}

/** Where the run's clocks start. */
export interface TestStreamStart {
  /** Initial processing time, epoch ms (Beam's `TestClock` starts at 0). Default 0. */
  readonly processingTimeMs?: number;
  /** Initial input watermark, epoch ms. Default `MIN_WATERMARK_MS`. */
  readonly watermarkMs?: number;
}

/**
 * Runs `events` through `runner`, one `KeyState` per key, like a Beam TestStream feeding a GroupByKey: a bundle
 * is split per key (each key's part is one `processElements` call); watermark and processing-time events reach
 * every key seen so far. Deterministic. Like Beam's `TestStream.Builder`, which refuses both, a watermark
 * event must move the watermark strictly forward and a processing-time event must advance by at least 1 ms.
 * @throws WindowingInputError for non-integer times in events, a `watermark` event at or behind the current
 *   watermark (`start.watermarkMs` or the previous event's), or a `processingTime` event with `advanceByMs` < 1
 */
export function runTestStream<In, Acc extends JsonValue, Out>(
  runner: ReduceFnRunner<In, Acc, Out>,
  events: readonly TestStreamEvent<In>[],
  start: TestStreamStart = {},
): TestStreamResult<In, Acc, Out> {
  const states = new Map<string, KeyState<Acc>>();
  const panes: Pane<Out>[] = [];
  const dropped: DroppedElement<In>[] = [];
  let watermarkMs = start.watermarkMs ?? MIN_WATERMARK_MS;
  let processingTimeMs = start.processingTimeMs ?? 0;
  const sortedKeys = (): string[] => [...states.keys()].sort();
  for (const event of events) {
    switch (event.kind) {
      case 'elements': {
        const byKey = new Map<string, TimestampedElement<In>[]>();
        for (const e of event.elements) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e]);
        for (const key of [...byKey.keys()].sort()) {
          const result = runner.processElements(
            states.get(key) ?? runner.initialState(key),
            byKey.get(key) ?? [],
            { inputWatermarkMs: watermarkMs, processingTimeMs },
          );
          states.set(key, result.state);
          panes.push(...result.panes);
          dropped.push(...result.dropped);
        }
        break;
      }
      case 'watermark':
        assertTimeMs('watermarkMs', event.watermarkMs);
        if (event.watermarkMs <= watermarkMs) {
          throw new WindowingInputError(
            `watermark event ${event.watermarkMs} must be after the current watermark ${watermarkMs}`,
          );
        }
        watermarkMs = event.watermarkMs;
        for (const key of sortedKeys()) {
          const result = runner.advanceWatermark(
            states.get(key) ?? runner.initialState(key),
            watermarkMs,
            processingTimeMs,
          );
          states.set(key, result.state);
          panes.push(...result.panes);
        }
        break;
      case 'processingTime':
        assertTimeMs('advanceByMs', event.advanceByMs);
        if (event.advanceByMs < 1) {
          throw new WindowingInputError(
            `processing-time event advanceByMs must be >= 1, got ${event.advanceByMs}`,
          );
        }
        processingTimeMs += event.advanceByMs;
        for (const key of sortedKeys()) {
          const result = runner.advanceProcessingTime(
            states.get(key) ?? runner.initialState(key),
            processingTimeMs,
          );
          states.set(key, result.state);
          panes.push(...result.panes);
        }
        break;
    }
  }
  return { panes, dropped, states };
}
