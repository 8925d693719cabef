// fireWindows' logic (Cloud Scheduler, every minute), one firing loop for every layout: advance the watermark by the
// idle rule, fire the due key groups, windows or session keys partition by partition under leases, write their panes
// and re-emit panes left in the outbox.
import { TransientError, errorText } from '../errors';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import { type IntervalWindow, type JsonValue, type WatermarkHold } from '../windowing';
import type { KeyedWindows } from './keyed-windows';
import type { PaneEmitter } from './pane-emitter';
import type { SessionStore } from './session-store';
import type { SessionWindows } from './session-windows';
import type { WatermarkTracker } from './watermark-tracker';
import { LeaseLostError, type Lease, type OutboxPane, type WindowStore } from './window-store';

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
   * starting at a random one). Either this or `sessions` must be given.
   */
  readonly groups?: {
    readonly store: KeyGroupStore;
    readonly partitions: number;
    /** Partitions one run leases and fires at a time (default 1; `SessionFiring` the same). */
    readonly partitionsInFlight?: number;
    readonly only?: readonly number[];
  };
  /**
   * The session layout (`sessions` window function): fireWindows fires session keys instead of the `store`'s
   * windows, which stay empty; partitioned by the key's group as the key-groups layout is.
   */
  readonly sessions?: SessionFiring<In, Acc, Out>;
}

/** What fireWindows needs of the session layout. */
export interface SessionFiring<In, Acc extends JsonValue, Out> {
  readonly store: SessionStore<Acc>;
  readonly sessions: SessionWindows<In, Acc, Out>;
  /** Partitions of the session keys (group mod partitions), each fired under its own lease (default 1). */
  readonly partitions?: number;
  readonly partitionsInFlight?: number;
}

/** What fireWindows and its timer loop need of a key-groups store (`GroupedFirestoreWindowStore`). */
export interface KeyGroupStore {
  readonly keyGroups: number;
  /** Key groups of `groups` with a timer due at the watermark or processing time (epoch ms), at most `limit`. */
  findGroupsDue(
    groups: readonly number[],
    watermarkMs: number,
    processingTimeMs: number,
    limit: number,
  ): Promise<{ window: IntervalWindow; group: number }[]>;
  /** The earliest processing-time deadline of any key (epoch ms), `null` when none is pending. */
  nextTimers(): Promise<{ processingTimeMs: number | null }>;
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
  /** Publish time of the newest processed heartbeat, epoch ms; `null` before the first (heartbeat rule only). */
  readonly heartbeatPublishTimeMs?: number | null;
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
  /** Fence of the last lease the run held (the pipeline's, or a partition's); `null` when it held none. */
  readonly leaseFence: number | null;
  readonly durationMs: number;
  /** The watermark hold applied by this run, when holds are on. */
  readonly watermarkHold?: SummaryHold;
  /** Partitions this run held and fired; units (key groups, windows, session keys) due in them. */
  readonly partitionsFired?: number;
  readonly groupsDue?: number;
}

/** Milliseconds of lease kept in reserve: no new unit is started closer than this to the lease's end. */
const LEASE_RESERVE_MS = 10_000;
/** Outbox pages re-emitted per run (500 panes each). */
const MAX_OUTBOX_PAGES = 20;

/** What firing one unit (a key group's window, a window, a session key) did. */
interface UnitFired {
  /** Keys (or windows) whose timers were due, fired (a pane or a state change) and garbage-collected. */
  readonly due: number;
  readonly fired: number;
  readonly closed: number;
  readonly panes: readonly OutboxPane[];
}

/**
 * A layout as the firing loop sees it: its state is spread over `partitions` (group mod partitions), each fired
 * under its own lease, and a partition's due units are found by `findDue` and fired one transaction each by `fire`.
 */
interface Firing<U> {
  readonly partitions: number;
  readonly partitionsInFlight: number;
  /** The partitions to try, in order (default all, starting at a random one). */
  readonly only?: readonly number[];
  findDue(partition: number, watermarkMs: number, processingTimeMs: number): Promise<U[]>;
  fire(unit: U, watermarkMs: number, processingTimeMs: number, lease: Lease): Promise<UnitFired>;
  /** The unit for logs: key and window (0, 0 for a session key). */
  where(unit: U): { key: string; windowStartMs: number; windowEndMs: number };
}

/** The counters of a summary that the passes of one run add up (`combineSummaries`). */
export const PASS_COUNTS = [
  'windowsDue',
  'windowsFired',
  'windowsClosed',
  'windowsFailed',
  'panesEmitted',
  'panesToBadData',
  'panesDeferred',
  'outboxReemitted',
] as const;
type Counts = Record<(typeof PASS_COUNTS)[number] | 'partitionsFired' | 'groupsDue', number>;

/**
 * The key groups of a run that fires no session layout.
 * @throws Error when neither `groups` nor `sessions` is wired (a composition bug: the per-window layout is retired)
 */
