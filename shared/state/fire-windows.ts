// fireWindows' logic (Cloud Scheduler, every minute): under a lease, advance the watermark by the idle rule, fire the
// windows whose timers are due (on-time, processing-time early/late, garbage collection), write their panes, and
// re-emit panes left in the outbox.
import { TransientError, errorText } from '../errors';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import {
  compareWindows,
  windowId,
  type IntervalWindow,
  type JsonValue,
  type WatermarkHold,
} from '../windowing';
import { fireSessions, type SessionFiring } from './fire-sessions';
import type { KeyedWindows } from './keyed-windows';
import type { PaneEmitter } from './pane-emitter';
import type { WatermarkTracker } from './watermark-tracker';
import {
  LeaseLostError,
  type Lease,
  type OutboxPane,
  type WindowAddress,
  type WindowStore,
} from './window-store';

/** Wiring and limits of a fireWindows run. */
export interface FireWindowsDeps<In, Acc extends JsonValue, Out> {
  readonly pipeline: string;
  readonly store: WindowStore<Acc>;
  readonly keyed: KeyedWindows<In, Acc, Out>;
  readonly tracker: WatermarkTracker;
  readonly emitter: PaneEmitter;
  readonly logger: Logger;
  /** Processing time, epoch ms. */
  readonly now: () => number;
  /** This instance's lease holder id (unique per instance). */
  readonly holder: string;
  /** Lease duration, ms. */
  readonly leaseMs: number;
  /** Windows fired in parallel. */
  readonly concurrency: number;
  /** Due windows handled per run (the rest wait for the next run). */
  readonly maxWindows: number;
  /** Outbox panes older than this (ms) are re-emitted. */
  readonly outboxGraceMs: number;
  /** Smallest processing-time firing delay of the strategy (`minProcessingTimeDelayMs`), `null` when none. */
  readonly processingTimeDelayMs: number | null;
  /**
   * Seam for the input backlog's watermark hold (`watermark-holds.ts` `readWatermarkHold`): called with the pass's
   * processing time before the idle rule, its `capMs` bounds the advance. Absent: no hold.
   * @throws TransientError when the holds cannot be read (the pass fails rather than advance past a backlog)
   */
  readonly watermarkHold?: (processingTimeMs: number) => Promise<WatermarkHold>;
  /**
   * The key-groups layout: the store's key groups are split into `partitions` (group mod partitions), each fired
   * under its own lease, so concurrent runs share the work. `only` limits a run to some partitions (default all,
   * starting at a random one). Absent: the per-window layout (one lease, `store` and `keyed` as they are).
   */
  readonly groups?: {
    readonly store: KeyGroupStore;
    readonly partitions: number;
    /** Partitions one run leases and fires at a time (default 1). */
    readonly partitionsInFlight?: number;
    readonly only?: readonly number[];
  };
  /**
   * The session layout (`sessions` window function): fireWindows fires session keys (`fire-sessions.ts`) instead of
   * the `store`'s windows, which stay empty.
   */
  readonly sessions?: SessionFiring<In, Acc, Out>;
  /**
   * Windows of the per-window layout still open after an update to key groups: fired with the per-window code path
   * under the pipeline's lease until none remains (docs/windows.md, migration).
   */
  readonly legacy?: {
    readonly store: WindowStore<Acc>;
    readonly keyed: KeyedWindows<In, Acc, Out>;
    /**
     * Whether per-window layout windows may still be open (given the run's watermark, epoch ms); absent: always.
     * When false the run skips the per-window queries and lease.
     */
    readonly active?: (watermarkMs: number) => Promise<boolean>;
  };
}

/** What fireWindows needs of a key-groups store. */
export interface KeyGroupStore {
  readonly keyGroups: number;
  findGroupsDue(
    groups: readonly number[],
    watermarkMs: number,
    processingTimeMs: number,
    limit: number,
  ): Promise<{ window: IntervalWindow; group: number }[]>;
}

/** The hold part of a run summary. */
export interface SummaryHold {
  /** Publish time of the oldest message still holding the watermark, epoch ms; `null` when none holds. */
  readonly oldestPublishTimeMs: number | null;
  /** The highest watermark the hold allowed, epoch ms; `null` when none holds. */
  readonly capMs: number | null;
  /** Held messages whose lease runs (stuck ones included). */
  readonly active: number;
  /** Holds past `OFFVIA_WATERMARK_HOLD_MAX_MS` (no longer holding; logged as stuck). */
  readonly stuck: number;
}

