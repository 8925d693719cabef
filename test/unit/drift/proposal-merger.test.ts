// ProposalMerger: concurrent proposals for one change become few store transactions and one merged change.
import assert from 'node:assert/strict';
import { ProposalMerger } from '../../../shared/drift';
import { proposeFields, schemaWindowOf } from '../../../shared/schema';
import { MemoryDriftStore } from '../../support/memory-drift-store';

const NOW = Date.UTC(2026, 9, 7, 14, 10, 0);

describe('ProposalMerger', () => {
  it('merges 200 concurrent proposals over 3 fields with a handful of store calls', async () => {
    const store = new MemoryDriftStore();
    const merger = new ProposalMerger(store, 3, 200, () => NOW);
    const window = schemaWindowOf(NOW, 3);
    const fields = ['promo_code', 'loyalty_points', 'seat_pref'];
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        merger.merge(
          't',
          window,
          proposeFields({ [fields[i % 3] ?? '']: i % 3 === 0 ? 'x' : i }).proposed,
        ),
      ),
    );
    assert.ok(results.every((r) => r.windowId === window.id));
    assert.ok(store.calls.mergeProposal <= 3, `${store.calls.mergeProposal} store calls`);
    const change = store.table('t').changes.get(window.id);
    assert.deepEqual([...(change?.proposed.keys() ?? [])].sort(), [...fields].sort());
    // Already merged: no store call at all.
    const before = store.calls.mergeProposal;
    await merger.merge('t', window, proposeFields({ loyalty_points: 1 }).proposed);
    assert.equal(store.calls.mergeProposal, before);
  });

  it('goes to the store again for a widening, and passes store errors to every waiter', async () => {
    const store = new MemoryDriftStore();
    const merger = new ProposalMerger(store, 3, 200, () => NOW);
    const window = schemaWindowOf(NOW, 3);
    await merger.merge('t', window, proposeFields({ n: 1 }).proposed);
    await merger.merge('t', window, proposeFields({ n: 1.5 }).proposed);
    assert.deepEqual(store.table('t').changes.get(window.id)?.proposed.get('n'), {
      ok: true,
      type: 'FLOAT64',
    });
    store.mergeProposal = () => Promise.reject(new Error('down'));
    const outcomes = await Promise.allSettled([
      merger.merge('t', window, proposeFields({ a_1: 'x' }).proposed),
      merger.merge('t', window, proposeFields({ b_1: 'x' }).proposed),
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['rejected', 'rejected'],
    );
  });

  it('moves a proposal for an already swept window to the next window', async () => {
    const store = new MemoryDriftStore();
    const window = schemaWindowOf(NOW, 3);
    await store.mergeProposal({
      tableKey: 't',
      window,
      windowMinutes: 3,
      proposed: proposeFields({ a_1: 1 }).proposed,
      maxFields: 200,
      nowMs: NOW,
    });
    const state = store.table('t').changes.get(window.id);
    if (state) state.status = 'applied';
    const merger = new ProposalMerger(store, 3, 200, () => NOW);
    const result = await merger.merge('t', window, proposeFields({ b_1: 1 }).proposed);
    assert.equal(result.windowId, schemaWindowOf(window.endMs, 3).id);
  });
});
