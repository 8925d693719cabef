// Merging proposed field sets: the widening lattice, per-field conflicts, and order independence (properties).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  loadProposedFields,
  mergeAllFieldSets,
  mergeFieldSets,
  mergeFieldSetsCapped,
  proposalOf,
  proposeFields,
  storeProposedFields,
  type BqType,
  type ProposedFields,
} from '../../../shared/schema';
import { entriesOf, fields, proposedArb } from './fixtures';

const EMPTY: ProposedFields = new Map();

describe('schema/proposals', () => {
  describe('mergeFieldSets', () => {
    it('widens along INT64 → NUMERIC → BIGNUMERIC → FLOAT64', () => {
      const cases: [BqType, BqType, BqType][] = [
        ['INT64', 'FLOAT64', 'FLOAT64'],
        ['INT64', 'NUMERIC', 'NUMERIC'],
        ['NUMERIC', 'BIGNUMERIC', 'BIGNUMERIC'],
        ['BIGNUMERIC', 'FLOAT64', 'FLOAT64'],
        ['INT64', 'INT64', 'INT64'],
      ];
      for (const [a, b, want] of cases) {
        const merged = mergeFieldSets(fields(['n', a]), fields(['n', b]));
        assert.deepEqual(merged.get('n'), { ok: true, type: want }, `${a} + ${b}`);
      }
    });

    it('keeps a conflict on its field and merges the other fields on', () => {
      const merged = mergeFieldSets(
        fields(['promo', 'STRING'], ['seat', 'INT64']),
        fields(['promo', 'INT64'], ['seat', 'FLOAT64'], ['meal', 'BOOL']),
      );
      const promo = merged.get('promo');
      assert.ok(promo && !promo.ok);
      assert.deepEqual(promo.types, ['STRING', 'INT64']);
      assert.match(promo.message, /conflicting types STRING vs INT64/);
      assert.deepEqual(merged.get('seat'), { ok: true, type: 'FLOAT64' });
      assert.deepEqual(merged.get('meal'), { ok: true, type: 'BOOL' });
      assert.deepEqual([...merged.keys()], ['meal', 'promo', 'seat']);
    });

    it('keeps only the widest conflicting types, so the order of arrival does not matter', () => {
      const a = mergeAllFieldSets([
        fields(['n', 'INT64']),
        fields(['n', 'FLOAT64']),
        fields(['n', 'STRING']),
      ]);
      const b = mergeAllFieldSets([
        fields(['n', 'STRING']),
        fields(['n', 'INT64']),
        fields(['n', 'FLOAT64']),
      ]);
      assert.deepEqual(a.get('n'), b.get('n'));
      assert.deepEqual(a.get('n'), proposalOf(['FLOAT64', 'STRING']));
    });

    it('treats JSON as a type of its own, not a catch-all', () => {
      const merged = mergeFieldSets(fields(['meta', 'JSON']), fields(['meta', 'STRING']));
      assert.equal(merged.get('meta')?.ok, false);
    });

    it('is commutative', () => {
      fc.assert(
        fc.property(proposedArb, proposedArb, (a, b) => {
          assert.deepEqual(entriesOf(mergeFieldSets(a, b)), entriesOf(mergeFieldSets(b, a)));
        }),
      );
    });

    it('is associative', () => {
      fc.assert(
        fc.property(proposedArb, proposedArb, proposedArb, (a, b, c) => {
          assert.deepEqual(
            entriesOf(mergeFieldSets(mergeFieldSets(a, b), c)),
            entriesOf(mergeFieldSets(a, mergeFieldSets(b, c))),
          );
        }),
      );
    });

    it('is idempotent (a redelivered proposal changes nothing)', () => {
      fc.assert(
        fc.property(proposedArb, proposedArb, (a, b) => {
          const ab = mergeFieldSets(a, b);
          assert.deepEqual(entriesOf(mergeFieldSets(ab, b)), entriesOf(ab));
          assert.deepEqual(entriesOf(mergeFieldSets(a, a)), entriesOf(mergeFieldSets(a, EMPTY)));
        }),
      );
    });

    it('gives the same change for concurrent proposals in any order, with duplicates', () => {
      const arb = fc
        .array(proposedArb, { minLength: 1, maxLength: 6 })
        .chain((sets) =>
          fc.tuple(
            fc.constant(sets),
            fc.shuffledSubarray(sets, { minLength: sets.length, maxLength: sets.length }),
            fc.subarray(sets),
          ),
        );
      fc.assert(
        fc.property(arb, ([sets, shuffled, redelivered]) => {
          const want = entriesOf(mergeAllFieldSets(sets));
          assert.deepEqual(entriesOf(mergeAllFieldSets([...shuffled, ...redelivered])), want);
        }),
      );
    });

    it('handles a __proto__ field as an ordinary field', () => {
      const extra = JSON.parse('{"__proto__": 1, "constructor": "x"}') as Record<string, unknown>;
      const merged = mergeFieldSets(
        proposeFields(extra).proposed,
        fields(['__proto__', 'FLOAT64']),
      );
      assert.deepEqual(merged.get('__proto__'), { ok: true, type: 'FLOAT64' });
      assert.deepEqual(merged.get('constructor'), { ok: true, type: 'STRING' });
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  });

  describe('mergeFieldSetsCapped', () => {
    it('admits new names in code-unit order up to the cap and always merges names already held', () => {
      const held = fields(['b', 'INT64']);
      const merged = mergeFieldSetsCapped(
        held,
        fields(['a', 'STRING'], ['b', 'FLOAT64'], ['c', 'BOOL'], ['d', 'BOOL']),
        3,
      );
      assert.deepEqual([...merged.keys()], ['a', 'b', 'c']);
      assert.deepEqual(merged.get('b'), { ok: true, type: 'FLOAT64' });
      const full = mergeFieldSetsCapped(merged, fields(['b', 'FLOAT64'], ['e', 'BOOL']), 3);
      assert.deepEqual([...full.keys()], ['a', 'b', 'c'], 'no room: only held names merge');
    });
  });

  describe('proposeFields', () => {
    it('proposes a type per typed field, nothing for null, and reports untyped values', () => {
      const { proposed, uninferable } = proposeFields({
        seat: '12A',
        bags: 2,
        weight: 23.5,
        vip: true,
        meta: { a: 1 },
        legs: [1, 2],
        nothing: null,
        broken: undefined,
      });
      assert.deepEqual(
        [...proposed].map(([n, p]) => [n, p.ok && p.type]),
        [
          ['bags', 'INT64'],
          ['legs', 'JSON'],
          ['meta', 'JSON'],
          ['seat', 'STRING'],
          ['vip', 'BOOL'],
          ['weight', 'FLOAT64'],
        ],
      );
      assert.deepEqual(
        uninferable.map((u) => [u.field, u.code]),
        [['broken', 'UNSUPPORTED_VALUE']],
      );
    });
  });

  describe('storeProposedFields / loadProposedFields', () => {
    it('round-trips any proposed field set', () => {
      fc.assert(
        fc.property(proposedArb, (p) => {
          const stored = JSON.parse(JSON.stringify(storeProposedFields(p))) as unknown;
          const loaded = loadProposedFields(stored);
          assert.ok(loaded.ok);
          assert.deepEqual(entriesOf(loaded.value), entriesOf(mergeFieldSets(p, EMPTY)));
        }),
      );
    });

    it('rejects a malformed stored form instead of guessing', () => {
      assert.equal(loadProposedFields([{ name: 'x', types: ['INTEGER'] }]).ok, false);
      assert.equal(loadProposedFields([{ name: 'x', types: [] }]).ok, false);
      assert.equal(loadProposedFields({ x: ['INT64'] }).ok, false);
    });
  });
});
