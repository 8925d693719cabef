// Applies bundles of elements and timer firings to the keyed store, one transaction each, by rebuilding the core's
// KeyState from the stored documents and writing back what the core decided (shared/windowing owns the semantics).
import { isDeepStrictEqual } from 'node:util';
import {
  addToContribution,
  assignWindows,
  emptyContribution,
  FRESH_PANE,
  maxTimestampMs,
  mergeContributions,
  sameWindow,
  windowId,
  WindowingInputError,
  type CombineFn,
  type DropReason,
  type IntervalWindow,
  type JsonValue,
  type KeyState,
  type Pane,
  type PaneBookkeeping,
  type ReduceFnRunner,
  type StepResult,
  type TimestampedElement,
  type WindowContribution,
  type WindowingStrategy,
  type WindowState,
} from '../windowing';
import { eventShardOf, keyGroupOf } from './ids';
import {
  droppedIncrementsOf,
  outboxPaneOf,
  type OutboxPane,
  type ShardAddress,
  type StoredShard,
  type StoredWindow,
  type WindowAddress,
  type WindowStore,
  type WindowTransaction,
} from './window-store';

/** One event for the windowed pipeline. */
export interface WindowElement<In> {
  /** Stable event id: the dedup key. */
  readonly eventId: string;
  /** The Pub/Sub message that delivered it (logs). */
  readonly messageId: string;
  /** The value for `CombineFn.addInput`. */
  readonly value: In;
  /** Event time, epoch ms UTC. */
  readonly timestampMs: number;
  /** Processing time it was received at, epoch ms UTC. */
  readonly receivedAtMs: number;
}

/** A window an element was left out of, and why (Beam's reasons). */
export interface WindowDrop {
  readonly window: IntervalWindow;
  readonly reason: DropReason;
}

/**
 * What happened to one element: `counted` in at least one window (possibly dropped from others, with sliding
 * windows), `dropped` from all of them, or `duplicate` (its dedup id was kept already: nothing changed).
 */
export interface ElementOutcome {
  readonly kind: 'counted' | 'dropped' | 'duplicate';
  readonly dropped: readonly WindowDrop[];
}

/** What applying one bundle did. */
export interface BundleResult {
  /** One outcome per input element, in input order. */
  readonly outcomes: readonly ElementOutcome[];
  /** Panes fired by the bundle, committed to the outbox, in firing order. */
  readonly panes: readonly OutboxPane[];
  /** Input watermark the bundle was applied at, epoch ms. */
  readonly watermarkMs: number;
  /** Processing time the bundle was applied at (latest arrival in it), epoch ms. */
  readonly processingTimeMs: number;
}

/**
 * Reads the pipeline watermark at processing time `processingTimeMs`: the cached value, or with `fresh` a strongly
 * consistent read (epoch ms).
 */
export type WatermarkReader = (processingTimeMs: number, fresh: boolean) => Promise<number>;

/** Wiring of a keyed-windows pipeline. */
export interface KeyedWindowsOptions<In, Acc extends JsonValue, Out> {
  /** Pipeline name (insertIds). */
  readonly pipeline: string;
  /** The windowing core for the pipeline's strategy and combiner. */
  readonly runner: ReduceFnRunner<In, Acc, Out>;
  /** The same combiner (merging shards). */
  readonly combineFn: CombineFn<In, Acc, Out>;
  readonly store: WindowStore<Acc>;
  /** Shards per key group of a new window (existing windows keep theirs). */
  readonly shardCount: number;
  /** Dropped-late counter lifetime, ms. */
  readonly droppedTtlMs: number;
  /** The gold row of a pane. */
  readonly paneRow: (pane: Pane<Out>, insertId: string) => Record<string, unknown>;
}

/** A bundle of one key checked and ready to apply: its elements, their windows, the unique ones, the latest arrival. */
interface PreparedBundle<In> {
  readonly key: string;
  readonly elements: readonly WindowElement<In>[];
  readonly windows: readonly IntervalWindow[];
  readonly fresh: readonly WindowElement<In>[];
  readonly processingTimeMs: number;
}

