// The hostile-input corpus through decodePushedEvent + ingestMessage: no throw, one row, expected place and stage.
import assert from 'node:assert/strict';

import { loadIngestConfig } from '../../../shared/config/ingest-config';
import type { TableRef } from '../../../shared/config/env';
import {
  ingestPipelineMessage as ingestMessage,
  type PipelineIngestOutcome as IngestOutcome,
} from '../../../shared/pipeline/runtime/ingest';
import { bookingIngestDeps } from '../../support/booking-ingest';
import { Logger } from '../../../shared/logging/logger';
import { decodePushedEvent } from '../../../shared/pubsub/message';
import type { InsertRow, RowResult, RowWriter } from '../../../shared/sinks/row-writer';
import {
  cloudEventIdOf,
  decodedMessageOf,
  loadHostileCorpus,
  messageIdOf,
  payloadOf,
  pushedEventOf,
  type HostileCase,
} from '../../support/hostile-corpus';

const { context, cases } = loadHostileCorpus();
const RECEIVED_AT_MS = Date.parse(context.received_at);
const CONFIG = loadIngestConfig(context.env);
const SILVER = tableKey(CONFIG.silverTable);
const QUARANTINE = tableKey(CONFIG.quarantineTable);
const SILVER_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** Strict UTF-8, and a lenient decoder that keeps a leading BOM: the text a faithful quarantine row would hold. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const faithfulText = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

function tableKey(table: TableRef): string {
  return `${table.datasetId}.${table.tableId}`;
}

/** Accepts every row and records it per table (as BigQuery would, minus the network). */
class RecordingWriter implements RowWriter {
  readonly rows: { table: string; row: InsertRow }[] = [];
  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    for (const row of rows) this.rows.push({ table: tableKey(table), row });
    return Promise.resolve(rows.map(() => ({ ok: true as const })));
  }
}

/** Where each case is expected to end: "silver" or "quarantine/<stage>". */
function placeOf(expect: HostileCase['expect']): string {
  return expect.destination === 'silver' ? 'silver' : `quarantine/${expect.stage}`;
}

function placeOfOutcome(outcome: IngestOutcome): string {
  return outcome.destination === 'quarantine' ? `quarantine/${outcome.stage}` : outcome.destination;
}

function isValidUtf8(bytes: Buffer): boolean {
  try {
    strictUtf8.decode(bytes);
    return true;
  } catch (error: unknown) {
    if (error instanceof TypeError) return false;
    throw error;
  }
}

/** The attributes column a quarantine row must carry: the string-valued attributes as JSON, or null if none. */
function expectedAttributes(testCase: HostileCase): string | null {
  const attributes = testCase.message?.attributes ?? {};
  const kept = Object.entries(attributes).filter(([, value]) => typeof value === 'string');
  return kept.length === 0 ? null : JSON.stringify(Object.fromEntries(kept));
}

function expectedMessageId(testCase: HostileCase): string {
  return (
    testCase.expect.message_id ??
    (testCase.message === undefined ? cloudEventIdOf(testCase) : messageIdOf(testCase))
  );
}

function assertSilverRow(testCase: HostileCase, outcome: IngestOutcome, row: InsertRow): void {
  const { expect } = testCase;
  if (expect.destination !== 'silver' || outcome.destination !== 'silver') return;
  const json = row.json;
  assert.equal(row.insertId, outcome.eventId, 'Silver insertId is the event id');
  assert.equal(json.event_id, outcome.eventId, 'event_id column');
  assert.equal(json.source_message_id, expectedMessageId(testCase), 'source_message_id');
  assert.match(String(json.event_timestamp), SILVER_TIMESTAMP);
  assert.equal(
    json.ingestion_timestamp,
    new Date(RECEIVED_AT_MS).toISOString().replace('Z', '000Z'),
  );
  for (const [column, value] of Object.entries(expect.row ?? {})) {
    assert.ok(Object.hasOwn(json, column), `Silver row has no column ${column}`);
    assert.equal(json[column], value, `Silver column ${column}`);
  }
  if (expect.event_id !== undefined) assert.equal(outcome.eventId, expect.event_id);
  if (expect.event_id_prefix !== undefined) {
    assert.ok(outcome.eventId.startsWith(expect.event_id_prefix), outcome.eventId);
  }
}

