// Loads the hostile-input corpus (test/corpus/hostile/*.jsonl) and builds each case's CloudEvent as it arrives.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as v from 'valibot';

import { ERROR_STAGES } from '../../shared/contract';
import type { PubSubMessage, PushedEvent } from '../../shared/pubsub/message';

/** Where the corpus lives; one JSONL file per category, plus context.json (clock and configuration). */
export const HOSTILE_CORPUS_DIR = path.join(__dirname, '..', 'corpus', 'hostile');

const NonNegativeInteger = v.pipe(v.number(), v.safeInteger(), v.minValue(0));

/**
 * One piece of a generated payload: UTF-8 text as is; `text` or `base64` bytes repeated `repeat` times; or a
 * `template` repeated with `{i}` replaced by the repetition's index (0-based).
 */
const PartSchema = v.union([
  v.string(),
  v.strictObject({ text: v.pipe(v.string(), v.minLength(1)), repeat: NonNegativeInteger }),
  v.strictObject({ base64: v.pipe(v.string(), v.minLength(1)), repeat: NonNegativeInteger }),
  v.strictObject({ template: v.pipe(v.string(), v.minLength(1)), repeat: NonNegativeInteger }),
]);

/** The Pub/Sub message as published: at most one of the `data_*` forms; none means an attributes-only message. */
const MessageSchema = v.pipe(
  v.strictObject({
    /** The body as UTF-8 text. */
    data_text: v.optional(v.string()),
    /** The body as exact bytes. */
    data_base64: v.optional(v.string()),
    /** The body generated from parts (huge or deep payloads are not stored expanded). */
    data_parts: v.optional(v.array(PartSchema)),
    /** Message attributes as sent; non-string values are kept to test the decoder. */
    attributes: v.optional(v.record(v.string(), v.unknown())),
    /** Pub/Sub message id; default `m-<case id>`. */
    message_id: v.optional(v.string()),
  }),
  v.check(
    (m) => [m.data_text, m.data_base64, m.data_parts].filter((d) => d !== undefined).length <= 1,
    'at most one of data_text, data_base64, data_parts',
  ),
);

const Common = {
  /** Expected `messageId` of the outcome and the row; default `m-<id>`, or `ce-<id>` for a raw CloudEvent. */
  message_id: v.optional(v.string()),
};

const SilverExpectation = v.strictObject({
  destination: v.literal('silver'),
  ...Common,
  /** Columns of the Silver row that must have exactly these values. */
  row: v.optional(v.record(v.string(), v.string())),
  /** The event id exactly (producer ids), or its prefix (derived ids). */
  event_id: v.optional(v.string()),
  event_id_prefix: v.optional(v.string()),
});

const QuarantineExpectation = v.strictObject({
  destination: v.literal('quarantine'),
  ...Common,
  stage: v.picklist(ERROR_STAGES),
  /** A substring the rejection reason must contain. */
  reason_contains: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Longest reason accepted (reasons quote at most an excerpt of hostile values). */
  reason_max_length: v.optional(NonNegativeInteger),
  /** The quarantine row's raw_payload exactly, when it is not simply the text of the (capped) payload bytes. */
  raw_payload: v.optional(v.string()),
  /** The quarantine row's attributes column exactly, when it is not the JSON of the string-valued attributes. */
  attributes: v.optional(v.nullable(v.string())),
});

const CaseSchema = v.pipe(
  v.strictObject({
    id: v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9-]*$/)),
    description: v.pipe(v.string(), v.minLength(1)),
    /** The Pub/Sub message, wrapped by the test in a well-formed Eventarc `messagePublished` CloudEvent. */
    message: v.optional(MessageSchema),
    /** Instead of `message`: the CloudEvent's `data` exactly as delivered (malformed envelopes). */
    cloud_event_data: v.optional(v.unknown()),
    /**
     * Instead of `message`: a Pub/Sub push body posted without CloudEvent headers that the Functions Framework does
     * not convert (no `subscription`, or empty `data`), so the function receives the body itself as the event.
     */
    push_body: v.optional(v.unknown()),
    expect: v.variant('destination', [SilverExpectation, QuarantineExpectation]),
    /**
     * A known crash: the CloudEvent path currently throws an error whose message contains `throws`. The test
     * asserts that it still does, then checks `expect` on the message decoded by hand (the outcome once fixed).
     */
    current: v.optional(v.strictObject({ throws: v.pipe(v.string(), v.minLength(1)) })),
    /** Why the expectation records current behaviour that is debatable or believed wrong. */
    note: v.optional(v.pipe(v.string(), v.minLength(1))),
  }),
  v.check(
    (c) =>
      [c.message !== undefined, 'cloud_event_data' in c, 'push_body' in c].filter(Boolean)
        .length === 1,
    'exactly one of message, cloud_event_data, push_body',
  ),
  v.check(
    (c) => c.current === undefined || (c.message !== undefined && c.note !== undefined),
    'a known crash (current) is a message case with a note',
  ),
  v.check(
    (c) =>
      c.message !== undefined ||
      c.expect.destination === 'silver' ||
      c.expect.raw_payload !== undefined,
    'a quarantined cloud_event_data or push_body case states its raw_payload',
  ),
);

const ContextSchema = v.strictObject({
  /** The fixed clock: when every message is received. */
  received_at: v.pipe(v.string(), v.isoTimestamp()),
  /** The publish time every wrapped message carries. */
  publish_time: v.pipe(v.string(), v.isoTimestamp()),
  subscription: v.string(),
  /** Environment for loadIngestConfig, so skew, age and quarantine cap are pinned with the expectations. */
  env: v.record(v.string(), v.string()),
});