/** What applying one bundle inside a transaction did (per unique event id applied; absent: a duplicate). */
export interface AppliedBundle extends Omit<BundleResult, 'outcomes'> {
  readonly outcomes: ReadonlyMap<string, ElementOutcome>;
}

/** The result of a bundle of `elements`: an element not applied (repeated, or already counted) is a `duplicate`. */
export function bundleResultOf(
  elements: readonly { readonly eventId: string }[],
  applied: AppliedBundle,
): BundleResult {
  const seen = new Set<string>();
  const outcomes = elements.map((e): ElementOutcome => {
    const outcome = seen.has(e.eventId) ? undefined : applied.outcomes.get(e.eventId);
    seen.add(e.eventId);
    return outcome ?? { kind: 'duplicate', dropped: [] };
  });
  return { ...applied, outcomes };
}

/** The plan for one window inside a bundle transaction. */
type Plan = 'fast' | 'slow' | 'drop-expired' | 'drop-closed';

function paneChanged(a: PaneBookkeeping, b: PaneBookkeeping): boolean {
  return (
    a.phase !== b.phase ||
    a.panesEmitted !== b.panesEmitted ||
    a.nonEarlyPanesEmitted !== b.nonEarlyPanesEmitted
  );
}

/**
 * The windowed pipeline on the keyed store. Per (key, window) the store keeps a bookkeeping record (pane counters,
 * timers) and `shardCount` shard contributions that merge into the core's `WindowState`.
 *
 * Applying a bundle is one transaction: its dedup ids, its shard update and any firing commit together, so a
 * redelivered event (dedup id present) changes nothing. The common case (no firing possible) reads the bookkeeping
 * and one shard and writes that shard; when the core could fire (watermark past the end of window, the window in its
 * late phase, or a trigger visibly due on the element's shard) all shards are read, the core runs on the merged
 * state, and its decisions are written back.
 */
export class KeyedWindows<In, Acc extends JsonValue, Out> {
  constructor(private readonly options: KeyedWindowsOptions<In, Acc, Out>) {}

  /**
   * The shard an event's state and dedup id go to in a key-groups store: hash(event id) mod shards, so every
   * delivery of the event finds its id in the same document.
   */
  eventShard(eventId: string): number {
    return eventShardOf(eventId, this.options.shardCount);
  }

  /**
   * The bundler queue of an event: per (key group, windows), so one transaction applies the events of many keys of a
   * group, whatever their event shards.
   */
  bundleQueueKey(key: string, windows: readonly IntervalWindow[]): string {
    return `g${keyGroupOf(key, this.options.store.keyGroups)}|${windows.map(windowId).join(',')}`;
  }

  /** The windows an element stamped `timestampMs` (epoch ms) belongs to, by (end, start). */
  assign(timestampMs: number): IntervalWindow[] {
    return assignWindows(this.options.runner.strategy.windowFn, timestampMs);
  }

  /**
   * `processGroupBundle` for one key's bundle (elements in the same windows; a repeated event id counts once).
   * @throws WindowingInputError when the bundle is empty or mixes windows (caller bug); TransientError when the
   * store fails
   */
  async processBundle(
    key: string,
    elements: readonly WindowElement<In>[],
    watermark: WatermarkReader,
  ): Promise<BundleResult> {
    const [result] = await this.processGroupBundle([{ key, elements }], watermark);
    if (result === undefined) throw new Error('group bundle returned no result');
    return result;
  }

  /**
   * Applies, in one transaction, bundles of several keys of one key group whose elements share their windows. Each
   * event's dedup id lives in its event shard's document
   * (`eventShardOf(eventId, shardCount)`, whatever instance or bundle delivers it): an event whose id is there is a
   * `duplicate`; the others are counted (or dropped) and their ids added there. The counted contributions of the
   * whole bundle go to one shard (the first element's event shard), so a hot key's bundle writes one contribution.
   * @throws WindowingInputError when a bundle is empty or mixes windows (caller bug); TransientError when the store
   * fails
   */
  async processGroupBundle(
    bundles: readonly { key: string; elements: readonly WindowElement<In>[] }[],
    watermark: WatermarkReader,
  ): Promise<BundleResult[]> {
    const prepared = this.prepareGroupBundles(bundles);
    const applied = await this.options.store.transact('apply group bundle', (tx) =>
      this.applyPrepared(tx, prepared, watermark, new Set()),
    );
    return this.resultsOf(prepared, applied);
  }

