// The checkpoints of `offvia replay` in Firestore (the system's own database, under the `replay_runs` collection):
// one document per run (its range and filters) and one per finished chunk, so a killed run resumes where it was.
import type { Firestore } from '@google-cloud/firestore';
import type { AttributeFilter, ChunkCheckpoint } from './replay-plan';

/** The collection of replay runs (a namespace of its own, beside the window and drift stores' collections). */
export const REPLAY_COLLECTION = 'replay_runs';

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
 * The checkpoint store on Firestore: `replay_runs/{runId}` and `replay_runs/{runId}/chunks/{index}`. One write per
 * chunk and two per run, far below Firestore's sustained write rate to one document (about one per second), so a
 * checkpoint never slows a replay down. Errors are the client's (the caller wraps them with `firestoreCall`).
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
    const snap = await this.run(runId).collection('chunks').get();
    return snap.docs.map((d) => d.data() as ChunkCheckpoint).sort((a, b) => a.index - b.index);
  }

  async writeCheckpoint(runId: string, checkpoint: ChunkCheckpoint): Promise<void> {
    await this.run(runId)
      .collection('chunks')
      .doc(chunkDocId(checkpoint.index))
      .set({
        ...checkpoint,
        outcomes: { ...checkpoint.outcomes },
        alreadyPresent: { ...checkpoint.alreadyPresent },
        failures: checkpoint.failures.map((f) => ({ ...f })),
      });
  }
}

/** An in-memory store (unit tests, and `--dry-run`, which writes nothing). */
export class MemoryReplayStore implements ReplayCheckpointStore {
  readonly runs = new Map<string, ReplayRunRecord>();
  readonly checkpoints = new Map<string, Map<number, ChunkCheckpoint>>();

  createRun(run: ReplayRunRecord): Promise<void> {
    if (this.runs.has(run.runId)) return Promise.reject(new Error(`run ${run.runId} exists`));
    this.runs.set(run.runId, run);
    return Promise.resolve();
  }

  readRun(runId: string): Promise<ReplayRunRecord | null> {
    return Promise.resolve(this.runs.get(runId) ?? null);
  }

  setRunStatus(runId: string, status: ReplayRunRecord['status'], atMs: number): Promise<void> {
    const run = this.runs.get(runId);
    if (run === undefined) return Promise.reject(new Error(`no run ${runId}`));
    this.runs.set(runId, { ...run, status, updatedAtMs: atMs });
    return Promise.resolve();
  }

  readCheckpoints(runId: string): Promise<ChunkCheckpoint[]> {
    const map = this.checkpoints.get(runId) ?? new Map<number, ChunkCheckpoint>();
    return Promise.resolve([...map.values()].sort((a, b) => a.index - b.index));
  }

  writeCheckpoint(runId: string, checkpoint: ChunkCheckpoint): Promise<void> {
    const map = this.checkpoints.get(runId) ?? new Map<number, ChunkCheckpoint>();
    map.set(checkpoint.index, checkpoint);
    this.checkpoints.set(runId, map);
    return Promise.resolve();
  }
}
