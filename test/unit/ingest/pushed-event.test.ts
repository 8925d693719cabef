// The ingest's push entry (ingestPipelinePushedEvent), for booking: pushes the Functions Framework hands over without a CloudEvent end in quarantine, never in a 5xx.
import assert from 'node:assert/strict';
import { RecordingWriter } from '../../support/booking-windows';
import { DeliveryRefused, TransientError } from '../../../shared/errors';
import { ingestPipelinePushedEvent as ingestPushedEvent } from '../../../shared/pipeline/runtime/ingest';
import {
  bookingIngestDeps,
  bookingWindowStub,
  type MutableIngestDeps,
} from '../../support/booking-ingest';
import type { LogEntry } from '../../../shared/logging/logger';
import { BODY_HASH_ID_PREFIX, type PushedEvent } from '../../../shared/pubsub/message';
import { CoalescingRowWriter } from '../../../shared/sinks/coalescing-writer';
import { PartialInsertError, withInsertIds } from '../../../shared/sinks/row-writer';

const NOW = Date.UTC(2026, 9, 7, 14, 11, 0);
const QUARANTINE = 'offvia_quarantine.poisoned_events';

/** The production wiring: the coalescing writer in front (where a row without insertId used to crash). */
function setup() {
  const inner = new RecordingWriter('ECONNRESET 10.0.0.7:443 (internal detail)');
  const lines: LogEntry[] = [];
  const deps: MutableIngestDeps = bookingIngestDeps({
    writer: new CoalescingRowWriter(inner),
    logs: lines,
    now: () => NOW,
  });
  return { inner, lines, deps };
}

/** Bodies a Pub/Sub push may carry without CloudEvent headers, as the framework passes them (the body itself). */
const ENVELOPES: {
  name: string;
  event: PushedEvent;
  messageId?: string;
  attributes: string | null;
}[] = [
  {
    name: 'an attributes-only message (empty data) without subscription',
    event: {
      message: { attributes: { source: 'checkout', n: 3 }, messageId: 'att-1' },
    },
    messageId: 'att-1',
    attributes: '{"source":"checkout"}',
  },
  { name: 'the body {}', event: {}, attributes: null },
  {
    name: 'an empty data string and a message id',
    event: { message: { data: '', messageId: '5b' } },
    messageId: '5b',
    attributes: null,
  },
];

describe('ingestPushedEvent: envelopes without CloudEvent headers', () => {
  for (const envelope of ENVELOPES) {
    it(`quarantines ${envelope.name} at PARSE_JSON with an insertId, and acks`, async () => {
      const { inner, deps } = setup();
      const out = await ingestPushedEvent(envelope.event, deps);
      assert.equal(out.destination, 'quarantine');
      assert.ok(out.destination === 'quarantine' && out.stage === 'PARSE_JSON');
      const rows = inner.rows.get(QUARANTINE) ?? [];
      assert.equal(rows.length, 1);
      const [row] = rows;
      assert.ok(row);
      assert.equal(typeof row.insertId, 'string');
      if (envelope.messageId !== undefined) assert.equal(row.insertId, envelope.messageId);
      else assert.ok(row.insertId.startsWith(BODY_HASH_ID_PREFIX), row.insertId);
      assert.equal(row.json.source_message_id, row.insertId);
      assert.equal(row.json.error_stage, 'PARSE_JSON');
      assert.equal(row.json.attributes, envelope.attributes);
    });
  }

  it('gives a body without any id the same insertId on every delivery, whatever its traceparent', async () => {
    const ids: string[] = [];
    for (const event of [{}, { traceparent: '00-abc-def-01' }, {}] as PushedEvent[]) {
      const { inner, deps } = setup();
      await ingestPushedEvent(event, deps);
      ids.push(inner.rows.get(QUARANTINE)?.[0]?.insertId ?? '');
    }
    assert.equal(new Set(ids).size, 1, ids.join(', '));
    const { inner, deps } = setup();
    await ingestPushedEvent({ other: 1 } as PushedEvent, deps);
    assert.notEqual(inner.rows.get(QUARANTINE)?.[0]?.insertId, ids[0]);
  });

  it('keeps the attributes of a message whose data is not base64 (an envelope-level failure)', async () => {
    const { inner, deps } = setup();
    const event = {
      id: 'ce-1',
      data: { message: { data: 'not base64!', attributes: { k: 'v' }, messageId: '9' } },
    };
    const out = await ingestPushedEvent(event, deps);
    assert.ok(out.destination === 'quarantine' && out.stage === 'PARSE_JSON');
    const row = inner.rows.get(QUARANTINE)?.[0];
    assert.equal(row?.insertId, '9');
    assert.equal(row?.json.attributes, '{"k":"v"}');
  });

  it('refuses a delivery with an error that names the message only, after logging the cause', async () => {
    const { inner, lines, deps } = setup();
    inner.failing.add(QUARANTINE);
    const err = await ingestPushedEvent({ message: { data: '', messageId: '5b' } }, deps).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof DeliveryRefused, String(err));
    assert.doesNotMatch(err.message, /ECONNRESET|internal|insertAll|offvia_/);
    assert.match(err.message, /"5b"/);
    assert.ok(err.cause instanceof TransientError);
    const retry = lines.filter((l) => l.outcome === 'retry');
    assert.equal(retry.length, 1, 'the cause is logged once');
    assert.match(String(retry[0]?.error), /ECONNRESET/);
  });

  it('never logs a message as quarantined before its quarantine write failed (no quarantined-then-retry)', async () => {
    const { inner, lines, deps } = setup();
    inner.failing.add(QUARANTINE);
    for (const event of [{}, { id: 'ce-2', data: null }] as PushedEvent[]) {
      await ingestPushedEvent(event, deps).catch((e: unknown) =>
        assert.ok(e instanceof DeliveryRefused),
      );
    }
    assert.deepEqual(
      lines.map((l) => l.outcome).filter((o) => o !== undefined),
      ['retry', 'retry'],
    );
  });

  it('logs a malformed envelope once its quarantine row is written', async () => {
    const { lines, deps } = setup();
    await ingestPushedEvent({ id: 'ce-3', data: 42 }, deps);
    const messages = lines.map((l) => l.message);
    assert.deepEqual(messages, ['message quarantined', 'malformed Pub/Sub CloudEvent']);
  });
});