  /** Checks the bundles of `processGroupBundle` and leaves out each one's repeated event ids. */
  private prepareGroupBundles(
    bundles: readonly { key: string; elements: readonly WindowElement<In>[] }[],
  ): PreparedBundle<In>[] {
    return bundles.map(({ key, elements }) => {
      const first = elements[0];
      if (first === undefined) throw new WindowingInputError('empty bundle');
      const windows = this.assign(first.timestampMs);
      const ids = windows.map(windowId).join(',');
      for (const e of elements) {
        if (this.assign(e.timestampMs).map(windowId).join(',') !== ids) {
          throw new WindowingInputError(`bundle mixes windows: ${e.eventId} is not in ${ids}`);
        }
      }
      const unique = new Map<string, WindowElement<In>>();
      for (const e of elements) if (!unique.has(e.eventId)) unique.set(e.eventId, e);
      return {
        key,
        elements,
        windows,
        fresh: [...unique.values()],
        processingTimeMs: Math.max(...elements.map((e) => e.receivedAtMs)),
      };
    });
  }

  /**
   * Applies prepared bundles inside `tx`, their contributions to one shard (the first element's event shard).
   * `guests`: event ids whose dedup id another aggregation of the same transaction keeps (not probed, not added).
   */
  private async applyPrepared(
    tx: WindowTransaction<Acc>,
    prepared: readonly PreparedBundle<In>[],
    watermark: WatermarkReader,
    guests: ReadonlySet<string>,
  ): Promise<AppliedBundle[]> {
    const shard = this.eventShard(prepared[0]?.fresh[0]?.eventId ?? '');
    // Every key group document the bundles need, in one round trip (the keys' reads below find them cached).
    await tx.read({
      windows: prepared.flatMap((b) => b.windows.map((window) => ({ key: b.key, window }))),
      shards: prepared.flatMap((b) => b.windows.map((window) => ({ key: b.key, window, shard }))),
      seen: prepared.flatMap((b) =>
        b.fresh
          .filter((e) => !guests.has(e.eventId))
          .flatMap((e) =>
            b.windows.map((window) => ({
              eventId: e.eventId,
              key: b.key,
              window,
              shard: this.eventShard(e.eventId),
            })),
          ),
      ),
    });
    // One strongly consistent watermark read per attempt, after the documents were read, serves every key.
    let freshRead: Promise<number> | undefined;
    const read: WatermarkReader = (pt, fresh) =>
      fresh ? (freshRead ??= watermark(pt, true)) : watermark(pt, false);
    const applied: AppliedBundle[] = [];
    for (const b of prepared) applied.push(await this.applyBundle(tx, b, read, shard, guests));
    return applied;
  }

  /** One result per prepared bundle (`bundleResultOf`). */
  private resultsOf(
    prepared: readonly PreparedBundle<In>[],
    applied: readonly AppliedBundle[],
  ): BundleResult[] {
    return prepared.map((b, i) => {
      const done = applied[i];
      if (done === undefined) throw new Error('group bundle lost a result');
      return bundleResultOf(b.elements, done);
    });
  }