export function keyGroupsOf<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
): NonNullable<FireWindowsDeps<In, Acc, Out>['groups']> {
  if (deps.groups === undefined) {
    throw new Error(`fireWindows of ${deps.pipeline}: neither key groups nor sessions are wired`);
  }
  return deps.groups;
}

/** Key groups of `partition` among `keyGroups`. */
function groupsOf(partition: number, keyGroups: number, partitions: number): number[] {
  return Array.from({ length: keyGroups }, (_, g) => g).filter((g) => g % partitions === partition);
}

/** The key-groups layout: a unit is one key group's window, fired in one transaction with every due key. */
function keyGroupFiring<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
  groups: NonNullable<FireWindowsDeps<In, Acc, Out>['groups']>,
): Firing<{ window: IntervalWindow; group: number }> {
  return {
    partitions: groups.partitions,
    partitionsInFlight: groups.partitionsInFlight ?? 1,
    ...(groups.only !== undefined && { only: groups.only }),
    findDue: (partition, watermarkMs, pt) =>
      groups.store.findGroupsDue(
        groupsOf(partition, groups.store.keyGroups, groups.partitions),
        watermarkMs,
        pt,
        deps.maxWindows,
      ),
    fire: async (unit, watermarkMs, pt) => {
      const fired = await deps.keyed.fireGroup(unit.window, unit.group, watermarkMs, pt);
      return {
        due: fired.keysFired,
        fired: fired.keysFired,
        closed: fired.keysClosed,
        panes: fired.panes,
      };
    },
    where: (unit) => ({
      key: `group ${unit.group}`,
      windowStartMs: unit.window.startMs,
      windowEndMs: unit.window.endMs,
    }),
  };
}

/** The session layout: a unit is one key with all its sessions, partitioned by the key's group. */
function sessionFiring<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
  sessions: SessionFiring<In, Acc, Out>,
): Firing<string> {
  const partitions = sessions.partitions ?? 1;
  return {
    partitions,
    partitionsInFlight: sessions.partitionsInFlight ?? 1,
    findDue: (partition, watermarkMs, pt) =>
      sessions.store.findSessionKeysDue(
        partitions === 1 ? null : groupsOf(partition, sessions.store.keyGroups, partitions),
        watermarkMs,
        pt,
        deps.maxWindows,
      ),
    fire: async (key, watermarkMs, pt, lease) => {
      const result = await sessions.sessions.fireKey(key, watermarkMs, pt, lease);
      const fired = result.panes.length > 0 || result.closed > 0 ? 1 : 0;
      return { due: 1, fired, closed: result.closed, panes: result.panes };
    },
    where: (key) => ({ key, windowStartMs: 0, windowEndMs: 0 }),
  };
}

/** What the firing loop did over one layout. */
interface LoopResult {
  /** Partitions whose lease this run held. */
  readonly held: number;
  /** Whether the run stopped early (lease time or lease lost). */
  readonly stopped: boolean;
  /** The fence of the last lease held. */
  readonly fence: number | null;
}

/**
 * The one firing loop, for every layout: for each partition whose lease it gets (up to `partitionsInFlight` at a
 * time; partitions leased by a concurrent run are skipped, so runs share the work), finds the due units and fires
 * them `concurrency` at a time, writing each unit's panes to gold as soon as its transaction commits; then re-emits
 * panes an earlier emission left in the outbox. Adds what it did to `counts`.
 * @throws TransientError when a lease or a query fails; a unit's transient failure is counted (`windowsFailed`)
 */
