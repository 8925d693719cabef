// Every collection and top-level field the stores write, recorded from the requests of the real client on the
// emulator while each store runs its paths, is in the Firestore inventory (shared/state/firestore-inventory.ts) with a
// decision, and the deploy plan carries that decision: an index exemption, a kept index with its query, a TTL.
import assert from 'node:assert/strict';
import { FirestoreDriftStore, retryRowId } from '../../../shared/drift';
import { FirestoreReplayStore } from '../../../shared/ops/replay-store';
import { proposeFields, schemaWindowOf } from '../../../shared/schema';
import { FirestoreWatermarkHoldStore } from '../../../shared/state/watermark-holds';
import { fire, MIN, record, runLabWindowScenario, S, T } from '../../support/booking-windows';
import {
  emulatorFirestore,
  firestoreBookingWindows,
  spillingBookingWindows,
  uniqueRoot,
} from '../../support/firestore-windows';
import { addColumnUpdate } from '../../support/drift-fixtures';
import { recordWrites, type WrittenFields } from '../../support/firestore-write-recorder';
import { firestoreCoverageProblems } from '../../support/firestore-plan-coverage';
import { OPTIONS, P } from '../../support/deploy-plans';
import { REPO_ROOT, readRepoFacts } from '../../../deploy/gcloud/cli';
import { buildDeployPlan } from '../../../deploy/gcloud/deploy-plan';
import { SCHEMA_DRIFT_VARS } from '../../../shared/config/schema-drift-config';
import { FIRESTORE_INVENTORY } from '../../../shared/state/firestore-inventory';

/** Runs every store's write paths on `db`: windows (key groups, spills, sessions), holds, drift, replay. */
async function runEveryStore(
  db: ReturnType<typeof emulatorFirestore>,
  driftRoot: string,
): Promise<void> {
  // Fixed windows: bundles, EARLY/ON_TIME/LATE panes, a late drop, watermark, leases, garbage collection.
  const lab = firestoreBookingWindows(db);
  await runLabWindowScenario(lab.sink, lab.windows, lab.clock);

  // Dedup ids spilled from a full key-group document.
  const { sink } = spillingBookingWindows(db, 2, 2);
  for (let i = 0; i < 5; i++) {
    await record(sink, { id: `inv-${i}`, fare: '1', at: T + i * S }, T + 6 * S);
  }

  // Session windows: one document per key, the outbox, a late drop.
  const sessions = firestoreBookingWindows(db, {
    OFFVIA_WINDOW_SESSION_GAP_MS: String(30 * S),
    OFFVIA_WINDOW_EARLY_FIRING_DELAY_MS: '0',
  });
  const add = async (id: string, atS: number, recvS: number) => {
    sessions.clock.nowMs = T + recvS * S;
    await record(sessions.sink, { id, fare: '1', at: T + atS * S }, T + recvS * S, `m-${id}`);
  };
  await add('s1', 0, 5);
  await add('s2', 700, 705);
  await fire(sessions.windows, sessions.clock, T + 706 * S);
  await add('s3', 0, 710);

  // Watermark holds.
  const holds = new FirestoreWatermarkHoldStore(db, uniqueRoot(), 'p');
  await holds.recordFailure('m-1', T, T + S, 11 * MIN);

  // Drift store: a change, a retry row, a lease, an update.
  const drift = new FirestoreDriftStore(db, driftRoot);
  const key = 'p.d.t';
  const window = schemaWindowOf(T, 3);
  await drift.mergeProposal({
    tableKey: key,
    window,
    windowMinutes: 3,
    proposed: proposeFields({ a: 1 }).proposed,
    maxFields: 200,
    nowMs: T,
  });
  const row = {
    id: retryRowId('e-1'),
    targetTable: 't',
    insertId: 'e-1',
    sourceMessageId: 'm-1',
    processedTimestampMs: T,
    rowJson: '{}',
    extraFieldsJson: '{}',
    windowId: window.id,
    errors: [{ field: 'a', code: 'NO_COLUMN' as const, reason: 'r' }],
    errorCount: 1,
    retryCount: 0,
    lastError: 'NO_COLUMN: r',
    lastAttemptMs: null,
  };
  await drift.putRow(key, row);
  const lease = await drift.acquireLease(key, 'U', T, 60_000);
  assert.ok(lease);
  const [change] = await drift.pendingChanges(key);
  assert.ok(change);
  const update = addColumnUpdate('u-1', change);
  assert.equal(await drift.beginUpdate(lease, update, T), 'started');
  await drift.finishUpdate(lease, update, { ok: true, catalogPatched: ['a'] }, T + 1);
  await drift.settleRows(
    lease,
    [],
    [{ id: row.id, errors: [], retryCount: 1, lastError: 'E', lastAttemptMs: T }],
  );
  await drift.renewLease(lease, T + 2, 60_000);
  await drift.releaseLease(lease);

  // Replay checkpoints.
  const replay = new FirestoreReplayStore(db);
  const runId = uniqueRoot('run');
  await replay.createRun({
    runId,
    fromMs: T,
    toMs: T + MIN,
    chunkMs: MIN,
    filters: [],
    messageIds: null,
    operator: 'test',
    ratePerSecond: null,
    createdAtMs: T,
    status: 'running',
    updatedAtMs: T,
  });
  await replay.writeCheckpoint(runId, {
    index: 0,
    fromMs: T,
    toMs: T + MIN,
    status: 'done',
    rows: 0,
    outcomes: {},
    alreadyPresent: {},
    failures: [],
    failedCount: 0,
    attempt: 1,
    finishedAtMs: T,
    elapsedMs: 1,
  });
  await replay.setRunStatus(runId, 'done', T + 1);
}

describe('integration: every Firestore field the stores write has an inventory decision', function () {
  this.timeout(180_000);
  let written: WrittenFields = new Map();
  const plan = buildDeployPlan(OPTIONS, readRepoFacts(REPO_ROOT, P, OPTIONS.bqLocation));

  before(async () => {
    const db = emulatorFirestore();
    const recorded = recordWrites(db);
    const driftRoot = uniqueRoot('itInvDrift');
    try {
      await runEveryStore(db, driftRoot);
    } finally {
      await db.terminate();
    }
    // The drift root is configurable: the inventory lists it by its default name.
    written = new Map(
      [...recorded].map(([c, f]) => [
        c === driftRoot ? SCHEMA_DRIFT_VARS.firestoreRoot.default : c,
        f,
      ]),
    );
  });

  it('exercised every collection of the inventory but the retired layout’s', () => {
    const live = FIRESTORE_INVENTORY.filter((c) => !c.retired).map((c) => c.collection);
    assert.deepEqual([...written.keys()].sort(), [...live].sort());
    assert.ok(written.get('droppedLate')?.has('last_dropped_at_ms'), 'a late drop was recorded');
  });

  it('has a decision for every written field and collection, and the deploy plan carries it out', () => {
    assert.deepEqual(firestoreCoverageProblems(plan, written), []);
  });
});
