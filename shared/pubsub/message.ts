// Decodes the Pub/Sub message inside an Eventarc `messagePublished` CloudEvent into bytes, attributes and ids.
import { createHash } from 'node:crypto';
import { defineField, isPlainObject } from '../contract/json-payload';

/**
 * The wire shape of `google.cloud.pubsub.topic.v1.messagePublished` CloudEvent data (Eventarc and the Functions
 * Framework's push adapter). Field names follow Pub/Sub's JSON mapping; both camelCase and snake_case ids occur.
 */
export interface RawMessagePublishedData {
  message?: {
    /** Message body, base64. Absent for attributes-only messages. */
    data?: unknown;
    attributes?: unknown;
    messageId?: unknown;
    message_id?: unknown;
    /** RFC 3339 UTC. */
    publishTime?: unknown;
    publish_time?: unknown;
    orderingKey?: unknown;
  };
  /** Full subscription path, `projects/P/subscriptions/S`. */
  subscription?: unknown;
}

/** A decoded Pub/Sub message. */
export interface PubSubMessage {
  /** Pub/Sub message id (the quarantine insertId). */
  messageId: string;
  /** Publish time as sent (RFC 3339 UTC), if any. */
  publishTime: string | undefined;
  /** Publish time in epoch ms, if parseable. */
  publishTimeMs: number | undefined;
  /** Attributes; non-string values are dropped rather than trusted. */
  attributes: Record<string, string>;
  /** Message body bytes (empty for attributes-only messages). */
  data: Buffer;
  /** Subscription path, if sent. */
  subscription: string | undefined;
}

/**
 * The attribute marking a watermark heartbeat: a message the scheduler (Cloud Scheduler's Pub/Sub target in the
 * cloud, deploy/local/scheduler.ts locally) publishes into a pipeline's ingest topic once a minute. The ingest path
 * records its publish time for the watermark (docs/windows.md "Heartbeats") and routes it nowhere else: never to
 * Silver, quarantine, the schema-retry store, bad data or gold. Bronze keeps it as it keeps every raw message;
 * `offvia replay` skips it.
 */
export const HEARTBEAT_ATTRIBUTE = 'offvia_heartbeat';

/** Whether a message's attributes mark it as a watermark heartbeat ({@link HEARTBEAT_ATTRIBUTE}, any value). */
export function isHeartbeat(attributes: Readonly<Record<string, string>>): boolean {
  return Object.hasOwn(attributes, HEARTBEAT_ATTRIBUTE);
}

/** Result of decoding: a message, or the reason the CloudEvent is not a well-formed Pub/Sub message. */
export type DecodeResult =
  | { ok: true; message: PubSubMessage }
  | {
      ok: false;
      /** Never empty: the message id, else the CloudEvent id, else {@link BODY_HASH_ID_PREFIX}'s id of `raw`. */
      messageId: string;
      reason: string;
      /** What we received, as text, so the quarantine row keeps it. */
      raw: string;
      /** The message's string attributes when the envelope carried any (quarantine `attributes`); else empty. */
      attributes: Record<string, string>;
    };

/**
 * Prefix of the id of an envelope with neither a message id nor a CloudEvent id: `body-sha256:` + 64 hex of SHA-256
 * over its text, the quarantine insertId, so a redelivery of the same body dedups like one with a message id.
 */
export const BODY_HASH_ID_PREFIX = 'body-sha256:';

/**
 * What the Functions Framework hands a CloudEvent function. A binary or structured CloudEvent has `id` and `data`;
 * a Pub/Sub push without CloudEvent headers that the framework does not convert (no `subscription`, or empty
 * `data`: an attributes-only message) arrives as the push body itself (`message`, `subscription`) with no `id`.
 */
export type PushedEvent = { id?: unknown; data?: unknown; message?: unknown } | null | undefined;

// A plain character class with no repeated group: no backtracking, so a 10 MB message (Pub/Sub's limit) cannot
// overflow the regex stack.
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;

/** Standard base64 with padding (RFC 4648 §4), as Pub/Sub's JSON mapping sends bytes. */
function isBase64(text: string): boolean {
  return text.length % 4 === 0 && BASE64_CHARS.test(text);
}

