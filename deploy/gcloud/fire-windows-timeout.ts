// The deploy timeout of fireWindows: a scheduled run loops for OFFVIA_FIRE_WINDOWS_LOOP_MS serving processing-time
// timers (shared/state/timer-loop.ts), and its last pass may run for a whole lease, so the function's timeout and
// the Cloud Scheduler attempt deadline are derived from those two variables instead of a fixed number.
import type { WindowConfig } from '../../shared/config/window-config';
import type { Schedule } from '../schedules';
import type { FunctionSpec } from './functions';

/** Seconds kept above the loop and the last pass's lease (cold start, the panes' emission, the lease release). */
export const FIRE_WINDOWS_TIMEOUT_MARGIN_SECONDS = 30;
/** The longest `--timeout` of a gen2 HTTP function (Cloud Run functions quotas: 60 minutes for HTTP functions). */
export const MAX_HTTP_TIMEOUT_SECONDS = 3600;
/** Cloud Scheduler's longest attempt deadline for an HTTP target (`--attempt-deadline`: 15 s to 30 min). */
export const MAX_ATTEMPT_DEADLINE_SECONDS = 1800;

/**
 * The `--timeout` (seconds) of a function: the spec's, except fireWindows, which gets at least its loop + its lease
 * + the margin (defaults: 58 s + 120 s + 30 s = 208 s).
 * @throws Error when that is above the 60-minute limit of HTTP functions
 */
export function deployedTimeoutSeconds(
  spec: FunctionSpec,
  window: Pick<WindowConfig, 'fireLoopMs' | 'fireLeaseMs'>,
): number {
  if (spec.role !== 'fireWindows') return spec.timeoutSeconds;
  const needed =
    Math.ceil((window.fireLoopMs + window.fireLeaseMs) / 1000) +
    FIRE_WINDOWS_TIMEOUT_MARGIN_SECONDS;
  const seconds = Math.max(spec.timeoutSeconds, needed);
  if (seconds > MAX_HTTP_TIMEOUT_SECONDS) {
    throw new Error(
      `OFFVIA_FIRE_WINDOWS_LOOP_MS (${window.fireLoopMs}) + OFFVIA_FIRE_WINDOWS_LEASE_MS (${window.fireLeaseMs}) ` +
        `need a ${seconds} s timeout for fireWindows; HTTP functions allow at most ${MAX_HTTP_TIMEOUT_SECONDS} s`,
    );
  }
  return seconds;
}

/** Cloud Scheduler's `--attempt-deadline` (seconds): the function's whole timeout and 30 s, within its maximum. */
export function attemptDeadlineSeconds(timeoutSeconds: number): number {
  return Math.min(timeoutSeconds + 30, MAX_ATTEMPT_DEADLINE_SECONDS);
}

/**
 * Refuses a timer loop as long as the schedule: the run must end before its next scheduled start, or every run
 * would delay the next one (Cloud Scheduler never runs two executions of a job at once).
 * @throws Error naming OFFVIA_FIRE_WINDOWS_LOOP_MS
 */
export function assertLoopFitsSchedule(
  window: Pick<WindowConfig, 'fireLoopMs'>,
  schedule: Schedule,
): void {
  if (window.fireLoopMs >= schedule.everySeconds * 1000) {
    throw new Error(
      `OFFVIA_FIRE_WINDOWS_LOOP_MS (${window.fireLoopMs}) is not below the fireWindows schedule ` +
        `(${schedule.everySeconds} s): a run would still be looping when the next one is due`,
    );
  }
}
