// BUSINESS_RULE_VALIDATION: the fare as an exact positive NUMERIC, airports, currency, status.
import assert from 'node:assert/strict';

import { booking, expectFailure, expectSuccess, LAB_NEGATIVE_FARE, validate } from './fixtures';

function businessReason(overrides: Record<string, unknown>): string {
  return expectFailure(validate(booking(overrides)), 'BUSINESS_RULE_VALIDATION').reason;
}

/** A booking whose fare is the JSON number literal `literal`, exactly as written. */
function withFareLiteral(literal: string): string {
  return JSON.stringify(booking()).replace('"fare":"749.50"', `"fare":${literal}`);
}

describe('BUSINESS_RULE_VALIDATION', () => {
  describe('fare', () => {
    it("rejects the lab's negative fare with the lab's message", () => {
      const failure = expectFailure(validate(LAB_NEGATIVE_FARE), 'BUSINESS_RULE_VALIDATION');
      assert.equal(failure.reason, 'Invalid fare: fare must be greater than zero');
      assert.deepEqual(failure.issues, [
        {
          field: 'fare',
          kind: 'not_positive',
          message: 'Invalid fare: fare must be greater than zero',
        },
      ]);
    });

    it('rejects zero in every spelling', () => {
      for (const fare of ['0', '0.000', '-0', '+0e5', 0]) {
        assert.equal(businessReason({ fare }), 'Invalid fare: fare must be greater than zero');
      }
      assert.equal(
        expectFailure(validate(withFareLiteral('-0.0')), 'BUSINESS_RULE_VALIDATION').reason,
        'Invalid fare: fare must be greater than zero',
      );
    });

    it('rejects text that is not a decimal', () => {
      for (const fare of ['abc', 'NaN', 'Infinity', '0x10', ' 749.50', '749.50 ', '1,5', '€749']) {
        const failure = expectFailure(validate(booking({ fare })), 'BUSINESS_RULE_VALIDATION');
        assert.equal(
          failure.reason,
          `Invalid fare: ${JSON.stringify(fare)} is not a decimal number`,
        );
        assert.equal(failure.issues[0]?.kind, 'not_a_decimal');
      }
    });

    it('quotes at most 64 characters of a rejected fare', () => {
      const reason = businessReason({ fare: 'x'.repeat(10_000) });
      assert.equal(reason, `Invalid fare: "${'x'.repeat(64)}…" is not a decimal number`);
    });

    it('rejects fares NUMERIC cannot hold exactly', () => {
      const failure = expectFailure(
        validate(booking({ fare: '1e-10' })),
        'BUSINESS_RULE_VALIDATION',
      );
      assert.match(failure.reason, /^Invalid fare: "1e-10" has more than 9 fraction digits/);
      assert.equal(failure.issues[0]?.kind, 'exceeds_numeric');
      assert.match(businessReason({ fare: '749.1234567891' }), /more than 9 fraction digits/);
      assert.match(businessReason({ fare: '1e999999999' }), /more than 29 integer digits/);
      const forty = expectFailure(
        validate(withFareLiteral('1234567890123456789012345678901234567890')),
        'BUSINESS_RULE_VALIDATION',
      );
      assert.match(forty.reason, /more than 29 integer digits/);
    });

    it('keeps every digit of a JSON number fare (JSON.parse alone would round)', () => {
      const result = expectSuccess(
        validate(withFareLiteral('12345678901234567890123456789.123456789')),
      );
      assert.equal(result.row.fare_amount, '12345678901234567890123456789.123456789');
      assert.equal(result.fareScaled, 12345678901234567890123456789123456789n);
      // 0.1000000000000000055511151231257827 is the double 0.1, but has 34 fraction digits.
      assert.match(
        expectFailure(
          validate(withFareLiteral('0.1000000000000000055511151231257827')),
          'BUSINESS_RULE_VALIDATION',
        ).reason,
        /more than 9 fraction digits/,
      );
    });

    it('canonicalizes string and number fares alike', () => {
      const cases: [string, string][] = [
        ['"749.50"', '749.5'],
        ['749.50', '749.5'],
        ['"7.495e2"', '749.5'],
        ['7.495E+2', '749.5'],
        ['"+749.5"', '749.5'],
        ['".5"', '0.5'],
        ['0.000000001', '0.000000001'],
      ];
      for (const [literal, canonical] of cases) {
        const result = expectSuccess(validate(withFareLiteral(literal)));
        assert.equal(result.row.fare_amount, canonical, literal);
      }
    });
  });

  describe('airports', () => {
    it('accepts three upper-case ASCII letters only', () => {
      for (const origin of ['jfk', 'Jfk', 'JFKX', 'JF', 'J1K', 'ÅBC', ' JFK']) {
        const reason = businessReason({ origin });
        assert.equal(
          reason,
          `Invalid origin: ${JSON.stringify(origin)} is not a three-letter upper-case IATA airport code`,
        );
      }
    });

    it('an airport sent as a JSON number is the wrong type: SCHEMA_VALIDATION, not a business rule', () => {
      for (const [field, value] of [
        ['destination', 123],
        ['origin', 4.5],
      ] as const) {
        const failure = expectFailure(validate(booking({ [field]: value })), 'SCHEMA_VALIDATION');
        assert.equal(failure.reason, `Invalid fields: ${field} must be a string`);
        assert.equal(failure.issues[0]?.kind, 'wrong_type');
      }
    });

    it('rejects a route from an airport to itself', () => {
      const failure = expectFailure(
        validate(booking({ destination: 'JFK' })),
        'BUSINESS_RULE_VALIDATION',
      );
      assert.equal(failure.reason, 'Invalid route: origin and destination are both JFK');
      assert.equal(failure.issues[0]?.kind, 'same_airport');
    });
  });

  describe('currency and status', () => {
    it('currency: three upper-case ASCII letters', () => {
      expectSuccess(validate(booking({ currency: 'EUR' })));
      for (const currency of ['usd', 'US', 'USDT', '$']) {
        assert.match(
          businessReason({ currency }),
          /^Invalid currency: .* is not a three-letter upper-case ISO 4217 code$/,
        );
      }
    });

    it('status: an upper-case symbol of at most 64 characters', () => {
      for (const status of ['CANCELLED_BY_AIRLINE', 'X', 'REFUNDED2', 'S'.repeat(64)]) {
        assert.equal(expectSuccess(validate(booking({ status }))).row.booking_status, status);
      }
      for (const status of ['confirmed', '1ST', '_X', 'ON HOLD', 'S'.repeat(65)]) {
        assert.match(businessReason({ status }), /^Invalid status: /);
      }
    });
  });

  it('lists every broken rule, fare first', () => {
    const failure = expectFailure(
      validate(
        booking({ fare: '-1', origin: 'lhr', destination: 'lhr', currency: 'eur', status: 'x' }),
      ),
      'BUSINESS_RULE_VALIDATION',
    );
    assert.deepEqual(
      failure.issues.map((issue) => issue.kind),
      ['not_positive', 'invalid_airport', 'invalid_airport', 'invalid_currency', 'invalid_status'],
    );
    assert.match(failure.reason, /^Invalid fare: fare must be greater than zero; Invalid origin: /);
  });

  it('runs only after the schema passed (stage order)', () => {
    const failure = expectFailure(
      validate(booking({ fare: '-1', passenger_id: undefined })),
      'SCHEMA_VALIDATION',
    );
    assert.equal(failure.reason, 'Missing required fields: passenger_id');
  });
});