  /**
   * Applies the bundles of several aggregations (key-groups stores on one Firestore database) in ONE transaction:
   * a pipeline bundle's updates to all its aggregations share one commit. Each event's dedup id is kept once, by
   * its home aggregation (`homes`: event id → index into `parts` of the first aggregation the event takes part
   * in); the others apply the event only when its home found it new, so under redelivery it is counted once in
   * every aggregation or in none. The home's bundles are applied first (Firestore reads precede writes: the stores
   * buffer their writes until the commit).
   * @returns per part, one result per bundle, in order
   * @throws WindowingInputError when a bundle is empty or mixes windows (caller bug); TransientError when the store
   * fails; Error when a part's store is not a key-groups store on the first part's database
   */
  static async processJointBundle<In, Acc extends JsonValue, Out>(
    parts: readonly {
      readonly keyed: KeyedWindows<In, Acc, Out>;
      readonly bundles: readonly { key: string; elements: readonly WindowElement<In>[] }[];
      readonly watermark: WatermarkReader;
    }[],
    homes: ReadonlyMap<string, number>,
    join: (tx: WindowTransaction<Acc>, store: WindowStore<Acc>) => WindowTransaction<Acc>,
  ): Promise<BundleResult[][]> {
    const first = parts[0];
    if (first === undefined) return [];
    const prepared = parts.map((p) => p.keyed.prepareGroupBundles(p.bundles));
    const result = await first.keyed.options.store.transact('apply pipeline bundle', async (tx) => {
      // Per event id: whether its home applied it (counted or dropped) in this attempt.
      const applied = new Set<string>();
      const all: AppliedBundle[][] = [];
      for (const [i, part] of parts.entries()) {
        const own = i === 0 ? tx : join(tx, part.keyed.options.store);
        const guests = new Set<string>();
        const bundles = (prepared[i] ?? []).map((b) => {
          const fresh = b.fresh.filter((e) => {
            const home = homes.get(e.eventId) ?? i;
            if (home === i) return true;
            guests.add(e.eventId);
            return applied.has(e.eventId);
          });
          return { ...b, fresh };
        });
        const kept = bundles.filter((b) => b.fresh.length > 0);
        const done =
          kept.length === 0
            ? []
            : await part.keyed.applyPrepared(own, kept, part.watermark, guests);
        for (const d of done) for (const id of d.outcomes.keys()) applied.add(id);
        const empty: AppliedBundle = {
          outcomes: new Map(),
          panes: [],
          watermarkMs: 0,
          processingTimeMs: 0,
        };
        let k = 0;
        all.push(bundles.map((b) => (b.fresh.length > 0 ? (done[k++] ?? empty) : empty)));
      }
      return all;
    });
    return parts.map((p, i) => p.keyed.resultsOf(prepared[i] ?? [], result[i] ?? []));
  }

  /**
   * Runs the timers of every key of one key group of `window` in one transaction, with one read of the group's
   * documents and one write of each changed one: per key, the on-time pane once the watermark passed the end,
   * processing-time early/late firings that are due, and garbage collection past end + allowed lateness.
   * @throws TransientError when the store fails
   */
  async fireGroup(
    window: IntervalWindow,
    group: number,
    watermarkMs: number,
    processingTimeMs: number,
  ): Promise<{ panes: OutboxPane[]; keysFired: number; keysClosed: number }> {
    return this.options.store.transact('fire key group', async (tx) => {
      const panes: OutboxPane[] = [];
      let keysFired = 0;
      let keysClosed = 0;
      // Every key of the group in one read request (its documents are read once either way): a group holds
      // thousands of keys, and a request per key cost client time per key for nothing.
      const addresses = await tx.groupKeys(window, group);
      const count = this.options.shardCount;
      const read = await tx.read({
        windows: addresses,
        shards: addresses.flatMap((a) => this.shardAddresses(a, count)),
      });
      for (const [i, address] of addresses.entries()) {
        const stored = read.windows[i] ?? null;
        if (stored === null) continue;
        const guess = read.shards.slice(i * count, (i + 1) * count);
        const shards = await this.completeShards(tx, stored, guess);
        const wm = Math.max(watermarkMs, stored.watermarkMs);
        const pt = Math.max(processingTimeMs, stored.processingTimeMs);
        const state0 = this.keyState(address.key, [stored], [shards], wm, pt);
        const ctx = { inputWatermarkMs: wm, processingTimeMs: pt };
        const step = this.options.runner.advanceTime(state0, ctx);
        const none = { state: step.state, panes: [], dropped: [] };
        const fired = this.persist(tx, address.key, [window], [stored], [shards], step, none, {
          accepted: new Map(),
          ownIndex: [-1],
          watermarkMs: wm,
          processingTimeMs: pt,
        });
        const closed = !step.state.windows.some((w) => sameWindow(w.window, window));
        if (fired.length > 0 || closed) keysFired++;
        if (closed) keysClosed++;
        panes.push(...fired);
      }
      return { panes, keysFired, keysClosed };
    });
  }

