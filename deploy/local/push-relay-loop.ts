// The relay loop both push stand-ins share (the benchmark's, the telemetry simulator's): pull a subscription with at
// most N messages in flight and POST each as Pub/Sub's push request, acking on 2xx and nacking otherwise. The
// emulator's own push keeps only about 2 deliveries in flight (docs/local-stack.md).
import type { Message, PubSub, Subscription } from '@google-cloud/pubsub';
import { subscriptionPath } from './resources';

/** A running push relay. */
export interface PushRelay {
  /** Deliveries answered with a non-2xx status or failed (each message was nacked and is delivered again). */
  readonly failures: () => number;
  /** Stops relaying and puts the subscriptions back as they were. */
  stop(): Promise<void>;
}

/** A running relay loop. */
export interface RelayLoop {
  /** Deliveries answered with a non-2xx status or failed, and subscription errors. */
  readonly failures: () => number;
  /** Stops taking messages and closes the subscription (messages in flight are still acked or nacked). */
  readonly close: () => Promise<void>;
}

/**
 * Relays what `subscription` (pull) receives to `endpoint`, naming `pushSubscription` (its full path) in the push
 * body, with at most `maxInFlight` messages outstanding (flow control). The body carries both the camelCase and the
 * snake_case field names Pub/Sub push sends, and the ordering key when the message has one.
 */
export function startRelayLoop(
  subscription: Subscription,
  endpoint: string,
  pushSubscription: string,
  maxInFlight: number,
): RelayLoop {
  let failures = 0;
  const failed = (message: Message): void => {
    failures++;
    message.nack();
  };
  const onMessage = (message: Message): void => {
    const publishTime = message.publishTime.toISOString();
    const body = {
      message: {
        data: message.data.toString('base64'),
        attributes: message.attributes,
        messageId: message.id,
        message_id: message.id,
        publishTime,
        publish_time: publishTime,
        ...(message.orderingKey ? { orderingKey: message.orderingKey } : {}),
      },
      subscription: pushSubscription,
    };
    fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(
      (res) => (res.ok ? message.ack() : failed(message)),
      () => failed(message),
    );
  };
  subscription.setOptions({
    flowControl: { maxMessages: maxInFlight, allowExcessMessages: false },
  });
  subscription.on('message', onMessage);
  subscription.on('error', (err: unknown) => {
    failures++;
    process.stderr.write(`push relay: subscription error: ${String(err)}\n`);
  });
  return {
    failures: () => failures,
    close: async () => {
      subscription.removeListener('message', onMessage);
      await subscription.close();
    },
  };
}

/**
 * Relays a push subscription to its own endpoint with at most `maxInFlight` requests at once: its push is detached
 * (messages wait, in order per key) until `stop` restores it.
 * @throws Error when the subscription has no push endpoint or the push cannot be detached
 */
export async function relayPushSubscription(
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
