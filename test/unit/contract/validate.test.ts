// validateBooking end to end: the lab's acceptance messages, the Silver row mapping, extras, options, stage order.
import assert from 'node:assert/strict';
import { LosslessNumber } from 'lossless-json';
import { createRequire } from 'node:module';
import sinon from 'sinon';

import {
  CONTRACT_FIELDS,
  ERROR_STAGES,
  validateBooking,
  type SilverRow,
} from '../../../shared/contract';
import {
  booking,
  expectFailure,
  expectSuccess,
  LAB_NEGATIVE_FARE,
  LAB_UNCLOSED,
  LAB_VALID,
  OPTIONS,
  validate,
} from './fixtures';

// The module object the contract itself requires, so a spy sees its calls.
const losslessJson = createRequire(__filename)('lossless-json') as typeof import('lossless-json');

describe('validateBooking', () => {
  it("routes the lab's three messages as the lab expects", () => {
    const outcomes = [LAB_VALID, LAB_NEGATIVE_FARE, LAB_UNCLOSED].map((text) => {
      const result = validate(Buffer.from(text, 'utf8'));
      return result.ok ? 'silver' : result.stage;
    });
    assert.deepEqual(outcomes, ['silver', 'BUSINESS_RULE_VALIDATION', 'PARSE_JSON']);
  });

  it('maps BK-90210 to its Silver row (lab mapping)', () => {
    const result = expectSuccess(validate(LAB_VALID, { messageId: '4821-msg' }));
    const expected: SilverRow = {
      booking_id: 'BK-90210',
      passenger_id: 'PAX-4821',
      flight_number: 'OF-104',
      origin_airport: 'JFK',
      destination_airport: 'LHR',
      fare_amount: '749.5',
      currency: 'USD',
      booking_status: 'CONFIRMED',
      event_timestamp: '2026-10-07T14:10:00.000000Z',
      ingestion_timestamp: '2026-10-07T14:11:00.000000Z',
      source_message_id: '4821-msg',
    };
    assert.deepEqual(result.row, expected);
    assert.equal(result.eventTimeMs, Date.UTC(2026, 9, 7, 14, 10));
    assert.equal(result.fareScaled, 749_500_000_000n);
    assert.deepEqual(result.extraFields, {});
  });

  it('formats the injected receive time, milliseconds included', () => {
    const receivedAtMs = Date.UTC(2026, 9, 7, 14, 11, 7, 89);
    const row = expectSuccess(validate(LAB_VALID, { receivedAtMs })).row;
    assert.equal(row.ingestion_timestamp, '2026-10-07T14:11:07.089000Z');
  });

  it('returns unknown top-level fields as extra fields, values as parsed', () => {
    const result = expectSuccess(
      validate(booking({ loyalty_tier: 'GOLD', promo: null, tags: ['a'], meta: { a: true } })),
    );
    assert.deepEqual(result.extraFields, {
      loyalty_tier: 'GOLD',
      promo: null,
      tags: ['a'],
      meta: { a: true },
    });
  });

  it('reads numbers in extra fields losslessly: big integers keep every digit', () => {
    const text = JSON.stringify(booking({ seats: 2, meta: { a: 1.5 } })).replace(
      '{',
      '{"ext_id":9007199254740993,"bignum":123456789012345678901234567890,"nested":{"n":[1e400]},',
    );
    const result = expectSuccess(validate(text));
    assert.deepEqual(result.extraFields, {
      ext_id: new LosslessNumber('9007199254740993'),
      bignum: new LosslessNumber('123456789012345678901234567890'),
      nested: { n: [new LosslessNumber('1e400')] },
      seats: new LosslessNumber('2'),
      meta: { a: new LosslessNumber('1.5') },
    });
    // The contract's own fields are unaffected.
    assert.equal(result.row.fare_amount, '749.5');
  });

  it('reads a duplicated extra key last-wins in the lossless parse too', () => {
    const text = JSON.stringify(booking()).replace('{', '{"n":1,"n":99999999999999999999,');
    assert.deepEqual(expectSuccess(validate(text)).extraFields, {
      n: new LosslessNumber('99999999999999999999'),
    });
  });

  it('checks stages in the lab order and stops at the first failing one', () => {
    assert.deepEqual(ERROR_STAGES, [
      'PARSE_JSON',
      'SCHEMA_VALIDATION',
      'BUSINESS_RULE_VALIDATION',
      'EVENT_TIME_VALIDATION',
    ]);
    const everythingWrong = booking({ fare: '-1', event_time: 'soon', currency: '' });
    expectFailure(validate(everythingWrong), 'SCHEMA_VALIDATION');
    expectFailure(
      validate(booking({ fare: '-1', event_time: 'soon' })),
      'BUSINESS_RULE_VALIDATION',
    );
    expectFailure(validate(booking({ event_time: 'soon' })), 'EVENT_TIME_VALIDATION');
  });

  it('knows every contract field', () => {
    assert.deepEqual([...CONTRACT_FIELDS].sort(), [
      'booking_id',
      'currency',
      'destination',
      'event_id',
      'event_time',
      'fare',
      'flight_number',
      'origin',
      'passenger_id',
      'status',
    ]);
  });

  it('throws TypeError for options outside their documented ranges (a programming error, not data)', () => {
    const bad = [
      { receivedAtMs: Number.NaN },
      { receivedAtMs: 1.5 },
      { receivedAtMs: 1e20 },
      { maxFutureSkewMs: -1 },
      { maxEventAgeMs: Number.NaN },
      { maxEventAgeMs: 0.5 },
    ];
    for (const override of bad) {
      assert.throws(() => validateBooking(LAB_VALID, { ...OPTIONS, ...override }), TypeError);
    }
  });

  describe('parsing cost', () => {
    afterEach(() => sinon.restore());

    it('parses an all-string booking once (no lossless re-parse)', () => {
      const spy = sinon.spy(losslessJson, 'parse');
      expectSuccess(validate(LAB_VALID));
      expectSuccess(validate(booking({ note: 'fare', nested: { fare: '1', fare_2: 'x' } })));
      // Quotes, brackets and a trailing escaped backslash inside strings must not confuse the key count.
      expectSuccess(validate(booking({ note: '"fare": {[\\', 'q"}': ']"\\"' })));
      assert.equal(spy.callCount, 0);
    });

    it('re-parses losslessly when a contract value is a number or a key repeats', () => {
      const spy = sinon.spy(losslessJson, 'parse');
      expectSuccess(validate(booking({ fare: 749.5 })));
      assert.equal(spy.callCount, 1);
      expectSuccess(validate(`${LAB_VALID.slice(0, -1)},"note":"a","note":"b"}`));
      assert.equal(spy.callCount, 2);
    });

    it('re-parses losslessly once when an extra field holds a number, at any depth', () => {
      const spy = sinon.spy(losslessJson, 'parse');
      expectSuccess(validate(booking({ nested: { deep: [{ n: 1 }] } })));
      assert.equal(spy.callCount, 1);
    });
  });
});