/** What one run did (also the HTTP response body). */
export interface FireWindowsSummary {
  /** `done`; `busy` (another run holds the lease); `partial` (stopped early: lease time or lease lost). */
  readonly status: 'done' | 'busy' | 'partial';
  readonly pipeline: string;
  /** Processing time of the run, epoch ms. */
  readonly processingTimeMs: number;
  /** Watermark after the idle rule, epoch ms; `null` before the first event. */
  readonly watermarkMs: number | null;
  readonly watermarkAdvanced: boolean;
  /** Windows whose timers were due. */
  readonly windowsDue: number;
  /** Windows fired (a pane or a state change). */
  readonly windowsFired: number;
  /** Windows garbage-collected (state deleted). */
  readonly windowsClosed: number;
  /** Windows whose firing failed transiently (retried next run). */
  readonly windowsFailed: number;
  readonly panesEmitted: number;
  readonly panesToBadData: number;
  /** Panes left in the outbox because BigQuery failed (retried next run). */
  readonly panesDeferred: number;
  /** Older outbox panes re-emitted by this run. */
  readonly outboxReemitted: number;
  readonly leaseFence: number | null;
  readonly durationMs: number;
  /** The watermark hold applied by this run, when holds are on. */
  readonly watermarkHold?: SummaryHold;
  /** Key-groups layout: partitions this run held and fired, key groups due in them. */
  readonly partitionsFired?: number;
  readonly groupsDue?: number;
}

/** Milliseconds of lease kept in reserve: no new window is started closer than this to the lease's end. */
const LEASE_RESERVE_MS = 10_000;
/** Outbox pages re-emitted per run (500 panes each). */
const MAX_OUTBOX_PAGES = 20;

function addressId(a: WindowAddress): string {
  return `${a.key}|${windowId(a.window)}`;
}

/**
 * One run. Safe when several run at once: only the lease holder works, every window transaction checks the lease's
 * fence, and each firing is a transaction over the window's documents (a firing cannot happen twice); pane rows
 * carry stable insertIds.
 * @throws TransientError when the lease, the watermark or a query fails; errors of a single window are counted
 * (`windowsFailed`) and logged instead, so one bad window does not stop the others
 */
export async function fireWindows<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
): Promise<FireWindowsSummary> {
  if (deps.sessions !== undefined) return fireSessions(deps, deps.sessions);
  if (deps.groups !== undefined) return fireKeyGroups(deps, deps.groups);
  const startedMs = deps.now();
  const pt = startedMs;
  const lease = await deps.store.acquireLease(deps.holder, pt, deps.leaseMs);
  const base = {
    pipeline: deps.pipeline,
    processingTimeMs: pt,
    windowsDue: 0,
    windowsFired: 0,
    windowsClosed: 0,
    windowsFailed: 0,
    panesEmitted: 0,
    panesToBadData: 0,
    panesDeferred: 0,
    outboxReemitted: 0,
  };
  if (lease === null) {
    logs.fireWindowsBusy(deps.logger, deps.pipeline, deps.holder, null);
    return {
      ...base,
      status: 'busy',
      watermarkMs: null,
      watermarkAdvanced: false,
      leaseFence: null,
      durationMs: deps.now() - startedMs,
    };
  }
  let released = false;
  try {
    const summary = await runUnderLease(deps, lease, pt, base);
    released = true;
    await deps.store.releaseLease(lease);
    const done = { ...summary, durationMs: deps.now() - startedMs };
    logs.fireWindowsDone(deps.logger, { ...done });
    return done;
  } finally {
    // On failure the lease is still given back; if that fails too, the run's own error is the one reported and the
    // lease simply expires.
    if (!released) {
      await deps.store.releaseLease(lease).catch((err: unknown) => {
        logs.fireWindowsFailed(deps.logger, deps.pipeline, `lease release: ${errorText(err)}`);
      });
    }
  }
}

