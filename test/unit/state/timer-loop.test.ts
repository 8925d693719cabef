// fireWindows' timer loop on a fake clock: it sleeps until the earliest processing-time timer and runs a pass when
// it is due, polls at most every pollMs, ends at its budget, never spins on a timer a pass did not clear, and folds
// the passes into one summary.
import assert from 'node:assert/strict';
import { TransientError } from '../../../shared/errors';
import { Logger, type LogEntry } from '../../../shared/logging/logger';
import type { FireWindowsSummary } from '../../../shared/state/fire-windows';
import { combineSummaries, runTimerLoop } from '../../../shared/state/timer-loop';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

function summary(pt: number, extra: Partial<FireWindowsSummary> = {}): FireWindowsSummary {
  return {
    status: 'done',
    pipeline: 'p',
    processingTimeMs: pt,
    watermarkMs: pt - 70_000,
    watermarkAdvanced: false,
    windowsDue: 0,
    windowsFired: 0,
    windowsClosed: 0,
    windowsFailed: 0,
    panesEmitted: 0,
    panesToBadData: 0,
    panesDeferred: 0,
    outboxReemitted: 0,
    leaseFence: 1,
    durationMs: 0,
    ...extra,
  };
}

/** A fake clock: `sleep` advances it; each pass takes `passMs`. */
function rig(timers: (now: number) => number | null, passMs = 200) {
  let now = T0;
  const passes: number[] = [];
  const sleeps: number[] = [];
  const lines: LogEntry[] = [];
  let polls = 0;
  return {
    passes,
    sleeps,
    lines,
    get polls() {
      return polls;
    },
    deps: {
      now: () => now,
      sleep: (ms: number) => {
        sleeps.push(ms);
        now += ms;
        return Promise.resolve();
      },
      pass: () => {
        const pt = now;
        passes.push(pt);
        now += passMs;
        return Promise.resolve(summary(pt, { windowsFired: 1, panesEmitted: 1 }));
      },
      nextTimerMs: () => {
        polls++;
        return Promise.resolve(timers(now));
      },
      logger: new Logger('test', (e) => lines.push(e)),
      pipeline: 'p',
    },
  };
}

