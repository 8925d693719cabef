// fireWindows' processing-time timers: a scheduled run keeps going for just under a minute after its first pass,
// sleeping until the earliest pending timer (a one-document query) and running a pass when it is due, so an early
// pane due at t fires within a second or two of t instead of at the next scheduler minute.
import { setTimeout as sleepMs } from 'node:timers/promises';
import { TransientError, errorText } from '../errors';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import type { JsonValue } from '../windowing';
import {
  failedRunAnswer,
  fireWindows,
  keyGroupsOf,
  PASS_COUNTS,
  type FireWindowsDeps,
  type FireWindowsSummary,
  type HttpAnswer,
} from './fire-windows';

/** How long a run loops and how often it looks for new timers (ms). */
export interface TimerLoopOptions {
  /** The loop ends this long after the run started (`OFFVIA_FIRE_WINDOWS_LOOP_MS`); 0: one pass. */
  readonly loopMs: number;
  /** Longest sleep between two timer queries (`OFFVIA_FIRE_WINDOWS_POLL_MS`). */
  readonly pollMs: number;
  /**
   * Least processing time between two timer passes (default `MIN_PASS_GAP_MS`): timers due within it share one
   * pass, so panes whose deadlines are spread over the minute cost at most one pass (lease, watermark, queries)
   * per gap instead of one per pane.
   */
  readonly minPassGapMs?: number;
}

/** Default least time between two timer passes, ms: at most 60 passes a minute, each at most 1 s late for it. */
export const MIN_PASS_GAP_MS = 1_000;

/** What the loop runs; tests pass stubs and a fake clock. */
export interface TimerLoopDeps {
  /** Processing time, epoch ms. */
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** One fireWindows pass (lease, watermark, due windows, panes). @throws TransientError as fireWindows does */
  readonly pass: () => Promise<FireWindowsSummary>;
  /**
   * The earliest processing-time timer of any pane (epoch ms), `null` when no pane has pending elements or the
   * strategy has no processing-time firings. @throws TransientError when the store cannot be read
   */
  readonly nextTimerMs: () => Promise<number | null>;
  readonly logger: Logger;
  readonly pipeline: string;
}

/** The loop's own figures, beside the summed pass figures. */
export interface TimerLoopFigures {
  readonly loopMs: number;
  /** Passes run, the first included. */
  readonly passes: number;
  /** Passes run because a timer came due. */
  readonly timerPasses: number;
  /** Timer queries (one Firestore read each when nothing is pending). */
  readonly polls: number;
  /** Passes or queries that failed transiently (logged; the loop went on). */
  readonly failures: number;
  /** Largest delay between a timer's deadline and the pass that served it, ms. */
  readonly maxTimerLatenessMs: number;
}

/** The run summary of a looping run: pass figures summed, watermark and lease of the last pass, and `loop`. */
export interface TimerLoopSummary extends FireWindowsSummary {
  readonly loop: TimerLoopFigures;
}

/** Folds the passes of one run into one summary (the first pass's processing time, the last real pass's watermark). */
export function combineSummaries(
  passes: readonly FireWindowsSummary[],
  startedMs: number,
  endedMs: number,
): FireWindowsSummary {
  const first = passes[0];
  if (first === undefined) throw new RangeError('combineSummaries needs at least one pass');
  const worked = passes.filter((p) => p.status !== 'busy');
  const last = worked[worked.length - 1] ?? first;
  const sums = Object.fromEntries(
    PASS_COUNTS.map((k) => [k, passes.reduce((n, p) => n + p[k], 0)]),
  );
  const status =
    worked.length === 0 ? 'busy' : worked.some((p) => p.status === 'partial') ? 'partial' : 'done';
  return {
    ...first,
    ...sums,
    status,
    watermarkMs: last.watermarkMs,
    watermarkAdvanced: passes.some((p) => p.watermarkAdvanced),
    leaseFence: last.leaseFence,
    ...(last.watermarkHold !== undefined && { watermarkHold: last.watermarkHold }),
    durationMs: endedMs - startedMs,
  };
}

/**
 * One scheduled run: a first pass, then until `loopMs` after the start: query the earliest processing-time timer,
 * sleep until it (at most `pollMs`, never past the end), and run a pass once it is due (at least `minPassGapMs`
 * after the last). A timer already due at the last pass and still pending gets one more pass (its element may have
 * committed after that pass looked), then is left to the next due timer's pass or the next run, so the loop never
 * spins. A pass that stopped early (`partial`) is followed by
 * another at once. Errors after the first pass are logged and counted (`loop.failures`), and the loop goes on.
 * @throws TransientError when the first pass fails (as a single run does)
 */
