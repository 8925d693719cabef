// The heuristic input watermark: bounded out-of-orderness over the largest event time seen, advanced with
// processing time after an idle period; future-dated events never move it. Pure: processing time is an argument.
import * as v from 'valibot';

import { parseOrThrow } from './errors';
import { assertTimeMs, MIN_WATERMARK_MS } from './window';

/** Tuning of the watermark heuristic, all in ms. */
export interface WatermarkPolicy {
  /** How far behind the largest event time seen events may still arrive on time (integer >= 0). */
  readonly maxOutOfOrdernessMs: number;
  /** Processing time without a new largest event time after which the watermark follows the clock (>= 1). */
  readonly idleTimeoutMs: number;
  /** Events stamped later than processing time + this are ignored by the watermark (integer >= 0). */
  readonly maxFutureSkewMs: number;
}

/** What the watermark heuristic remembers (plain JSON; one record per pipeline). */
export interface WatermarkState {
  /** The current watermark, epoch ms; `MIN_WATERMARK_MS` before any event. Never decreases. */
  readonly watermarkMs: number;
  /** Largest event time accepted so far, epoch ms; `null` before any event. */
  readonly maxEventTimeMs: number | null;
  /** Processing time at which `maxEventTimeMs` last increased, epoch ms; `null` before any event. */
  readonly maxEventTimeSeenAtMs: number | null;
}

/** The state before any event. */
export const INITIAL_WATERMARK_STATE: WatermarkState = {
  watermarkMs: MIN_WATERMARK_MS,
  maxEventTimeMs: null,
  maxEventTimeSeenAtMs: null,
};

const NON_NEGATIVE = v.pipe(
  v.number(),
  v.safeInteger('must be a safe integer'),
  v.minValue(0, 'must be >= 0'),
);
const POLICY = v.strictObject({
  maxOutOfOrdernessMs: NON_NEGATIVE,
  idleTimeoutMs: v.pipe(NON_NEGATIVE, v.minValue(1, 'must be >= 1')),
  maxFutureSkewMs: NON_NEGATIVE,
});

/**
 * Checks a watermark policy (e.g. built from environment variables).
 * @throws WindowingConfigError listing every problem, paths under `watermarkPolicy`
 */
export function validateWatermarkPolicy(input: unknown): WatermarkPolicy {
  return parseOrThrow(POLICY, input, 'watermarkPolicy');
}

/**
 * The idle rule: once `idleTimeoutMs` of processing time has passed since the largest event time last grew, event
 * time keeps pace with processing time from there, never ahead of it:
 *   candidate = min(pt − idle − bound, (maxEventTime − bound) + (pt − seenAt − idle)).
 * So a lagging backlog is never jumped to "now" and dropped as late. Not before any event.
 */
function idleCandidateMs(
  policy: WatermarkPolicy,
  state: WatermarkState,
  processingTimeMs: number,
): number {
  const { maxEventTimeMs: max, maxEventTimeSeenAtMs: seenAt } = state;
  if (max === null || seenAt === null || processingTimeMs - seenAt < policy.idleTimeoutMs) {
    return MIN_WATERMARK_MS;
  }
  return (
    processingTimeMs - policy.idleTimeoutMs - policy.maxOutOfOrdernessMs + Math.min(0, max - seenAt)
  );
}

function withCandidate(state: WatermarkState, candidateMs: number): WatermarkState {
  return candidateMs > state.watermarkMs ? { ...state, watermarkMs: candidateMs } : state;
}

/** What observing one event did. */
export interface WatermarkObservation {
  /** The new state (the input is never modified). */
  readonly state: WatermarkState;
  /** True when the event was ignored for being stamped beyond processing time + `maxFutureSkewMs`. */
  readonly futureDated: boolean;
}

/**
 * Feeds one event time into the heuristic at `processingTimeMs`: watermark = max(previous, maxEventTime −
 * maxOutOfOrdernessMs, idle candidate). An event stamped after processingTimeMs + maxFutureSkewMs is ignored.
 * @throws WindowingInputError for non-integer times
 */
export function observeEventTime(
  policy: WatermarkPolicy,
  state: WatermarkState,
  eventTimeMs: number,
  processingTimeMs: number,
): WatermarkObservation {
  assertTimeMs('eventTimeMs', eventTimeMs);
  assertTimeMs('processingTimeMs', processingTimeMs);
  const futureDated = eventTimeMs > processingTimeMs + policy.maxFutureSkewMs;
  let next = state;
  if (!futureDated && (state.maxEventTimeMs === null || eventTimeMs > state.maxEventTimeMs)) {
    next = withCandidate(
      { ...state, maxEventTimeMs: eventTimeMs, maxEventTimeSeenAtMs: processingTimeMs },
      eventTimeMs - policy.maxOutOfOrdernessMs,
    );
  }
  return { state: advanceWatermarkByProcessingTime(policy, next, processingTimeMs), futureDated };
}

/**
 * Lets processing time pass with no event (what `fireWindows` calls every minute): applies the idle rule only.
 * @throws WindowingInputError for a non-integer time
 */
export function advanceWatermarkByProcessingTime(
  policy: WatermarkPolicy,
  state: WatermarkState,
  processingTimeMs: number,
): WatermarkState {
  assertTimeMs('processingTimeMs', processingTimeMs);
  return withCandidate(state, idleCandidateMs(policy, state, processingTimeMs));
}
