// Session windows on the keyed store: one transaction per key applies a bundle (dedup, merge, firing) or fires the
// key's due timers, by running the pure core on the key's stored KeyState and writing back what it decided.
import { TransientError } from '../errors';
import {
  maxTimestampMs,
  processingTimeDeadlineMs,
  windowId,
  WindowingInputError,
  type IntervalWindow,
  type JsonValue,
  type KeyState,
  type StepResult,
  type TimestampedElement,
} from '../windowing';
import { DEDUP_ID_LENGTH, dedupIdOf, dedupIdsIn } from './ids';
import {
  bundleResultOf,
  type AppliedBundle,
  type BundleResult,
  type ElementOutcome,
  type KeyedWindowsOptions,
  type WatermarkReader,
  type WindowDrop,
  type WindowElement,
} from './keyed-windows';
import type { SessionStore, SessionTimers, SessionTransaction } from './session-store';
import { droppedIncrementsOf, outboxPaneOf, type Lease, type OutboxPane } from './window-store';

/**
 * Most open sessions one key may hold (its record is one Firestore document, at most 1 MiB; a session costs about
 * 300 bytes of state).
 */
export const MAX_SESSIONS_PER_KEY = 1_000;

/** Most dedup ids one key's open sessions may hold (16 bytes each: ~480 KiB at the limit). */
export const MAX_DEDUP_IDS_PER_KEY = 30_000;

/** Wiring of the session layout: as the key-groups layout's (`runner` for a sessions strategy), on a session store. */
export interface SessionWindowsOptions<In, Acc extends JsonValue, Out> extends Pick<
  KeyedWindowsOptions<In, Acc, Out>,
  'pipeline' | 'runner' | 'combineFn' | 'droppedTtlMs' | 'paneRow'
> {
  readonly store: SessionStore<Acc>;
  /** Limits of one key's record (default `MAX_SESSIONS_PER_KEY`, `MAX_DEDUP_IDS_PER_KEY`). */
  readonly maxSessionsPerKey?: number;
  readonly maxDedupIdsPerKey?: number;
}

/** What firing one key's timers did. */
export interface SessionFireResult {
  readonly panes: readonly OutboxPane[];
  /** Sessions garbage-collected (state deleted). */
  readonly closed: number;
}

function contains(outer: IntervalWindow, inner: IntervalWindow): boolean {
  return outer.startMs <= inner.startMs && inner.endMs <= outer.endMs;
}

/**
 * The session layout: each key's open sessions in one record (`SessionStore`), so a bundle that bridges two sessions
 * merges them in the transaction that adds it, exactly as the core merges them (`mergeSessions`). Once-only counting
 * by dedup ids kept in the sessions themselves; firing of merged sessions (EARLY / ON_TIME / LATE panes, both
 * accumulation modes), garbage collection and the late-drop rule are the core's, unchanged.
 */
export class SessionWindows<In, Acc extends JsonValue, Out> {
  private readonly maxSessions: number;
  private readonly maxIds: number;

  constructor(private readonly options: SessionWindowsOptions<In, Acc, Out>) {
    if (options.runner.strategy.windowFn.kind !== 'sessions') {
      throw new WindowingInputError(
        `the session layout needs a sessions window function, got ${options.runner.strategy.windowFn.kind}`,
      );
    }
    this.maxSessions = options.maxSessionsPerKey ?? MAX_SESSIONS_PER_KEY;
    this.maxIds = options.maxDedupIdsPerKey ?? MAX_DEDUP_IDS_PER_KEY;
  }

  /**
   * Applies a bundle of one key's elements in one transaction: elements whose dedup id is in one of the key's
   * sessions (or repeated in the bundle) are `duplicate`; the rest go through the core (`processElements` at the
   * watermark and the bundle's latest arrival time), which drops, merges, adds and fires. A missing record (no open
   * session) reads the watermark afresh, so a redelivery of an event whose session was garbage-collected is dropped.
   * @throws WindowingInputError for an empty bundle; TransientError when the store fails or the key's record would
   *   exceed its limits (the delivery is refused; it succeeds once sessions close)
   */
  async processBundle(
    key: string,
    elements: readonly WindowElement<In>[],
    watermark: WatermarkReader,
  ): Promise<BundleResult> {
    if (elements.length === 0) throw new WindowingInputError('empty bundle');
    const processingTimeMs = Math.max(...elements.map((e) => e.receivedAtMs));
    const applied = await this.options.store.transactSessions('apply session bundle', (tx) =>
      this.applyBundle(tx, key, elements, processingTimeMs, watermark),
    );
    return bundleResultOf(elements, applied);
  }

