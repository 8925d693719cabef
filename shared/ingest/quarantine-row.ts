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

/**
 * Maps a rejected message to its quarantine row. `raw_payload` is the UTF-8 text (U+FFFD for invalid bytes) of at
 * most `maxPayloadBytes` bytes; when the bytes are not valid UTF-8, `raw_payload_base64` keeps them exactly (also
 * capped). Bronze always has the full message, so truncation loses nothing.
 */
export function quarantineRow(
  message: Pick<PubSubMessage, 'messageId' | 'publishTimeMs' | 'attributes' | 'data'>,
  stage: ErrorStage,
  reason: string,
  receivedAtMs: number,
  maxPayloadBytes: number,
): QuarantineRow {
  const bytes = message.data;
  const truncated = bytes.length > maxPayloadBytes;
  const kept = truncated ? bytes.subarray(0, maxPayloadBytes) : bytes;
  const validUtf8 = isUtf8(bytes);
  // A cut inside a multi-byte character would show as U+FFFD at the end; that is honest and flagged as truncated.
  const text = lenientUtf8.decode(kept);
  return {
    raw_payload: text,
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
    payload_bytes: bytes.length,
    payload_truncated: truncated,
    raw_payload_base64: validUtf8 ? null : kept.toString('base64'),
  };
}
