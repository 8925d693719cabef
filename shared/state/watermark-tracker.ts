// The pipeline's watermark in the keyed store: the pure policy (shared/windowing) applied with compare-and-set
// writes, spaced in processing time and coalesced per instance, so a busy pipeline does not contend on one document.
import {
  advanceWatermarkByProcessingTime,
  applyWatermarkHold,
  INITIAL_WATERMARK_STATE,
  observeEventTime,
  type JsonValue,
  type WatermarkPolicy,
  type WatermarkState,
} from '../windowing';
import type { StoredWatermark, WindowStore } from './window-store';

/** Tuning of the tracker (all ms). */
export interface WatermarkTrackerOptions {
  /** The heuristic (bounded out-of-orderness, idle rule, future skew). */
  readonly policy: WatermarkPolicy;
  /** How long a read is reused for decisions (`OFFVIA_WATERMARK_CACHE_MS`); 0 reads every time. */
  readonly cacheMs: number;
  /**
   * Least processing time between two writes from events (`OFFVIA_WATERMARK_WRITE_INTERVAL_MS`): Firestore sustains
   * about one write per second per document. A larger event time seen inside the interval is kept by the instance
   * and written by its next observation after the interval.
   */
  readonly minWriteIntervalMs: number;
  /** Compare-and-set attempts per write before giving up (another writer moved it; the next one retries). */
  readonly maxAttempts?: number;
}

/** What one observation or advance did. */
export interface WatermarkUpdate {
  /** The state as this instance now knows it. */
  readonly state: WatermarkState;
  /** The event was stamped beyond processing time + `maxFutureSkewMs` and ignored (observations only). */
  readonly futureDated: boolean;
  /** This call wrote the record. */
  readonly written: boolean;
}

function sameState(a: WatermarkState, b: WatermarkState): boolean {
  return (
    a.watermarkMs === b.watermarkMs &&
    a.maxEventTimeMs === b.maxEventTimeMs &&
    a.maxEventTimeSeenAtMs === b.maxEventTimeSeenAtMs
  );
}

/** The largest event time this instance saw but has not written yet, and when (both epoch ms). */
interface Pending {
  readonly eventTimeMs: number;
  readonly seenAtMs: number;
}

/**
 * One instance's view of the pipeline watermark. Every write is `policy(state read)` under compare-and-set, and the
 * policy never lowers the watermark, so the stored watermark never goes backwards whatever the interleaving of
 * instances. The instance writes at most once per `minWriteIntervalMs` and one write at a time; an unwritten
 * maximum only makes the watermark lag (conservative: a later firing, never a wrong drop).
 */
export class WatermarkTracker {
  private cached: { stored: StoredWatermark | null; readAtMs: number } | undefined;
  /** The largest accepted event time this instance has seen but not written, and when it saw it. */
  private pending: Pending | null = null;
  private writing = false;
  /** The watermark read in flight, shared by concurrent callers. */
  private inFlight: Promise<StoredWatermark | null> | undefined;
  /** The read that starts when `inFlight` ends, shared by `fresh` callers that arrived during it. */
  private queuedRead: Promise<StoredWatermark | null> | undefined;
  private readonly maxAttempts: number;

  constructor(
    private readonly store: Pick<WindowStore<JsonValue>, 'readWatermark' | 'writeWatermark'>,
    private readonly options: WatermarkTrackerOptions,
  ) {
    this.maxAttempts = options.maxAttempts ?? 5;
  }

  /**
   * The watermark to decide with at processing time `processingTimeMs`, epoch ms: the cached read while younger
   * than `cacheMs`, else a fresh (strongly consistent) read. A lower bound of the stored watermark.
   * @throws TransientError when the store cannot be read
   */
  async watermarkMs(processingTimeMs: number, fresh = false): Promise<number> {
    const stored = await this.read(processingTimeMs, fresh);
    return (stored?.state ?? INITIAL_WATERMARK_STATE).watermarkMs;
  }

  /**
   * Feeds one event time (epoch ms) seen at `processingTimeMs` into the policy. A future-dated event (beyond
   * processing time + `maxFutureSkewMs`) is ignored. Otherwise the record is written when this instance holds a
   * larger maximum than the record, no write of this instance is in flight, and the last write is at least
   * `minWriteIntervalMs` old; the call then resolves after that write.
   * @throws TransientError when the store fails
   */
  async observe(eventTimeMs: number, processingTimeMs: number): Promise<WatermarkUpdate> {
    const { policy } = this.options;
    const known = (await this.read(processingTimeMs, false))?.state ?? INITIAL_WATERMARK_STATE;
    if (observeEventTime(policy, known, eventTimeMs, processingTimeMs).futureDated) {
      return { state: known, futureDated: true, written: false };
    }
    if (this.pending === null || eventTimeMs > this.pending.eventTimeMs) {
      this.pending = { eventTimeMs, seenAtMs: processingTimeMs };
    }
    if (this.writing) return { state: known, futureDated: false, written: false };
    this.writing = true;
    try {
      return await this.flush(processingTimeMs);
    } finally {
      this.writing = false;
    }
  }

  /** Writes the pending maximum if it changes the record and the interval has passed. */
  private flush(processingTimeMs: number): Promise<WatermarkUpdate> {
    const { policy, minWriteIntervalMs } = this.options;
    return this.update(processingTimeMs, false, (base, pending, stored) => {
      if (pending === null) return null;
      const next = observeEventTime(policy, base, pending.eventTimeMs, pending.seenAtMs).state;
      if (sameState(next, base)) {
        if (this.pending === pending) this.pending = null;
        return null;
      }
      const spaced = stored === null || processingTimeMs - stored.updatedAtMs >= minWriteIntervalMs;
      return spaced ? next : null;
    });
  }

