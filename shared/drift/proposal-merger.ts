// Coalesces one instance's concurrent proposal merges per (table, window) into few Firestore transactions.
import {
  mergeAllFieldSets,
  mergeFieldSets,
  type ProposedFields,
  type SchemaWindow,
} from '../schema';
import { fingerprintOf } from './firestore-store';
import type { DriftStore, MergeResult } from './store';

interface Waiter {
  readonly proposed: ProposedFields;
  readonly resolve: (result: MergeResult) => void;
  readonly reject: (err: unknown) => void;
}

/** Most (table, window) entries remembered; older windows are forgotten first. */
const MAX_KNOWN = 256;

/**
 * Merges proposals into the pending change of (table, window) with as few transactions as possible: while a merge
 * for a change is in flight, later proposals wait and go together in the next one. A proposal already contained
 * in what this instance merged there needs no transaction: proposals only grow, so a merged field stays merged.
 */
export class ProposalMerger {
  private readonly known = new Map<string, ProposedFields>();
  private readonly queues = new Map<string, Waiter[]>();

  /**
   * @param windowMinutes the schema window length, minutes (to find the next window of a swept one).
   * @param maxFields `maxProposedFieldsPerWindow`.
   * @param now the clock, ms since the epoch (UTC).
   */
  constructor(
    private readonly store: DriftStore,
    private readonly windowMinutes: number,
    private readonly maxFields: number,
    private readonly now: () => number,
  ) {}

  /**
   * Merges `proposed` into (tableKey, window) (see `DriftStore.mergeProposal`).
   * @throws TransientError from the store.
   */
  merge(tableKey: string, window: SchemaWindow, proposed: ProposedFields): Promise<MergeResult> {
    const key = `${tableKey}|${window.id}`;
    const known = this.known.get(key);
    if (
      known !== undefined &&
      fingerprintOf(mergeFieldSets(known, proposed)) === fingerprintOf(known)
    ) {
      return Promise.resolve({ windowId: window.id, accepted: new Set(known.keys()) });
    }
    return new Promise<MergeResult>((resolve, reject) => {
      const queue = this.queues.get(key);
      if (queue !== undefined) {
        queue.push({ proposed, resolve, reject });
        return;
      }
      this.queues.set(key, [{ proposed, resolve, reject }]);
      void this.drain(key, tableKey, window);
    });
  }

  /** Runs transactions for `key` until its queue is empty; never rejects (waiters get the errors). */
  private async drain(key: string, tableKey: string, window: SchemaWindow): Promise<void> {
    for (;;) {
      const queue = this.queues.get(key) ?? [];
      const batch = queue.splice(0);
      if (batch.length === 0) {
        this.queues.delete(key);
        return;
      }
      const combined = mergeAllFieldSets(batch.map((w) => w.proposed));
      try {
        const result = await this.store.mergeProposal({
          tableKey,
          window,
          windowMinutes: this.windowMinutes,
          proposed: combined,
          maxFields: this.maxFields,
          nowMs: this.now(),
        });
        if (result.windowId === window.id) this.remember(key, combined, result.accepted);
        for (const w of batch) w.resolve(result);
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
  }

  /** Records what is now certainly in the stored change: the accepted part of what was merged. */
  private remember(key: string, merged: ProposedFields, accepted: ReadonlySet<string>): void {
    const admitted = new Map([...merged].filter(([name]) => accepted.has(name)));
    const before = this.known.get(key);
    this.known.delete(key);
    this.known.set(key, before === undefined ? admitted : mergeFieldSets(before, admitted));
    if (this.known.size > MAX_KNOWN) {
      const oldest = this.known.keys().next().value;
      if (oldest !== undefined) this.known.delete(oldest);
    }
  }
}
