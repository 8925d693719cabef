// FirestoreDriftStore against the Firestore emulator: atomic merges under contention, caps, leases and fences.
import assert from 'node:assert/strict';
import {
  FirestoreDriftStore,
  ProposalMerger,
  LeaseLostError,
  retryRowId,
  type RetryRow,
} from '../../../shared/drift';
import { proposeFields, schemaWindowOf } from '../../../shared/schema';
import { addColumnUpdate } from '../../support/drift-fixtures';
import { requireStack, runTag, stackClients } from '../../support/drift-stack';

const NOW = Date.UTC(2026, 9, 7, 14, 10, 0);

function row(i: number, processedMs = NOW): RetryRow {
  return {
    id: retryRowId(`e-${i}`),
    targetTable: 't',
    insertId: `e-${i}`,
    sourceMessageId: `m-${i}`,
    processedTimestampMs: processedMs,
    rowJson: '{}',
    extraFieldsJson: '{}',
    windowId: 'w',
    errors: [{ field: 'x', code: 'NO_COLUMN', reason: 'r' }],
    errorCount: 1,
    retryCount: 0,
    lastError: 'NO_COLUMN: r',
    lastAttemptMs: null,
  };
}

describe('integration: FirestoreDriftStore on the Firestore emulator', function () {
  this.timeout(60_000);
  const { firestore } = stackClients();
  const root = `itDrift${runTag()}`;
  const store = new FirestoreDriftStore(firestore, root);
  const window = schemaWindowOf(NOW, 3);

  /** Merges `values`' proposed fields into (`key`, `window`) at NOW, with 3-minute windows. */
  const propose = (key: string, values: Record<string, unknown>, maxFields = 200) =>
    store.mergeProposal({
      tableKey: key,
      window,
      windowMinutes: 3,
      proposed: proposeFields(values).proposed,
      maxFields,
      nowMs: NOW,
    });

  before(requireStack);

  it('merges concurrent proposals from several instances into one change holding the union', async () => {
    const key = 'p.d.merge';
    const fields = ['promo_code', 'loyalty_points', 'seat_pref'];
    // Four instances (one merger each) with 50 events each, all at once: the production pattern.
    const mergers = Array.from({ length: 4 }, () => new ProposalMerger(store, 3, 200, () => NOW));
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        (mergers[i % 4] as ProposalMerger).merge(
          key,
          window,
          proposeFields({ [fields[i % 3] ?? '']: i }).proposed,
        ),
      ),
    );
    const [change, ...more] = await store.pendingChanges(key);
    assert.equal(more.length, 0);
    assert.equal(change?.windowId, window.id);
    assert.deepEqual(
      [...(change?.proposed.keys() ?? [])],
      ['loyalty_points', 'promo_code', 'seat_pref'],
    );
  });

  it('keeps every field when 3 different proposals race on the same change (no lost update)', async () => {
    const key = 'p.d.race';
    const names = Array.from({ length: 3 }, (_, i) => `field_${i}`);
    await Promise.all(names.map((name) => propose(key, { [name]: 1 })));
    const [change] = await store.pendingChanges(key);
    assert.deepEqual([...(change?.proposed.keys() ?? [])], names);
  });

  it('caps the names a change holds and reports which were accepted', async () => {
    const key = 'p.d.cap';
    const first = await propose(key, { a: 1, b: 1 }, 3);
    assert.deepEqual([...first.accepted].sort(), ['a', 'b']);
    const second = await propose(key, { c: 1, d: 1, a: 1.5 }, 3);
    assert.deepEqual([...second.accepted].sort(), ['a', 'b', 'c']);
    const [change] = await store.pendingChanges(key);
    assert.deepEqual(change?.proposed.get('a'), { ok: true, type: 'FLOAT64' });
  });

  it('stores a row once per insertId (a redelivery finds it) and lists rows oldest first', async () => {
    const key = 'p.d.rows';
    assert.equal(await store.putRow(key, row(2, NOW + 5)), 'created');
    assert.equal(await store.putRow(key, row(1, NOW)), 'created');
    assert.equal(
      await store.putRow(key, { ...row(1, NOW + 99), sourceMessageId: 'other' }),
      'exists',
    );
    const { rows, malformed } = await store.waitingRows(key, 10);
    assert.deepEqual(malformed, []);
    assert.deepEqual(
      rows.map((r) => [r.insertId, r.processedTimestampMs, r.sourceMessageId]),
      [
        ['e-1', NOW, 'm-1'],
        ['e-2', NOW + 5, 'm-2'],
      ],
    );
  });

  it('gives a table lease to one of two concurrent sweeps; a lapsed lease is taken with a new fence', async () => {
    const key = 'p.d.lease';
    const [a, b] = await Promise.all([
      store.acquireLease(key, 'A', NOW, 60_000),
      store.acquireLease(key, 'B', NOW, 60_000),
    ]);
    const won = a ?? b;
    assert.ok(won && (a === null) !== (b === null), 'exactly one sweep holds the lease');
    assert.equal(await store.acquireLease(key, 'C', NOW + 59_999, 60_000), null);
    const c = await store.acquireLease(key, 'C', NOW + 60_000, 60_000);
    assert.ok(c);
    assert.equal(c.fence, won.fence + 1);
    // The old holder's fenced writes now fail; nothing it wrote after losing the lease lands.
    await assert.rejects(store.settleRows(won, [retryRowId('x')], []), LeaseLostError);
    await assert.rejects(store.renewLease(won, NOW + 60_001, 60_000), LeaseLostError);
    await store.releaseLease(c);
    const d = await store.acquireLease(key, 'D', NOW + 60_002, 60_000);
    assert.equal(d?.fence, c.fence + 1);
  });

  it('settles more rows than one transaction takes', async () => {
    const key = 'p.d.settle';
    await Promise.all(Array.from({ length: 450 }, (_, i) => store.putRow(key, row(i))));
    const lease = await store.acquireLease(key, 'S', NOW, 60_000);
    assert.ok(lease);
    const { rows } = await store.waitingRows(key, 1000);
    await store.settleRows(
      lease,
      rows.slice(0, 420).map((r) => r.id),
      rows
        .slice(420)
        .map((r) => ({ id: r.id, errors: [], retryCount: 7, lastError: 'E', lastAttemptMs: NOW })),
    );
    const after = await store.waitingRows(key, 1000);
    assert.equal(after.rows.length, 30);
    assert.ok(after.rows.every((r) => r.retryCount === 7));
  });

  it('begins an update only for unchanged changes, and records it', async () => {
    const key = 'p.d.update';
    await propose(key, { a: 1 });
    const [change] = await store.pendingChanges(key);
    assert.ok(change);
    const lease = await store.acquireLease(key, 'U', NOW, 60_000);
    assert.ok(lease);
    const update = addColumnUpdate('u-test', change);
    // The change grows after the plan: stale.
    await propose(key, { b: 1 });
    assert.equal(await store.beginUpdate(lease, update, NOW), 'stale');
    const [grown] = await store.pendingChanges(key);
    assert.ok(grown);
    const fresh = {
      ...update,
      changes: [{ windowId: grown.windowId, fingerprint: grown.fingerprint }],
    };
    assert.equal(await store.beginUpdate(lease, fresh, NOW), 'started');
    await store.finishUpdate(lease, fresh, { ok: true, catalogPatched: ['a'] }, NOW + 1);
    assert.deepEqual(await store.pendingChanges(key), []);
    const [record] = await store.updates(key);
    assert.equal(record?.status, 'applied');
    assert.equal(record?.attempts, 1);
    assert.deepEqual(record?.catalogPatched, ['a']);
    // A later proposal for the swept window goes to the next window.
    const late = await propose(key, { c: 1 });
    assert.equal(late.windowId, schemaWindowOf(window.endMs, 3).id);
  });
  it('sends a proposal for a swept window to the first later window that is not swept, however far', async () => {
    const key = 'p.d.hops';
    let w = window;
    for (let i = 0; i < 7; i++) {
      // Windows w0..w6 swept (e.g. by a sweep whose clock ran ahead), except w3, which a later test reuses.
      if (i !== 3) {
        await firestore.collection(root).doc(key).collection('changes').doc(w.id).set({
          window_id: w.id,
          window_start_ms: w.startMs,
          window_end_ms: w.endMs,
          status: 'applied',
          proposed: [],
        });
      }
      w = schemaWindowOf(w.endMs, 3);
    }
    const first = await propose(key, { a: 1 });
    const w3 = schemaWindowOf(window.startMs + 3 * 3 * 60_000, 3);
    assert.equal(first.windowId, w3.id);
    await firestore
      .collection(root)
      .doc(key)
      .collection('changes')
      .doc(w3.id)
      .update({ status: 'applied' });
    const second = await propose(key, { b: 1 });
    assert.equal(second.windowId, schemaWindowOf(window.startMs + 7 * 3 * 60_000, 3).id);
  });
});
