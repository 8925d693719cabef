// runTestStream refuses steps that would not move a clock, as Beam's TestStream does (issue 9, finding 4).
import assert from 'node:assert/strict';

import {
  createReduceFnRunner,
  fixed,
  WindowingInputError,
  type WindowingStrategy,
} from '../../../shared/windowing';
import { runTestStream } from '../../support/test-stream';
import { add, at, clock, collectFn, MINUTE, p, run, SECOND, summarize, watermark } from './helpers';

const STRATEGY: WindowingStrategy = {
  windowFn: fixed(MINUTE),
  allowedLatenessMs: 5 * MINUTE,
  trigger: { earlyFirings: { processingTimeDelayMs: 30 * SECOND } },
  accumulationMode: 'ACCUMULATING',
};

describe('windowing: runTestStream input checks', () => {
  it('refuses a watermark step at the current watermark or behind it', () => {
    for (const second of [40, 39]) {
      assert.throws(
        () => run(STRATEGY, [watermark(at(40)), watermark(at(second))]),
        (error: unknown) =>
          error instanceof WindowingInputError &&
          error.message.includes(`watermark event ${at(second)}`) &&
          error.message.includes(`current watermark ${at(40)}`),
      );
    }
  });

  it('refuses a watermark step at the start watermark', () => {
    const runner = createReduceFnRunner(STRATEGY, collectFn);
    assert.throws(
      () => runTestStream(runner, [watermark(at(40))], { watermarkMs: at(40) }),
      WindowingInputError,
    );
    assert.equal(
      runTestStream(runner, [watermark(at(40) + 1)], { watermarkMs: at(40) }).panes.length,
      0,
    );
  });

  it('refuses a processing-time step of 0 ms or less', () => {
    for (const advanceByMs of [0, -SECOND]) {
      assert.throws(
        () => run(STRATEGY, [add(['k', 1, at(10)]), clock(advanceByMs)]),
        (error: unknown) =>
          error instanceof WindowingInputError &&
          error.message.includes(`advanceByMs must be >= 1, got ${advanceByMs}`),
      );
    }
  });

  it('still runs steps that move the clocks forward by 1 ms', () => {
    const result = run(STRATEGY, [
      add(['k', 1, at(10)]),
      clock(30 * SECOND - 1),
      clock(1),
      watermark(at(59.999)),
      watermark(at(60)),
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1], 'EARLY', 0, -1),
      p([0, 60], [1], 'ON_TIME', 1, 0, true), // no late firings: the on-time pane is the last
    ]);
  });
});