  /**
   * Lets processing time pass (fireWindows, every minute): fresh read, this instance's pending maximum, the idle
   * rule, and a write if that moved the record (not spaced: one caller a minute).
   *
   * `holdCapMs` (epoch ms, `null` for none) is the watermark hold of the input backlog (`watermarkHoldAt`): the
   * advance goes no further than it, and never back (`applyWatermarkHold`).
   * @throws TransientError when the store fails
   */
  advance(processingTimeMs: number, holdCapMs: number | null = null): Promise<WatermarkUpdate> {
    const { policy } = this.options;
    return this.update(processingTimeMs, true, (base, pending) => {
      const observed =
        pending === null
          ? base
          : observeEventTime(policy, base, pending.eventTimeMs, pending.seenAtMs).state;
      const next = applyWatermarkHold(
        base,
        advanceWatermarkByProcessingTime(policy, observed, processingTimeMs),
        holdCapMs,
      );
      return sameState(next, base) ? null : next;
    });
  }

  /**
   * The compare-and-set loop of `flush` and `advance`: reads the record (`fresh`: strongly consistent), asks `next`
   * for the state to write given the record, this instance's pending maximum and the stored version (`null`: leave
   * the record as it is), and writes it under compare-and-set, re-reading after a lost race (at most
   * `maxAttempts` times; then the record as last read, unwritten).
   * @throws TransientError when the store fails
   */
  private async update(
    processingTimeMs: number,
    fresh: boolean,
    next: (
      base: WatermarkState,
      pending: Pending | null,
      stored: StoredWatermark | null,
    ) => WatermarkState | null,
  ): Promise<WatermarkUpdate> {
    let stored = await this.read(processingTimeMs, fresh);
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      const base = stored?.state ?? INITIAL_WATERMARK_STATE;
      const pending = this.pending;
      const state = next(base, pending, stored);
      if (state === null) return { state: base, futureDated: false, written: false };
      const committed = await this.commit(state, processingTimeMs, stored, pending);
      if (committed !== null) return committed;
      stored = await this.read(processingTimeMs, true);
    }
    return { state: stored?.state ?? INITIAL_WATERMARK_STATE, futureDated: false, written: false };
  }

  /**
   * Writes `next` under compare-and-set against `expected`; on success caches it and clears `pending` if no larger
   * event time arrived meanwhile. `null` when another writer moved the record first (re-read and retry).
   * @throws TransientError when the store fails
   */
  private async commit(
    next: WatermarkState,
    processingTimeMs: number,
    expected: StoredWatermark | null,
    pending: Pending | null,
  ): Promise<WatermarkUpdate | null> {
    const written = await this.store.writeWatermark(next, processingTimeMs, expected);
    if (written === null) return null;
    this.cached = { stored: written, readAtMs: processingTimeMs };
    if (this.pending === pending) this.pending = null;
    return { state: written.state, futureDated: false, written: true };
  }

  private async read(processingTimeMs: number, fresh: boolean): Promise<StoredWatermark | null> {
    const cached = this.cached;
    // A read taken at a later processing time than the caller's (concurrent callers) is fresher than needed.
    if (
      !fresh &&
      cached !== undefined &&
      processingTimeMs - cached.readAtMs < this.options.cacheMs
    ) {
      return cached.stored;
    }
    return this.sharedRead(processingTimeMs, fresh);
  }

  /**
   * One document read serves every concurrent caller (single flight), so a cache expiry under load costs one read,
   * not one per invocation in flight. A cached-read caller joins the read in flight; a `fresh` caller must see every
   * commit that finished before its call, so it joins only the read queued behind the one in flight.
   */
  private sharedRead(processingTimeMs: number, fresh: boolean): Promise<StoredWatermark | null> {
    const inFlight = this.inFlight;
    if (inFlight === undefined) return this.startRead(processingTimeMs);
    if (!fresh) return inFlight;
    this.queuedRead ??= inFlight.then(
      () => this.startQueued(processingTimeMs),
      () => this.startQueued(processingTimeMs),
    );
    return this.queuedRead;
  }

  private startQueued(processingTimeMs: number): Promise<StoredWatermark | null> {
    this.queuedRead = undefined;
    return this.startRead(processingTimeMs);
  }

  private startRead(processingTimeMs: number): Promise<StoredWatermark | null> {
    const read = this.readOnce(processingTimeMs).finally(() => {
      if (this.inFlight === read) this.inFlight = undefined;
    });
    this.inFlight = read;
    return read;
  }

  private async readOnce(processingTimeMs: number): Promise<StoredWatermark | null> {
    const stored = await this.store.readWatermark();
    const previous = this.cached;
    // Concurrent reads and writes finish in any order: never replace the cache with an older state.
    const older =
      previous?.stored != null &&
      (stored === null ||
        stored.state.watermarkMs < previous.stored.state.watermarkMs ||
        (stored.state.maxEventTimeMs ?? -Infinity) <
          (previous.stored.state.maxEventTimeMs ?? -Infinity));
    if (!older) {
      this.cached = {
        stored,
        readAtMs: Math.max(processingTimeMs, previous?.readAtMs ?? processingTimeMs),
      };
    }
    return stored;
  }
}