async function fireLoop<In, Acc extends JsonValue, Out, U>(
  deps: FireWindowsDeps<In, Acc, Out>,
  firing: Firing<U>,
  watermarkMs: number,
  pt: number,
  counts: Counts,
): Promise<LoopResult> {
  const all = Array.from({ length: firing.partitions }, (_, p) => p);
  const start = Math.floor(Math.random() * firing.partitions);
  const order = firing.only ?? all.map((_, i) => (start + i) % firing.partitions);
  let held = 0;
  let stopped = false;
  let fence: number | null = null;
  const fireOne = async (partition: number): Promise<void> => {
    const lease = await deps.store.acquireLease(
      deps.holder,
      pt,
      deps.leaseMs,
      `fireWindowsLease~p${partition}`,
    );
    if (lease === null) return;
    held++;
    fence = lease.fence;
    try {
      const due = await firing.findDue(partition, watermarkMs, pt);
      counts.groupsDue += due.length;
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < due.length && !stopped) {
          const unit = due[next++] as U;
          if (deps.now() > lease.expiresAtMs - LEASE_RESERVE_MS) {
            stopped = true;
            return;
          }
          try {
            const fired = await firing.fire(unit, watermarkMs, pt, lease);
            counts.windowsDue += fired.due;
            counts.windowsFired += fired.fired;
            counts.windowsClosed += fired.closed;
            // Each unit's panes go to gold as soon as its transaction commits, while the partition's other units
            // are still firing: a partition's gold writes overlap its firings instead of following them.
            if (fired.panes.length === 0) continue;
            const result = await deps.emitter.emitOrDefer([...fired.panes]);
            if (result === 'deferred') counts.panesDeferred += fired.panes.length;
            else {
              counts.panesEmitted += result.written;
              counts.panesToBadData += result.badData;
            }
          } catch (err) {
            if (err instanceof LeaseLostError) {
              logs.fireWindowsLeaseLost(deps.logger, {
                pipeline: deps.pipeline,
                lease_fence: lease.fence,
                error: err.message,
              });
              stopped = true;
              return;
            }
            if (!(err instanceof TransientError)) throw err;
            counts.windowsFailed++;
            logs.windowFiringFailed(
              deps.logger,
              { error: errorText(err) },
              { pipeline: deps.pipeline, ...firing.where(unit) },
            );
          }
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, deps.concurrency) }, worker));
      counts.partitionsFired += 1;
    } finally {
      // Given back on success and failure alike; a failed release is logged and the lease expires by itself.
      await deps.store.releaseLease(lease).catch((err: unknown) => {
        logs.fireWindowsFailed(deps.logger, deps.pipeline, `lease release: ${errorText(err)}`);
      });
    }
  };
  let nextPartition = 0;
  const partitionWorker = async (): Promise<void> => {
    while (nextPartition < order.length && !stopped) {
      const partition = order[nextPartition++];
      if (partition === undefined) return;
      await fireOne(partition);
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, firing.partitionsInFlight) }, partitionWorker),
  );

  // Panes a crashed or failed emission left in the outbox (the grace keeps clear of emissions in flight;
  // re-emission is idempotent by insertId).
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
  return { held, stopped, fence };
}

/**
 * One run, for every layout: advances the watermark once (behind the backlog's hold), then runs the firing loop
 * over the layout's partitions. Safe when several run at once: a partition is fired only under its lease, each firing is a
 * transaction over the unit's documents (a firing cannot happen twice), and pane rows carry stable insertIds.
 * `status` is `busy` when every partition was leased by another run.
 * @throws TransientError when the watermark, a lease or a query fails; errors of a single unit are counted
 * (`windowsFailed`) and logged instead, so one bad window does not stop the others
 */
export async function fireWindows<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
): Promise<FireWindowsSummary> {
  const startedMs = deps.now();
  const pt = startedMs;
  const counts = Object.fromEntries(
    [...PASS_COUNTS, 'partitionsFired', 'groupsDue'].map((k) => [k, 0]),
  ) as Counts;
  const hold = deps.watermarkHold === undefined ? undefined : await deps.watermarkHold(pt);
  const update = await deps.tracker.advance(pt, hold?.capMs ?? null);
  const watermarkMs = update.state.watermarkMs;
  if (update.written) {
    logs.watermarkAdvanced(deps.logger, {
      pipeline: deps.pipeline,
      watermark_ms: watermarkMs,
      max_event_time_ms: update.state.maxEventTimeMs,
      watermark_lag_ms: pt - watermarkMs,
    });
  }
  const loop = await (deps.sessions !== undefined
    ? fireLoop(deps, sessionFiring(deps, deps.sessions), watermarkMs, pt, counts)
    : fireLoop(deps, keyGroupFiring(deps, keyGroupsOf(deps)), watermarkMs, pt, counts));
  const summary: FireWindowsSummary = {
    ...counts,
    status: loop.held === 0 ? 'busy' : loop.stopped ? 'partial' : 'done',
    pipeline: deps.pipeline,
    processingTimeMs: pt,
    watermarkMs: update.state.maxEventTimeMs === null ? null : watermarkMs,
    watermarkAdvanced: update.written,
    leaseFence: loop.fence,
    durationMs: deps.now() - startedMs,
    ...(hold !== undefined && {
      watermarkHold: {
        oldestPublishTimeMs: hold.oldestPublishTimeMs,
        capMs: hold.capMs,
        active: hold.active,
        stuck: hold.stuck.length,
        ...(hold.heartbeat !== undefined && {
          heartbeatPublishTimeMs: hold.heartbeat.publishTimeMs,
        }),
      },
    }),
  };
  if (loop.held === 0)
    logs.fireWindowsBusy(deps.logger, {
      pipeline: deps.pipeline,
      lease_holder: deps.holder,
      lease_expires_ms: null,
    });
  else logs.fireWindowsDone(deps.logger, { ...summary });
  return summary;
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
    return failedRunAnswer(deps, err);
  }
}

/** The answer to a run that threw (logged): 503 when the error is transient (Scheduler retries), else 500. */
export function failedRunAnswer(
  deps: Pick<FireWindowsDeps<never, never, never>, 'logger' | 'pipeline'>,
  err: unknown,
): HttpAnswer {
  logs.fireWindowsFailed(deps.logger, deps.pipeline, errorText(err));
  return {
    status: err instanceof TransientError ? 503 : 500,
    body: { status: 'failed', pipeline: deps.pipeline, error: errorText(err) },
  };
}
