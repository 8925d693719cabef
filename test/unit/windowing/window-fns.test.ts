// Window assignment (fixed, sliding, sessions), session merging and window ids.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import {
  assignWindows,
  compareWindows,
  fixed,
  isMerging,
  maxTimestampMs,
  mergeOverlappingWindows,
  parseWindowId,
  sessions,
  sliding,
  windowId,
  WindowingConfigError,
  WindowingInputError,
} from '../../../shared/windowing';

describe('windowing: window functions', () => {
  it('assigns fixed windows on the offset grid, negative times included', () => {
    assert.deepEqual(assignWindows(fixed(60_000), 125_000), [{ startMs: 120_000, endMs: 180_000 }]);
    assert.deepEqual(assignWindows(fixed(60_000), 120_000), [{ startMs: 120_000, endMs: 180_000 }]);
    assert.deepEqual(assignWindows(fixed(60_000), 119_999), [{ startMs: 60_000, endMs: 120_000 }]);
    assert.deepEqual(assignWindows(fixed(60_000, 15_000), 10_000), [
      { startMs: -45_000, endMs: 15_000 },
    ]);
    assert.deepEqual(assignWindows(fixed(10), -1), [{ startMs: -10, endMs: 0 }]);
  });

  it('assigns every sliding window that contains the time, ordered by end', () => {
    assert.deepEqual(assignWindows(sliding(30, 10), 25), [
      { startMs: 0, endMs: 30 },
      { startMs: 10, endMs: 40 },
      { startMs: 20, endMs: 50 },
    ]);
    assert.deepEqual(assignWindows(sliding(10, 20), 15), [], 'a gap between hopping windows');
    assert.deepEqual(assignWindows(sliding(10, 20, 5), 15), []);
    assert.deepEqual(assignWindows(sliding(10, 20, 5), 14), [{ startMs: 5, endMs: 15 }]);
  });

  it('gives each element of a session window fn its proto-window [t, t + gap)', () => {
    assert.deepEqual(assignWindows(sessions(10), 7), [{ startMs: 7, endMs: 17 }]);
    assert.equal(isMerging(sessions(10)), true);
    assert.equal(isMerging(fixed(10)), false);
    assert.equal(isMerging(sliding(10, 5)), false);
  });

  it('places a time inside each assigned window (property)', () => {
    const windowFn = fc.oneof(
      fc
        .record({ size: fc.integer({ min: 1, max: 1000 }), off: fc.nat(999) })
        .map(({ size, off }) => fixed(size, off % size)),
      fc
        .record({
          size: fc.integer({ min: 1, max: 1000 }),
          period: fc.integer({ min: 1, max: 1000 }),
        })
        .map(({ size, period }) => sliding(size, period)),
      fc.integer({ min: 1, max: 1000 }).map((gap) => sessions(gap)),
    );
    fc.assert(
      fc.property(windowFn, fc.integer({ min: -1e12, max: 1e12 }), (fn, t) => {
        const windows = assignWindows(fn, t);
        for (const w of windows) assert.ok(w.startMs <= t && t <= maxTimestampMs(w));
        if (fn.kind === 'sliding' && fn.periodMs <= fn.sizeMs) {
          assert.ok(windows.length >= Math.floor(fn.sizeMs / fn.periodMs));
        } else if (fn.kind !== 'sliding') {
          assert.equal(windows.length, 1);
        }
        assert.deepEqual([...windows].sort(compareWindows), windows);
      }),
    );
  });

  it('merges strictly overlapping windows and keeps touching ones apart', () => {
    const merges = mergeOverlappingWindows([
      { startMs: 20, endMs: 30 },
      { startMs: 0, endMs: 10 },
      { startMs: 5, endMs: 15 },
      { startMs: 15, endMs: 20 },
      { startMs: 5, endMs: 15 },
    ]);
    assert.deepEqual(merges, [
      {
        result: { startMs: 0, endMs: 15 },
        members: [
          { startMs: 0, endMs: 10 },
          { startMs: 5, endMs: 15 },
        ],
      },
      { result: { startMs: 15, endMs: 20 }, members: [{ startMs: 15, endMs: 20 }] },
      { result: { startMs: 20, endMs: 30 }, members: [{ startMs: 20, endMs: 30 }] },
    ]);
  });

  it('merges into disjoint spans that cover every input, whatever the input order (property)', () => {
    const windows = fc.array(
      fc
        .record({ s: fc.integer({ min: 0, max: 100 }), len: fc.integer({ min: 1, max: 20 }) })
        .map(({ s, len }) => ({ startMs: s, endMs: s + len })),
      { maxLength: 20 },
    );
    fc.assert(
      fc.property(windows, fc.func(fc.integer()), (ws, order) => {
        const merges = mergeOverlappingWindows(ws);
        const shuffled = [...ws].sort((a, b) => order(a) - order(b) || compareWindows(a, b));
        assert.deepEqual(
          mergeOverlappingWindows(shuffled).map((m) => m.result),
          merges.map((m) => m.result),
        );
        for (let i = 1; i < merges.length; i++) {
          assert.ok((merges[i - 1]?.result.endMs ?? 0) <= (merges[i]?.result.startMs ?? 0));
        }
        for (const w of ws) {
          assert.ok(merges.some((m) => m.result.startMs <= w.startMs && w.endMs <= m.result.endMs));
        }
      }),
    );
  });

  it('round-trips window ids and rejects malformed ones', () => {
    const w = { startMs: 1_791_382_200_000, endMs: 1_791_382_260_000 };
    assert.equal(windowId(w), '1791382200000_1791382260000');
    assert.deepEqual(parseWindowId(windowId(w)), w);
    assert.deepEqual(parseWindowId('-10_0'), { startMs: -10, endMs: 0 });
    for (const bad of ['', '5_5', '7_3', 'a_b', '1_2_3', '1-2']) {
      assert.throws(() => parseWindowId(bad), WindowingInputError, bad);
    }
  });

  it('rejects bad window function parameters with a WindowingConfigError', () => {
    assert.throws(() => fixed(0), WindowingConfigError);
    assert.throws(() => fixed(10, 10), /windowFn\.offsetMs must be < sizeMs/);
    assert.throws(() => fixed(1.5), /windowFn\.sizeMs must be an integer/);
    assert.throws(() => sliding(10, 0), /windowFn\.periodMs must be >= 1/);
    assert.throws(() => sliding(10, 5, 5), /offsetMs must be < periodMs/);
    assert.throws(() => sessions(-1), /windowFn\.gapMs must be >= 1/);
  });
});
