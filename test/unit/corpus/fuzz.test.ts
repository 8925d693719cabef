// Seeded fuzzing of the ingest path: decodeMessagePublished, validateBooking and ingestMessage never throw, agree.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { loadIngestConfig } from '../../../shared/config/ingest-config';
import type { TableRef } from '../../../shared/config/env';
import {
  BOOKING_CONTRACT_VERSION,
  CONTRACT_FIELDS,
  ERROR_STAGES,
  validateBooking,
} from '../../../shared/contract';
import { ingestPipelineMessage as ingestMessage } from '../../../shared/pipeline/runtime/ingest';
import { bookingIngestDeps } from '../../support/booking-ingest';
import { assertWellFormed } from '../../support/validation-invariants';
import { MAX_REASON_CHARS } from '../../../shared/ingest/quarantine-row';
import { decodeMessagePublished, type DecodeResult } from '../../../shared/pubsub/message';
import type { InsertRow, RowResult, RowWriter } from '../../../shared/sinks/row-writer';

/** Fixed seed and bounded runs: a few seconds, the same inputs every run; FUZZ_SEED / FUZZ_RUNS explore further. */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_007);
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const PARAMS = { seed: SEED, numRuns: RUNS };

const NOW = Date.UTC(2026, 9, 7, 14, 11, 0);
const CONFIG = loadIngestConfig({});
const SILVER = `${CONFIG.silverTable.datasetId}.${CONFIG.silverTable.tableId}`;
const QUARANTINE = `${CONFIG.quarantineTable.datasetId}.${CONFIG.quarantineTable.tableId}`;
const OPTIONS = {
  messageId: 'm-fuzz',
  receivedAtMs: NOW,
  maxFutureSkewMs: CONFIG.maxFutureSkewMs,
  maxEventAgeMs: CONFIG.maxEventAgeMs,
};

class RecordingWriter implements RowWriter {
  readonly rows: { table: string; row: InsertRow }[] = [];
  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    for (const row of rows) this.rows.push({ table: `${table.datasetId}.${table.tableId}`, row });
    return Promise.resolve(rows.map(() => ({ ok: true as const })));
  }
}

/** Runs one decoded message through ingestMessage; asserts one row, in Silver or quarantine, with a known stage. */
async function ingestOnce(decoded: DecodeResult) {
  const writer = new RecordingWriter();
  const deps = bookingIngestDeps({ writer, now: () => NOW });
  const outcome = await ingestMessage(decoded, deps);
  assert.equal(writer.rows.length, 1, 'exactly one row');
  const [written] = writer.rows;
  assert.ok(written);
  assert.ok(outcome.messageId.length > 0, 'a message id');
  if (outcome.destination === 'silver') {
    assert.equal(written.table, SILVER);
    assert.equal(written.row.insertId, outcome.eventId);
  } else {
    assert.equal(outcome.destination, 'quarantine');
    assert.equal(written.table, QUARANTINE);
    assert.ok((ERROR_STAGES as readonly string[]).includes(outcome.stage), outcome.stage);
    assert.ok(outcome.reason.length > 0, 'non-empty reason');
    assert.equal(written.row.insertId, outcome.messageId);
    assert.equal(written.row.json.error_stage, outcome.stage);
    assert.ok(String(written.row.json.error_reason).length > 0);
  }
  return { outcome, row: written.row };
}

/** A CloudEvent `messagePublished` data object carrying `bytes`, as Eventarc delivers it. */
function cloudEvent(bytes: Uint8Array): unknown {
  return {
    message: {
      data: Buffer.from(bytes).toString('base64'),
      messageId: 'm-fuzz',
      publishTime: '2026-10-07T14:10:59Z',
    },
  };
}

/** How often each place was reached across the properties: the generators must reach Silver and every stage. */
const reached = new Map<string, number>();

/**
 * The payload through validateBooking directly (pure, deterministic, never throws) and through the whole
 * CloudEvent path; both must agree on the destination, stage, reason and Silver row.
 */
