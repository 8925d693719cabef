// Names of the Pub/Sub and BigQuery resources the local stack creates, shared by its scripts and tests.
// The same names are used in the cloud; only the push endpoint and the Bronze stand-in are local inventions.
import type { CreateSubscriptionOptions } from '@google-cloud/pubsub';

/** Topic producers publish booking events to. */
export const BOOKING_TOPIC = 'booking-events';
/** Message retention of the local booking topic, seconds: 7 days, the deploy's `--topic-retention` default. */
export const LOCAL_TOPIC_RETENTION_S = 7 * 24 * 3600;
/** Topic that receives messages the push subscription gave up on after the maximum delivery attempts. */
export const BOOKING_DLQ_TOPIC = 'booking-events-dlq';
/** Pull subscription on the dead-letter topic, so dead letters are kept and can be inspected locally. */
export const BOOKING_DLQ_SUBSCRIPTION = 'booking-events-dlq-hold';
/** Push subscription delivering to the ingestBooking function, as Eventarc's subscription does in the cloud. */
export const INGEST_PUSH_SUBSCRIPTION = 'booking-events-ingest';
/** Pull subscription read by the Bronze stand-in (a BigQuery subscription in the cloud). */
export const BRONZE_SUBSCRIPTION = 'booking-events-bronze';
/** Dataset and table the Bronze subscription writes to. */
export const BRONZE_DATASET = 'offvia_bronze';
export const BRONZE_TABLE = 'raw_bookings';

/** The project the stack runs under: OFFVIA_PROJECT_ID, then GOOGLE_CLOUD_PROJECT, then the local default. */
export function projectIdFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.OFFVIA_PROJECT_ID || env.GOOGLE_CLOUD_PROJECT || 'offvia-local';
}

/** Full resource path of a topic, as Pub/Sub spells it in messages and subscriptions. */
export function topicPath(projectId: string, topic: string): string {
  return `projects/${projectId}/topics/${topic}`;
}

/** Full resource path of a subscription; also the value of Bronze's subscription_name column. */
export function subscriptionPath(projectId: string, subscription: string): string {
  return `projects/${projectId}/subscriptions/${subscription}`;
}

/**
 * The push endpoint for a CloudEvent function on the Functions Framework: a path of the form
 * /projects/P/topics/T makes the framework turn the push body into the messagePublished CloudEvent Eventarc sends.
 */
export function pushEndpointFor(projectId: string, topic: string, port: number): string {
  return `http://127.0.0.1:${port}/${topicPath(projectId, topic)}`;
}

/** Ack deadline of the local push subscription, seconds: the function's timeout, as Eventarc's subscription has. */
export const INGEST_PUSH_ACK_DEADLINE_S = 60;

/**
 * Settings of the local push subscription that delivers to ingestBooking at `pushEndpoint`.
 *
 * Deliberately without a retry policy and without a dead-letter policy, unlike the cloud subscription (exponential
 * backoff 10–600 s, 15 attempts, then `booking-events-dlq`; see deploy/gcloud/deploy-plan.ts):
 * - The Pub/Sub emulator (cloud-pubsub-emulator 0.8.20) implements exponential backoff with a scheduled task that
 *   dies for good on the first NullPointerException it meets, which happens as soon as two failed deliveries share
 *   a due time (a burst of failures during an outage). From then on every message waiting for its backoff stays
 *   outstanding forever: never pushed again, never pullable, never dead-lettered. Measured: 200 messages published
 *   while the endpoint was down for 15 s, with a 1–2 s backoff, and 0 of them delivered in the minute after it came
 *   back; without a retry policy all 200 arrived within 2 s.
 * - Without a retry policy the emulator redelivers a failed push after about 1 s (its push loop extends the failed
 *   message's deadline by 1,000 ms), for as long as it takes; with the emulator's immediate redelivery a dead-letter
 *   policy would dead-letter every message after a few seconds of outage (5 attempts at least, 1 s apart), and the
 *   emulator gives a dead letter a new message id, so it cannot be redriven as the same message. Without one, an
 *   ingest outage of any length loses nothing: the messages wait in the subscription and arrive when the function
 *   is back. A message the function keeps refusing while it runs is still bounded by the retry-age guard
 *   (OFFVIA_MAX_RETRY_AGE_MS), which routes it to bad data.
 */
export function ingestPushSubscriptionOptions(pushEndpoint: string): CreateSubscriptionOptions {
  return { pushConfig: { pushEndpoint }, ackDeadlineSeconds: INGEST_PUSH_ACK_DEADLINE_S };
}

/** A positive integer from the environment, or the default; a malformed value is an error, not a silent default. */
export function positiveIntFromEnv(name: string, defaultValue: number, env = process.env): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return defaultValue;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) {
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  }
  return value;
}
