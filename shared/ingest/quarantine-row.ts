// Builds the quarantine row for a rejected message: the lab's columns plus what an operator needs to replay it.
import { isUtf8 } from 'node:buffer';
import type { ErrorStage } from '../contract';
import type { PubSubMessage } from '../pubsub/message';

/** Longest error_reason kept, in characters; reasons list fields, so they stay short unless input is hostile. */
export const MAX_REASON_CHARS = 4096;

/** A row of `offvia_quarantine.poisoned_events` (sql/030), as streamed (timestamps RFC 3339 UTC). */
export interface QuarantineRow {
  raw_payload: string;
  error_reason: string;
  error_stage: ErrorStage;
  received_timestamp: string;
  source_message_id: string;
  publish_time: string | null;
  attributes: string | null;
  payload_bytes: number;
  payload_truncated: boolean;
  raw_payload_base64: string | null;
}

// ignoreBOM: keep a leading byte-order mark in raw_payload, so the quarantined text is the message's text.
const lenientUtf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** Maps a rejected message to its quarantine row, the payload kept as {@link keptPayload} keeps it. */
export function quarantineRow(
  message: Pick<PubSubMessage, 'messageId' | 'publishTimeMs' | 'attributes' | 'data'>,
  stage: ErrorStage,
  reason: string,
  receivedAtMs: number,
  maxPayloadBytes: number,
): QuarantineRow {
  const payload = keptPayload(message.data, maxPayloadBytes);
  return {
    raw_payload: payload.raw_payload,
    error_reason:
      reason.length > MAX_REASON_CHARS
        ? `${reason.slice(0, MAX_REASON_CHARS)}… (truncated)`
        : reason,
    error_stage: stage,
    received_timestamp: new Date(receivedAtMs).toISOString(),
    source_message_id: message.messageId,
    publish_time:
      message.publishTimeMs === undefined ? null : new Date(message.publishTimeMs).toISOString(),
    attributes:
      Object.keys(message.attributes).length > 0 ? JSON.stringify(message.attributes) : null,
    payload_bytes: payload.payload_bytes,
    payload_truncated: payload.payload_truncated,
    raw_payload_base64: payload.raw_payload_base64,
  };
}

/** A message body as kept in a quarantine or bad-data row (see `keptPayload`). */
export interface KeptPayload {
  /** UTF-8 text of the first `maxPayloadBytes` bytes (U+FFFD for invalid bytes). */
  raw_payload: string;
  /** The same bytes exactly, base64, only when the body is not valid UTF-8; else null. */
  raw_payload_base64: string | null;
  /** Length of the whole body, bytes. */
  payload_bytes: number;
  /** True when the body was longer than `maxPayloadBytes` (Bronze has it whole). */
  payload_truncated: boolean;
}

/**
 * The part of a message body a quarantine or bad-data row keeps: at most `maxPayloadBytes` bytes
 * (`OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES`) as text, plus an exact base64 copy only when the bytes are not valid UTF-8,
 * so a row stays far below BigQuery's 10 MB insertAll limit. Bronze always has the full message.
 */
export function keptPayload(bytes: Uint8Array, maxPayloadBytes: number): KeptPayload {
  const truncated = bytes.length > maxPayloadBytes;
  const kept = truncated ? bytes.subarray(0, maxPayloadBytes) : bytes;
  // A cut inside a multi-byte character would show as U+FFFD at the end; that is honest and flagged as truncated.
  return {
    raw_payload: lenientUtf8.decode(kept),
    raw_payload_base64: isUtf8(bytes) ? null : Buffer.from(kept).toString('base64'),
    payload_bytes: bytes.length,
    payload_truncated: truncated,
  };
}
