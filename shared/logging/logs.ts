// The catalogue of log lines: one named function per event an operator may grep or turn into a log-based metric.
import type { ErrorStage } from '../contract';
import type { Logger } from './logger';

/** Identifies the Pub/Sub message a line is about. */
export interface MessageRef {
  messageId: string;
  /** Pub/Sub publish time, RFC 3339 UTC, when known. */
  publishTime?: string | undefined;
}

/** A valid event was written to Silver. `latencyMs` is publish→write in ms when publish time is known. */
export function silverWritten(
  log: Logger,
  ref: MessageRef,
  eventId: string,
  table: string,
  latencyMs: number | undefined,
): void {
  log.write('INFO', 'silver row written', {
    outcome: 'silver',
    message_id: ref.messageId,
    event_id: eventId,
    table,
    publish_to_write_ms: latencyMs,
  });
}

/** A message was quarantined with its failing stage; metric `quarantine rate by error_stage` counts these. */
export function messageQuarantined(
  log: Logger,
  ref: MessageRef,
  stage: ErrorStage,
  reason: string,
  table: string,
): void {
  log.write('WARNING', 'message quarantined', {
    outcome: 'quarantine',
    message_id: ref.messageId,
    error_stage: stage,
    error_reason: reason,
    table,
  });
}

/** BigQuery rejected a row as data (per-row insert error); the row is routed to the bad-data table instead. */
export function rowRejectedBySink(
  log: Logger,
  ref: MessageRef,
  table: string,
  insertId: string,
  error: string,
): void {
  log.write('ERROR', 'row rejected by BigQuery, routed to bad data', {
    outcome: 'bad_data',
    message_id: ref.messageId,
    insert_id: insertId,
    table,
    error,
  });
}

/** A row went to the bad-data table. */
export function badDataWritten(
  log: Logger,
  ref: MessageRef,
  targetDest: string,
  table: string,
): void {
  log.write('WARNING', 'row written to bad-data table', {
    outcome: 'bad_data',
    message_id: ref.messageId,
    target_dest: targetDest,
    table,
  });
}

/** A transient failure: the invocation throws and Pub/Sub redelivers. */
export function transientFailure(
  log: Logger,
  ref: MessageRef,
  operation: string,
  error: string,
): void {
  log.write('ERROR', 'transient failure, message will be redelivered', {
    outcome: 'retry',
    message_id: ref.messageId,
    operation,
    error,
  });
}

/** The trigger payload was not a Pub/Sub message at all (wrong event type or shape); it is quarantined. */
export function malformedTrigger(log: Logger, ref: MessageRef, error: string): void {
  log.write('ERROR', 'malformed Pub/Sub CloudEvent', {
    outcome: 'quarantine',
    message_id: ref.messageId,
    error,
  });
}

/** Configuration loaded at cold start (values, no secrets). */
export function configLoaded(log: Logger, summary: Record<string, unknown>): void {
  log.write('INFO', 'configuration loaded', { config: summary });
}
