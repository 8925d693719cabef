// Where Beam's Java runner core and the Python DirectRunner disagree, this core follows Java (the semantics
// Dataflow runs); each case names the Java source and what Python 2.77 does (README.md, "Divergences").
import assert from 'node:assert/strict';

import { sessions } from '../../../shared/windowing';
import { add, at, clock, END, MINUTE, p, run, SECOND, summarize, watermark } from './helpers';
import { labStrategy } from './lab-config';

describe('windowing: Java semantics where the Python DirectRunner differs', () => {
  it('drops an element once end + allowed lateness <= watermark (LateDataUtils; Python keeps it at equality)', () => {
    const edge = at(60) + 5 * MINUTE;
    const kept = run(labStrategy(), [watermark(edge - 1), add(['k', 1, at(10)])]);
    const dropped = run(labStrategy(), [watermark(edge), add(['k', 1, at(10)])]);
    assert.equal(kept.dropped.length, 0);
    assert.deepEqual(kept.panes.map(summarize), [p([0, 60], [1], 'LATE', 0, 0)]);
    assert.deepEqual(
      dropped.dropped.map((d) => d.reason),
      ['EXPIRED_WINDOW'],
    );
    assert.equal(dropped.panes.length, 0);
  });

  it('makes the ON_TIME pane the last one when allowed lateness is 0 (end-of-window timer = GC timer)', () => {
    const result = run(labStrategy({ allowedLatenessMs: 0 }), [
      add(['k', 1, at(10)]),
      watermark(at(60)),
      add(['k', 2, at(11)]), // Python emits a LATE pane for it; Java drops it
      END,
    ]);
    assert.deepEqual(result.panes.map(summarize), [p([0, 60], [1], 'ON_TIME', 0, 0, true)]);
    assert.deepEqual(
      result.dropped.map((d) => d.reason),
      ['EXPIRED_WINDOW'],
    );
    assert.equal(result.states.get('k')?.windows.length, 0);
  });

  it('emits pending late data at garbage collection as the last pane (Python never emits it and stalls)', () => {
    const result = run(labStrategy({ trigger: { lateFirings: { elementCount: 2 } } }), [
      add(['k', 1, at(10)]),
      watermark(at(60)),
      add(['k', 2, at(11)]), // one late element: below the late count of 2
      watermark(at(400)),
    ]);
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1], 'ON_TIME', 0, 0),
      p([0, 60], [1, 2], 'LATE', 1, 1, true),
    ]);
  });

  it('emits nothing at garbage collection when no late data is pending (ClosingBehavior.FIRE_IF_NON_EMPTY)', () => {
    const result = run(labStrategy(), [
      add(['k', 1, at(10)]),
      watermark(at(60)),
      watermark(at(400)),
    ]);
    assert.deepEqual(result.panes.map(summarize), [p([0, 60], [1], 'ON_TIME', 0, 0)]);
    assert.equal(result.states.get('k')?.windows.length, 0);
  });

  it('labels processing-time late firings LATE and flushes them at GC', () => {
    const result = run(
      labStrategy({ trigger: { lateFirings: { processingTimeDelayMs: 10 * SECOND } } }),
      [
        add(['k', 1, at(10)]),
        watermark(at(60)),
        add(['k', 2, at(11)]),
        clock(10 * SECOND), // 10 s after the first late element: LATE
        add(['k', 3, at(12)]),
        watermark(at(400)), // GC before its delay: flushed as the last pane
      ],
    );
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1], 'ON_TIME', 0, 0),
      p([0, 60], [1, 2], 'LATE', 1, 1),
      p([0, 60], [1, 2, 3], 'LATE', 2, 2, true),
    ]);
  });

  it('resets both early sub-triggers after any early firing (AfterFirst; Python resets only on the count)', () => {
    const result = run(
      labStrategy({
        trigger: {
          earlyFirings: { processingTimeDelayMs: 30 * SECOND, elementCount: 3 },
          lateFirings: { elementCount: 1 },
        },
        accumulationMode: 'DISCARDING',
      }),
      [
        add(['k', 1, at(10)]),
        clock(30 * SECOND),
        add(['k', 2, at(11)]),
        clock(30 * SECOND),
        add(['k', 3, at(12)]),
        add(['k', 4, at(13)]),
        clock(30 * SECOND),
        watermark(at(60)),
      ],
    );
    // Python 2.77 emits [1], [2, 3], [4], [] instead.
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 60], [1], 'EARLY', 0, -1),
      p([0, 60], [2], 'EARLY', 1, -1),
      p([0, 60], [3, 4], 'EARLY', 2, -1),
      p([0, 60], [], 'ON_TIME', 3, 0),
    ]);
  });

  it('puts a late session back in the early phase when it grows past the watermark (AfterWatermark onMerge)', () => {
    const result = run(labStrategy({ windowFn: sessions(10 * SECOND) }), [
      add(['k', 1, at(10)]),
      watermark(at(30)),
      add(['k', 2, at(15)]), // [10, 25): still behind the watermark, stays late
      add(['k', 3, at(22)]), // [10, 32): end not reached, early again
      clock(30 * SECOND),
      watermark(at(40)),
    ]);
    // Python 2.77 stays late: it emits [1, 2, 3] at once labelled EARLY, then never an ON_TIME pane.
    assert.deepEqual(result.panes.map(summarize), [
      p([10, 20], [1], 'ON_TIME', 0, 0),
      p([10, 25], [1, 2], 'LATE', 0, 0),
      p([10, 32], [1, 2, 3], 'EARLY', 0, -1),
      p([10, 32], [1, 2, 3], 'ON_TIME', 1, 0),
    ]);
  });
  it('does not merge a new session into a garbage-collected one (Python has no GC and merges it)', () => {
    const result = run(
      labStrategy({
        windowFn: sessions(30 * SECOND),
        allowedLatenessMs: 30 * SECOND,
        trigger: { lateFirings: { elementCount: 1 } },
      }),
      [
        add(['k', 1, at(141)]),
        watermark(at(203.5)), // [141, 171) fires on time and is collected (170.999 + 30 < 203.5)
        add(['k', 2, at(148)]), // [148, 178) is still within allowed lateness
      ],
    );
    // Python 2.77 emits the second pane for [141, 178) instead.
    assert.deepEqual(result.panes.map(summarize), [
      p([141, 171], [1], 'ON_TIME', 0, 0),
      p([148, 178], [2], 'LATE', 0, 0),
    ]);
  });
  it('merges the early processing-time deadlines of merged sessions and emits no empty EARLY pane (divergence 11)', () => {
    const result = run(
      labStrategy({
        windowFn: sessions(10 * SECOND),
        trigger: {
          earlyFirings: { processingTimeDelayMs: 5 * SECOND },
          lateFirings: { elementCount: 1 },
        },
        accumulationMode: 'DISCARDING',
      }),
      [
        add(['k', 1, at(0)], ['k', 2, at(15)]), // [0, 10) and [15, 25), each with a deadline at +5 s
        add(['k', 3, at(8)]), // bridges them: [0, 25)
        clock(5 * SECOND),
        clock(5 * SECOND),
        watermark(at(100.5)),
      ],
    );
    // Python 2.77 keeps both proto-windows' timers and emits an empty EARLY pane (index 1) for the second one
    // (hand/x11 in the differential test shows it against Beam).
    assert.deepEqual(result.panes.map(summarize), [
      p([0, 25], [1, 2, 3], 'EARLY', 0, -1),
      p([0, 25], [], 'ON_TIME', 1, 0),
    ]);
  });
  it('keeps a closed session out of merging (Java removes finished windows from the active set)', () => {
    const result = run(
      labStrategy({ windowFn: sessions(10 * SECOND), trigger: {} }), // no late firings: on time closes it
      [add(['k', 1, at(10)]), watermark(at(30)), add(['k', 2, at(15)])],
    );
    // Python 2.77 merges its tombstone with [15, 25) and drops element 2.
    assert.deepEqual(result.panes.map(summarize), [
      p([10, 20], [1], 'ON_TIME', 0, 0, true),
      p([15, 25], [2], 'LATE', 0, 0, true),
    ]);
  });
});
