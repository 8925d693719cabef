// Local stand-in for Cloud Scheduler: POSTs to each scheduled HTTP function of the local stack on its cadence
// (deploy/schedules.ts, plus every registered pipeline's fireWindows), aligned to the clock like cron, with the
// headers Cloud Scheduler sends; and publishes each pipeline's watermark heartbeat into its ingest topic.
import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { PubSub } from '@google-cloud/pubsub';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { HEARTBEAT_ATTRIBUTE } from '../../shared/pubsub/message';
import { PIPELINES } from '../../shared/pipelines';
import { SCHEDULES, type Schedule } from '../schedules';
import { functionEnvName, projectIdFromEnv, topicPath } from './resources';

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
 * A job's cadence from `variable`, seconds (unset or empty: `fallback`; 0 turns the job off).
 * @throws Error naming the variable when it is not an integer ≥ 0
 */
function cadenceSeconds(env: NodeJS.ProcessEnv, variable: string, fallback: number): number {
  const raw = env[variable];
  const seconds = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isSafeInteger(seconds) || seconds < 0) {
    throw new Error(
      `${variable} must be an integer number of seconds >= 0, got ${JSON.stringify(raw)}`,
    );
  }
  return seconds;
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
    const everySeconds = cadenceSeconds(env, `OFFVIA_SCHEDULE_${name}_SECONDS`, s.everySeconds);
    if (everySeconds === 0) continue;
    const urlVar = `OFFVIA_${name}_URL`;
    const url = env[urlVar];
    if (url === undefined || url === '')
      throw new Error(`${urlVar} is not set: is ${s.functionName} in the stack?`);
    jobs.push({ functionName: s.functionName, url, everySeconds });
  }
  return jobs;
}

/** A pipeline's watermark heartbeat as the local loop publishes it (Cloud Scheduler's Pub/Sub target in the cloud). */
export interface HeartbeatJob {
  readonly pipeline: string;
  /** The pipeline's ingest topic: the heartbeat travels the events' own subscription and push path. */
  readonly topic: string;
  /** Seconds between heartbeats; aligned to multiples of it as the HTTP jobs are. */
  readonly everySeconds: number;
}

/** The heartbeat cadence variable of the local loop (default 60 s, as the cloud job's `* * * * *`; 0: none). */
export const HEARTBEAT_CADENCE_VAR = 'OFFVIA_SCHEDULE_HEARTBEAT_SECONDS';

/**
 * One heartbeat job per pipeline, every `OFFVIA_SCHEDULE_HEARTBEAT_SECONDS` (default 60; 0 turns them off, which
 * holds every watermark until `OFFVIA_WATERMARK_HOLD_MAX_MS`: docs/windows.md "Heartbeats").
 * @throws Error naming the variable when it is not an integer ≥ 0
 */
export function heartbeatJobs(
  pipelines: readonly AnyPipelineDefinition[],
  env: NodeJS.ProcessEnv = process.env,
): HeartbeatJob[] {
  const everySeconds = cadenceSeconds(env, HEARTBEAT_CADENCE_VAR, 60);
  if (everySeconds === 0) return [];
  return pipelines.map((p) => ({ pipeline: p.name, topic: p.pubsub.topic, everySeconds }));
}

/** The heartbeat message of `pipeline`: the attribute the ingest recognises, named after the pipeline. */
export function heartbeatMessage(pipeline: string): {
  data: Buffer;
  attributes: Record<string, string>;
} {
  return { data: Buffer.from('heartbeat'), attributes: { [HEARTBEAT_ATTRIBUTE]: pipeline } };
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
 * ends (logged), as Cloud Scheduler does (API `Job.schedule`): never two executions of a job at once. `call` is
 * one execution (default: the HTTP call; a heartbeat job publishes instead).
 */
export async function runJob(
  job: LocalJob,
  signal: AbortSignal,
  timeoutMs: number,
  call: (stop: AbortSignal) => Promise<unknown> = (stop) => callJob(job, timeoutMs, stop),
): Promise<void> {
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
    running = call(signal)
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
  const pubsub = new PubSub({ projectId: projectIdFromEnv() });
  const heartbeats = heartbeatJobs(PIPELINES).map((h) => {
    const topic = pubsub.topic(h.topic);
    const publish = async () => {
      const id = await topic.publishMessage(heartbeatMessage(h.pipeline));
      log('INFO', `heartbeat of ${h.pipeline} published`, { topic: h.topic, message_id: id });
    };
    const job = {
      functionName: `heartbeat-${h.pipeline}`,
      url: topicPath(projectIdFromEnv(), h.topic),
      everySeconds: h.everySeconds,
    };
    return runJob(job, controller.signal, 0, publish);
  });
  await Promise.all([
    ...jobs.map((job) => runJob(job, controller.signal, 5 * 60_000)),
    ...heartbeats,
  ]);
  await pubsub.close();
  log('INFO', 'scheduler stopped');
}

if (require.main === module) {
  main().catch((err: unknown) => {
    log('ERROR', 'scheduler failed', { error: err instanceof Error ? err.message : String(err) });
    process.exitCode = 1;
  });
}
