// The dashboard's pure helpers: the per-minute axis and the bucketing of (minute, destination, count) rows.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bucketPerMinute, minuteStarts } from '../../../shared/dashboard/data';

const MINUTE_MS = 60_000;

describe('dashboard data: per-minute series', () => {
  it('covers the look-back with whole UTC minutes, first minute holding `since`', () => {
    const since = Date.UTC(2026, 11, 1, 18, 27, 40);
    const now = Date.UTC(2026, 11, 1, 19, 27, 40);
    const minutes = minuteStarts(since, now);
    assert.equal(minutes[0], Date.UTC(2026, 11, 1, 18, 27));
    assert.equal(minutes.at(-1), Date.UTC(2026, 11, 1, 19, 27));
    assert.equal(minutes.length, 61);
    assert.ok(minutes.every((m, i) => i === 0 || m - (minutes[i - 1] ?? 0) === MINUTE_MS));
  });

  it('puts each row in its minute, one series per destination', () => {
    const minutes = minuteStarts(0, 3 * MINUTE_MS);
    const series = bucketPerMinute(minutes, [
      { minuteMs: MINUTE_MS, key: 'Silver', n: 4 },
      { minuteMs: 3 * MINUTE_MS, key: 'Silver', n: 1 },
      { minuteMs: 0, key: 'quarantine: PARSE_JSON', n: 2 },
    ]);
    assert.deepEqual(series.get('Silver'), [0, 4, 0, 1]);
    assert.deepEqual(series.get('quarantine: PARSE_JSON'), [2, 0, 0, 0]);
  });

  it("keeps every row: a series' sum equals the rows counted, also for minutes outside the axis", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 120 }),
        fc.array(
          fc.record({
            minute: fc.integer({ min: -10, max: 140 }),
            key: fc.constantFrom('Silver', 'bad data', 'retry store'),
            n: fc.integer({ min: 1, max: 1000 }),
          }),
        ),
        (span, rows) => {
          const minutes = minuteStarts(0, span * MINUTE_MS);
          const series = bucketPerMinute(
            minutes,
            rows.map((r) => ({ minuteMs: r.minute * MINUTE_MS, key: r.key, n: r.n })),
          );
          for (const key of ['Silver', 'bad data', 'retry store']) {
            const expected = rows.filter((r) => r.key === key).reduce((s, r) => s + r.n, 0);
            const got = (series.get(key) ?? []).reduce((s, v) => s + v, 0);
            assert.equal(got, expected, key);
            if (series.has(key)) assert.equal(series.get(key)?.length, minutes.length);
          }
        },
      ),
    );
  });
});
