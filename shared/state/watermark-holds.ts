// Watermark holds from failing deliveries: ingestBooking records the publish time of each message whose delivery
// failed and releases it once the message is processed; fireWindows reads the oldest holds before the idle rule.
import { createHash } from 'node:crypto';
import {
  Timestamp,
  type CollectionReference,
  type DocumentReference,
  type Firestore,
} from '@google-cloud/firestore';
import * as v from 'valibot';
import { TransientError, errorText } from '../errors';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import {
  heartbeatHoldAt,
  watermarkHoldAt,
  type HeldMessage,
  type WatermarkHold,
  type WatermarkPolicy,
} from '../windowing';

/** Collection of the holds under `{root}/{pipeline}`; its documents carry the TTL field `expireAt`. */
export const HOLDS_COLLECTION = 'watermarkHolds';

/**
 * The cloud function subscription's smallest retry delay (`--min-retry-delay=10s`, deploy/gcloud/deploy-plan.ts
 * DELIVERY): every redelivery after a failed push comes at least this long after the message was published, so a
 * processed message this old may have a hold to release; a younger one was delivered on its first attempt (in the
 * cloud) and costs no release write.
 */
export const RELEASE_CHECK_AGE_MS = 10_000;

/** Message ids of failed deliveries remembered per instance (the local emulator redelivers within ~1 s). */
const REMEMBERED_FAILURES = 10_000;

/** Where the holds live: Firestore here, an in-memory map in unit tests. Every method throws TransientError. */
export interface WatermarkHoldStore {
  /** Creates or renews the hold of a message whose delivery failed at `nowMs` (one write). */
  recordFailure(
    messageId: string,
    publishTimeMs: number,
    nowMs: number,
    leaseMs: number,
  ): Promise<void>;
  /** Deletes the hold of a processed message (one write, also when there is none). */
  release(messageId: string): Promise<void>;
  /** The `limit` oldest holds by publish time, lapsed ones included (one read per hold, at least 1). */
  oldest(limit: number): Promise<HeldMessage[]>;
  /** Deletes lapsed holds (their lease ran out; Firestore's TTL would remove them within about a day). */
  deleteLapsed(messageIds: readonly string[]): Promise<void>;
}

/**
 * The newest watermark heartbeat the ingest path processed (docs/windows.md "Heartbeats"), one document per
 * aggregation beside its watermark (`{root}/{pipeline}/meta/heartbeat`). Every method throws TransientError.
 */
export interface HeartbeatStore {
  /** Keeps `publishTimeMs` (epoch ms) when newer than the one kept (one transaction: a read, at most one write). */
  recordHeartbeat(publishTimeMs: number, nowMs: number): Promise<void>;
  /** Publish time of the newest processed heartbeat, epoch ms; `null` before the first (one read). */
  newestHeartbeat(): Promise<number | null>;
}

/** The heartbeat document under `{root}/{pipeline}/meta` (the watermark's collection). */
export const HEARTBEAT_DOC = 'heartbeat';

const int = v.pipe(v.number(), v.safeInteger());
const HeartbeatDoc = v.object({ publish_time_ms: int, processed_at_ms: int });
const HoldDoc = v.object({
  message_id: v.string(),
  publish_time_ms: int,
  last_failed_at_ms: int,
  expires_at_ms: int,
});

/** The hold document id: SHA-256 of the message id (ids spread over Firestore's key range). */
export function holdDocId(messageId: string): string {
  return createHash('sha256').update(messageId, 'utf8').digest('hex');
}

/** WatermarkHoldStore on Firestore, under `{root}/{pipeline}/watermarkHolds`, and its HeartbeatStore. */
export class FirestoreWatermarkHoldStore implements WatermarkHoldStore, HeartbeatStore {
  private readonly holds: CollectionReference;
  private readonly heartbeat: DocumentReference;

  constructor(db: Firestore, root: string, pipeline: string) {
    const base = db.collection(root).doc(pipeline);
    this.holds = base.collection(HOLDS_COLLECTION);
    this.heartbeat = base.collection('meta').doc(HEARTBEAT_DOC);
  }

  async recordHeartbeat(publishTimeMs: number, nowMs: number): Promise<void> {
    await this.call('record heartbeat', () =>
      this.holds.firestore.runTransaction(async (tx) => {
        const kept = this.parseHeartbeat(await tx.get(this.heartbeat));
        // Redeliveries come in any order: the kept publish time never goes back.
        if (kept !== null && kept >= publishTimeMs) return;
        tx.set(this.heartbeat, { publish_time_ms: publishTimeMs, processed_at_ms: nowMs });
      }),
    );
  }

