// A single pipeline's teardown on the Firestore emulator: deleting one root collection recursively removes its
// documents at every depth and leaves another pipeline's documents, under the same subcollection ids, in place.
import assert from 'node:assert/strict';
import type { Firestore } from '@google-cloud/firestore';
import { deleteRoot } from '../../../deploy/gcloud/delete-firestore-root';
import { emulatorFirestore, uniqueRoot } from '../../support/firestore-windows';

describe('delete-firestore-root on the Firestore emulator', function () {
  this.timeout(60_000);
  let db: Firestore;
  before(() => {
    db = emulatorFirestore();
  });

  /** The same layout under a root: an aggregation document, a window with a ledger entry and a meta document. */
  async function seed(root: string): Promise<string[]> {
    const paths = [
      `${root}/agg`,
      `${root}/agg/windows/w1`,
      `${root}/agg/windows/w1/eventLedger/e1`,
      `${root}/agg/meta/watermark`,
    ];
    for (const p of paths) await db.doc(p).set({ at: 1 });
    return paths;
  }

  it('deletes every document under its root and none under another root with the same subcollections', async () => {
    const gone = uniqueRoot('itTelemetry');
    const kept = uniqueRoot('itBooking');
    const gonePaths = await seed(gone);
    const keptPaths = await seed(kept);
    assert.equal(await deleteRoot(db, gone), gonePaths.length);
    for (const p of gonePaths) assert.equal((await db.doc(p).get()).exists, false, p);
    for (const p of keptPaths) assert.equal((await db.doc(p).get()).exists, true, p);
    // A collection-group query sees the other root's ledger still (what bulk-delete would have removed too).
    const ledgers = await db.collectionGroup('eventLedger').get();
    assert.ok(ledgers.docs.some((d) => d.ref.path.startsWith(`${kept}/`)));
    assert.ok(!ledgers.docs.some((d) => d.ref.path.startsWith(`${gone}/`)));
    assert.equal(await deleteRoot(db, kept), keptPaths.length);
  });
});