  private async applyBundle(
    tx: SessionTransaction<Acc>,
    key: string,
    elements: readonly WindowElement<In>[],
    processingTimeMs: number,
    watermark: WatermarkReader,
  ): Promise<AppliedBundle> {
    const stored = await tx.readSessionKey(key);
    const seen = stored?.seen ?? {};
    const fresh = new Map<string, WindowElement<In>>();
    for (const e of elements) {
      const id = dedupIdOf(e.eventId);
      if (fresh.has(e.eventId) || Object.values(seen).some((text) => dedupIdsIn(text).includes(id)))
        continue;
      fresh.set(e.eventId, e);
    }
    // A key with no record may have had sessions closed by a watermark this instance has not cached yet.
    const read = await watermark(processingTimeMs, stored === null);
    const state0 = stored?.state ?? this.options.runner.initialState(key);
    const wm = Math.max(read, state0.inputWatermarkMs);
    const pt = Math.max(processingTimeMs, state0.processingTimeMs);
    if (fresh.size === 0) {
      return { outcomes: new Map(), panes: [], watermarkMs: wm, processingTimeMs: pt };
    }
    const byElement = new Map<TimestampedElement<In>, WindowElement<In>>();
    for (const e of fresh.values()) {
      byElement.set({ key, value: e.value, timestampMs: e.timestampMs }, e);
    }
    const step = this.options.runner.processElements(state0, [...byElement.keys()], {
      inputWatermarkMs: wm,
      processingTimeMs: pt,
    });
    const drops = new Map<string, WindowDrop[]>();
    for (const d of step.dropped) {
      const element = byElement.get(d.element);
      if (element === undefined) throw new WindowingInputError('core dropped an unknown element');
      drops.set(element.eventId, [{ window: d.window, reason: d.reason }]);
    }
    const nextSeen = this.carrySeen(state0, step.state, seen);
    const closedBefore = new Set(
      state0.windows.filter((w) => w.pane.phase === 'CLOSED').map((w) => windowId(w.window)),
    );
    const outcomes = new Map<string, ElementOutcome>();
    for (const [timestamped, e] of byElement) {
      const dropped = drops.get(e.eventId) ?? [];
      outcomes.set(e.eventId, { kind: dropped.length > 0 ? 'dropped' : 'counted', dropped });
      // A counted event's id goes to the session it landed in; one dropped from a closed session to that session
      // (a redelivery is then a duplicate, not a second drop). An expired window has no state to hold it.
      const proto = {
        startMs: timestamped.timestampMs,
        endMs: timestamped.timestampMs + this.gapMs,
      };
      const home =
        dropped[0]?.reason === 'EXPIRED_WINDOW'
          ? undefined
          : this.homeOf(step.state, proto, dropped.length > 0 ? null : closedBefore);
      if (home !== undefined) {
        const id = windowId(home);
        nextSeen[id] = (nextSeen[id] ?? '') + dedupIdOf(e.eventId);
      }
    }
    const panes = this.persist(tx, key, step, nextSeen);
    const increments = droppedIncrementsOf(
      key,
      0,
      [...fresh.values()],
      drops,
      wm,
      pt,
      this.options.droppedTtlMs,
    );
    for (const increment of increments) tx.addDropped(increment);
    return { outcomes, panes, watermarkMs: wm, processingTimeMs: pt };
  }

  private get gapMs(): number {
    const fn = this.options.runner.strategy.windowFn;
    return fn.kind === 'sessions' ? fn.gapMs : 0;
  }

  /**
   * The session an element's proto-window ended up in: the one containing it that was not closed before the step
   * (merging skips closed sessions), or, for a `CLOSED_WINDOW` drop (`closedBefore` = null), the closed one.
   */
  private homeOf(
    state: KeyState<Acc>,
    proto: IntervalWindow,
    closedBefore: ReadonlySet<string> | null,
  ): IntervalWindow | undefined {
    const containing = state.windows.filter((w) => contains(w.window, proto));
    const pick =
      closedBefore === null
        ? containing.find((w) => w.pane.phase === 'CLOSED')
        : containing.find((w) => !closedBefore.has(windowId(w.window)));
    return pick?.window;
  }