async function runUnderLease<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
  lease: Lease,
  pt: number,
  base: Omit<
    FireWindowsSummary,
    'status' | 'watermarkMs' | 'watermarkAdvanced' | 'leaseFence' | 'durationMs'
  >,
): Promise<Omit<FireWindowsSummary, 'durationMs'>> {
  const hold = deps.watermarkHold === undefined ? undefined : await deps.watermarkHold(pt);
  const update = await deps.tracker.advance(pt, hold?.capMs ?? null);
  const watermarkMs = update.state.watermarkMs;
  if (update.written) {
    logs.watermarkAdvanced(deps.logger, {
      pipeline: deps.pipeline,
      watermarkMs,
      maxEventTimeMs: update.state.maxEventTimeMs,
      nowMs: pt,
    });
  }
  const found = [
    ...(await deps.store.findWindowsDue('endOfWindow', watermarkMs, deps.maxWindows)),
    ...(await deps.store.findWindowsDue('gc', watermarkMs, deps.maxWindows)),
    ...(deps.processingTimeDelayMs === null
      ? []
      : await deps.store.findPendingSince(pt - deps.processingTimeDelayMs, deps.maxWindows)),
  ];
  const unique = new Map(found.map((a) => [addressId(a), a]));
  const due = [...unique.values()]
    .sort((a, b) => compareWindows(a.window, b.window) || a.key.localeCompare(b.key))
    .slice(0, deps.maxWindows);

  let fired = 0;
  let closed = 0;
  let failed = 0;
  let stopped: 'lease_time' | 'lease_lost' | null = null;
  const panes: OutboxPane[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < due.length && stopped === null) {
      const address = due[next++] as WindowAddress;
      if (deps.now() > lease.expiresAtMs - LEASE_RESERVE_MS) {
        stopped = 'lease_time';
        return;
      }
      try {
        const result = await deps.keyed.fireWindow(address, watermarkMs, pt, lease);
        if (result.panes.length > 0 || result.closed) fired++;
        if (result.closed) closed++;
        panes.push(...result.panes);
      } catch (err) {
        if (err instanceof LeaseLostError) {
          logs.fireWindowsLeaseLost(deps.logger, deps.pipeline, lease.fence, err.message);
          stopped = 'lease_lost';
          return;
        }
        if (!(err instanceof TransientError)) throw err;
        failed++;
        logs.windowFiringFailed(
          deps.logger,
          {
            pipeline: deps.pipeline,
            key: address.key,
            windowStartMs: address.window.startMs,
            windowEndMs: address.window.endMs,
          },
          errorText(err),
        );
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, deps.concurrency) }, worker));

  let emitted = { written: 0, badData: 0 };
  let deferred = 0;
  const result = await deps.emitter.emitOrDefer(panes);
  if (result === 'deferred') deferred = panes.length;
  else emitted = result;

  // Panes a crashed or failed emitter left behind (the grace keeps clear of emissions in flight).
  let reemitted = 0;
  if (deferred === 0) {
    for (let page = 0; page < MAX_OUTBOX_PAGES; page++) {
      const left = await deps.store.listOutbox(pt - deps.outboxGraceMs, 500);
      if (left.length === 0) break;
      const again = await deps.emitter.emit(left);
      reemitted += again.written + again.badData;
      emitted = {
        written: emitted.written + again.written,
        badData: emitted.badData + again.badData,
      };
      if (left.length < 500) break;
    }
  }
  return {
    ...base,
    status: stopped === null ? 'done' : 'partial',
    watermarkMs: update.state.maxEventTimeMs === null ? null : watermarkMs,
    watermarkAdvanced: update.written,
    windowsDue: due.length,
    windowsFired: fired,
    windowsClosed: closed,
    windowsFailed: failed,
    panesEmitted: emitted.written,
    panesToBadData: emitted.badData,
    panesDeferred: deferred,
    outboxReemitted: reemitted,
    leaseFence: lease.fence,
    ...(hold !== undefined && {
      watermarkHold: {
        oldestPublishTimeMs: hold.oldestPublishTimeMs,
        capMs: hold.capMs,
        active: hold.active,
        stuck: hold.stuck.length,
      },
    }),
  };
}

