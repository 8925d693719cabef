// The harness's delivery path: pulls booking-events through a pull subscription and POSTs each message to
// ingestBooking as the Eventarc `messagePublished` CloudEvent, acking only after the wanted number of 2xx answers,
// with retries and backoff like the Eventarc push subscription.
import type { Message, Subscription } from '@google-cloud/pubsub';

/** Settings of the delivery driver. */
export interface DriverOptions {
  /** ingestBooking's base URL on the Functions Framework, e.g. `http://127.0.0.1:8080`. */
  functionUrl: string;
  /** Topic path of the CloudEvent source, `projects/P/topics/T`. */
  topicPath: string;
  /** Subscription path sent in the event data. */
  subscriptionPath: string;
  /** Messages in flight at once (Eventarc: the function's concurrency × instances). */
  concurrency: number;
  /** First retry delay after a failed delivery, ms; doubled per attempt up to `maxBackoffMs` (Pub/Sub's policy). */
  minBackoffMs: number;
  maxBackoffMs: number;
  /** A delivery that takes longer than this is abandoned and retried, ms (the function's timeout). */
  requestTimeoutMs: number;
}

/** Counters of the driver, for the report. */
export interface DriverStats {
  /** Messages acked (every wanted delivery answered 2xx). */
  acked: number;
  /** POSTs sent, successful or not. */
  deliveries: number;
  /** POSTs that failed (non-2xx, refused connection, timeout) and were retried. */
  failedDeliveries: number;
  /** Failure texts seen, with counts (status code or error name). */
  failures: Map<string, number>;
}

/** A copy of `stats` as they are now, to subtract later ({@link statsSince}). */
export function snapshotStats(stats: DriverStats): DriverStats {
  return { ...stats, failures: new Map(stats.failures) };
}

/**
 * The counters accumulated since `before` (a {@link snapshotStats} of the same driver); a failure label not seen
 * since is left out.
 */
export function statsSince(now: DriverStats, before: DriverStats): DriverStats {
  const failures = new Map<string, number>();
  for (const [label, n] of now.failures) {
    const since = n - (before.failures.get(label) ?? 0);
    if (since > 0) failures.set(label, since);
  }
  return {
    acked: now.acked - before.acked,
    deliveries: now.deliveries - before.deliveries,
    failedDeliveries: now.failedDeliveries - before.failedDeliveries,
    failures,
  };
}

/** The CloudEvent body Eventarc sends for a Pub/Sub message (binary content mode; `ce-*` headers carry the rest). */
function cloudEventBody(message: Message, subscriptionPath: string): string {
  return JSON.stringify({
    message: {
      data: message.data.toString('base64'),
      attributes: message.attributes ?? {},
      messageId: message.id,
      publishTime: message.publishTime.toISOString(),
    },
    subscription: subscriptionPath,
  });
}

/**
 * Delivers messages of `subscription` to the function. `deliveriesFor(message)` says how many successful
 * deliveries a message gets (3 for the redelivery scenario: two at once, as Pub/Sub may redeliver while the first
 * is in flight, then one after they answered; 0 for a message another path delivers, which is acked at once and
 * left out of the counters and of `onAcked`). Failed deliveries are retried with exponential backoff until they
 * succeed; the message is acked only then, so nothing is acked that the function did not accept.
 */
export class DeliveryDriver {
  readonly stats: DriverStats = {
    acked: 0,
    deliveries: 0,
    failedDeliveries: 0,
    failures: new Map(),
  };
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly subscription: Subscription,
    private readonly options: DriverOptions,
    private readonly deliveriesFor: (message: Message) => number,
    private readonly onAcked: (message: Message) => void = () => undefined,
  ) {}

  /** Starts pulling; the subscription's flow control bounds the messages in flight. */
  start(): void {
    this.subscription.on('message', (message: Message) => {
      const work = this.handle(message).finally(() => this.inFlight.delete(work));
      this.inFlight.add(work);
    });
    this.subscription.on('error', (error: unknown) => {
      // The streaming pull reconnects by itself; a lasting error shows in the run as messages never acked.
      console.error(`delivery driver: subscription error: ${String(error)}`);
    });
  }

  /** Stops pulling and waits for the deliveries in flight (they keep retrying until they succeed). */
  async stop(): Promise<void> {
    await this.subscription.close();
    await Promise.all(this.inFlight);
  }

  private async handle(message: Message): Promise<void> {
    const wanted = this.deliveriesFor(message);
    if (wanted === 0) {
      // Another path delivers this message (the push subscription has its own copy): ack this copy, count nothing.
      message.ack();
      return;
    }
    const body = cloudEventBody(message, this.options.subscriptionPath);
    const first = Math.min(2, wanted);
    await Promise.all(
      Array.from({ length: first }, () => this.deliverUntilAccepted(message, body)),
    );
    for (let i = first; i < wanted; i++) await this.deliverUntilAccepted(message, body);
    message.ack();
    this.stats.acked++;
    this.onAcked(message);
  }

  private async deliverUntilAccepted(message: Message, body: string): Promise<void> {
    let backoffMs = this.options.minBackoffMs;
    for (;;) {
      const failure = await this.deliverOnce(message, body);
      if (failure === undefined) return;
      this.stats.failedDeliveries++;
      this.stats.failures.set(failure, (this.stats.failures.get(failure) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, backoffMs * (0.5 + Math.random())));
      backoffMs = Math.min(this.options.maxBackoffMs, backoffMs * 2);
    }
  }

  /** One POST; `undefined` on 2xx, else a short failure label. */
  private async deliverOnce(message: Message, body: string): Promise<string | undefined> {
    this.stats.deliveries++;
    try {
      const response = await fetch(`${this.options.functionUrl}/${this.options.topicPath}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'ce-specversion': '1.0',
          'ce-id': message.id,
          'ce-source': `//pubsub.googleapis.com/${this.options.topicPath}`,
          'ce-type': 'google.cloud.pubsub.topic.v1.messagePublished',
          'ce-time': message.publishTime.toISOString(),
        },
        body,
        signal: AbortSignal.timeout(this.options.requestTimeoutMs),
      });
      await response.arrayBuffer();
      return response.ok ? undefined : `HTTP ${response.status}`;
    } catch (error) {
      const cause = (error as { cause?: { code?: unknown } }).cause?.code;
      return typeof cause === 'string' ? cause : error instanceof Error ? error.name : 'error';
    }
  }
}
