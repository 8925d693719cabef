// updateDelayMs: waiting as it says never puts more than the allowed updates in any window.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TABLE_UPDATE_RATE, updateDelayMs } from '../../../shared/drift';

describe('updateDelayMs', () => {
  it("is BigQuery's 5 table updates per 10 s by default", () => {
    assert.deepEqual(TABLE_UPDATE_RATE, { updates: 5, windowMs: 10_000 });
  });

  it('lets updates through until the window is full, then waits for its oldest to leave', () => {
    assert.equal(updateDelayMs([], 1_000), 0);
    assert.equal(updateDelayMs([0, 1, 2, 3], 5), 0);
    assert.equal(updateDelayMs([0, 1, 2, 3, 4], 5), 9_995);
    assert.equal(updateDelayMs([4, 3, 2, 1, 0], 10_000), 0, 'any order');
    assert.equal(updateDelayMs([0, 1, 2, 3, 4, 10_000], 10_000), 1);
  });

  it('paced updates never put more than `updates` in any window of `windowMs`', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 20_000 }),
        fc.array(fc.integer({ min: 0, max: 15_000 }), { minLength: 1, maxLength: 40 }),
        (updates, windowMs, gaps) => {
          const rate = { updates, windowMs };
          const issued: number[] = [];
          let now = 0;
          for (const gap of gaps) {
            now += gap;
            now += updateDelayMs(issued, now, rate);
            issued.push(now);
          }
          for (const start of issued) {
            const inWindow = issued.filter((t) => t >= start && t < start + windowMs).length;
            assert.ok(
              inWindow <= updates,
              `${inWindow} updates in [${start}, ${start + windowMs})`,
            );
          }
        },
      ),
    );
  });

  it('refuses a rate that is not two positive integers', () => {
    assert.throws(() => updateDelayMs([], 0, { updates: 0, windowMs: 10 }), RangeError);
    assert.throws(() => updateDelayMs([], 0, { updates: 1, windowMs: 0.5 }), RangeError);
  });
});
