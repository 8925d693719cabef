// The lab's windowing (1-minute fixed windows, 5 min allowed lateness, early firings 30 s after the first
// element, a late firing per late element) scripted step by step: EARLY, ON_TIME, LATE panes and a drop.
import assert from 'node:assert/strict';

import { MIN_WATERMARK_MS } from '../../../shared/windowing';
import { add, at, clock, END, MINUTE, p, run, SECOND, summarize, T0, watermark } from './helpers';
import { labStrategy } from './lab-config';

// Elements 1..7 of key "k" in window [14:10:00, 14:11:00); processing time starts at T0 + 25 s.
const SCRIPT = [
  add(['k', 1, at(10)], ['k', 2, at(20)]),
  clock(30 * SECOND), // 30 s after the pane's first element: EARLY
  add(['k', 3, at(30)]),
  watermark(at(60)), // watermark reaches the end of the window: ON_TIME
  add(['k', 4, at(40)]), // late, within allowed lateness: LATE
  add(['k', 5, at(45)]),
  watermark(at(60) + 5 * MINUTE - 1), // 1 ms before end + allowed lateness: still open
  add(['k', 6, at(50)]),
  watermark(at(60) + 5 * MINUTE), // end + allowed lateness: the window is garbage-collected
  add(['k', 7, at(55)]), // too late: dropped, counted
  END,
];

describe('windowing: the lab scenario', () => {
  it('emits EARLY, ON_TIME and LATE accumulating panes and drops the too-late element', () => {
    const result = run(labStrategy(), SCRIPT, T0 + 25 * SECOND);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1, 2], 'EARLY', 0, -1),
      p([0, 60], [1, 2, 3], 'ON_TIME', 1, 0),
      p([0, 60], [1, 2, 3, 4], 'LATE', 2, 1),
      p([0, 60], [1, 2, 3, 4, 5], 'LATE', 3, 2),
      p([0, 60], [1, 2, 3, 4, 5, 6], 'LATE', 4, 3),
    ]);
    assert.deepEqual(result.dropped, [
      {
        element: { key: 'k', value: 7, timestampMs: at(55) },
        window: { startMs: T0, endMs: at(60) },
        reason: 'EXPIRED_WINDOW',
      },
    ]);
    assert.equal(result.states.get('k')?.windows.length, 0, 'state is garbage-collected');
  });

  it('stamps each pane with the processing time and watermark of its firing', () => {
    const [early, onTime, late] = run(labStrategy(), SCRIPT, T0 + 25 * SECOND).panes;
    assert.deepEqual(
      [early, onTime, late].map((pane) => [pane?.firedAtProcessingTimeMs, pane?.watermarkMs]),
      [
        [T0 + 55 * SECOND, MIN_WATERMARK_MS],
        [T0 + 55 * SECOND, at(60)],
        [T0 + 55 * SECOND, at(60)],
      ],
    );
  });

  it('emits only the new elements in DISCARDING mode, with the same pane info', () => {
    const result = run(labStrategy({ accumulationMode: 'DISCARDING' }), SCRIPT, T0 + 25 * SECOND);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1, 2], 'EARLY', 0, -1),
      p([0, 60], [3], 'ON_TIME', 1, 0),
      p([0, 60], [4], 'LATE', 2, 1),
      p([0, 60], [5], 'LATE', 3, 2),
      p([0, 60], [6], 'LATE', 4, 3),
    ]);
    assert.equal(result.dropped.length, 1);
  });

  it('keeps windows of one key independent and fires them in window order', () => {
    const result = run(labStrategy(), [
      add(['k', 2, at(70)], ['k', 1, at(10)]),
      watermark(at(120)),
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1], 'ON_TIME', 0, 0),
      p([60, 120], [2], 'ON_TIME', 0, 0),
    ]);
  });
  it('fires due timers of all windows in timestamp order when the watermark jumps', () => {
    const result = run({ ...labStrategy(), trigger: { lateFirings: { elementCount: 2 } } }, [
      add(['k', 1, at(10)]),
      watermark(at(60)),
      add(['k', 2, at(11)]), // pending late data in [0, 60)
      add(['k', 3, at(70)]),
      watermark(at(400)), // end of [60, 120) at 119.999 s comes before GC of [0, 60) at 359.999 s
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1], 'ON_TIME', 0, 0),
      p([60, 120], [3], 'ON_TIME', 0, 0),
      p([0, 60], [1, 2], 'LATE', 1, 1, true),
    ]);
  });
});
