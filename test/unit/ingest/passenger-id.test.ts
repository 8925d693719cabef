// The keyed hash of passenger_id before Silver: stable for one key (joins work), different under another key, not a
// plain hash, and applied to every copy the ingest path stores (Silver, the schema-retry store, bad data) while
// quarantine keeps the raw payload and event ids do not change.
import assert from 'node:assert/strict';
import { RecordingWriter } from '../../support/booking-windows';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { PassengerIdKey, type PassengerIdConfig } from '../../../shared/config/passenger-id-config';
import { validateBooking, type ValidationSuccess } from '../../../shared/contract';
import {
  ingestPipelineMessage as ingestMessage,
  type PipelineIngestDeps,
  type SchemaDriftGate,
} from '../../../shared/pipeline/runtime/ingest';
import { bookingIngestDeps, decodedMessage } from '../../support/booking-ingest';
import {
  protectPassengerId,
  PSEUDONYM_PREFIX,
  pseudonymisePassengerId,
} from '../../../shared/ingest/passenger-id';
import type { DecodeResult } from '../../../shared/pubsub/message';
import type { InsertRow, RowWriter } from '../../../shared/sinks/row-writer';

const NOW = Date.UTC(2026, 9, 7, 14, 11, 0);
const KEY = new PassengerIdKey(Buffer.from('0123456789abcdef0123456789abcdef'));
const HMAC: PassengerIdConfig = { mode: 'hmac-sha256', key: KEY };
const event = (passenger: string, booking = 'BK-1', extra = ''): string =>
  `{"booking_id":"${booking}","passenger_id":${JSON.stringify(passenger)},"flight_number":"OF-104","origin":"JFK",` +
  `"destination":"LHR","fare":"749.50","currency":"USD","status":"CONFIRMED","event_time":"2026-10-07T14:10:00Z"${extra}}`;

const msg = (data: string | Buffer, messageId?: string): DecodeResult =>
  decodedMessage(NOW, data, messageId);

function deps(writer: RowWriter, passengerId?: PassengerIdConfig): PipelineIngestDeps {
  return bookingIngestDeps({ writer, now: () => NOW, ...(passengerId ? { passengerId } : {}) });
}

describe('pseudonymisePassengerId', () => {
  it('is hmac1: + the hex HMAC-SHA256 of the UTF-8 id under the key (RFC 2104), not a plain SHA-256', () => {
    const id = 'PAX-4821';
    const expected = createHmac('sha256', KEY.bytes()).update(id, 'utf8').digest('hex');
    assert.equal(pseudonymisePassengerId(KEY, id), `${PSEUDONYM_PREFIX}${expected}`);
    assert.match(pseudonymisePassengerId(KEY, 'Zoë-1'), /^hmac1:[0-9a-f]{64}$/);
    assert.notEqual(
      pseudonymisePassengerId(KEY, id).slice(PSEUDONYM_PREFIX.length),
      createHash('sha256').update(id).digest('hex'),
    );
  });

  it('is stable for one key, one-to-one across ids, and different under another key', () => {
    const other = new PassengerIdKey(randomBytes(32));
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (a, b) => {
        assert.equal(pseudonymisePassengerId(KEY, a), pseudonymisePassengerId(KEY, a));
        assert.equal(pseudonymisePassengerId(KEY, a) === pseudonymisePassengerId(KEY, b), a === b);
        assert.notEqual(pseudonymisePassengerId(KEY, a), pseudonymisePassengerId(other, a));
      }),
    );
  });
});

describe('protectPassengerId', () => {
  const valid = validateBooking(event('PAX-4821'), {
    messageId: 'm',
    receivedAtMs: NOW,
    maxFutureSkewMs: 300_000,
    maxEventAgeMs: Infinity,
  }) as ValidationSuccess;

  it('replaces only passenger_id, keeps the event id, and leaves raw mode untouched', () => {
    assert.ok(valid.ok);
    const protectedEvent = protectPassengerId(valid, HMAC);
    assert.equal(protectedEvent.row.passenger_id, pseudonymisePassengerId(KEY, 'PAX-4821'));
    assert.deepEqual({ ...protectedEvent.row, passenger_id: 'PAX-4821' }, valid.row);
    assert.equal(protectedEvent.eventId, valid.eventId);
    assert.equal(valid.row.passenger_id, 'PAX-4821', 'the input event is not mutated');
    assert.equal(protectPassengerId(valid, { mode: 'raw' }), valid);
  });
});

