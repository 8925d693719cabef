// A push stand-in with Pub/Sub's in-cloud concurrency: pulls the booking topic through its own subscription and
// POSTs each message to ingestBooking as a push request (the body Pub/Sub push sends), acking on 2xx and nacking
// otherwise. The Pub/Sub emulator's own push keeps only ~2 requests in flight (measured: 2 connections to the
// function during a run), so on the emulator the stack's throughput is 2 / (one message's latency); Pub/Sub in the
// cloud raises the push window with successful deliveries, up to far more than a function instance's concurrency.
import { type PushRelay, startRelayLoop } from '../../deploy/local/push-relay-loop';
import { PubSub, type Message, type Subscription } from '@google-cloud/pubsub';
import {
  BOOKING_TOPIC,
  INGEST_PUSH_SUBSCRIPTION,
  projectIdFromEnv,
  subscriptionPath,
} from '../../deploy/local/resources';

/** The relay's pull subscription on the booking topic. */
export const RELAY_SUBSCRIPTION = 'booking-events-bench-relay';

/**
 * Detaches the emulator's push (the push subscription becomes pull; its messages wait there) and relays the topic to
 * `endpoint` with at most `maxInFlight` requests at once. Create it before publishing: a subscription receives only
 * messages published after it exists.
 * @throws Error when the subscription cannot be created or the push cannot be detached
 */
export async function startPushRelay(endpoint: string, maxInFlight: number): Promise<PushRelay> {
  const projectId = projectIdFromEnv();
  const pubsub = new PubSub({ projectId });
  const [subscription]: [Subscription, unknown] = await pubsub
    .topic(BOOKING_TOPIC)
    .createSubscription(`${RELAY_SUBSCRIPTION}-${Date.now()}`, { ackDeadlineSeconds: 60 });
  await pubsub.subscription(INGEST_PUSH_SUBSCRIPTION).modifyPushConfig({});
  const name = subscriptionPath(
    projectId,
    subscription.name.split('/').at(-1) ?? RELAY_SUBSCRIPTION,
  );
  const loop = startRelayLoop(subscription, endpoint, name, maxInFlight);
  return {
    failures: loop.failures,
    stop: async () => {
      await loop.close();
      await subscription.delete();
      // While detached, the push subscription kept every message of the run; acked here, so that restoring the
      // push does not hand them to the stack's own function during the next run.
      await drain(pubsub.subscription(INGEST_PUSH_SUBSCRIPTION));
      await pubsub.close();
    },
  };
}

/** Acks everything `subscription` (in pull mode) holds, until it has been quiet for 2 s (at most 2 min). */
async function drain(subscription: Subscription): Promise<number> {
  let drained = 0;
  let lastAt = Date.now();
  const onMessage = (message: Message): void => {
    message.ack();
    drained++;
    lastAt = Date.now();
  };
  subscription.on('message', onMessage);
  const started = Date.now();
  while (Date.now() - lastAt < 2_000 && Date.now() - started < 120_000) {
    await new Promise((r) => setTimeout(r, 250));
  }
  subscription.removeListener('message', onMessage);
  await subscription.close();
  return drained;
}