  /**
   * Moves dedup ids from the sessions before a step to the sessions after it: a session kept keeps its ids, a
   * session merged away hands them to the live session that contains it, a garbage-collected one drops them.
   */
  private carrySeen(
    before: KeyState<Acc>,
    after: KeyState<Acc>,
    seen: Readonly<Record<string, string>>,
  ): Record<string, string> {
    const next: Record<string, string> = {};
    const afterIds = new Set(after.windows.map((w) => windowId(w.window)));
    for (const w of before.windows) {
      const id = windowId(w.window);
      const ids = seen[id];
      if (ids === undefined || ids === '') continue;
      let target: string | undefined;
      if (afterIds.has(id)) target = id;
      else {
        const into = after.windows.find(
          (a) => a.pane.phase !== 'CLOSED' && contains(a.window, w.window),
        );
        target = into === undefined ? undefined : windowId(into.window);
      }
      if (target !== undefined) next[target] = (next[target] ?? '') + ids;
    }
    return next;
  }

  /** The record's timers for the state the core left (see `SessionTimers`). */
  timersOf(state: KeyState<Acc>): SessionTimers {
    const { strategy } = this.options.runner;
    let eventTimerMs: number | null = null;
    let processingTimerMs: number | null = null;
    for (const w of state.windows) {
      const end = maxTimestampMs(w.window);
      const t = w.pane.phase === 'EARLY' ? end : end + strategy.allowedLatenessMs;
      eventTimerMs = eventTimerMs === null ? t : Math.min(eventTimerMs, t);
      const deadline = processingTimeDeadlineMs(strategy, w);
      if (deadline !== null) {
        processingTimerMs =
          processingTimerMs === null ? deadline : Math.min(processingTimerMs, deadline);
      }
    }
    return { eventTimerMs, processingTimerMs };
  }

  /**
   * Writes the key's record (or deletes it when no session is left) and the step's panes.
   * @throws TransientError when the record would exceed its limits (nothing is written)
   */
  private persist(
    tx: SessionTransaction<Acc>,
    key: string,
    step: StepResult<In, Acc, Out>,
    seen: Record<string, string>,
  ): OutboxPane[] {
    const { state } = step;
    const ids = Object.values(seen).reduce((n, text) => n + text.length / DEDUP_ID_LENGTH, 0);
    if (state.windows.length > this.maxSessions || ids > this.maxIds) {
      throw new TransientError(
        'apply session bundle',
        `key ${JSON.stringify(key)} would hold ${state.windows.length} open sessions and ${ids} dedup ids, ` +
          `above the session layout's limits (${this.maxSessions} sessions, ${this.maxIds} ids per key); the ` +
          'delivery is refused until the watermark closes sessions',
      );
    }
    if (state.windows.length === 0) tx.deleteSessionKey(key);
    else tx.putSessionKey({ state, seen }, this.timersOf(state));
    const panes = step.panes.map((pane) =>
      outboxPaneOf(this.options.pipeline, this.options.paneRow, key, pane),
    );
    for (const pane of panes) tx.putOutboxPane(pane);
    return panes;
  }

  /**
   * Fires one key's due timers in one transaction (`advanceTime` at the watermark and processing time): on-time
   * panes, processing-time early/late panes, garbage collection. With `lease`, the transaction checks it first.
   * @throws TransientError when the store fails; LeaseLostError when the lease moved on
   */
  async fireKey(
    key: string,
    watermarkMs: number,
    processingTimeMs: number,
    lease?: Lease,
  ): Promise<SessionFireResult> {
    return this.options.store.transactSessions('fire session key', async (tx) => {
      if (lease !== undefined) await tx.checkLease(lease);
      const stored = await tx.readSessionKey(key);
      if (stored === null) return { panes: [], closed: 0 };
      const step = this.options.runner.advanceTime(stored.state, {
        inputWatermarkMs: watermarkMs,
        processingTimeMs,
      });
      const left = new Set(step.state.windows.map((w) => windowId(w.window)));
      const closed = stored.state.windows.filter((w) => !left.has(windowId(w.window))).length;
      if (step.panes.length === 0 && closed === 0) {
        // Nothing fired (the timer was found by a stale query): only the clamps would change; write nothing.
        return { panes: [], closed: 0 };
      }
      const panes = this.persist(
        tx,
        key,
        step,
        this.carrySeen(stored.state, step.state, stored.seen),
      );
      return { panes, closed };
    });
  }
}