async function checkPayload(payload: Uint8Array): Promise<void> {
  const result = validateBooking(payload, OPTIONS);
  assertWellFormed(result);
  assert.deepEqual(validateBooking(payload, OPTIONS), result, 'deterministic');
  const decoded = decodeMessagePublished(cloudEvent(payload), 'ce-fuzz');
  assert.ok(decoded.ok, 'base64 of any bytes decodes');
  assert.deepEqual(new Uint8Array(decoded.message.data), new Uint8Array(payload));
  const { outcome, row } = await ingestOnce(decoded);
  const place = result.ok ? 'silver' : result.stage;
  reached.set(place, (reached.get(place) ?? 0) + 1);
  if (result.ok) {
    assert.equal(outcome.destination, 'silver');
    assert.deepEqual(row.json, {
      ...result.row,
      event_id: result.eventId,
      contract_version: BOOKING_CONTRACT_VERSION,
    });
  } else {
    assert.ok(outcome.destination === 'quarantine', `${outcome.destination} for ${result.stage}`);
    assert.equal(outcome.stage, result.stage);
    assert.equal(outcome.reason, result.reason);
    assert.ok(String(row.json.error_reason).startsWith(result.reason.slice(0, MAX_REASON_CHARS)));
  }
}

/** A text payload: as a string, as its UTF-8 bytes (same verdict when the text is well-formed), and end to end. */
async function checkText(text: string): Promise<void> {
  const asString = validateBooking(text, OPTIONS);
  assertWellFormed(asString);
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.toString('utf8') === text) {
    assert.deepEqual(validateBooking(bytes, OPTIONS), asString, 'bytes and string agree');
  }
  await checkPayload(bytes);
}

// ---- Valid bookings to mutate, as raw members (key text, value text) so any token can be swapped in. ----

type Members = [string, string][];

const members = (event: Record<string, string>): Members =>
  Object.entries(event).map(([key, value]) => [JSON.stringify(key), value]);

const SEEDS: Members[] = [
  members({
    booking_id: '"BK-90210"',
    passenger_id: '"PAX-4821"',
    flight_number: '"OF-104"',
    origin: '"JFK"',
    destination: '"LHR"',
    fare: '"749.50"',
    currency: '"USD"',
    status: '"CONFIRMED"',
    event_time: '"2026-10-07T14:10:00Z"',
  }),
  members({
    booking_id: '90210',
    passenger_id: '4821',
    flight_number: '104',
    origin: '"SFO"',
    destination: '"HND"',
    fare: '7.495e2',
    event_time: '"2026-10-08T00:10:00.123456789+10:00"',
  }),
  members({
    event_id: '"evt:1.a_b-c"',
    event_time: '"2026-10-07 14:10:00z"',
    fare: '"0.000000001"',
    destination: '"CDG"',
    origin: '"FCO"',
    flight_number: '"OF-\\u0031"',
    passenger_id: '"乗客-東京-🛫"',
    booking_id: '"予約-1"',
    status: 'null',
    currency: 'null',
  }),
  [
    ...members({
      booking_id: '"BK-1"',
      passenger_id: '"PAX-1"',
      flight_number: '"OF-1"',
      origin: '"MXP"',
      destination: '"BCN"',
      fare: '99999999999999999999999999999.999999999',
      event_time: '"2024-02-29T12:00:00-05:00"',
    }),
    ['"__proto__"', '{"fare":"-1"}'],
    ['"meta"', '{"a":[1,{"b":null}],"booking_id":"X"}'],
  ],
];

const render = (m: Members): string => `{${m.map(([key, value]) => `${key}:${value}`).join(',')}}`;

/** Characters that break parsers, decoders and regexes in interesting ways. */
const SPECIALS = [
  '"',
  '\\',
  '{',
  '}',
  '[',
  ']',
  ',',
  ':',
  ' ',
  '\n',
  '\t',
  '\u0000',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u200b',
  '\u202e',
  '\ufeff',
  '\ud800',
  '\udc00',
  '\ufffd',
  '😀',
  'é',
  'e',
  'E',
  '+',
  '-',
  '.',
  '0',
  '9',
  'T',
  'Z',
  'z',
  'u',
  '\\u0000',
  '\\ud800',
  'NaN',
  'Infinity',
  'null',
  'true',
];

const textArb = fc.oneof(fc.constantFrom(...SPECIALS), fc.string({ unit: 'binary', maxLength: 4 }));

/** One character-level edit: insert text, delete a run, or replace a run, at a position taken modulo the length. */
const editArb = fc.record({
  op: fc.constantFrom('insert', 'delete', 'replace'),
  at: fc.nat(),
  length: fc.integer({ min: 1, max: 8 }),
  text: textArb,
});

function applyEdits(
  text: string,
  edits: { op: string; at: number; length: number; text: string }[],
) {
  let out = text;
  for (const edit of edits) {
    const at = edit.at % (out.length + 1);
    if (edit.op === 'insert') out = out.slice(0, at) + edit.text + out.slice(at);
    else if (edit.op === 'delete') out = out.slice(0, at) + out.slice(at + edit.length);
    else out = out.slice(0, at) + edit.text + out.slice(at + edit.length);
  }
  return out;
}