/**
 * Decodes what the Functions Framework passed (see {@link PushedEvent}): the CloudEvent's `data` when it has any,
 * else the event itself when it is a Pub/Sub push body. Never throws; a failure is `ok: false` (quarantined at
 * PARSE_JSON) with a non-empty `messageId`.
 */
export function decodePushedEvent(event: PushedEvent): DecodeResult {
  const cloudEventId = firstString(event?.id);
  if (event?.data !== undefined) return decodeMessagePublished(event.data, cloudEventId);
  if (isPlainObject(event) && isPlainObject(event.message))
    return decodeMessagePublished(event, cloudEventId);
  const raw = safeJson(withoutTraceparent(event));
  const reason = 'request is neither a CloudEvent with data nor a Pub/Sub push body';
  return malformed(cloudEventId, reason, raw);
}

/** A failed decode; without `messageId` the id is {@link BODY_HASH_ID_PREFIX} + the SHA-256 of `raw`. */
function malformed(
  messageId: string | undefined,
  reason: string,
  raw: string,
  attributes: Record<string, string> = {},
): DecodeResult {
  return { ok: false, messageId: messageId ?? bodyHashId(raw), reason, raw, attributes };
}

/**
 * Decodes CloudEvent `data` (already JSON-parsed by the framework); never throws, as {@link decodePushedEvent}.
 * `cloudEventId` is the fallback message id.
 */
export function decodeMessagePublished(
  data: unknown,
  cloudEventId: string | undefined,
): DecodeResult {
  const raw = () => safeJson(withoutTraceparent(data));
  if (!isPlainObject(data) || !isPlainObject(data.message)) {
    return malformed(firstString(cloudEventId), 'CloudEvent data has no Pub/Sub message', raw());
  }
  const m = data.message;
  const attributes = stringAttributes(m.attributes);
  const knownId = firstString(m.messageId, m.message_id, cloudEventId);
  let bytes: Buffer;
  if (m.data === undefined || m.data === null || m.data === '') {
    bytes = Buffer.alloc(0);
  } else if (typeof m.data === 'string' && isBase64(m.data)) {
    bytes = Buffer.from(m.data, 'base64');
  } else {
    return malformed(knownId, 'message.data is not base64 text', raw(), attributes);
  }
  const id = knownId ?? bodyHashId(raw());
  const publishTime = firstString(m.publishTime, m.publish_time);
  const parsed = publishTime === undefined ? NaN : Date.parse(publishTime);
  return {
    ok: true,
    message: {
      messageId: id,
      publishTime,
      publishTimeMs: Number.isFinite(parsed) ? parsed : undefined,
      attributes,
      data: bytes,
      subscription: typeof data.subscription === 'string' ? data.subscription : undefined,
    },
  };
}

/** The string-valued attributes; non-string values are dropped rather than trusted. */
function stringAttributes(value: unknown): Record<string, string> {
  const attributes: Record<string, string> = {};
  if (!isPlainObject(value)) return attributes;
  for (const [k, v] of Object.entries(value)) {
    // defineProperty, not assignment: an attribute named "__proto__" must be kept as data, not set a prototype.
    if (typeof v === 'string') defineField(attributes, k, v);
  }
  return attributes;
}

/** `body-sha256:` + the SHA-256 of the text, hex: an id that is the same for every delivery of the same body. */
function bodyHashId(text: string): string {
  return BODY_HASH_ID_PREFIX + createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The framework adds the request's `traceparent` header to the event; it differs between deliveries, so it is no
 * part of the body that is kept and hashed.
 */
function withoutTraceparent(value: unknown): unknown {
  if (!isPlainObject(value) || !('traceparent' in value)) return value;
  const rest = { ...value };
  delete rest.traceparent;
  return rest;
}

function firstString(...values: unknown[]): string | undefined {
  for (const v of values) if (typeof v === 'string' && v !== '') return v;
  return undefined;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch (err) {
    return `<unserialisable CloudEvent data: ${String(err)}>`;
  }
}
