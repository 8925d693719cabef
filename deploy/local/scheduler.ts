// Local stand-in for Cloud Scheduler: POSTs to each scheduled HTTP function of the local stack on its cadence
// (deploy/schedules.ts, plus every registered pipeline's fireWindows), aligned to the clock like cron, with the
// headers Cloud Scheduler sends.
import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { PIPELINES } from '../../shared/pipelines';
import { SCHEDULES, type Schedule } from '../schedules';
import { functionEnvName } from './resources';

/**
 * The schedules the local loop runs: `schedules`, then each registered pipeline's fireWindows and schema sweep not
 * listed yet, every minute on the minute (deploy/schedules.ts).
 */
export function localSchedules(
  schedules: readonly Schedule[],
  pipelines: readonly AnyPipelineDefinition[],
): Schedule[] {
  const out = [...schedules];
  for (const p of pipelines) {
    for (const fn of [p.functions.schemaSweep, p.functions.fireWindows]) {
      if (fn === null || out.some((s) => s.functionName === fn.entryPoint)) continue;
      out.push({ functionName: fn.entryPoint, cron: '* * * * *', everySeconds: 60 });
    }
  }
  return out;
}

/** A schedule bound to the local stack: where to call and how often. */
export interface LocalJob {
  readonly functionName: string;
  readonly url: string;
  /** Seconds between calls; the calls fall on multiples of it since the epoch. */
  readonly everySeconds: number;
}

/**
 * The jobs to run: each schedule with its URL from OFFVIA_<NAME>_URL (written by stack.sh) and its cadence from
 * OFFVIA_SCHEDULE_<NAME>_SECONDS (default: the schedule's; 0 turns the job off).
 * @throws Error naming the variable when a URL is missing or a cadence is not an integer ≥ 0.
 */
export function localJobs(
  schedules: readonly Schedule[],
  env: NodeJS.ProcessEnv = process.env,
): LocalJob[] {
  const jobs: LocalJob[] = [];
  for (const s of schedules) {
    const name = functionEnvName(s.functionName);
    const cadenceVar = `OFFVIA_SCHEDULE_${name}_SECONDS`;
    const raw = env[cadenceVar];
    const everySeconds = raw === undefined || raw === '' ? s.everySeconds : Number(raw);
    if (!Number.isSafeInteger(everySeconds) || everySeconds < 0) {
      throw new Error(
        `${cadenceVar} must be an integer number of seconds >= 0, got ${JSON.stringify(raw)}`,
      );
    }
    if (everySeconds === 0) continue;
    const urlVar = `OFFVIA_${name}_URL`;
    const url = env[urlVar];
    if (url === undefined || url === '')
      throw new Error(`${urlVar} is not set: is ${s.functionName} in the stack?`);
    jobs.push({ functionName: s.functionName, url, everySeconds });
  }
  return jobs;
}

/** The next call time strictly after `nowMs`: the next multiple of the cadence (ms since the epoch, UTC). */
export function nextRunMs(nowMs: number, everySeconds: number): number {
  const periodMs = everySeconds * 1000;
  return (Math.floor(nowMs / periodMs) + 1) * periodMs;
}

function log(severity: 'INFO' | 'WARNING' | 'ERROR', message: string, context: object = {}): void {
  // time: `offvia status` reads the last call of each job from this log.
  const line = JSON.stringify({
    severity,
    component: 'scheduler',
    message,
    time: new Date().toISOString(),
    ...context,
  });
  if (severity === 'INFO') console.log(line);
  else console.error(line);
}

/** One call as Cloud Scheduler makes it; resolves with the HTTP status. `stop` aborts a call in flight. */
export async function callJob(
  job: LocalJob,
  timeoutMs: number,
  stop?: AbortSignal,
): Promise<number> {
  const res = await fetch(job.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Google-Cloud-Scheduler',
      'x-cloudscheduler': 'true',
      'x-cloudscheduler-jobname': `offvia-local-${job.functionName}`,
    },
    body: '{}',
    signal:
      stop === undefined
        ? AbortSignal.timeout(timeoutMs)
        : AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]),
  });
  const text = await res.text();
  const level = res.ok ? 'INFO' : 'ERROR';
  log(level, `${job.functionName} answered ${res.status}`, {
    status: res.status,
    body: text.slice(0, 2000),
  });
  return res.status;
}

/**
 * Runs `job` on its cadence until `signal` aborts; a call still running at the next tick delays that tick until it
 * ends (logged), as Cloud Scheduler does (API `Job.schedule`): never two executions of a job at once.
 */
export async function runJob(job: LocalJob, signal: AbortSignal, timeoutMs: number): Promise<void> {
  let running: Promise<void> | undefined;
  while (!signal.aborted) {
    const waitMs = nextRunMs(Date.now(), job.everySeconds) - Date.now();
    try {
      await sleep(waitMs, undefined, { signal });
    } catch (err) {
      if (signal.aborted) break;
      throw err;
    }
    if (running !== undefined) {
      log(
        'WARNING',
        `${job.functionName}: previous call still running, tick delayed until it ends`,
      );
      await running;
      if (signal.aborted) break;
    }
    running = callJob(job, timeoutMs, signal)
      .then(() => undefined)
      .catch((err: unknown) => {
        if (signal.aborted) {
          log('INFO', `${job.functionName}: call abandoned, the scheduler is stopping`);
          return;
        }
        log('ERROR', `${job.functionName} call failed`, {
          error: err instanceof Error ? err.message : String(err),
        });
      })
      .finally(() => {
        running = undefined;
      });
  }
  await running;
}

async function main(): Promise<void> {
  const jobs = localJobs(localSchedules(SCHEDULES, PIPELINES));
  const controller = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => controller.abort());
  }
  log('INFO', 'scheduler started', {
    jobs: jobs.map((j) => ({
      function: j.functionName,
      url: j.url,
      every_seconds: j.everySeconds,
    })),
  });
  const ready = process.env.OFFVIA_SCHEDULER_READY_FILE;
  if (ready) await writeFile(ready, `${process.pid}\n`);
  await Promise.all(jobs.map((job) => runJob(job, controller.signal, 5 * 60_000)));
  log('INFO', 'scheduler stopped');
}

if (require.main === module) {
  main().catch((err: unknown) => {
    log('ERROR', 'scheduler failed', { error: err instanceof Error ? err.message : String(err) });
    process.exitCode = 1;
  });
}