describe('writers: a row without insertId is routed, never a crash', () => {
  it('keeps one outcome per row when the rows it sent partly failed (PartialInsertError)', async () => {
    const rows = [
      { insertId: 'a', json: { x: 1 } },
      { insertId: '', json: { x: 2 } },
      { insertId: 'c', json: { x: 3 } },
    ];
    const err = await withInsertIds(rows, (sent) => {
      assert.deepEqual(
        sent.map((r) => r.insertId),
        ['a', 'c'],
      );
      return Promise.reject(
        new PartialInsertError('insertAll d.t', 'row 1 not written: stopped', [
          { ok: true },
          { ok: false, kind: 'not_written', reasons: ['stopped'], error: 'stopped: ' },
        ]),
      );
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof PartialInsertError);
    assert.equal(err.message, 'insertAll d.t: row 1 not written: stopped');
    assert.deepEqual(
      err.outcomes.map((o) => (o.ok ? 'ok' : o.kind)),
      ['ok', 'rejected', 'not_written'],
    );
  });

  it('the coalescing writer answers it rejected and still writes its neighbours', async () => {
    const inner = new RecordingWriter();
    const writer = new CoalescingRowWriter(inner);
    const table = { datasetId: 'd', tableId: 't' };
    const results = await writer.insertRows(table, [
      { insertId: 'a', json: { x: 1 } },
      { insertId: undefined as unknown as string, json: { x: 2 } },
      { insertId: '', json: { x: 3 } },
    ]);
    assert.deepEqual(
      results.map((r) => r.ok),
      [true, false, false],
    );
    assert.match(results[1]?.ok === false ? results[1].error : '', /no insertId/);
    assert.deepEqual(
      (inner.rows.get('d.t') ?? []).map((r) => r.insertId),
      ['a'],
    );
  });
});

describe('ingestPushedEvent: watermark holds', () => {
  const booking = Buffer.from(
    JSON.stringify({
      booking_id: 'BK-1',
      passenger_id: 'PAX-1',
      flight_number: 'OF-1',
      origin: 'JFK',
      destination: 'LHR',
      fare: '10',
      currency: 'USD',
      event_time: new Date(NOW - 5_000).toISOString(),
    }),
  ).toString('base64');
  const event = (): PushedEvent => ({
    message: { data: booking, messageId: 'h-1', publishTime: new Date(NOW - 2_000).toISOString() },
  });

  function holdsSpy() {
    const calls: string[] = [];
    return {
      calls,
      holds: {
        failed: (m: { messageId: string; publishTimeMs: number | undefined }, nowMs: number) => {
          calls.push(`failed ${m.messageId} ${m.publishTimeMs} ${nowMs}`);
          return Promise.resolve();
        },
        processed: (m: { messageId: string; publishTimeMs: number | undefined }, nowMs: number) => {
          calls.push(`processed ${m.messageId} ${m.publishTimeMs} ${nowMs}`);
          return Promise.resolve();
        },
      },
    };
  }

  it('records a hold with the publish time when the delivery is refused', async () => {
    const { inner, deps } = setup();
    const spy = holdsSpy();
    deps.aggregations = [{ ...bookingWindowStub(() => Promise.resolve()), holds: spy.holds }];
    inner.failing.add('offvia_silver.fact_bookings');
    await assert.rejects(ingestPushedEvent(event(), deps), DeliveryRefused);
    assert.deepEqual(spy.calls, [`failed h-1 ${NOW - 2_000} ${NOW}`]);
  });

  it('releases it once the message is processed', async () => {
    const { deps } = setup();
    const spy = holdsSpy();
    deps.aggregations = [{ ...bookingWindowStub(() => Promise.resolve()), holds: spy.holds }];
    const out = await ingestPushedEvent(event(), deps);
    assert.equal(out.destination, 'silver');
    assert.deepEqual(spy.calls, [`processed h-1 ${NOW - 2_000} ${NOW}`]);
  });
});