type Counts = {
  -readonly [
    K in keyof Omit<
      FireWindowsSummary,
      | 'status'
      | 'watermarkMs'
      | 'watermarkAdvanced'
      | 'leaseFence'
      | 'durationMs'
      | 'pipeline'
      | 'processingTimeMs'
      | 'watermarkHold'
    >
  ]-?: number;
};

/**
 * One run in the key-groups layout: drains the per-window layout's windows first (migration), advances the watermark
 * once, then for each partition whose lease it gets, queries its due key groups (timers before the watermark or
 * processing time) and fires each group in one transaction, `concurrency` groups at a time, and writes the panes.
 * Partitions held by a concurrent run are skipped, so several runs fire disjoint partitions in parallel.
 * @throws TransientError when the watermark or a query fails; a group's failure is counted (`windowsFailed`)
 */
async function fireKeyGroups<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
  groups: NonNullable<FireWindowsDeps<In, Acc, Out>['groups']>,
): Promise<FireWindowsSummary> {
  const startedMs = deps.now();
  const pt = startedMs;
  const counts: Counts = {
    windowsDue: 0,
    windowsFired: 0,
    windowsClosed: 0,
    windowsFailed: 0,
    panesEmitted: 0,
    panesToBadData: 0,
    panesDeferred: 0,
    outboxReemitted: 0,
    partitionsFired: 0,
    groupsDue: 0,
  };
  const hold = deps.watermarkHold === undefined ? undefined : await deps.watermarkHold(pt);
  const update = await deps.tracker.advance(pt, hold?.capMs ?? null);
  const watermarkMs = update.state.watermarkMs;
  const { legacy } = deps;
  if (legacy !== undefined && (legacy.active === undefined || (await legacy.active(watermarkMs)))) {
    add(counts, await fireWindows(perWindowDeps(deps, legacy.store, legacy.keyed)));
  }
  if (update.written) {
    logs.watermarkAdvanced(deps.logger, {
      pipeline: deps.pipeline,
      watermarkMs,
      maxEventTimeMs: update.state.maxEventTimeMs,
      nowMs: pt,
    });
  }
  const all = Array.from({ length: groups.partitions }, (_, p) => p);
  const start = Math.floor(Math.random() * groups.partitions);
  const order = groups.only ?? all.map((_, i) => (start + i) % groups.partitions);
  let held = 0;
  let stopped = false;
  const fireOne = async (partition: number): Promise<void> => {
    const lease = await deps.store.acquireLease(
      deps.holder,
      pt,
      deps.leaseMs,
      `fireWindowsLease~p${partition}`,
    );
    if (lease === null) return;
    held++;
    try {
      const keyGroups = Array.from({ length: groups.store.keyGroups }, (_, g) => g).filter(
        (g) => g % groups.partitions === partition,
      );
      const due = await groups.store.findGroupsDue(keyGroups, watermarkMs, pt, deps.maxWindows);
      counts.groupsDue += due.length;
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < due.length) {
          const group = due[next++];
          if (group === undefined) return;
          if (deps.now() > lease.expiresAtMs - LEASE_RESERVE_MS) {
            stopped = true;
            return;
          }
          try {
            const fired = await deps.keyed.fireGroup(group.window, group.group, watermarkMs, pt);
            counts.windowsDue += fired.keysFired;
            counts.windowsFired += fired.keysFired;
            counts.windowsClosed += fired.keysClosed;
            // Each group's panes go to gold as soon as its transaction commits, while the other groups of the
            // partition are still firing: a partition's gold writes overlap its firings instead of following them.
            const result = await deps.emitter.emitOrDefer(fired.panes);
            if (result === 'deferred') counts.panesDeferred += fired.panes.length;
            else {
              counts.panesEmitted += result.written;
              counts.panesToBadData += result.badData;
            }
          } catch (err) {
            if (!(err instanceof TransientError)) throw err;
            counts.windowsFailed++;
            logs.windowFiringFailed(
              deps.logger,
              {
                pipeline: deps.pipeline,
                key: `group ${group.group}`,
                windowStartMs: group.window.startMs,
                windowEndMs: group.window.endMs,
              },
              errorText(err),
            );
          }
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, deps.concurrency) }, worker));
      counts.partitionsFired += 1;
    } finally {
      await deps.store.releaseLease(lease).catch((err: unknown) => {
        logs.fireWindowsFailed(deps.logger, deps.pipeline, `lease release: ${errorText(err)}`);
      });
    }
  };
  // Up to `partitionsInFlight` partitions at a time per run (each with `concurrency` groups in flight): one run
  // alone keeps several partitions' transactions going, and concurrent runs, starting at random partitions and
  // skipping leased ones, share the partitions between them.
  let nextPartition = 0;
  const partitionWorker = async (): Promise<void> => {
    while (nextPartition < order.length && !stopped) {
      const partition = order[nextPartition++];
      if (partition === undefined) return;
      await fireOne(partition);
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, groups.partitionsInFlight ?? 1) }, partitionWorker),
  );

  // Panes a crashed or failed emission left in the outbox (every run looks; re-emission is idempotent by insertId).
  if (counts.panesDeferred === 0 && held > 0) {
    for (let page = 0; page < MAX_OUTBOX_PAGES; page++) {
      const left = await deps.store.listOutbox(pt - deps.outboxGraceMs, 500);
      if (left.length === 0) break;
      const again = await deps.emitter.emit(left);
      counts.outboxReemitted += again.written + again.badData;
      counts.panesEmitted += again.written;
      counts.panesToBadData += again.badData;
      if (left.length < 500) break;
    }
  }
  const summary: FireWindowsSummary = {
    ...counts,
    status: held === 0 ? 'busy' : stopped ? 'partial' : 'done',
    pipeline: deps.pipeline,
    processingTimeMs: pt,
    watermarkMs: update.state.maxEventTimeMs === null ? null : watermarkMs,
    watermarkAdvanced: update.written,
    leaseFence: null,
    durationMs: deps.now() - startedMs,
    ...(hold !== undefined && {
      watermarkHold: {
        oldestPublishTimeMs: hold.oldestPublishTimeMs,
        capMs: hold.capMs,
        active: hold.active,
        stuck: hold.stuck.length,
      },
    }),
  };
  if (held === 0) logs.fireWindowsBusy(deps.logger, deps.pipeline, deps.holder, null);
  else logs.fireWindowsDone(deps.logger, { ...summary });
  return summary;
}