function assertQuarantineRow(testCase: HostileCase, outcome: IngestOutcome, row: InsertRow): void {
  const { expect } = testCase;
  if (expect.destination !== 'quarantine' || outcome.destination !== 'quarantine') return;
  const json = row.json;
  const messageId = expectedMessageId(testCase);
  assert.equal(row.insertId, messageId, 'quarantine insertId is the message id');
  assert.equal(json.source_message_id, messageId, 'source_message_id');
  assert.equal(json.error_stage, expect.stage, 'error_stage');
  assert.equal(json.error_reason, outcome.reason, 'error_reason is the outcome reason');
  assert.equal(json.received_timestamp, new Date(RECEIVED_AT_MS).toISOString());
  assert.equal(json.attributes, expect.attributes ?? expectedAttributes(testCase), 'attributes');
  const bytes =
    testCase.message === undefined ? undefined : (payloadOf(testCase.message) ?? Buffer.alloc(0));
  if (bytes === undefined) {
    // A malformed CloudEvent: the row keeps the envelope's JSON text.
    assert.equal(json.raw_payload, expect.raw_payload, 'raw_payload keeps the CloudEvent text');
    return;
  }
  assert.equal(json.publish_time, new Date(Date.parse(context.publish_time)).toISOString());
  const cap = CONFIG.quarantinePayloadMaxBytes;
  const kept = bytes.subarray(0, cap);
  assert.equal(json.payload_bytes, bytes.length, 'payload_bytes');
  assert.equal(json.payload_truncated, bytes.length > cap, 'payload_truncated');
  assert.equal(
    json.raw_payload,
    expect.raw_payload ?? faithfulText.decode(kept),
    'raw_payload keeps the (capped) payload text',
  );
  assert.equal(
    json.raw_payload_base64,
    isValidUtf8(bytes) ? null : kept.toString('base64'),
    'raw_payload_base64 keeps the exact (capped) bytes of a payload that is not UTF-8',
  );
}

describe('hostile-input corpus', function () {
  // The 9 MB cases each take a few hundred ms (base64, JSON.parse, lossless re-parse).
  this.timeout(20_000);
  const counts = new Map<string, number>();
  let crashes = 0;
  let knownCrashes = 0;
  const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();

  after(() => {
    const summary = [...counts].map(([place, n]) => `${place} ${n}`).join(', ');
    console.log(
      `      corpus: ${cases.length} cases, ${crashes} unexpected crashes, ${knownCrashes} known crashes; ${summary}`,
    );
  });

  it('holds at least 300 cases in more than ten categories', () => {
    assert.ok(cases.length >= 300, `${cases.length} cases`);
    assert.ok(new Set(cases.map((c) => c.category)).size > 10);
  });

  for (const category of [...new Set(cases.map((c) => c.category))]) {
    describe(category, () => {
      for (const testCase of cases.filter((c) => c.category === category)) {
        it(`${testCase.id}: ${testCase.description}`, async () => {
          const writer = new RecordingWriter();
          const deps = bookingIngestDeps({
            writer,
            env: context.env,
            logger: new Logger(
              'corpus',
              () => undefined,
              () => RECEIVED_AT_MS,
            ),
            now: () => RECEIVED_AT_MS,
          });
          const event = pushedEventOf(testCase, context);
          let outcome: IngestOutcome;
          if (testCase.current !== undefined) {
            // A known crash: it must still throw (else update the case), then `expect` is checked past it.
            knownCrashes++;
            const fullPath = async () => ingestMessage(decodePushedEvent(event), deps);
            const crash = await fullPath().then(
              () => 'no error',
              (error: unknown) => (error instanceof Error ? error.message : String(error)),
            );
            assert.ok(
              crash.includes(testCase.current.throws),
              `known crash gone (${crash}): update the case`,
            );
            assert.equal(writer.rows.length, 0, 'nothing written before the crash');
          }
          try {
            const decoded =
              testCase.current === undefined
                ? decodePushedEvent(event)
                : { ok: true as const, message: decodedMessageOf(testCase, context) };
            outcome = await ingestMessage(decoded, deps);
          } catch (error: unknown) {
            crashes++;
            return assert.fail(`threw: ${error instanceof Error ? error.stack : String(error)}`);
          }
          const place = placeOfOutcome(outcome);
          counts.set(place, (counts.get(place) ?? 0) + 1);
          const reason = outcome.destination === 'quarantine' ? `: ${outcome.reason}` : '';
          assert.equal(place, placeOf(testCase.expect), `ended in ${place}${reason.slice(0, 300)}`);
          assert.equal(outcome.messageId, expectedMessageId(testCase), 'outcome messageId');
          assert.equal(writer.rows.length, 1, 'exactly one row written');
          const [written] = writer.rows;
          assert.ok(written);
          const { expect } = testCase;
          if (expect.destination === 'silver') {
            assert.equal(written.table, SILVER);
            assertSilverRow(testCase, outcome, written.row);
            return;
          }
          assert.equal(written.table, QUARANTINE);
          assert.ok(outcome.destination === 'quarantine');
          assert.ok(outcome.reason.length > 0, 'non-empty reason');
          if (expect.reason_contains !== undefined) {
            assert.ok(
              outcome.reason.includes(expect.reason_contains),
              `reason ${JSON.stringify(outcome.reason.slice(0, 300))} lacks ${JSON.stringify(expect.reason_contains)}`,
            );
          }
          if (expect.reason_max_length !== undefined) {
            assert.ok(
              outcome.reason.length <= expect.reason_max_length,
              `reason of ${outcome.reason.length} characters`,
            );
          }
          assertQuarantineRow(testCase, outcome, written.row);
        });
      }
    });
  }

  // Child suites run after this suite's own tests, in order: this one runs once every case has.
  describe('after every case', () => {
    it('left Object.prototype untouched (no prototype pollution)', () => {
      assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeBefore);
      assert.equal((Object.prototype as Record<string, unknown>).polluted, undefined);
      assert.equal(({} as Record<string, unknown>).isAdmin, undefined);
    });
  });
});
