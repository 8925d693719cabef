// FirestoreWindowStore's error mapping with a stubbed client (the emulator suite covers the happy paths): Firestore
// failures become TransientError, our own errors pass through unchanged, a failed compare-and-set is `null`, and malformed documents are reported, not acked away.
import assert from 'node:assert/strict';
import type { Firestore } from '@google-cloud/firestore';
import sinon from 'sinon';
import { parseBookingAccumulator } from '../../../shared/aggregates/booking-aggregates';
import { TransientError } from '../../../shared/errors';
import { FirestoreWindowStore } from '../../../shared/state/firestore-window-store';
import { LeaseLostError } from '../../../shared/state/window-store';

function grpcError(code: number, message: string): Error {
  return Object.assign(new Error(`${code} ${message}`), { code });
}

/** A Firestore double: only what the adapter touches, with runTransaction and the watermark doc stubbed. */
function fakeFirestore() {
  const doc = {
    get: sinon.stub(),
    create: sinon.stub(),
    update: sinon.stub(),
    collection: () => ({ doc: () => doc }),
    path: 'root/p/meta/watermark',
  };
  const db = {
    collection: () => ({ doc: () => doc }),
    runTransaction: sinon.stub(),
  };
  const store = new FirestoreWindowStore(db as unknown as Firestore, {
    root: 'root',
    pipeline: 'p',
    parseAccumulator: parseBookingAccumulator,
  });
  return { db, doc, store };
}

describe('state: FirestoreWindowStore error mapping', () => {
  it('turns a Firestore failure into a TransientError naming the operation', async () => {
    const { db, store } = fakeFirestore();
    db.runTransaction.rejects(grpcError(14, 'UNAVAILABLE'));
    await assert.rejects(
      store.transact('apply bundle', () => Promise.resolve(1)),
      (err: unknown) => {
        assert.ok(err instanceof TransientError);
        assert.equal(err.operation, 'firestore apply bundle');
        return true;
      },
    );
    db.runTransaction.rejects(new Error('Exceeded maximum number of retries allowed.'));
    await assert.rejects(
      store.transact('apply bundle', () => Promise.resolve(1)),
      TransientError,
    );
  });

  it('lets errors of the transaction body through unchanged (bugs, lost leases)', async () => {
    const { db, store } = fakeFirestore();
    db.runTransaction.callsFake(async (fn: (t: unknown) => Promise<unknown>) => fn({}));
    const bug = new RangeError('bug');
    await assert.rejects(
      store.transact('t', () => Promise.reject(bug)),
      (err) => err === bug,
    );
    await assert.rejects(
      store.transact('t', () => Promise.reject(new LeaseLostError('fence'))),
      LeaseLostError,
    );
  });

  it('answers null when a compare-and-set loses, and throws TransientError on other failures', async () => {
    const { doc, store } = fakeFirestore();
    const state = { watermarkMs: 1, maxEventTimeMs: 11, maxEventTimeSeenAtMs: 5 };
    doc.create.rejects(grpcError(6, 'ALREADY_EXISTS'));
    assert.equal(await store.writeWatermark(state, 5, null), null);
    doc.update.rejects(grpcError(9, 'FAILED_PRECONDITION'));
    const expected = { state, updatedAtMs: 1, version: '10.000000001' };
    assert.equal(await store.writeWatermark(state, 5, expected), null);
    const options = doc.update.firstCall.args[1] as { lastUpdateTime: { nanoseconds: number } };
    assert.equal(options.lastUpdateTime.nanoseconds, 1);
    doc.update.rejects(grpcError(14, 'UNAVAILABLE'));
    await assert.rejects(store.writeWatermark(state, 5, expected), TransientError);
  });

  it('refuses a malformed watermark document with a TransientError naming it', async () => {
    const { doc, store } = fakeFirestore();
    doc.get.resolves({
      exists: true,
      updateTime: { seconds: 1, nanoseconds: 0 },
      data: () => ({ watermark_ms: 'soon' }),
    });
    await assert.rejects(
      store.readWatermark(),
      /meta\/watermark: malformed document: watermark_ms/,
    );
  });
});
