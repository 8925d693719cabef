// The local stack's clients for a booking end-to-end suite: made when the suite is declared, Pub/Sub closed after it.
import type { BigQuery } from '@google-cloud/bigquery';
import { PubSub, type Topic } from '@google-cloud/pubsub';
import { stackBigQuery, stackEnv, type StackEnv } from '../../deploy/local/layers';

/** The stack's settings and clients; `topic` is booking's ingest topic (`booking-events`). */
export interface BookingStackClients {
  env: StackEnv;
  pubsub: PubSub;
  topic: Topic;
  bq: BigQuery;
}

/**
 * Opens the clients for the enclosing mocha `describe` block and registers an `after` hook that closes Pub/Sub.
 * Reads the stack's environment variables (see `stackEnv`); throws nothing when the stack is down: the suites'
 * own `before` hooks say so.
 */
export function bookingStackClients(): BookingStackClients {
  const env = stackEnv();
  const pubsub = new PubSub({ projectId: env.projectId });
  after(() => pubsub.close());
  return { env, pubsub, topic: pubsub.topic('booking-events'), bq: stackBigQuery(env) };
}
