// Event ids: the producer's when given, else a hash that survives re-publication and re-serialization.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { deriveEventId } from '../../../shared/contract';
import { booking, expectSuccess, LAB_VALID, validate } from './fixtures';

const ID_SHAPE = /^bk1-[0-9a-f]{32}$/;

function eventIdOf(input: Record<string, unknown> | string, messageId = 'msg-1'): string {
  return expectSuccess(validate(input, { messageId })).eventId;
}

/** Serializes an event with its keys in the order given by `order` (a permutation of its keys). */
function withKeyOrder(event: Record<string, unknown>, order: string[]): string {
  return JSON.stringify(Object.fromEntries(order.map((key) => [key, event[key]])));
}

describe('event id', () => {
  it('is bk1- and 32 hex characters of SHA-256 over [booking_id, status, event_timestamp]', () => {
    const id = deriveEventId({
      booking_id: 'BK-90210',
      booking_status: 'CONFIRMED',
      event_timestamp: '2026-10-07T14:10:00.000000Z',
    });
    assert.match(id, ID_SHAPE);
    assert.equal(eventIdOf(LAB_VALID), id);
  });

  it('ignores message id, key order, whitespace, fare spelling and offset spelling', () => {
    const reference = eventIdOf(LAB_VALID);
    assert.equal(eventIdOf(LAB_VALID, 'another-message'), reference);
    assert.equal(eventIdOf(JSON.stringify(booking(), null, 2)), reference);
    assert.equal(eventIdOf(booking({ fare: '749.5' })), reference);
    assert.equal(eventIdOf(booking({ fare: 749.5 })), reference);
    assert.equal(eventIdOf(booking({ event_time: '2026-10-07T16:10:00+02:00' })), reference);
    assert.equal(eventIdOf(booking({ event_time: '2026-10-07t14:10:00.000z' })), reference);
    assert.equal(
      eventIdOf(booking({ status: undefined })),
      reference,
      'status defaults to CONFIRMED',
    );
    assert.equal(eventIdOf(booking({ extra: 'drift' })), reference);
  });

  it('changes with booking id, status and event time (to the microsecond)', () => {
    const reference = eventIdOf(LAB_VALID);
    const variants = [
      booking({ booking_id: 'BK-90213' }),
      booking({ status: 'CANCELLED' }),
      booking({ event_time: '2026-10-07T14:10:00.000001Z' }),
    ];
    for (const variant of variants) assert.notEqual(eventIdOf(variant), reference);
  });

  it('cannot be forged by moving characters between parts', () => {
    const at = '2026-10-07T14:10:00.000000Z';
    const a = deriveEventId({ booking_id: 'AB', booking_status: 'C', event_timestamp: at });
    const b = deriveEventId({ booking_id: 'A', booking_status: 'BC', event_timestamp: at });
    const c = deriveEventId({ booking_id: 'A","B', booking_status: 'C', event_timestamp: at });
    assert.equal(new Set([a, b, c]).size, 3);
  });

  it("prefers the producer's event_id", () => {
    assert.equal(eventIdOf(booking({ event_id: 'checkout:42' })), 'checkout:42');
  });

  it('is stable under key order and message id (property)', () => {
    const event = booking({ loyalty: { tier: 'GOLD' }, seats: 2 });
    const reference = eventIdOf(event);
    fc.assert(
      fc.property(
        fc.shuffledSubarray(Object.keys(event), { minLength: Object.keys(event).length }),
        fc.string(),
        (order, messageId) => {
          assert.equal(eventIdOf(withKeyOrder(event, order), messageId), reference);
        },
      ),
    );
  });

  it('is stable under any equivalent offset (property)', () => {
    const receivedAtMs = Date.UTC(2026, 9, 7, 14, 11);
    fc.assert(
      fc.property(
        fc.integer({ min: receivedAtMs - 86_400_000, max: receivedAtMs }),
        fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
        (ms, offsetMinutes) => {
          const local = new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, 23);
          const abs = Math.abs(offsetMinutes);
          const offset = `${offsetMinutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
          const inUtc = eventIdOf(booking({ event_time: new Date(ms).toISOString() }));
          assert.equal(eventIdOf(booking({ event_time: local + offset })), inUtc);
        },
      ),
    );
  });
});