  async newestHeartbeat(): Promise<number | null> {
    return this.call('read heartbeat', async () => this.parseHeartbeat(await this.heartbeat.get()));
  }

  private parseHeartbeat(snap: { exists: boolean; data(): unknown }): number | null {
    if (!snap.exists) return null;
    const parsed = v.safeParse(HeartbeatDoc, snap.data());
    if (!parsed.success) {
      throw new Error(`malformed meta/${HEARTBEAT_DOC}: ${parsed.issues[0].message}`);
    }
    return parsed.output.publish_time_ms;
  }

  private async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw new TransientError(`firestore ${operation}`, errorText(err), { cause: err });
    }
  }

  async recordFailure(
    messageId: string,
    publishTimeMs: number,
    nowMs: number,
    leaseMs: number,
  ): Promise<void> {
    await this.call('record watermark hold', () =>
      this.holds.doc(holdDocId(messageId)).set({
        message_id: messageId,
        publish_time_ms: publishTimeMs,
        last_failed_at_ms: nowMs,
        expires_at_ms: nowMs + leaseMs,
        // TTL: Firestore deletes lapsed holds by itself within about a day of this time.
        expireAt: Timestamp.fromMillis(nowMs + leaseMs),
      }),
    );
  }

  async release(messageId: string): Promise<void> {
    await this.call('release watermark hold', () => this.holds.doc(holdDocId(messageId)).delete());
  }

  async oldest(limit: number): Promise<HeldMessage[]> {
    return this.call('read watermark holds', async () => {
      const snap = await this.holds.orderBy('publish_time_ms').limit(limit).get();
      return snap.docs.map((d) => {
        const parsed = v.safeParse(HoldDoc, d.data());
        if (!parsed.success) {
          throw new Error(
            `malformed hold ${HOLDS_COLLECTION}/${d.id}: ${parsed.issues[0].message}`,
          );
        }
        const doc = parsed.output;
        return {
          messageId: doc.message_id,
          publishTimeMs: doc.publish_time_ms,
          lastFailedAtMs: doc.last_failed_at_ms,
          expiresAtMs: doc.expires_at_ms,
        };
      });
    });
  }

  async deleteLapsed(messageIds: readonly string[]): Promise<void> {
    if (messageIds.length === 0) return;
    await this.call('delete lapsed watermark holds', async () => {
      const batch = this.holds.firestore.batch();
      for (const id of messageIds.slice(0, 500)) batch.delete(this.holds.doc(holdDocId(id)));
      await batch.commit();
    });
  }
}

/** A delivered message, as the holds need it. */
export interface DeliveredMessage {
  readonly messageId: string;
  /** Pub/Sub publish time, epoch ms; `undefined` when the push did not carry one (then no hold is possible). */
  readonly publishTimeMs: number | undefined;
}

/**
 * ingestBooking's side of the holds. `failed` records a hold for a delivery that is about to be refused (Pub/Sub
 * redelivers it); `processed` releases it once the message is acked (Silver, quarantine, bad data, or the
 * retry-age guard's bad-data row, which stands for a dead letter). Neither throws: a hold that cannot be written is
 * logged (the message itself is safe in the subscription), one that cannot be deleted lapses at its lease.
 */
export class DeliveryHolds {
  /** Message ids this instance refused, oldest first (the local emulator redelivers to the same instance). */
  private readonly refused = new Set<string>();

  constructor(
    private readonly store: WatermarkHoldStore,
    private readonly leaseMs: number,
    private readonly logger: Logger,
  ) {}

  /** Records the hold of a delivery that failed at `nowMs` (epoch ms). */
  async failed(message: DeliveredMessage, nowMs: number): Promise<void> {
    if (message.publishTimeMs === undefined) return;
    this.refused.delete(message.messageId);
    this.refused.add(message.messageId);
    if (this.refused.size > REMEMBERED_FAILURES) {
      const first = this.refused.values().next();
      if (first.done !== true) this.refused.delete(first.value);
    }
    try {
      await this.store.recordFailure(message.messageId, message.publishTimeMs, nowMs, this.leaseMs);
    } catch (err) {
      logs.watermarkHoldNotRecorded(this.logger, { messageId: message.messageId }, errorText(err));
    }
  }

