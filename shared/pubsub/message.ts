// Decodes the Pub/Sub message inside an Eventarc `messagePublished` CloudEvent into bytes, attributes and ids.

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
  /** Attributes; non-string values are dropped into `malformed` below rather than trusted. */
  attributes: Record<string, string>;
  /** Message body bytes (empty for attributes-only messages). */
  data: Buffer;
  /** Subscription path, if sent. */
  subscription: string | undefined;
}

/** Result of decoding: a message, or the reason the CloudEvent is not a well-formed Pub/Sub message. */
export type DecodeResult =
  | { ok: true; message: PubSubMessage }
  | {
      ok: false;
      /** Best id we have: the message id if present, else the CloudEvent id. */
      messageId: string;
      reason: string;
      /** What we received, as text, so the quarantine row keeps it. */
      raw: string;
    };

// A plain character class with no repeated group: V8 runs it without backtracking, so a 10 MB message (the
// Pub/Sub limit) cannot overflow the regex stack, as `(?:[…]{4})*` did beyond ~4.4 M characters.
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;

/** Standard base64 with padding (RFC 4648 §4), as Pub/Sub's JSON mapping sends bytes. */
function isBase64(text: string): boolean {
  return text.length % 4 === 0 && BASE64_CHARS.test(text);
}

/**
 * Decodes CloudEvent `data` (already JSON-parsed by the framework). Never throws: a malformed event is returned
 * as `ok: false` with its text, to be quarantined at PARSE_JSON. `cloudEventId` is the fallback message id.
 */
export function decodeMessagePublished(data: unknown, cloudEventId: string): DecodeResult {
  const raw = () => safeJson(data);
  if (!isObject(data) || !isObject(data.message)) {
    return {
      ok: false,
      messageId: cloudEventId,
      reason: 'CloudEvent data has no Pub/Sub message',
      raw: raw(),
    };
  }
  const m = data.message;
  const id = firstString(m.messageId, m.message_id) ?? cloudEventId;
  let bytes: Buffer;
  if (m.data === undefined || m.data === null || m.data === '') {
    bytes = Buffer.alloc(0);
  } else if (typeof m.data === 'string' && isBase64(m.data)) {
    bytes = Buffer.from(m.data, 'base64');
  } else {
    return { ok: false, messageId: id, reason: 'message.data is not base64 text', raw: raw() };
  }
  const attributes: Record<string, string> = {};
  if (isObject(m.attributes)) {
    for (const [k, v] of Object.entries(m.attributes)) {
      // defineProperty, not assignment: an attribute named "__proto__" must be kept as data, not set a prototype.
      if (typeof v === 'string') {
        Object.defineProperty(attributes, k, {
          value: v,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
  }
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

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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
