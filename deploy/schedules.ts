// The Cloud Scheduler jobs of every registered pipeline: which HTTP function is called how often. The local
// scheduler loop (deploy/local/scheduler.ts) and the cloud deploy plan read the same list, so both keep one cadence.
import type { AnyPipelineDefinition } from '../shared/pipeline/definition';
import { PIPELINES } from '../shared/pipelines';

/** One scheduled call of an HTTP function. */
export interface Schedule {
  /** The HTTP function's entry point (the definition's `functions.fireWindows` or `functions.schemaSweep`). */
  readonly functionName: string;
  /** Cloud Scheduler cron expression (UTC), for `gcloud scheduler jobs create http --schedule`. */
  readonly cron: string;
  /** The same cadence in seconds, for the local loop (which aligns calls to multiples of it, as cron does). */
  readonly everySeconds: number;
}

/**
 * Every minute, for both scheduled roles. The schema sweep: a 3-minute schema window is then swept within a minute of
 * closing (plus the grace), and waiting rows are retried at least once per window. fireWindows: Cloud Scheduler's
 * finest cadence; its timer loop serves processing-time timers between the calls (shared/state/timer-loop.ts).
 */
const EVERY_MINUTE = { cron: '* * * * *', everySeconds: 60 } as const;

/** A pipeline's schedules: its schema sweep when schema drift is on, then its fireWindows. */
export function pipelineSchedules(p: AnyPipelineDefinition): Schedule[] {
  return [p.functions.schemaSweep, p.functions.fireWindows].flatMap((fn) =>
    fn === null ? [] : [{ functionName: fn.entryPoint, ...EVERY_MINUTE }],
  );
}

/** The schedules of every registered pipeline, in registry order. */
export const SCHEDULES: readonly Schedule[] = PIPELINES.flatMap(pipelineSchedules);
