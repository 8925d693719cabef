// Scenarios whose expected panes are what Apache Beam 2.77's Python DirectRunner emitted for the same
// TestStream (run by hand while building this module; see shared/windowing/README.md, "Checked against Beam").
import assert from 'node:assert/strict';

import { fixed, sessions, sliding, type WindowingStrategy } from '../../../shared/windowing';
import { add, at, clock, END, MINUTE, p, run, SECOND, summarize, watermark } from './helpers';

const LAB_TRIGGER: WindowingStrategy['trigger'] = {
  earlyFirings: { processingTimeDelayMs: 30 * SECOND },
  lateFirings: { elementCount: 1 },
};

function strategy(overrides: Partial<WindowingStrategy>): WindowingStrategy {
  return {
    windowFn: fixed(MINUTE),
    allowedLatenessMs: 5 * MINUTE,
    trigger: LAB_TRIGGER,
    accumulationMode: 'ACCUMULATING',
    ...overrides,
  };
}

describe('windowing: panes Beam emits (Python DirectRunner 2.77, TestStream)', () => {
  it('a window whose first element is already late gets LATE panes from index 0, no ON_TIME', () => {
    const result = run(strategy({}), [
      watermark(at(100)),
      add(['k', 1, at(10)]),
      add(['k', 2, at(11)]),
      END,
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1], 'LATE', 0, 0),
      p([0, 60], [1, 2], 'LATE', 1, 1),
    ]);
  });

  it('fires an empty ON_TIME pane after an early pane in DISCARDING mode', () => {
    const result = run(strategy({ accumulationMode: 'DISCARDING' }), [
      add(['k', 1, at(10)]),
      clock(30 * SECOND),
      watermark(at(60)),
      END,
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1], 'EARLY', 0, -1),
      p([0, 60], [], 'ON_TIME', 1, 0),
    ]);
  });

  it('counts early elements per bundle and finishes with the ON_TIME pane without late firings', () => {
    const result = run(
      strategy({
        trigger: { earlyFirings: { elementCount: 2 } },
        accumulationMode: 'DISCARDING',
      }),
      [
        add(['k', 1, at(10)]),
        add(['k', 2, at(11)]),
        add(['k', 3, at(12)], ['k', 4, at(13)], ['k', 5, at(14)]),
        add(['k', 6, at(15)]),
        watermark(at(60)),
        END,
      ],
    );
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1, 2], 'EARLY', 0, -1),
      p([0, 60], [3, 4, 5], 'EARLY', 1, -1),
      p([0, 60], [6], 'ON_TIME', 2, 0, true),
    ]);
  });

  it('delays early firings from the first element of the pane, not the last', () => {
    const result = run(strategy({ accumulationMode: 'DISCARDING' }), [
      add(['k', 1, at(10)]),
      clock(20 * SECOND),
      add(['k', 2, at(11)]),
      clock(10 * SECOND), // 30 s after element 1
      add(['k', 3, at(12)]),
      clock(20 * SECOND),
      clock(20 * SECOND), // 30 s after element 3
      END,
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1, 2], 'EARLY', 0, -1),
      p([0, 60], [3], 'EARLY', 1, -1),
      p([0, 60], [], 'ON_TIME', 2, 0),
    ]);
  });

  it('closes the window with a last ON_TIME pane when no late firings are configured', () => {
    const result = run(
      strategy({ trigger: { earlyFirings: { processingTimeDelayMs: 30 * SECOND } } }),
      [add(['k', 1, at(10)]), watermark(at(60)), add(['k', 2, at(11)]), watermark(at(400)), END],
    );
    assert.deepEqual(result.panes.map(summarize), [p([0, 60], [1], 'ON_TIME', 0, 0, true)]);
    // Beam drops element 2 silently (droppedDueToClosedWindow counter); here it is reported.
    assert.deepEqual(
      result.dropped.map((d) => [d.element.value, d.reason]),
      [[2, 'CLOSED_WINDOW']],
    );
  });

  it('fires one LATE pane per late bundle, per key', () => {
    const result = run(strategy({ accumulationMode: 'DISCARDING' }), [
      add(['k', 1, at(10)]),
      watermark(at(60)),
      add(['k', 2, at(11)], ['k', 3, at(12)]),
      add(['j', 9, at(12)]),
      END,
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1], 'ON_TIME', 0, 0),
      p([0, 60], [2, 3], 'LATE', 1, 1),
      p([0, 60], [9], 'LATE', 0, 0, false, 'j'),
    ]);
  });

  it('assigns sliding windows and fires each on time', () => {
    const result = run(
      strategy({
        windowFn: sliding(30 * SECOND, 10 * SECOND),
        allowedLatenessMs: 0,
        trigger: {},
      }),
      [add(['k', 1, at(10)], ['k', 2, at(25)]), watermark(at(60)), END],
    );
    assert.deepEqual(result.panes.map(summarize), [
      p([-10, 20], [1], 'ON_TIME', 0, 0, true),
      p([0, 30], [1, 2], 'ON_TIME', 0, 0, true),
      p([10, 40], [1, 2], 'ON_TIME', 0, 0, true),
      p([20, 50], [2], 'ON_TIME', 0, 0, true),
    ]);
  });

  it('merges sessions, restarting pane indices for the merged window', () => {
    const result = run(strategy({ windowFn: sessions(10 * SECOND) }), [
      add(['k', 1, at(10)], ['k', 2, at(15)]),
      add(['k', 3, at(40)]),
      clock(30 * SECOND),
      add(['k', 4, at(22)]), // [22, 32) overlaps [10, 25): merged into [10, 32)
      clock(30 * SECOND),
      watermark(at(100)),
      END,
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([10, 25], [1, 2], 'EARLY', 0, -1),
      p([40, 50], [3], 'EARLY', 0, -1),
      p([10, 32], [1, 2, 4], 'EARLY', 0, -1),
      p([10, 32], [1, 2, 4], 'ON_TIME', 1, 0),
      p([40, 50], [3], 'ON_TIME', 1, 0),
    ]);
  });

  it('keeps a late session late when it grows within the watermark', () => {
    const result = run(strategy({ windowFn: sessions(10 * SECOND) }), [
      add(['k', 1, at(10)]),
      watermark(at(30)),
      add(['k', 2, at(15)]), // [15, 25) merges with the fired [10, 20): [10, 25), end already passed
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([10, 20], [1], 'ON_TIME', 0, 0),
      p([10, 25], [1, 2], 'LATE', 0, 0),
    ]);
  });
});
