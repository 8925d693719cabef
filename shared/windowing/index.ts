// The pure windowing core: windows, triggers, panes and the watermark heuristic, with Beam's semantics.
export { accumulatorFields, type CombineFn, type JsonValue } from './combine-fn';
export { WindowingConfigError, WindowingInputError } from './errors';
export { type Pane, type PaneTiming } from './pane';
export {
  type DropReason,
  type DroppedElement,
  type KeyState,
  type ReduceFnRunner,
  type StepResult,
  type TimestampedElement,
} from './key-state';
export { createReduceFnRunner } from './reduce-fn-runner';
export {
  validateWindowingStrategy,
  type AccumulationMode,
  type FiringSpec,
  type WindowingStrategy,
} from './strategy';
export { processingTimeDeadlineMs } from './trigger';
export {
  advanceWatermarkByProcessingTime,
  INITIAL_WATERMARK_STATE,
  observeEventTime,
  validateWatermarkPolicy,
  type WatermarkPolicy,
  type WatermarkState,
} from './watermark-policy';
export {
  applyWatermarkHold,
  heartbeatHoldAt,
  holdCapMs,
  watermarkHoldAt,
  type HeartbeatHold,
  type HeldMessage,
  type WatermarkHold,
} from './watermark-hold';
export {
  compareWindows,
  MAX_WATERMARK_MS,
  maxTimestampMs,
  MIN_WATERMARK_MS,
  parseWindowId,
  sameWindow,
  windowId,
  type IntervalWindow,
} from './window';
export {
  assignWindows,
  fixed,
  isMerging,
  mergeOverlappingWindows,
  sessions,
  sliding,
  type WindowFnSpec,
} from './window-fns';
export {
  addToContribution,
  emptyContribution,
  FRESH_PANE,
  mergeContributions,
  type PaneBookkeeping,
  type WindowContribution,
  type WindowState,
} from './window-state';