export async function runTimerLoop(
  deps: TimerLoopDeps,
  options: TimerLoopOptions,
): Promise<TimerLoopSummary> {
  const startedMs = deps.now();
  const endMs = startedMs + options.loopMs;
  const passes: FireWindowsSummary[] = [await deps.pass()];
  let timerPasses = 0;
  let polls = 0;
  let failures = 0;
  let maxTimerLatenessMs = 0;
  let lastPassPt = passes[0]?.processingTimeMs ?? startedMs;
  let again = passes[0]?.status === 'partial';
  let retried: number | null = null;
  const runPass = async (dueMs: number | null): Promise<void> => {
    try {
      const summary = await deps.pass();
      passes.push(summary);
      if (dueMs !== null) {
        timerPasses++;
        maxTimerLatenessMs = Math.max(maxTimerLatenessMs, summary.processingTimeMs - dueMs);
      }
      lastPassPt = summary.processingTimeMs;
      again = summary.status === 'partial';
    } catch (err) {
      if (!(err instanceof TransientError)) throw err;
      failures++;
      again = false;
      logs.fireWindowsFailed(deps.logger, deps.pipeline, `timer loop pass: ${errorText(err)}`);
    }
  };
  while (deps.now() < endMs) {
    if (again) {
      await runPass(null);
      continue;
    }
    let next: number | null = null;
    try {
      next = await deps.nextTimerMs();
      polls++;
    } catch (err) {
      if (!(err instanceof TransientError)) throw err;
      failures++;
      logs.fireWindowsFailed(deps.logger, deps.pipeline, `timer query: ${errorText(err)}`);
    }
    // A deadline at or before the last pass gets one more pass, then is left alone (see above).
    let deadline = next;
    if (next !== null && next <= lastPassPt) {
      deadline = next === retried ? null : next;
      retried = next;
    }
    const due =
      deadline === null
        ? null
        : Math.max(deadline, lastPassPt + (options.minPassGapMs ?? MIN_PASS_GAP_MS));
    const t = deps.now();
    const wake = Math.min(due ?? Number.POSITIVE_INFINITY, t + options.pollMs, endMs);
    if (wake > t) await deps.sleep(wake - t);
    if (due !== null && due < endMs && deps.now() >= due) await runPass(deadline);
  }
  const endedMs = deps.now();
  const loop: TimerLoopFigures = {
    loopMs: options.loopMs,
    passes: passes.length,
    timerPasses,
    polls,
    failures,
    maxTimerLatenessMs,
  };
  logs.fireWindowsLoopDone(deps.logger, {
    pipeline: deps.pipeline,
    ...loop,
    durationMs: endedMs - startedMs,
  });
  return { ...combineSummaries(passes, startedMs, endedMs), loop };
}

/**
 * The earliest processing-time timer (epoch ms) over the deployed layout: key groups answer their earliest
 * `processing_timer_ms`, sessions their earliest session timer (deadlines both).
 */
export function nextTimerQuery<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
): () => Promise<number | null> {
  return async () => {
    if (deps.processingTimeDelayMs === null) return null;
    // Session records and key groups carry the deadline itself, not the pane's first arrival.
    if (deps.sessions !== undefined) return deps.sessions.store.earliestSessionTimerMs();
    return (await keyGroupsOf(deps).store.nextTimers()).processingTimeMs;
  };
}

/**
 * fireWindows for Cloud Scheduler with processing-time timers: `runTimerLoop` over `fireWindows(deps)`, answered
 * like `fireWindowsHttp` (200 with the summary; 503 when a window, a pass or a query failed transiently; 500 for
 * anything else). Without processing-time firings in the strategy, or with `loopMs` 0, it is one pass.
 */
export async function fireWindowsLoopHttp<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
  options: TimerLoopOptions,
  sleep: (ms: number) => Promise<void> = (ms) => sleepMs(ms),
): Promise<HttpAnswer> {
  const loopMs = deps.processingTimeDelayMs === null ? 0 : options.loopMs;
  try {
    const summary = await runTimerLoop(
      {
        now: deps.now,
        sleep,
        pass: () => fireWindows(deps),
        nextTimerMs: nextTimerQuery(deps),
        logger: deps.logger,
        pipeline: deps.pipeline,
      },
      { ...options, loopMs },
    );
    const failed = summary.windowsFailed > 0 || summary.loop.failures > 0;
    return { status: failed ? 503 : 200, body: { ...summary } };
  } catch (err) {
    return failedRunAnswer(deps, err);
  }
}
