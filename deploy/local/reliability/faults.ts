// The reliability harness's fault injection: SIGKILLs and outages of the local stack's services through
// `deploy/local/stack.sh`, for as long as a scenario runs.
import { killSpan, type Scenario } from './scenarios';

/** What fault injection needs from the outside world (real in the harness, stubs in unit tests). */
export interface FaultIo {
  /** Runs `stack.sh <command> <service>` (kill | stop | start); rejects when the script fails. */
  readonly stack: (command: 'kill' | 'stop' | 'start', service: string) => Promise<void>;
  /** Waits `ms` milliseconds. */
  readonly sleep: (ms: number) => Promise<void>;
  /** One progress line (stderr in the harness). */
  readonly log: (text: string) => void;
}

/** What a scenario's fault injection did: a one-line summary for the report, and whether it failed. */
export interface FaultOutcome {
  summary: string;
  /** Set when the fault could not be injected or undone as planned: the scenario did not run as specified. */
  error?: string;
}

/**
 * Injects the scenario's fault until `done()`; resolves once the fault is over and every service is up again. Never
 * rejects: a failure of `stack.sh` (a service that would not stop or start) is logged and returned, so the harness
 * still prints its report (marked FAILED) instead of dying mid-run.
 */
export async function injectFault(
  scenario: Scenario,
  publishMs: number,
  done: () => boolean,
  io: FaultIo,
): Promise<FaultOutcome> {
  const { stack, sleep, log } = io;
  const fault = scenario.fault;
  let step = 'start';
  let kills = 0;
  try {
    if (fault.kind === 'kill-function') {
      while (!done()) {
        await sleep(fault.everyMs * (0.5 + Math.random()));
        if (done()) break;
        step = 'SIGKILL of fn-ingestBooking';
        await stack('kill', 'fn-ingestBooking');
        kills++;
        step = 'restart of fn-ingestBooking';
        await stack('start', 'fn-ingestBooking');
      }
      const summary = `ingestBooking SIGKILLed ${kills} times (every ${killSpan(fault.everyMs)}) and restarted`;
      log(`${scenario.name}: ${summary}`);
      return { summary };
    }
    if (fault.kind === 'outage') {
      await sleep(publishMs * fault.atFraction);
      const from = Date.now();
      step = `stop of ${fault.service}`;
      await stack('stop', fault.service);
      await sleep(fault.downMs);
      step = `start of ${fault.service}`;
      await stack('start', fault.service);
      const summary = `${fault.service} down ${Math.round((Date.now() - from) / 1000)} s, ${Math.round(fault.atFraction * 100)} % into publishing`;
      log(`${scenario.name}: ${summary}`);
      return { summary };
    }
    return { summary: 'no fault injected' };
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    log(`${scenario.name}: fault injection FAILED at the ${step}: ${text}`);
    return {
      summary: `fault injection failed at the ${step} (after ${kills} kills)`,
      error: `${step}: ${text}`,
    };
  }
}