  private shardAddresses(address: WindowAddress, count: number): ShardAddress[] {
    return Array.from({ length: count }, (_, shard) => ({ ...address, shard }));
  }

  /** All `stored.shardCount` shards, reading the ones the first read did not cover (after a change of N). */
  private async completeShards(
    tx: WindowTransaction<Acc>,
    stored: StoredWindow,
    have: readonly (StoredShard<Acc> | null)[],
  ): Promise<(StoredShard<Acc> | null)[]> {
    if (have.length >= stored.shardCount) return have.slice(0, stored.shardCount);
    const missing = this.shardAddresses(stored, stored.shardCount).slice(have.length);
    return [...have, ...(await tx.read({ shards: missing })).shards];
  }

  private contributionOf(shard: StoredShard<Acc> | null): WindowContribution<Acc> {
    return shard?.contribution ?? emptyContribution(this.options.combineFn);
  }

  private keyState(
    key: string,
    stored: readonly (StoredWindow | null)[],
    shards: readonly (readonly (StoredShard<Acc> | null)[])[],
    watermarkMs: number,
    processingTimeMs: number,
  ): KeyState<Acc> {
    const windows: WindowState<Acc>[] = [];
    stored.forEach((record, i) => {
      if (record === null) return;
      windows.push({
        window: record.window,
        pane: record.pane,
        contribution: mergeContributions(
          this.options.combineFn,
          (shards[i] ?? []).map((s) => this.contributionOf(s)),
        ),
      });
    });
    return { key, inputWatermarkMs: watermarkMs, processingTimeMs, windows };
  }

  /** The fast-path decision for one window (conservative: `slow` whenever the core might fire or drop). */
  private plan(
    stored: StoredWindow | null,
    own: WindowContribution<Acc>,
    window: IntervalWindow,
    count: number,
    watermarkMs: number,
    processingTimeMs: number,
  ): Plan {
    const { allowedLatenessMs, trigger } = this.options.runner.strategy;
    if (maxTimestampMs(window) + allowedLatenessMs < watermarkMs) {
      return stored === null ? 'drop-expired' : 'slow';
    }
    const phase = stored?.pane.phase ?? 'EARLY';
    if (phase === 'CLOSED') return 'drop-closed';
    if (phase === 'EARLY' && watermarkMs > maxTimestampMs(window)) return 'slow';
    const firing = phase === 'EARLY' ? trigger.earlyFirings : trigger.lateFirings;
    if (!firing) return 'fast';
    if (firing.elementCount !== undefined) {
      // Exact for a new window or one shard; with N shards, N × this shard's count estimates the merged count.
      const pending = stored === null ? count : (own.elementsInPane + count) * stored.shardCount;
      if (pending >= firing.elementCount) return 'slow';
    }
    if (firing.processingTimeDelayMs !== undefined) {
      const known = [stored?.paneFirstElementAtMs, own.firstElementInPaneAtMs].filter(
        (t): t is number => typeof t === 'number',
      );
      const firstMs = known.length > 0 ? Math.min(...known) : processingTimeMs;
      if (processingTimeMs >= firstMs + firing.processingTimeDelayMs) return 'slow';
    }
    return 'fast';
  }

