// Creates the local stack's Pub/Sub resources for every registered pipeline (resources.ts localPubSubPlan): topics,
// the dead-letter hold, the push subscription to its ingest function, the Bronze stand-in's pull subscription.
// Idempotent: existing resources are kept (a push endpoint that points elsewhere is updated).
import { PubSub, type CreateSubscriptionOptions } from '@google-cloud/pubsub';
import { PIPELINES } from '../../shared/pipelines';
import { localFunctionPort, localPubSubPlan, projectIdFromEnv } from './resources';

/** gRPC status code the Pub/Sub API returns when a resource already exists. */
const ALREADY_EXISTS = 6;

function isAlreadyExists(error: unknown): boolean {
  return (error as { code?: unknown } | null | undefined)?.code === ALREADY_EXISTS;
}

async function ensureTopic(
  pubsub: PubSub,
  name: string,
  messageRetentionSeconds?: number,
): Promise<void> {
  try {
    await pubsub.createTopic(
      messageRetentionSeconds === undefined
        ? name
        : { name, messageRetentionDuration: { seconds: messageRetentionSeconds } },
    );
    console.log(`created topic ${name}`);
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    console.log(`topic ${name} exists`);
  }
}

async function ensureSubscription(
  pubsub: PubSub,
  topic: string,
  name: string,
  options: CreateSubscriptionOptions,
): Promise<void> {
  try {
    await pubsub.topic(topic).createSubscription(name, options);
    console.log(`created subscription ${name} on ${topic}`);
    return;
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  // The emulator keeps state only while it runs, so this path is for a stack that was set up before.
  const subscription = pubsub.subscription(name);
  const [metadata] = await subscription.getMetadata();
  const wantedEndpoint = options.pushConfig?.pushEndpoint ?? '';
  if ((metadata.pushConfig?.pushEndpoint ?? '') !== wantedEndpoint) {
    await subscription.modifyPushConfig({ pushEndpoint: wantedEndpoint });
    console.log(`subscription ${name} exists; push endpoint set to ${wantedEndpoint || '(pull)'}`);
  } else {
    console.log(`subscription ${name} exists`);
  }
}

async function main(): Promise<void> {
  if (!process.env.PUBSUB_EMULATOR_HOST) {
    throw new Error(
      'PUBSUB_EMULATOR_HOST is not set: setup-pubsub.ts configures the local emulator only ' +
        '(its push endpoint is on 127.0.0.1); the cloud setup lives in the deploy scripts',
    );
  }
  const projectId = projectIdFromEnv();
  const pubsub = new PubSub({ projectId });
  // Topics retain messages as in the cloud (deploy --topic-retention, default 7 days), so `offvia seek --time`
  // replays acknowledged messages here too; the emulator implements topic retention and seek.
  for (const pipeline of PIPELINES) {
    const ingestPort = localFunctionPort(pipeline.functions.ingest.entryPoint);
    const plan = localPubSubPlan(pipeline, projectId, ingestPort);
    await ensureTopic(pubsub, plan.topic.name, plan.topic.retentionSeconds);
    await ensureTopic(pubsub, plan.deadLetterTopic);
    const [hold, ...others] = plan.pullSubscriptions;
    if (hold !== undefined) await ensureSubscription(pubsub, hold.topic, hold.name, hold.options);
    await ensureSubscription(pubsub, plan.topic.name, plan.ingest.name, plan.ingest.options);
    for (const sub of others) await ensureSubscription(pubsub, sub.topic, sub.name, sub.options);
  }
  await pubsub.close();
}

main().catch((error: unknown) => {
  console.error('setup-pubsub failed:', error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