/** Number spellings: JSON-legal and not, to use bare or quoted. */
const numberTextArb = fc
  .tuple(
    fc.constantFrom('', '-', '+'),
    fc.string({ unit: fc.constantFrom('0', '1', '5', '9'), minLength: 0, maxLength: 45 }),
    fc.option(fc.string({ unit: fc.constantFrom('0', '1', '9'), maxLength: 12 })),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.nat(500))),
  )
  .map(
    ([sign, digits, fraction, exponent]) =>
      sign +
      digits +
      (fraction === null ? '' : `.${fraction}`) +
      (exponent === null ? '' : `${exponent[0]}${exponent[1]}${exponent[2]}`),
  );

/** Raw JSON (or almost JSON) value tokens for type swaps. */
const tokenArb = fc.oneof(
  fc.constantFrom(
    'true',
    'false',
    'null',
    '[]',
    '{}',
    '0',
    '-0',
    '1e400',
    '""',
    '" "',
    '"NaN"',
    'NaN',
    '-Infinity',
    '0x2ED',
    '"2026-10-07T14:10:00"',
    '"2026-10-07T24:00:00Z"',
    '"\\u0000"',
    '"\\ud800"',
    '[[[[["749.50"]]]]]',
    '{"__proto__":{"x":1}}',
  ),
  numberTextArb,
  numberTextArb.map((n) => JSON.stringify(n)),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  fc.string({ unit: 'binary', maxLength: 20 }).map((s) => JSON.stringify(s)),
);

/** A key as written in the payload: a contract key or a hostile one, plain or disguised. */
const keyArb = fc
  .tuple(
    fc.constantFrom(...CONTRACT_FIELDS, '__proto__', 'constructor', 'prototype', 'note'),
    fc.constantFrom('plain', 'escaped', 'upper', 'bom', 'space'),
  )
  .map(([key, how]) => {
    if (how === 'escaped')
      return `"\\u${key.charCodeAt(0).toString(16).padStart(4, '0')}${key.slice(1)}"`;
    if (how === 'upper') return JSON.stringify(key.toUpperCase());
    if (how === 'bom') return JSON.stringify(`\ufeff${key}`);
    if (how === 'space') return JSON.stringify(`${key} `);
    return JSON.stringify(key);
  });