describe('booking ingest with OFFVIA_PASSENGER_ID_MODE=hmac-sha256', () => {
  it('writes the pseudonym to Silver: same passenger, same value across bookings; same insertId as raw mode', async () => {
    const writer = new RecordingWriter();
    await ingestMessage(msg(event('PAX-7', 'BK-1'), 'm-1'), deps(writer, HMAC));
    await ingestMessage(msg(event('PAX-7', 'BK-2'), 'm-2'), deps(writer, HMAC));
    await ingestMessage(msg(event('PAX-8', 'BK-3'), 'm-3'), deps(writer, HMAC));
    const silver = writer.rows.get('offvia_silver.fact_bookings') ?? [];
    assert.deepEqual(
      silver.map((r) => r.json.passenger_id),
      [
        pseudonymisePassengerId(KEY, 'PAX-7'),
        pseudonymisePassengerId(KEY, 'PAX-7'),
        pseudonymisePassengerId(KEY, 'PAX-8'),
      ],
    );
    assert.ok(!JSON.stringify(silver).includes('PAX-7'));
    const raw = new RecordingWriter();
    await ingestMessage(msg(event('PAX-7', 'BK-1'), 'm-1'), deps(raw));
    const [rawRow] = raw.rows.get('offvia_silver.fact_bookings') ?? [];
    assert.equal(rawRow?.json.passenger_id, 'PAX-7');
    assert.equal(
      rawRow?.insertId,
      silver[0]?.insertId,
      'insertId (event_id) does not depend on the mode',
    );
  });

  it('puts the pseudonym in the bad-data row of a Silver row BigQuery refuses', async () => {
    const writer = new RecordingWriter();
    writer.refuse.add('offvia_silver.fact_bookings');
    const out = await ingestMessage(msg(event('PAX-9'), 'm-9'), deps(writer, HMAC));
    assert.equal(out.destination, 'bad_data');
    const [bad] = writer.rows.get('offvia_quarantine.bad_data') ?? [];
    const stored = JSON.parse(String(bad?.json.bad_data)) as Record<string, unknown>;
    assert.equal(stored.passenger_id, pseudonymisePassengerId(KEY, 'PAX-9'));
    assert.ok(!String(bad?.json.bad_data).includes('PAX-9'));
  });

  it('hands the schema-drift gate (the retry store) the pseudonymised row and event', async () => {
    const seen: { row: InsertRow; event: { row: { passenger_id: string } } }[] = [];
    const gate: SchemaDriftGate = {
      route: (e, _m, _t, row) => {
        // The gate is handed the accepted event itself (its Silver row included).
        seen.push({ row, event: e as unknown as { row: { passenger_id: string } } });
        return Promise.resolve({ action: 'held', reason: 'new field loyalty_tier' });
      },
    };
    const writer = new RecordingWriter();
    const out = await ingestMessage(
      msg(event('PAX-10', 'BK-10', ',"loyalty_tier":"gold"'), 'm-10'),
      {
        ...deps(writer, HMAC),
        schemaDrift: gate,
      },
    );
    assert.equal(out.destination, 'schema_retry');
    assert.equal(seen[0]?.row.json.passenger_id, pseudonymisePassengerId(KEY, 'PAX-10'));
    assert.equal(seen[0]?.event.row.passenger_id, pseudonymisePassengerId(KEY, 'PAX-10'));
  });

  it('leaves quarantine with the raw payload (by design: the id may be what is wrong)', async () => {
    const writer = new RecordingWriter();
    const broken = event('PAX-11').replace('"749.50"', '"-1"');
    const out = await ingestMessage(msg(broken, 'm-11'), deps(writer, HMAC));
    assert.equal(out.destination, 'quarantine');
    const [row] = writer.rows.get('offvia_quarantine.poisoned_events') ?? [];
    assert.match(String(row?.json.raw_payload), /PAX-11/);
  });
});
