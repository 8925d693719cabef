// Entry points for Cloud Functions gen2: parse the trigger, call shared/, map the result to ack or redelivery.
import * as functions from '@google-cloud/functions-framework';
import type { CloudEvent } from '@google-cloud/functions-framework';
import { type IngestDeps, ingestMessage } from '../shared/ingest/ingest-booking';
import { createIngestDeps } from '../shared/ingest/runtime';
import { decodeMessagePublished, type RawMessagePublishedData } from '../shared/pubsub/message';

let ingestDeps: IngestDeps | undefined;
/** Configuration is validated once per instance; when this instance serves ingestBooking, at cold start. */
function ingestDependencies(): IngestDeps {
  ingestDeps ??= createIngestDeps(process.env);
  return ingestDeps;
}
if (process.env.FUNCTION_TARGET === 'ingestBooking') ingestDependencies();

/**
 * Pub/Sub-triggered (Eventarc `google.cloud.pubsub.topic.v1.messagePublished`). Returns normally once the message
 * is in Silver, quarantine or bad data (Pub/Sub acks); throws on transient failures so Pub/Sub redelivers.
 */
functions.cloudEvent<RawMessagePublishedData>(
  'ingestBooking',
  async (event: CloudEvent<RawMessagePublishedData>): Promise<void> => {
    await ingestMessage(decodeMessagePublished(event.data, event.id), ingestDependencies());
  },
);