describe(`ingest path under fuzzing (seed ${SEED}, ${RUNS} runs per property)`, function () {
  this.timeout(60_000);

  it('decodeMessagePublished + ingestMessage: any CloudEvent data is routed, never thrown', async () => {
    const base64Arb = fc
      .uint8Array({ maxLength: 200 })
      .map((b) => Buffer.from(b).toString('base64'));
    const dataArb = fc.oneof(
      base64Arb,
      base64Arb.map((s) => s.replace(/=+$/, '')),
      base64Arb.map((s) => s.replaceAll('+', '-').replaceAll('/', '_')),
      fc
        .tuple(base64Arb, fc.nat(), textArb)
        .map(([s, at, t]) => applyEdits(s, [{ op: 'insert', at, length: 1, text: t }])),
      fc.constant(Buffer.from(render(SEEDS[0] ?? [])).toString('base64')),
      fc.string({ maxLength: 40 }),
      fc.jsonValue({ maxDepth: 2 }),
    );
    const attributesArb = fc.oneof(
      fc.dictionary(
        fc.oneof(
          fc.string({ maxLength: 8 }),
          fc.constantFrom('__proto__', 'constructor', 'toString'),
        ),
        fc.oneof(fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 1 })),
        { maxKeys: 5 },
      ),
      fc.jsonValue({ maxDepth: 1 }),
    );
    const idArb = fc.oneof(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 0 }));
    const messageArb = fc.record(
      {
        data: dataArb,
        attributes: attributesArb,
        messageId: idArb,
        message_id: idArb,
        publishTime: fc.oneof(
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          fc.string({ maxLength: 30 }),
          fc.jsonValue({ maxDepth: 0 }),
        ),
        publish_time: fc.string({ maxLength: 30 }),
        orderingKey: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    );
    const eventArb = fc.oneof(
      fc.record(
        {
          message: fc.oneof(messageArb, fc.jsonValue({ maxDepth: 2 })),
          subscription: fc.jsonValue({ maxDepth: 0 }),
        },
        { requiredKeys: [] },
      ),
      fc.jsonValue({ maxDepth: 3 }),
    );
    await fc.assert(
      fc.asyncProperty(eventArb, fc.string({ minLength: 1, maxLength: 10 }), async (data, ceId) => {
        const decoded = decodeMessagePublished(data, ceId);
        if (decoded.ok) {
          const { message } = decoded;
          assert.ok(typeof message.messageId === 'string' && message.messageId.length > 0);
          assert.ok(Buffer.isBuffer(message.data));
          for (const value of Object.values(message.attributes))
            assert.equal(typeof value, 'string');
          assert.ok(message.publishTimeMs === undefined || Number.isFinite(message.publishTimeMs));
        } else {
          assert.ok(decoded.reason.length > 0 && decoded.messageId.length > 0);
          assert.equal(typeof decoded.raw, 'string');
        }
        const { outcome } = await ingestOnce(decoded);
        if (!decoded.ok) {
          assert.ok(outcome.destination === 'quarantine' && outcome.stage === 'PARSE_JSON');
        }
      }),
      PARAMS,
    );
  });

  it('arbitrary bytes: validateBooking and the CloudEvent path agree, never throw', async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), checkPayload), PARAMS);
  });

  it('arbitrary strings (binary, graphemes, JSON alphabet): never throw, bytes and string agree', async () => {
    const jsonish = fc.string({
      unit: fc.constantFrom(...'{}[]":,0123456789.eE+- \n\\ufnrtalsNI', '\ufeff', '\ud800'),
      maxLength: 80,
    });
    const stringArb = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.string({ unit: 'grapheme', maxLength: 50 }),
      jsonish,
    );
    await fc.assert(fc.asyncProperty(stringArb, checkText), PARAMS);
  });

  it('arbitrary JSON values and objects over the contract keys: never throw', async () => {
    const objectArb = fc.dictionary(
      fc.constantFrom(...CONTRACT_FIELDS, '__proto__', 'constructor', 'extra'),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: 12 },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue({ maxDepth: 4 }), objectArb), (value) =>
        checkText(JSON.stringify(value)),
      ),
      PARAMS,
    );
  });

  it('valid bookings with characters inserted, deleted or replaced: never throw', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...SEEDS),
        fc.array(editArb, { minLength: 1, maxLength: 4 }),
        (seed, edits) => checkText(applyEdits(render(seed), edits)),
      ),
      PARAMS,
    );
  });

  it('valid bookings with field types swapped and keys duplicated or disguised: never throw', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...SEEDS),
        fc.array(fc.tuple(fc.nat(), tokenArb), { maxLength: 3 }),
        fc.array(fc.tuple(fc.nat(), keyArb, tokenArb), { maxLength: 3 }),
        async (seed, swaps, inserts) => {
          const mutated: Members = seed.map(([key, value]) => [key, value]);
          for (const [at, token] of swaps) {
            const member = mutated[at % mutated.length];
            if (member) member[1] = token;
          }
          for (const [at, key, token] of inserts) {
            mutated.splice(at % (mutated.length + 1), 0, [key, token]);
          }
          await checkText(render(mutated));
          // A duplicate of an existing key with another value is always a schema error.
          const [first] = mutated;
          if (first && CONTRACT_FIELDS.includes(JSON.parse(first[0]) as string)) {
            const twice = render([...mutated, [first[0], '"a value that differs"']]);
            const result = validateBooking(twice, OPTIONS);
            if (
              first[1] !== '"a value that differs"' &&
              !(!result.ok && result.stage === 'PARSE_JSON')
            ) {
              assert.ok(!result.ok && result.stage === 'SCHEMA_VALIDATION', twice);
              assert.match(result.reason, /Duplicate keys with different values/);
            }
          }
        },
      ),
      PARAMS,
    );
  });

  after(() => {
    const tally = [...reached].map(([place, n]) => `${place} ${n}`).join(', ');
    console.log(`      fuzz payloads by verdict: ${tally}`);
  });

  it('valid bookings with random byte flips and cuts: the whole path agrees', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...SEEDS),
        fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 4 }),
        fc.nat(),
        async (seed, flips, cut) => {
          const bytes = Buffer.from(render(seed), 'utf8');
          for (const [at, byte] of flips) bytes[at % bytes.length] = byte;
          await checkPayload(bytes);
          await checkPayload(bytes.subarray(0, cut % (bytes.length + 1)));
        },
      ),
      PARAMS,
    );
  });

  it('reached Silver and every stage (the generators are not stuck at PARSE_JSON)', () => {
    for (const place of ['silver', ...ERROR_STAGES]) {
      assert.ok((reached.get(place) ?? 0) > 0, `never reached ${place}`);
    }
  });
});
