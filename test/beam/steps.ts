// Builders for hand-written scenario steps: elements, watermark and processing-time advances, with times in seconds
// from the scenario epoch (`SCENARIO_EPOCH_MS`), as the hand-written and telemetry scenarios write them.
import type { ScenarioStep } from './differential';

/** A second in ms. */
export const S = 1000;

/** A bundle of [key, value, event time in seconds]. */
export function add(...elements: [string, number, number][]): ScenarioStep {
  return {
    kind: 'elements',
    elements: elements.map(([key, value, seconds]) => ({ key, value, timestampMs: seconds * S })),
  };
}

/** The watermark advanced to `seconds`. */
export const wm = (seconds: number): ScenarioStep => ({
  kind: 'watermark',
  watermarkMs: seconds * S,
});

/** Processing time advanced by `seconds`. */
export const pt = (seconds: number): ScenarioStep => ({
  kind: 'processingTime',
  advanceByMs: seconds * S,
});
