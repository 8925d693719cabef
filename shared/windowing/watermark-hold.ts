// The watermark hold: a backlog of messages published but not yet processed keeps the watermark behind it, as
// Dataflow's Pub/Sub source holds its watermark behind the oldest unacknowledged message. Pure: times are arguments.
import type { WatermarkPolicy, WatermarkState } from './watermark-policy';

/** A message whose delivery failed, waiting for a successful one, as the store keeps it; times epoch ms UTC. */
export interface HeldMessage {
  /** The Pub/Sub message id. */
  readonly messageId: string;
  /** Its Pub/Sub publish time: the best bound of its event time before it is read. */
  readonly publishTimeMs: number;
  /** Processing time of its last failed delivery. */
  readonly lastFailedAtMs: number;
  /**
   * When the hold lapses unless another failed delivery renews it: last failure + the hold lease
   * (`OFFVIA_WATERMARK_HOLD_LEASE_MS`, longer than the subscription's longest retry backoff).
   */
  readonly expiresAtMs: number;
}

/** The hold the backlog puts on the watermark at one processing time. */
export interface WatermarkHold {
  /** Publish time of the oldest held message that still holds, epoch ms; `null` when nothing holds. */
  readonly oldestPublishTimeMs: number | null;
  /** The highest watermark the hold allows, epoch ms; `null` when nothing holds (no cap). */
  readonly capMs: number | null;
  /** Held messages whose lease is still running (stuck ones included). */
  readonly active: number;
  /**
   * Active holds older (publish time to now) than `maxHoldMs`: they no longer hold the watermark, so one failing
   * message cannot stop every window from closing; the caller logs them.
   */
  readonly stuck: readonly HeldMessage[];
  /** Held messages whose lease has run out (the caller may delete them). */
  readonly lapsed: readonly HeldMessage[];
  /** The heartbeat rule's part (`heartbeatHoldAt`), when the hold source applies it; `capMs` includes its cap. */
  readonly heartbeat?: HeartbeatHold;
}

/**
 * The highest watermark a message published at `publishTimeMs` allows: publish time − `maxOutOfOrdernessMs`, the
 * out-of-orderness bound applied to the publish time (its event time is unknown until it is read).
 */
export function holdCapMs(policy: WatermarkPolicy, publishTimeMs: number): number {
  return publishTimeMs - policy.maxOutOfOrdernessMs;
}

/**
 * The hold at processing time `nowMs` over the held messages the store returned: a message holds while its lease
 * runs (`expiresAtMs > nowMs`) and it is younger than `maxHoldMs` (`OFFVIA_WATERMARK_HOLD_MAX_MS`, the documented
 * cap); the cap is that of the oldest holding message.
 */
export function watermarkHoldAt(
  policy: WatermarkPolicy,
  held: readonly HeldMessage[],
  nowMs: number,
  maxHoldMs: number,
): WatermarkHold {
  let oldest: number | null = null;
  let active = 0;
  const stuck: HeldMessage[] = [];
  const lapsed: HeldMessage[] = [];
  for (const m of held) {
    if (m.expiresAtMs <= nowMs) {
      lapsed.push(m);
      continue;
    }
    active++;
    if (nowMs - m.publishTimeMs > maxHoldMs) {
      stuck.push(m);
      continue;
    }
    if (oldest === null || m.publishTimeMs < oldest) oldest = m.publishTimeMs;
  }
  return {
    oldestPublishTimeMs: oldest,
    capMs: oldest === null ? null : holdCapMs(policy, oldest),
    active,
    stuck,
    lapsed,
  };
}

/**
 * Applies a hold to the state a watermark rule proposes (`next`, computed from `previous`): the watermark goes no
 * further than the cap, and never below `previous.watermarkMs` (a hold found after the watermark already passed it
 * stops the watermark where it is; it never moves it back). The event-time maximum and its time are kept.
 */
export function applyWatermarkHold(
  previous: WatermarkState,
  next: WatermarkState,
  capMs: number | null,
): WatermarkState {
  if (capMs === null || next.watermarkMs <= capMs) return next;
  return { ...next, watermarkMs: Math.max(previous.watermarkMs, capMs) };
}

/** What the newest processed heartbeat says about the watermark at one processing time. */
export interface HeartbeatHold {
  /** Publish time of the newest heartbeat the ingest path processed, epoch ms UTC; `null`: none recorded yet. */
  readonly publishTimeMs: number | null;
  /** The highest watermark it allows (`holdCapMs` of its publish time), epoch ms; `null`: no cap. */
  readonly capMs: number | null;
  /**
   * The newest heartbeat is older (publish time to now) than `maxHoldMs`: heartbeats stopped for good (topic
   * deleted, scheduler paused), so it no longer holds; the caller logs it at ERROR.
   */
  readonly stale: boolean;
}

/**
 * The heartbeat rule at processing time `nowMs`: a heartbeat is published into the pipeline's ingest topic once a
 * minute and travels the events' own subscription and push path, so while the path stalls (function down,
 * crashing, unreachable, throttled, backlog, paused subscription) no newer heartbeat is processed and the idle rule
 * may take the watermark no further than the newest processed heartbeat's publish time − out-of-orderness (the
 * delivery holds' `holdCapMs`: events published just before it may still be in flight beside it). On a healthy path
 * the newest heartbeat is at most one period (60 s) + delivery latency old, within the default idle timeout (60 s)
 * + out-of-orderness (10 s), so the cap costs at most the delivery latency of lag.
 * No heartbeat yet: no cap (a pipeline deployed without heartbeats keeps the idle rule alone). A heartbeat older
 * than `maxHoldMs` (`OFFVIA_WATERMARK_HOLD_MAX_MS`, the cap of every hold) no longer holds and is `stale`.
 */
export function heartbeatHoldAt(
  policy: WatermarkPolicy,
  newestHeartbeatMs: number | null,
  nowMs: number,
  maxHoldMs: number,
): HeartbeatHold {
  if (newestHeartbeatMs === null) return { publishTimeMs: null, capMs: null, stale: false };
  if (nowMs - newestHeartbeatMs > maxHoldMs) {
    return { publishTimeMs: newestHeartbeatMs, capMs: null, stale: true };
  }
  return {
    publishTimeMs: newestHeartbeatMs,
    capMs: holdCapMs(policy, newestHeartbeatMs),
    stale: false,
  };
}
