// Optional push with Pub/Sub's in-cloud concurrency for the telemetry simulator: the emulator's own push keeps about
// 2 deliveries in flight (docs/local-stack.md), so its rate is 2 ÷ one message's latency. This detaches the push of
// the telemetry ingest subscription (it becomes a pull subscription: the messages wait there, in order per key),
// pulls it with up to N messages in flight and POSTs each as the push request Pub/Sub sends to the same endpoint,
// acking on 2xx and nacking otherwise (deploy/local/push-relay-loop.ts, shared with the benchmark's relay); `stop`
// restores the push.
import { startRelayLoop } from '../push-relay-loop';
import type { PubSub } from '@google-cloud/pubsub';
import { subscriptionPath } from '../resources';

/** A running relay. */
export interface PushRelay {
  /** Deliveries answered with a non-2xx status or failed (each message was nacked and is delivered again). */
  readonly failures: () => number;
  /** Stops relaying and gives the subscription its push endpoint back. */
  stop(): Promise<void>;
}

/**
 * Starts relaying `subscription` (a push subscription on the emulator) to its own push endpoint with at most
 * `maxInFlight` requests at once.
 * @throws Error when the subscription has no push endpoint or the push cannot be detached
 */
export async function startPushRelay(
  pubsub: PubSub,
  projectId: string,
  subscriptionName: string,
  maxInFlight: number,
): Promise<PushRelay> {
  const subscription = pubsub.subscription(subscriptionName);
  const [metadata] = await subscription.getMetadata();
  const endpoint = metadata.pushConfig?.pushEndpoint ?? '';
  if (endpoint === '')
    throw new Error(`subscription ${subscriptionName} has no push endpoint to relay to`);
  await subscription.modifyPushConfig({});
  const name = subscriptionPath(projectId, subscriptionName);
  const loop = startRelayLoop(subscription, endpoint, name, maxInFlight);
  return {
    failures: loop.failures,
    stop: async () => {
      await loop.close();
      await pubsub.subscription(subscriptionName).modifyPushConfig({ pushEndpoint: endpoint });
    },
  };
}