describe('fireWindows timer loop', () => {
  it('fires a timer at its deadline, not at the next run', async () => {
    // A pane whose first element arrived at T0 + 2 s: its early firing is due 30 s later.
    const due = T0 + 32_000;
    let fired = false;
    const r = rig(() => (fired ? null : due));
    const inner = r.deps.pass;
    r.deps.pass = () => {
      const p = inner();
      if (r.passes.length > 1) fired = true;
      return p;
    };
    const out = await runTimerLoop(r.deps, { loopMs: 58_000, pollMs: 5_000 });
    assert.deepEqual(r.passes, [T0, due]);
    assert.equal(out.loop.timerPasses, 1);
    assert.equal(out.loop.maxTimerLatenessMs, 0);
    assert.equal(out.windowsFired, 2);
    assert.equal(out.processingTimeMs, T0);
    assert.ok(r.deps.now() >= T0 + 58_000 && r.deps.now() < T0 + 58_000 + 1_000);
    assert.ok(
      r.sleeps.every((ms) => ms <= 5_000),
      `a sleep above the poll interval: ${r.sleeps.join(',')}`,
    );
    assert.ok(r.lines.some((l) => l.message === 'fireWindows timer loop done'));
  });

  it('polls at most every pollMs while nothing is pending, and ends at its budget', async () => {
    const r = rig(() => null);
    const out = await runTimerLoop(r.deps, { loopMs: 58_000, pollMs: 5_000 });
    assert.equal(r.passes.length, 1);
    assert.equal(out.loop.polls, 12);
    assert.ok(r.deps.now() - T0 <= 58_200);
  });

  it('gives a timer the last pass left pending one more pass, then does not spin on it', async () => {
    // The store keeps answering a deadline already due (its window has a longer delay, or its firing failed).
    const r = rig(() => T0 - 1_000);
    const out = await runTimerLoop(r.deps, { loopMs: 20_000, pollMs: 5_000 });
    assert.deepEqual(r.passes, [T0, T0 + 1_000]);
    assert.equal(out.loop.timerPasses, 1);
  });

  it('leaves a timer due after its budget to the next run', async () => {
    const r = rig(() => T0 + 59_000);
    await runTimerLoop(r.deps, { loopMs: 58_000, pollMs: 5_000 });
    assert.deepEqual(r.passes, [T0]);
  });

  it('is one pass with a budget of 0', async () => {
    const r = rig(() => T0 + 1);
    const out = await runTimerLoop(r.deps, { loopMs: 0, pollMs: 5_000 });
    assert.equal(out.loop.passes, 1);
    assert.equal(r.polls, 0);
  });

  it('runs another pass at once after a partial one', async () => {
    const r = rig(() => null);
    let n = 0;
    r.deps.pass = () => {
      const pt = r.deps.now();
      r.passes.push(pt);
      n++;
      return Promise.resolve(
        summary(pt, { status: n === 1 ? 'partial' : 'done', windowsDue: 5000 }),
      );
    };
    const out = await runTimerLoop(r.deps, { loopMs: 10_000, pollMs: 5_000 });
    assert.equal(r.passes.length, 2);
    assert.equal(r.passes[1], T0);
    assert.equal(out.status, 'partial');
    assert.equal(out.windowsDue, 10_000);
  });

  it('logs and counts a failed query or pass, and goes on', async () => {
    let calls = 0;
    const r = rig(() => {
      calls++;
      if (calls === 1) throw new TransientError('query', 'UNAVAILABLE');
      return calls === 2 ? T0 + 6_000 : null;
    });
    const inner = r.deps.pass;
    r.deps.pass = () => {
      if (r.passes.length === 1) {
        r.passes.push(-1);
        return Promise.reject(new TransientError('lease', 'UNAVAILABLE'));
      }
      return inner();
    };
    const out = await runTimerLoop(r.deps, { loopMs: 20_000, pollMs: 5_000 });
    assert.equal(out.loop.failures, 2);
    assert.equal(r.lines.filter((l) => l.message.startsWith('fireWindows run failed')).length, 2);
  });

  it('fails like a single run when the first pass fails', async () => {
    const r = rig(() => null);
    r.deps.pass = () => Promise.reject(new TransientError('lease', 'UNAVAILABLE'));
    await assert.rejects(runTimerLoop(r.deps, { loopMs: 58_000, pollMs: 5_000 }), TransientError);
  });

  it('reports busy only when every pass was busy, with the last real pass watermark', () => {
    const busy = summary(T0, { status: 'busy', watermarkMs: null, leaseFence: null });
    assert.equal(combineSummaries([busy, busy], T0, T0 + 5).status, 'busy');
    const mixed = combineSummaries(
      [busy, summary(T0 + 5_000, { watermarkMs: T0 - 1 })],
      T0,
      T0 + 6_000,
    );
    assert.equal(mixed.status, 'done');
    assert.equal(mixed.watermarkMs, T0 - 1);
    assert.equal(mixed.durationMs, 6_000);
  });
});

describe('fireWindows timer loop: passes of timers spread over the minute', () => {
  it('serves timers closer than the least gap in one pass', async () => {
    // A pane deadline every 100 ms from T0 + 10 s: one pass per second, not one per pane.
    let served = T0;
    const r = rig(() => {
      const next = Math.max(served + 100, T0 + 10_000);
      return next < T0 + 20_000 ? next : null;
    }, 50);
    const inner = r.deps.pass;
    r.deps.pass = () => {
      served = r.deps.now();
      return inner();
    };
    const out = await runTimerLoop(r.deps, { loopMs: 30_000, pollMs: 5_000, minPassGapMs: 1_000 });
    assert.ok(out.loop.timerPasses <= 11, `${out.loop.timerPasses} passes`);
    assert.ok(out.loop.timerPasses >= 9, `${out.loop.timerPasses} passes`);
    assert.ok(out.loop.maxTimerLatenessMs <= 1_000, `${out.loop.maxTimerLatenessMs} ms late`);
  });
});