export type HostileCase = v.InferOutput<typeof CaseSchema> & {
  /** The file the case came from, without `.jsonl`. */
  category: string;
};
export type HostileMessage = v.InferOutput<typeof MessageSchema>;
export type CorpusContext = v.InferOutput<typeof ContextSchema>;

/**
 * Reads every case, in file then line order. Validates the shape strictly (a misspelt expectation key fails the
 * load) and keeps the parsed JSON objects themselves, so keys such as `__proto__` survive as own properties.
 * @throws Error naming the file and line of the first malformed case, or a duplicate id.
 */
export function loadHostileCorpus(dir: string = HOSTILE_CORPUS_DIR): {
  context: CorpusContext;
  cases: HostileCase[];
} {
  const context: unknown = JSON.parse(fs.readFileSync(path.join(dir, 'context.json'), 'utf8'));
  v.assert(ContextSchema, context);
  const cases: HostileCase[] = [];
  const ids = new Set<string>();
  const files = fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.jsonl'))
    .sort();
  for (const file of files) {
    const lines = fs.readFileSync(path.join(dir, file), 'utf8').split('\n');
    lines.forEach((line, index) => {
      if (line.trim() === '') return;
      const where = `${file}:${index + 1}`;
      const raw: unknown = JSON.parse(line);
      const result = v.safeParse(CaseSchema, raw);
      if (!result.success) {
        const issue = result.issues[0];
        throw new Error(`${where}: ${v.getDotPath(issue) ?? ''} ${issue.message}`);
      }
      v.assert(CaseSchema, raw);
      if (ids.has(raw.id)) throw new Error(`${where}: duplicate case id ${raw.id}`);
      if (raw.message?.data_text !== undefined && !isWellFormed(raw.message.data_text)) {
        throw new Error(`${where}: data_text has lone surrogates; use data_base64 for exact bytes`);
      }
      ids.add(raw.id);
      cases.push({ ...raw, category: file.replace(/\.jsonl$/, '') });
    });
  }
  return { context, cases };
}

/** The message body bytes of a `message` case; `undefined` for an attributes-only message (no data field). */
export function payloadOf(message: HostileMessage): Buffer | undefined {
  if (message.data_text !== undefined) return Buffer.from(message.data_text, 'utf8');
  if (message.data_base64 !== undefined) return Buffer.from(message.data_base64, 'base64');
  if (message.data_parts === undefined) return undefined;
  return Buffer.concat(message.data_parts.map(partBytes));
}

function partBytes(part: v.InferOutput<typeof PartSchema>): Buffer {
  if (typeof part === 'string') return Buffer.from(part, 'utf8');
  if ('text' in part) return repeatBytes(Buffer.from(part.text, 'utf8'), part.repeat);
  if ('base64' in part) return repeatBytes(Buffer.from(part.base64, 'base64'), part.repeat);
  const pieces: string[] = [];
  for (let i = 0; i < part.repeat; i++) pieces.push(part.template.replaceAll('{i}', String(i)));
  return Buffer.from(pieces.join(''), 'utf8');
}

function repeatBytes(unit: Buffer, times: number): Buffer {
  return times === 0 ? Buffer.alloc(0) : Buffer.alloc(unit.length * times, unit);
}

/** The message id a `message` case is published with. */
export function messageIdOf(testCase: HostileCase): string {
  return testCase.message?.message_id ?? `m-${testCase.id}`;
}

/** The CloudEvent id the test passes alongside the data (the decoder's fallback message id). */
export function cloudEventIdOf(testCase: HostileCase): string {
  return `ce-${testCase.id}`;
}

/**
 * What the Functions Framework hands the function for a case: a `push_body` itself (no CloudEvent), else a
 * CloudEvent with id `ce-<id>` and the case's {@link cloudEventDataOf}.
 */
export function pushedEventOf(testCase: HostileCase, context: CorpusContext): PushedEvent {
  if ('push_body' in testCase) return testCase.push_body as PushedEvent;
  return { id: cloudEventIdOf(testCase), data: cloudEventDataOf(testCase, context) };
}

/**
 * The CloudEvent `data` of a case as Eventarc delivers it (`google.cloud.pubsub.topic.v1.messagePublished`, already
 * JSON-parsed by the Functions Framework): the raw `cloud_event_data`, or the message wrapped with base64 data.
 */
export function cloudEventDataOf(testCase: HostileCase, context: CorpusContext): unknown {
  if (testCase.message === undefined) return testCase.cloud_event_data;
  const bytes = payloadOf(testCase.message);
  const message: Record<string, unknown> = {
    messageId: messageIdOf(testCase),
    publishTime: context.publish_time,
  };
  if (bytes !== undefined) message.data = bytes.toString('base64');
  if (testCase.message.attributes !== undefined) message.attributes = testCase.message.attributes;
  return { message, subscription: context.subscription };
}

/**
 * The message as a correct decoder yields it (a known crash bypassed): data bytes, string attributes, ids and
 * publish time of a `message` case.
 */
export function decodedMessageOf(testCase: HostileCase, context: CorpusContext): PubSubMessage {
  const message = testCase.message ?? {};
  const attributes: Record<string, string> = {};
  for (const [key, value] of Object.entries(message.attributes ?? {})) {
    if (typeof value === 'string') {
      Object.defineProperty(attributes, key, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return {
    messageId: messageIdOf(testCase),
    publishTime: context.publish_time,
    publishTimeMs: Date.parse(context.publish_time),
    attributes,
    data: payloadOf(message) ?? Buffer.alloc(0),
    subscription: context.subscription,
  };
}

/** Whether a string is valid UTF-16 (no lone surrogates), so that encoding it as UTF-8 loses nothing. */
function isWellFormed(text: string): boolean {
  return Buffer.from(text, 'utf8').toString('utf8') === text;
}