  /**
   * Releases the hold of a message processed at `nowMs`, when it may have one: this instance refused it before,
   * or it is at least `RELEASE_CHECK_AGE_MS` old (any redelivery in the cloud is). A first delivery of a fresh
   * message costs nothing.
   */
  async processed(message: DeliveredMessage, nowMs: number): Promise<void> {
    const refusedHere = this.refused.delete(message.messageId);
    const aged =
      message.publishTimeMs !== undefined && nowMs - message.publishTimeMs >= RELEASE_CHECK_AGE_MS;
    if (!refusedHere && !aged) return;
    try {
      await this.store.release(message.messageId);
    } catch (err) {
      logs.watermarkHoldNotReleased(this.logger, { messageId: message.messageId }, errorText(err));
    }
  }
}

/**
 * fireWindows' side: the hold at processing time `nowMs` (epoch ms) over the `limit` oldest holds
 * (`watermarkHoldAt`). Logs each stuck hold (`watermark_hold_stuck`) and, when the hold caps the watermark, one
 * `watermark_held` line; deletes lapsed holds it saw (best effort: a failed delete is logged, and TTL removes them).
 * @throws TransientError when the holds cannot be read (the caller must not advance the watermark blind)
 */
export async function readWatermarkHold(
  store: WatermarkHoldStore,
  policy: WatermarkPolicy,
  options: { readonly maxHoldMs: number; readonly limit?: number; readonly pipeline: string },
  logger: Logger,
  nowMs: number,
): Promise<WatermarkHold> {
  const hold = watermarkHoldAt(
    policy,
    await store.oldest(options.limit ?? 100),
    nowMs,
    options.maxHoldMs,
  );
  for (const m of hold.stuck) {
    logs.watermarkHoldStuck(logger, {
      pipeline: options.pipeline,
      message_id: m.messageId,
      publish_time: logs.iso(m.publishTimeMs),
      last_failed_at: logs.iso(m.lastFailedAtMs),
      hold_age_ms: nowMs - m.publishTimeMs,
    });
  }
  if (hold.oldestPublishTimeMs !== null && hold.capMs !== null) {
    logs.watermarkHeld(logger, {
      pipeline: options.pipeline,
      oldest_held_publish_time: logs.iso(hold.oldestPublishTimeMs),
      hold_cap_ms: hold.capMs,
      held_messages: hold.active - hold.stuck.length,
    });
  }
  if (hold.lapsed.length > 0) {
    await store.deleteLapsed(hold.lapsed.map((m) => m.messageId)).catch((err: unknown) => {
      logs.fireWindowsFailed(logger, options.pipeline, `delete lapsed holds: ${errorText(err)}`);
    });
  }
  return hold;
}

/**
 * fireWindows' heartbeat rule over another hold source (`inner`: the delivery holds, and the backlog in the cloud):
 * the earlier of both caps (`heartbeatHoldAt`). A stale heartbeat (older than `maxHoldMs`) is logged at ERROR
 * (`watermark_hold_stuck`, source `heartbeat`) every pass and no longer holds.
 * @throws TransientError when the heartbeat or the inner holds cannot be read (never advance the watermark blind)
 */
export function heartbeatWatermarkHold(
  store: HeartbeatStore,
  inner: (processingTimeMs: number) => Promise<WatermarkHold>,
  options: {
    readonly policy: WatermarkPolicy;
    readonly maxHoldMs: number;
    readonly pipeline: string;
    readonly logger: Logger;
  },
): (processingTimeMs: number) => Promise<WatermarkHold> {
  return async (nowMs) => {
    const [hold, newest] = await Promise.all([inner(nowMs), store.newestHeartbeat()]);
    const heartbeat = heartbeatHoldAt(options.policy, newest, nowMs, options.maxHoldMs);
    if (heartbeat.stale && heartbeat.publishTimeMs !== null) {
      logs.watermarkHeartbeatStale(options.logger, {
        pipeline: options.pipeline,
        source: 'heartbeat',
        publish_time: logs.iso(heartbeat.publishTimeMs),
        hold_age_ms: nowMs - heartbeat.publishTimeMs,
      });
    }
    const capMs =
      heartbeat.capMs === null || (hold.capMs !== null && hold.capMs <= heartbeat.capMs)
        ? hold.capMs
        : heartbeat.capMs;
    return { ...hold, capMs, heartbeat };
  };
}