  /** Applies one prepared bundle inside `tx`, its contributions to shard `guess` (see `applyPrepared`). */
  private async applyBundle(
    tx: WindowTransaction<Acc>,
    bundle: PreparedBundle<In>,
    watermark: WatermarkReader,
    guess: number,
    guests: ReadonlySet<string>,
  ): Promise<AppliedBundle> {
    const { key, windows, fresh, processingTimeMs } = bundle;
    const { shardCount } = this.options;
    const addresses = windows.map((window) => ({ key, window }));
    const read = await tx.read({
      windows: addresses,
      shards: addresses.map((a) => ({ ...a, shard: guess })),
    });
    const stored = read.windows.map((w) => w ?? null);
    // A window's own shard: the guess, reduced to the window's shard count if it was created with another N.
    const reduce = (shard: number) =>
      stored.map((s) => (s === null ? shard : shard % s.shardCount));
    const ownIndex = reduce(guess);
    // An event counted (or dropped) has its id in its own event shard's document of every window, so any delivery of
    // it, in whatever bundle, probes the same document; the bundle's contributions go to `ownIndex`.
    const dedupShards = new Map(fresh.map((e) => [e.eventId, reduce(this.eventShard(e.eventId))]));
    const probes = fresh.flatMap((e) =>
      (guests.has(e.eventId) ? [] : windows).map((window, i) => ({
        eventId: e.eventId,
        key,
        window,
        shard: dedupShards.get(e.eventId)?.[i] ?? 0,
      })),
    );
    const seen = probes.length === 0 ? [] : (await tx.read({ seen: probes })).seen;
    let at = 0;
    const elements = fresh.filter((e) => {
      if (guests.has(e.eventId)) return true;
      const answers = seen.slice(at, at + windows.length);
      at += windows.length;
      return answers.every((s) => s !== true);
    });
    const own = await Promise.all(
      stored.map(async (s, i) => {
        if (ownIndex[i] === guess) return read.shards[i] ?? null;
        const address = addresses[i] as WindowAddress;
        return (
          (await tx.read({ shards: [{ ...address, shard: ownIndex[i] ?? 0 }] })).shards[0] ?? null
        );
      }),
    );
    let watermarkMs = await watermark(processingTimeMs, false);
    if (stored.some((s) => s === null)) {
      const floors = read.floors;
      const known = stored.every((s, i) => s !== null || typeof floors[i] === 'number');
      if (known) {
        // Key groups: the group's bookkeeping document carries the highest watermark applied to it, garbage
        // collection included, read in this transaction: the same guarantee as a fresh read, without it.
        watermarkMs = Math.max(watermarkMs, ...floors.filter((f): f is number => f !== null));
      } else {
        // Read after the bookkeeping read: a window closed by a committed transaction is seen with the watermark
        // that closed it, so a too-late element cannot recreate a garbage-collected window.
        watermarkMs = Math.max(watermarkMs, await watermark(processingTimeMs, true));
      }
    }
    const wm = Math.max(watermarkMs, ...stored.map((s) => s?.watermarkMs ?? watermarkMs));
    const pt = Math.max(
      processingTimeMs,
      ...stored.map((s) => s?.processingTimeMs ?? processingTimeMs),
    );
    if (elements.length === 0) {
      return { outcomes: new Map(), panes: [], watermarkMs: wm, processingTimeMs: pt };
    }
    const plans = windows.map((window, i) =>
      this.plan(
        stored[i] ?? null,
        this.contributionOf(own[i] ?? null),
        window,
        elements.length,
        wm,
        pt,
      ),
    );

    const drops = new Map<string, WindowDrop[]>(elements.map((e) => [e.eventId, []]));
    let panes: OutboxPane[] = [];
    if (plans.includes('slow')) {
      const shards = await Promise.all(
        stored.map(async (s, i) => {
          if (s === null) return [];
          const all = this.shardAddresses(addresses[i] as WindowAddress, s.shardCount);
          const others = all.filter((a) => a.shard !== ownIndex[i]);
          const rest = (await tx.read({ shards: others })).shards;
          const merged: (StoredShard<Acc> | null)[] = [];
          let r = 0;
          for (const a of all)
            merged.push(a.shard === ownIndex[i] ? (own[i] ?? null) : (rest[r++] ?? null));
          return merged;
        }),
      );
      const timestamped = new Map<TimestampedElement<In>, WindowElement<In>>();
      for (const e of elements)
        timestamped.set({ key, value: e.value, timestampMs: e.timestampMs }, e);
      const state0 = this.keyState(key, stored, shards, wm, pt);
      const ctx = { inputWatermarkMs: wm, processingTimeMs: pt };
      const step1 = this.options.runner.advanceTime(state0, ctx);
      const step2 = this.options.runner.processElements(step1.state, [...timestamped.keys()], ctx);
      const accepted = new Map<string, WindowElement<In>[]>(
        windows.map((w) => [windowId(w), [...elements]]),
      );
      for (const d of step2.dropped) {
        const element = timestamped.get(d.element);
        if (element === undefined) throw new WindowingInputError('core dropped an unknown element');
        drops.get(element.eventId)?.push({ window: d.window, reason: d.reason });
        const list = accepted.get(windowId(d.window)) ?? [];
        accepted.set(
          windowId(d.window),
          list.filter((x) => x !== element),
        );
      }
      const fullShards = windows.map((w, i) =>
        stored[i] === null
          ? this.shardAddresses({ key, window: w }, this.options.shardCount).map(() => null)
          : (shards[i] ?? []),
      );
      panes = this.persist(tx, key, windows, stored, fullShards, step1, step2, {
        accepted,
        ownIndex,
        watermarkMs: wm,
        processingTimeMs: pt,
      });
    } else {
      windows.forEach((window, i) => {
        const plan = plans[i];
        if (plan === 'drop-expired' || plan === 'drop-closed') {
          const reason: DropReason = plan === 'drop-expired' ? 'EXPIRED_WINDOW' : 'CLOSED_WINDOW';
          for (const e of elements) drops.get(e.eventId)?.push({ window, reason });
          return;
        }
        const record = stored[i] ?? null;
        const shardCountOf = record?.shardCount ?? shardCount;
        let contribution = this.contributionOf(own[i] ?? null);
        for (const e of elements) {
          contribution = addToContribution(this.options.combineFn, contribution, e.value, pt);
        }
        tx.putShard({ key, window, shard: ownIndex[i] ?? 0, contribution });
        if (record === null)
          tx.putWindow(this.record(key, window, FRESH_PANE, shardCountOf, pt, wm, pt));
        else if (record.paneFirstElementAtMs === null) {
          // The pane's first element: one bookkeeping write per pane makes the pane's start visible to all shards.
          tx.putWindow({ ...record, paneFirstElementAtMs: pt });
        }
      });
    }

    const outcomes = new Map<string, ElementOutcome>();
    for (const e of elements) {
      const dropped = drops.get(e.eventId) ?? [];
      const kind = dropped.length === windows.length ? 'dropped' : 'counted';
      outcomes.set(e.eventId, { kind, dropped });
      // A guest's id goes to the document the bundle writes anyway: its home decides dedup, the id is for
      // operators (`eventOutcome`), so it need not be where a redelivery would probe.
      const shards = guests.has(e.eventId) ? ownIndex : (dedupShards.get(e.eventId) ?? ownIndex);
      tx.addSeen({ eventId: e.eventId, key, outcome: kind, windows, shards });
    }
    const { droppedTtlMs } = this.options;
    for (const inc of droppedIncrementsOf(key, guess, elements, drops, wm, pt, droppedTtlMs)) {
      tx.addDropped(inc);
    }
    return { outcomes, panes, watermarkMs: wm, processingTimeMs: pt };
  }

