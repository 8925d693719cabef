// The checkpoints of `offvia replay` in Firestore (the system's own database, under the `replay_runs` collection):
// one document per run (its range and filters) and one per finished chunk, so a killed run resumes where it was.
import type { Firestore } from '@google-cloud/firestore';
import type { AttributeFilter, ChunkCheckpoint } from './replay-plan';

/** The collection of replay runs (a namespace of its own, beside the window and drift stores' collections). */
export const REPLAY_COLLECTION = 'replay_runs';
/** The chunk checkpoints of one run, under `replay_runs/{runId}`. */
export const REPLAY_CHUNKS = 'chunks';

/** A run as stored: what `--resume` needs to continue it with the same range, chunks and filters. */
export interface ReplayRunRecord {
  readonly runId: string;
  /** Publish-time range `[fromMs, toMs)`, epoch ms UTC. */
  readonly fromMs: number;
  readonly toMs: number;
  readonly chunkMs: number;
  readonly filters: readonly AttributeFilter[];
  readonly messageIds: readonly string[] | null;
  readonly operator: string;
  /**
   * The run's `--rate`, messages per second (`null`: no limit), which `--resume` keeps unless given again; absent in
   * records written before the rate was kept.
   */
  readonly ratePerSecond?: number | null;
  /** Epoch ms UTC. */
  readonly createdAtMs: number;
  /** `running` until a run ends; then `done` (every chunk done) or `incomplete` (failures to resume). */
  readonly status: 'running' | 'done' | 'incomplete';
  readonly updatedAtMs: number;
}

/** Where a replay keeps its run record and chunk checkpoints; tests pass an in-memory one. */
export interface ReplayCheckpointStore {
  /** Creates the run record. @throws Error when a run with that id exists (run ids are unique). */
  createRun(run: ReplayRunRecord): Promise<void>;
  /** The run record, or `null` for an unknown id. */
  readRun(runId: string): Promise<ReplayRunRecord | null>;
  /** Sets the run's status and update time. */
  setRunStatus(runId: string, status: ReplayRunRecord['status'], atMs: number): Promise<void>;
  /** Every chunk checkpoint of the run, by index. */
  readCheckpoints(runId: string): Promise<ChunkCheckpoint[]>;
  /** Writes (replaces) the checkpoint of one chunk. */
  writeCheckpoint(runId: string, checkpoint: ChunkCheckpoint): Promise<void>;
}

/** Chunk document ids sort like their index (`000042`). */
function chunkDocId(index: number): string {
  return String(index).padStart(6, '0');
}

/**
 * The checkpoint store on Firestore: `replay_runs/{runId}` and `replay_runs/{runId}/chunks/{index}`, one write per
 * chunk (below Firestore's one write a second per document). Errors are the client's (callers use `firestoreCall`).
 */
export class FirestoreReplayStore implements ReplayCheckpointStore {
  constructor(private readonly firestore: Firestore) {}

  private run(runId: string) {
    return this.firestore.collection(REPLAY_COLLECTION).doc(runId);
  }

  async createRun(run: ReplayRunRecord): Promise<void> {
    await this.run(run.runId).create({ ...run, filters: run.filters.map((f) => ({ ...f })) });
  }

  async readRun(runId: string): Promise<ReplayRunRecord | null> {
    const snap = await this.run(runId).get();
    return snap.exists ? (snap.data() as ReplayRunRecord) : null;
  }

  async setRunStatus(
    runId: string,
    status: ReplayRunRecord['status'],
    atMs: number,
  ): Promise<void> {
    await this.run(runId).update({ status, updatedAtMs: atMs });
  }

  async readCheckpoints(runId: string): Promise<ChunkCheckpoint[]> {
    const snap = await this.run(runId).collection(REPLAY_CHUNKS).get();
    return snap.docs.map((d) => d.data() as ChunkCheckpoint).sort((a, b) => a.index - b.index);
  }

  async writeCheckpoint(runId: string, checkpoint: ChunkCheckpoint): Promise<void> {
    await this.run(runId)
      .collection(REPLAY_CHUNKS)
      .doc(chunkDocId(checkpoint.index))
      .set({
        ...checkpoint,
        outcomes: { ...checkpoint.outcomes },
        alreadyPresent: { ...checkpoint.alreadyPresent },
        failures: checkpoint.failures.map((f) => ({ ...f })),
      });
  }
}