/** The same run's dependencies for the per-window layout's store and code path (the migration drain). */
function perWindowDeps<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
  store: WindowStore<Acc>,
  keyed: KeyedWindows<In, Acc, Out>,
): FireWindowsDeps<In, Acc, Out> {
  return {
    pipeline: deps.pipeline,
    store,
    keyed,
    tracker: deps.tracker,
    emitter: deps.emitter,
    logger: deps.logger,
    now: deps.now,
    holder: deps.holder,
    leaseMs: deps.leaseMs,
    concurrency: deps.concurrency,
    maxWindows: deps.maxWindows,
    outboxGraceMs: deps.outboxGraceMs,
    processingTimeDelayMs: deps.processingTimeDelayMs,
    ...(deps.watermarkHold !== undefined && { watermarkHold: deps.watermarkHold }),
  };
}

function add(counts: Counts, other: FireWindowsSummary): void {
  counts.windowsDue += other.windowsDue;
  counts.windowsFired += other.windowsFired;
  counts.windowsClosed += other.windowsClosed;
  counts.windowsFailed += other.windowsFailed;
  counts.panesEmitted += other.panesEmitted;
  counts.panesToBadData += other.panesToBadData;
  counts.panesDeferred += other.panesDeferred;
  counts.outboxReemitted += other.outboxReemitted;
}

/** An HTTP answer: status and JSON body. */
export interface HttpAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/**
 * Runs fireWindows and maps the outcome for Cloud Scheduler: 200 with the summary (also when busy or partial);
 * 503 when a window failed transiently or the run failed transiently (Scheduler retries); 500 for anything else,
 * logged with the error.
 */
export async function fireWindowsHttp<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
): Promise<HttpAnswer> {
  try {
    const summary = await fireWindows(deps);
    return { status: summary.windowsFailed > 0 ? 503 : 200, body: { ...summary } };
  } catch (err) {
    logs.fireWindowsFailed(deps.logger, deps.pipeline, errorText(err));
    return {
      status: err instanceof TransientError ? 503 : 500,
      body: { status: 'failed', pipeline: deps.pipeline, error: errorText(err) },
    };
  }
}
