// fireWindows for the session layout: under one lease, advance the watermark (behind the backlog's hold), fire every
// key whose session timers are due (one transaction per key), write the panes, and re-emit panes left in the outbox.
import { TransientError, errorText } from '../errors';
import * as logs from '../logging/logs';
import type { JsonValue } from '../windowing';
import type { FireWindowsDeps, FireWindowsSummary } from './fire-windows';
import type { SessionStore } from './session-store';
import type { SessionWindows } from './session-windows';
import { LeaseLostError, type OutboxPane } from './window-store';

/** What fireWindows needs of the session layout. */
export interface SessionFiring<In, Acc extends JsonValue, Out> {
  readonly store: SessionStore<Acc>;
  readonly sessions: SessionWindows<In, Acc, Out>;
}

/** The session layout's lease document under `meta/` (one firing run at a time). */
export const SESSION_LEASE_NAME = 'fireWindowsLease~sessions';

/** Milliseconds of lease kept in reserve: no new key is started closer than this to the lease's end. */
const LEASE_RESERVE_MS = 10_000;
/** Outbox pages re-emitted per run (500 panes each). */
const MAX_OUTBOX_PAGES = 20;

/**
 * One run over the session layout. Keys are fired `concurrency` at a time, each in its own transaction checking the
 * lease's fence; `windowsDue` / `windowsFired` / `windowsClosed` count keys fired and sessions collected.
 * @throws TransientError when the lease, the watermark or the due-keys query fails; one key's transient failure is
 *   counted (`windowsFailed`) and logged
 */
export async function fireSessions<In, Acc extends JsonValue, Out>(
  deps: FireWindowsDeps<In, Acc, Out>,
  firing: SessionFiring<In, Acc, Out>,
): Promise<FireWindowsSummary> {
  const startedMs = deps.now();
  const pt = startedMs;
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
  const lease = await deps.store.acquireLease(deps.holder, pt, deps.leaseMs, SESSION_LEASE_NAME);
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
  try {
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
    const due = await firing.store.findSessionKeysDue(watermarkMs, pt, deps.maxWindows);
    let fired = 0;
    let closed = 0;
    let failed = 0;
    let stopped: 'lease_time' | 'lease_lost' | null = null;
    const panes: OutboxPane[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < due.length && stopped === null) {
        const key = due[next++] as string;
        if (deps.now() > lease.expiresAtMs - LEASE_RESERVE_MS) {
          stopped = 'lease_time';
          return;
        }
        try {
          const result = await firing.sessions.fireKey(key, watermarkMs, pt, lease);
          if (result.panes.length > 0 || result.closed > 0) fired++;
          closed += result.closed;
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
            { pipeline: deps.pipeline, key, windowStartMs: 0, windowEndMs: 0 },
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
    const summary: FireWindowsSummary = {
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
    logs.fireWindowsDone(deps.logger, { ...summary });
    return summary;
  } finally {
    // Given back on success and failure alike; a failed release is logged and the lease expires by itself.
    await deps.store.releaseLease(lease).catch((err: unknown) => {
      logs.fireWindowsFailed(deps.logger, deps.pipeline, `lease release: ${errorText(err)}`);
    });
  }
}
