// Optional push with Pub/Sub's in-cloud concurrency for the telemetry simulator: the emulator's own push keeps about
// 2 deliveries in flight (docs/local-stack.md), so its rate is 2 ÷ one message's latency. This detaches the push of
// the telemetry ingest subscription (it becomes a pull subscription: the messages wait there, in order per key),
// pulls it with up to N messages in flight and POSTs each as the push request Pub/Sub sends to the same endpoint,
// acking on 2xx and nacking otherwise; `stop` restores the push. The pattern of bench/lib/push-relay.ts.
import { PubSub, type Message } from '@google-cloud/pubsub';
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
  let failures = 0;
  const name = subscriptionPath(projectId, subscriptionName);
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
      subscription: name,
    };
    fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(
      (res) => {
        if (res.ok) message.ack();
        else {
          failures++;
          message.nack();
        }
      },
      () => {
        failures++;
        message.nack();
      },
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
    stop: async () => {
      subscription.removeListener('message', onMessage);
      await subscription.close();
      await pubsub.subscription(subscriptionName).modifyPushConfig({ pushEndpoint: endpoint });
    },
  };
}
