// The lab's windowing strategy and watermark policy, as the windowing and configuration tests expect them: one
// definition of the lab's values (design.md, "Windows, watermark, triggers") for every test that names them.
import type { WatermarkPolicy, WindowingStrategy } from '../../../shared/windowing';
import { MINUTE, SECOND } from './helpers';

/**
 * The lab's windowing strategy as validation normalises it (design.md, "Windows, watermark, triggers"): 1-minute
 * fixed windows, 5 minutes of allowed lateness, an early pane 30 s after a pane's first element, a late pane per
 * late element, accumulating; `overrides` replace whole fields.
 */
export function labStrategy(overrides: Partial<WindowingStrategy> = {}): WindowingStrategy {
  return {
    windowFn: { kind: 'fixed', sizeMs: MINUTE, offsetMs: 0 },
    allowedLatenessMs: 5 * MINUTE,
    trigger: {
      earlyFirings: { processingTimeDelayMs: 30 * SECOND },
      lateFirings: { elementCount: 1 },
    },
    accumulationMode: 'ACCUMULATING',
    ...overrides,
  };
}

/**
 * The lab's watermark policy (design.md): 10 s of out-of-orderness, idle after a minute, no future skew allowed;
 * `overrides` replace fields.
 */
export function labWatermarkPolicy(overrides: Partial<WatermarkPolicy> = {}): WatermarkPolicy {
  return {
    maxOutOfOrdernessMs: 10 * SECOND,
    idleTimeoutMs: MINUTE,
    maxFutureSkewMs: 0,
    ...overrides,
  };
}
