// ingestBooking's window-state sink: a valid booking becomes one element of its route's windows.
import type { ValidationSuccess } from '../contract';
import { errorText, TransientError } from '../errors';
import type { WindowStateSink } from '../ingest/ingest-booking';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import type { PubSubMessage } from '../pubsub/message';
import type { ElementOutcome } from '../state/keyed-windows';
import type { ElementRecorder } from '../state/session-pipeline';
import { routeKey } from './route-key';

/**
 * Keys a booking by its route (origin, destination, currency), with its exact fare (× 10^9) as the value and its
 * `event_time` as the event time, and records it in the booking pipeline (dedup by `event_id`).
 */
export class BookingWindowSink implements WindowStateSink {
  constructor(
    private readonly pipeline: ElementRecorder<bigint>,
    private readonly logger: Logger,
  ) {}

  /**
   * Counts the event once in its windows; resolves after the commit (also for duplicates and too-late events).
   * @throws TransientError when Firestore fails (logged; Pub/Sub redelivers and the dedup ledger makes that safe)
   */
  async record(
    event: ValidationSuccess,
    message: PubSubMessage,
    receivedAtMs: number,
  ): Promise<void> {
    await this.recordBooking(event, message, receivedAtMs);
  }

  /** `record`, returning what happened to the event (tests, the demo). */
  async recordBooking(
    event: ValidationSuccess,
    message: Pick<PubSubMessage, 'messageId'>,
    receivedAtMs: number,
  ): Promise<ElementOutcome> {
    const key = routeKey({
      origin: event.row.origin_airport,
      destination: event.row.destination_airport,
      currency: event.row.currency,
    });
    try {
      return await this.pipeline.record(key, {
        eventId: event.eventId,
        messageId: message.messageId,
        value: event.fareScaled,
        timestampMs: event.eventTimeMs,
        receivedAtMs,
      });
    } catch (err) {
      if (err instanceof TransientError) {
        logs.transientFailure(this.logger, message, err.operation, errorText(err));
      }
      throw err;
    }
  }
}