  private record(
    key: string,
    window: IntervalWindow,
    pane: PaneBookkeeping,
    shardCount: number,
    paneFirstElementAtMs: number | null,
    watermarkMs: number,
    processingTimeMs: number,
  ): StoredWindow {
    return {
      key,
      window,
      pane,
      shardCount,
      endOfWindowTimerMs: pane.phase === 'EARLY' ? maxTimestampMs(window) : null,
      gcTimerMs: maxTimestampMs(window) + this.options.runner.strategy.allowedLatenessMs,
      paneFirstElementAtMs,
      watermarkMs,
      processingTimeMs,
    };
  }

  /** Pending counters cleared after a firing; the accumulator kept when the window accumulates and lives on. */
  private reset(contribution: WindowContribution<Acc>, keep: boolean): WindowContribution<Acc> {
    return keep
      ? { accumulator: contribution.accumulator, elementsInPane: 0, firstElementInPaneAtMs: null }
      : emptyContribution(this.options.combineFn);
  }

  /**
   * Writes back the core's two steps (timers, then the bundle) per window: changed bookkeeping and shards, the
   * accepted elements on the bundle's shard, or deletes a garbage-collected window. Returns the outbox panes written.
   * @throws Error when the written shards would not merge to the core's state (a bug; nothing is committed)
   */
  private persist(
    tx: WindowTransaction<Acc>,
    key: string,
    windows: readonly IntervalWindow[],
    stored: readonly (StoredWindow | null)[],
    shards: readonly (readonly (StoredShard<Acc> | null)[])[],
    step1: StepResult<In, Acc, Out>,
    step2: StepResult<In, Acc, Out>,
    context: {
      accepted: ReadonlyMap<string, readonly WindowElement<In>[]>;
      /** Per window, the shard the accepted elements go to. */
      ownIndex: readonly number[];
      watermarkMs: number;
      processingTimeMs: number;
    },
  ): OutboxPane[] {
    const { combineFn, runner } = this.options;
    const accumulating = runner.strategy.accumulationMode === 'ACCUMULATING';
    windows.forEach((window, i) => {
      const s0 = stored[i] ?? null;
      const ws1 = step1.state.windows.find((w) => sameWindow(w.window, window));
      const ws2 = step2.state.windows.find((w) => sameWindow(w.window, window));
      const current = shards[i] ?? [];
      const address = { key, window };
      if (ws2 === undefined) {
        if (s0 !== null) {
          tx.deleteWindow(address, context.watermarkMs);
          current.forEach((shard, index) => {
            if (shard !== null) tx.deleteShard({ ...address, shard: index });
          });
        }
        return;
      }
      const before = s0?.pane ?? FRESH_PANE;
      const fired1 = s0 !== null && ws1 !== undefined && paneChanged(before, ws1.pane);
      const mid = ws1?.pane ?? FRESH_PANE;
      const fired2 = paneChanged(mid, ws2.pane);
      const keep1 = accumulating && mid.phase !== 'CLOSED';
      const keep2 = accumulating && ws2.pane.phase !== 'CLOSED';
      const own = context.ownIndex[i] ?? -1;
      const accepted = context.accepted.get(windowId(window)) ?? [];
      const next: WindowContribution<Acc>[] = current.map((shard, index) => {
        let c = this.contributionOf(shard);
        if (fired1) c = this.reset(c, keep1);
        if (index === own) {
          for (const e of accepted) {
            c = addToContribution(combineFn, c, e.value, context.processingTimeMs);
          }
        }
        if (fired2) c = this.reset(c, keep2);
        return c;
      });
      const merged = mergeContributions(combineFn, next);
      if (!isDeepStrictEqual(merged, ws2.contribution)) {
        throw new Error(
          `window state invariant broken for ${key} ${windowId(window)}: shards merge to ` +
            `${JSON.stringify(merged)}, the core holds ${JSON.stringify(ws2.contribution)}`,
        );
      }
      next.forEach((contribution, index) => {
        if (isDeepStrictEqual(contribution, this.contributionOf(current[index] ?? null))) return;
        tx.putShard({ ...address, shard: index, contribution });
      });
      const paneFirst = ws2.contribution.firstElementInPaneAtMs;
      if (s0 === null || paneChanged(s0.pane, ws2.pane) || s0.paneFirstElementAtMs !== paneFirst) {
        tx.putWindow(
          this.record(
            key,
            window,
            ws2.pane,
            s0?.shardCount ?? current.length,
            paneFirst,
            context.watermarkMs,
            context.processingTimeMs,
          ),
        );
      }
    });
    const panes = [...step1.panes, ...step2.panes].map((pane) =>
      outboxPaneOf(this.options.pipeline, this.options.paneRow, key, pane),
    );
    for (const pane of panes) tx.putOutboxPane(pane);
    return panes;
  }
}

/** The smallest processing-time delay of the strategy's early and late firings, or `null` (none configured). */
export function minProcessingTimeDelayMs(strategy: WindowingStrategy): number | null {
  const delays = [
    strategy.trigger.earlyFirings?.processingTimeDelayMs,
    strategy.trigger.lateFirings?.processingTimeDelayMs,
  ].filter((d): d is number => d !== undefined);
  return delays.length === 0 ? null : Math.min(...delays);
}
