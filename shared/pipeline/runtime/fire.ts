// The generic fireWindows of a pipeline definition: every aggregation's due windows, one JSON summary.
import { setTimeout as sleepMs } from 'node:timers/promises';
import { fireWindowsHttp, type FireWindowsDeps, type HttpAnswer } from '../../state/fire-windows';
import { fireWindowsLoopHttp, type TimerLoopOptions } from '../../state/timer-loop';
import type { JsonValue } from '../../windowing';

/** What one pipeline's fireWindows run needs: each aggregation's fireWindows wiring, by aggregation name. */
export interface PipelineFireDeps {
  /** The pipeline's name (the summary's `pipeline`). */
  readonly pipeline: string;
  readonly aggregations: readonly {
    readonly name: string;
    readonly fire: FireWindowsDeps<never, JsonValue, unknown>;
  }[];
}

/**
 * The HTTP status of a run over several aggregations, from theirs: 500 when any failed for a non-transient reason,
 * else 503 when any failed transiently (Cloud Scheduler retries), else 200.
 */
export function combinedStatus(statuses: readonly number[]): number {
  if (statuses.some((s) => s >= 500 && s !== 503)) return 500;
  if (statuses.includes(503)) return 503;
  return statuses.find((s) => s !== 200) ?? 200;
}

/**
 * Fires every aggregation of the pipeline concurrently, each under its own lease: with `loop` (a Cloud Scheduler
 * call) the timer loop for `loop.loopMs` (`fireWindowsLoopHttp`), else one pass (`fireWindowsHttp`). Never throws:
 * failures are in the answer (and logged).
 * @returns status per {@link combinedStatus}; body `{ pipeline, status, aggregations: { <name>: summary } }`, its
 *   `status` `failed` (not 200), `busy` (another run held an aggregation's lease) or `ok`
 */
export async function firePipelineWindowsHttp(
  deps: PipelineFireDeps,
  loop?: TimerLoopOptions,
  sleep: (ms: number) => Promise<void> = (ms) => sleepMs(ms),
): Promise<HttpAnswer> {
  const answers = await Promise.all(
    deps.aggregations.map(async (a) => ({
      name: a.name,
      answer:
        loop === undefined
          ? await fireWindowsHttp(a.fire)
          : await fireWindowsLoopHttp(a.fire, loop, sleep),
    })),
  );
  const status = combinedStatus(answers.map((a) => a.answer.status));
  const aggregations: Record<string, Record<string, unknown>> = {};
  for (const a of answers) aggregations[a.name] = a.answer.body;
  const busy = answers.some((a) => a.answer.body.status === 'busy');
  return {
    status,
    body: {
      pipeline: deps.pipeline,
      status: status !== 200 ? 'failed' : busy ? 'busy' : 'ok',
      aggregations,
    },
  };
}
