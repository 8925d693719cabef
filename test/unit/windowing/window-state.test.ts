// Shardable window contributions: N shards merged at firing time equal one unsharded contribution.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import {
  addToContribution,
  emptyContribution,
  mergeContributions,
  type WindowContribution,
} from '../../../shared/windowing';
import { countCombineFn, sumCombineFn } from '../../support/test-stream';
import { collectFn } from './helpers';

describe('windowing: shardable window contributions', () => {
  it('counts elements and remembers the first arrival of the pane', () => {
    let c = emptyContribution(countCombineFn);
    assert.deepEqual(c, { accumulator: 0, elementsInPane: 0, firstElementInPaneAtMs: null });
    c = addToContribution(countCombineFn, c, 'x', 500);
    c = addToContribution(countCombineFn, c, 'y', 200);
    assert.deepEqual(c, { accumulator: 2, elementsInPane: 2, firstElementInPaneAtMs: 500 });
  });

  it('merges N shards into what one unsharded record would hold, in any shard order (property)', () => {
    const inputs = fc.array(
      fc.record({
        value: fc.integer({ min: -1000, max: 1000 }),
        arrivedAtMs: fc.nat(10_000),
        shard: fc.nat(7),
      }),
      { maxLength: 40 },
    );
    fc.assert(
      fc.property(inputs, fc.integer({ min: 1, max: 8 }), (unordered, shards) => {
        // Elements reach the store in processing-time order.
        const elements = [...unordered].sort((a, b) => a.arrivedAtMs - b.arrivedAtMs);
        let single = emptyContribution(sumCombineFn);
        const parts: WindowContribution<number>[] = Array.from({ length: shards }, () =>
          emptyContribution(sumCombineFn),
        );
        for (const e of elements) {
          single = addToContribution(sumCombineFn, single, e.value, e.arrivedAtMs);
          const i = e.shard % shards;
          parts[i] = addToContribution(
            sumCombineFn,
            parts[i] ?? emptyContribution(sumCombineFn),
            e.value,
            e.arrivedAtMs,
          );
        }
        const merged = mergeContributions(sumCombineFn, parts);
        assert.equal(merged.accumulator, single.accumulator);
        assert.equal(merged.elementsInPane, single.elementsInPane);
        assert.equal(merged.firstElementInPaneAtMs, single.firstElementInPaneAtMs);
        assert.deepEqual(mergeContributions(sumCombineFn, [...parts].reverse()), merged);
      }),
    );
  });

  it('merges list accumulators without mutating the parts', () => {
    const a = addToContribution(collectFn, emptyContribution(collectFn), 3, 10);
    const b = addToContribution(collectFn, emptyContribution(collectFn), 1, 5);
    const snapshot = JSON.stringify([a, b]);
    assert.deepEqual(mergeContributions(collectFn, [a, b]), {
      accumulator: [1, 3],
      elementsInPane: 2,
      firstElementInPaneAtMs: 5,
    });
    assert.equal(JSON.stringify([a, b]), snapshot);
    assert.deepEqual(mergeContributions(collectFn, []), emptyContribution(collectFn));
  });
});
