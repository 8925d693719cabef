// The local push subscription's settings against the real Pub/Sub emulator: messages whose pushes failed during an
// endpoint outage are pushed again once the endpoint is back, whatever the outage's length. A topic, subscription
// and endpoint of its own (a local HTTP server closed for the outage), so the stack's function is not involved.
// Runs inside deploy/local/with-stack.sh, which exports PUBSUB_EMULATOR_HOST.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PubSub, type Topic } from '@google-cloud/pubsub';
import { ingestPushSubscriptionOptions, projectIdFromEnv } from '../../../deploy/local/resources';

/** Messages published during the outage: enough that several failed pushes fall due together. */
const MESSAGES = 100;
/** Outage length, ms: long enough for every message to fail at least twice (the emulator retries after ~1 s). */
const OUTAGE_MS = 12_000;
/** How long the test waits for every message once the endpoint is back, ms. */
const RECOVERY_MS = 45_000;

/** A push endpoint: records the message ids it is given and answers 204. */
function pushEndpoint(received: Set<string>): Server {
  return createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        message?: { messageId?: string };
      };
      if (body.message?.messageId) received.add(body.message.messageId);
      response.writeHead(204).end();
    });
  });
}

describe('local stack: push redelivery after an endpoint outage', function () {
  this.timeout(OUTAGE_MS + RECOVERY_MS + 60_000);
  let pubsub: PubSub;
  let topic: Topic | undefined;
  let server: Server | undefined;

  before(function () {
    assert.ok(
      process.env.PUBSUB_EMULATOR_HOST,
      'PUBSUB_EMULATOR_HOST is not set: run inside bash deploy/local/with-stack.sh',
    );
    pubsub = new PubSub({ projectId: projectIdFromEnv() });
  });

  after(async function () {
    server?.close();
    if (topic) {
      for (const subscription of (await topic.getSubscriptions())[0]) await subscription.delete();
      await topic.delete();
    }
    await pubsub?.close();
  });

  it('pushes every message again once the endpoint is back (the stack subscription settings)', async () => {
    // A port that refuses connections during the outage: taken from the kernel, then closed.
    const received = new Set<string>();
    server = pushEndpoint(received);
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server?.close(() => resolve()));

    const suffix = randomUUID().slice(0, 8);
    [topic] = await pubsub.createTopic(`push-redelivery-${suffix}`);
    await topic.createSubscription(
      `push-redelivery-${suffix}`,
      ingestPushSubscriptionOptions(`http://127.0.0.1:${port}/push`),
    );
    const published: string[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      published.push(await topic.publishMessage({ data: Buffer.from(`message ${i}`) }));
    }
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));

    server = pushEndpoint(received);
    await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
    const deadline = Date.now() + RECOVERY_MS;
    while (received.size < MESSAGES && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const missing = published.filter((id) => !received.has(id));
    assert.equal(
      missing.length,
      0,
      `${missing.length} of ${MESSAGES} messages not pushed again within ${RECOVERY_MS} ms of the endpoint's return`,
    );
  });
});
