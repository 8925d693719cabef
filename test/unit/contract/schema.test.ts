// SCHEMA_VALIDATION: object shape, required and optional fields, identifiers, event_id, duplicate keys.
import assert from 'node:assert/strict';

import { booking, expectFailure, expectSuccess, validate } from './fixtures';

function schemaReason(input: Record<string, unknown> | string): string {
  return expectFailure(validate(input), 'SCHEMA_VALIDATION').reason;
}

describe('SCHEMA_VALIDATION', () => {
  it('rejects JSON that is not an object, naming its type', () => {
    const cases: [string, string][] = [
      ['[1,2]', 'array'],
      ['"booking"', 'string'],
      ['42', 'number'],
      ['null', 'null'],
      ['true', 'boolean'],
    ];
    for (const [text, type] of cases) {
      assert.equal(schemaReason(text), `payload must be a JSON object, got ${type}`);
    }
  });

  it("lists missing required fields, sorted, in the lab's exact words", () => {
    assert.equal(
      schemaReason({ booking_id: 'BK-1' }),
      'Missing required fields: destination, event_time, fare, flight_number, origin, passenger_id',
    );
    assert.equal(schemaReason(booking({ fare: undefined })), 'Missing required fields: fare');
    assert.equal(
      schemaReason('{}'),
      'Missing required fields: booking_id, destination, event_time, fare, flight_number, origin, passenger_id',
    );
  });

  it('lists null, empty and whitespace-only required fields', () => {
    const reason = schemaReason(booking({ fare: null, origin: '', flight_number: ' \t\n' }));
    assert.equal(reason, 'Null or empty required fields: fare, flight_number, origin');
  });

  it('lists objects, arrays and booleans as non-scalar', () => {
    const reason = schemaReason(
      booking({ fare: { amount: 1 }, origin: ['JFK'], event_time: true }),
    );
    assert.equal(reason, 'Non-scalar fields: event_time, fare, origin');
  });

  it('lists every problem of the stage in one reason, groups in a fixed order', () => {
    const failure = expectFailure(
      validate(
        booking({ passenger_id: undefined, fare: null, origin: [], currency: '', booking_id: 1.5 }),
      ),
      'SCHEMA_VALIDATION',
    );
    assert.equal(
      failure.reason,
      'Missing required fields: passenger_id; Null or empty required fields: fare; ' +
        'Empty optional fields: currency; Non-scalar fields: origin; ' +
        'Invalid fields: booking_id must be a string or a JSON integer',
    );
    assert.deepEqual(failure.issues.map((issue) => [issue.field, issue.kind]).sort(), [
      ['booking_id', 'wrong_type'],
      ['currency', 'null_or_empty'],
      ['fare', 'null_or_empty'],
      ['origin', 'non_scalar'],
      ['passenger_id', 'missing'],
    ]);
  });

  describe('identifiers', () => {
    it('accept JSON integers as their exact digits', () => {
      const text = JSON.stringify(booking()).replace(
        '"BK-90210"',
        '12345678901234567890123456789012345678901',
      );
      assert.equal(
        expectSuccess(validate(text)).row.booking_id,
        '12345678901234567890123456789012345678901',
      );
      assert.equal(expectSuccess(validate(booking({ passenger_id: 0 }))).row.passenger_id, '0');
      assert.equal(
        expectSuccess(validate(booking({ flight_number: -104 }))).row.flight_number,
        '-104',
      );
    });

    it('reject numbers that are not integers', () => {
      for (const literal of ['1.5', '1e3', '1.0', '-0.0']) {
        const text = JSON.stringify(booking()).replace('"BK-90210"', literal);
        assert.equal(
          schemaReason(text),
          'Invalid fields: booking_id must be a string or a JSON integer',
        );
      }
    });

    it('accept 1024 characters and reject 1025', () => {
      expectSuccess(validate(booking({ booking_id: 'B'.repeat(1024) })));
      const failure = expectFailure(
        validate(booking({ booking_id: 'B'.repeat(1025) })),
        'SCHEMA_VALIDATION',
      );
      assert.equal(failure.reason, 'Invalid fields: booking_id must be at most 1024 characters');
      assert.equal(failure.issues[0]?.kind, 'too_long');
    });

    it('reject controls, invisible format characters, separators and unpaired surrogates', () => {
      for (const bad of [
        'BK\u0000',
        'BK\t1',
        'BK\n',
        '\u001fBK',
        'BK\u007f',
        'BK\u0085', // C1 NEL
        'BK-\u200b1', // zero-width space inside
        'BK-\u202e01290', // right-to-left override: reads as another id
        'PAX\ufeff1', // BOM inside
        'BK\u20281', // line separator
        'PAX-\ud800', // lone high surrogate: no UTF-8 form
        'PAX-\ude00\ud83d', // reversed pair
      ]) {
        const failure = expectFailure(
          validate(booking({ passenger_id: bad })),
          'SCHEMA_VALIDATION',
        );
        assert.match(
          failure.reason,
          /^Invalid fields: passenger_id must not contain control, invisible format/,
          JSON.stringify(bad),
        );
        assert.equal(failure.issues[0]?.kind, 'control_character');
      }
      expectSuccess(validate(booking({ passenger_id: 'PAX\u00a0é\u{1F600}' })));
    });

    it('treat an id of only invisible characters as empty', () => {
      const failure = expectFailure(
        validate(booking({ booking_id: '\u200b\u200d ' })),
        'SCHEMA_VALIDATION',
      );
      assert.match(failure.reason, /Null or empty required fields: booking_id/);
    });
  });

  describe('optional fields', () => {
    it('apply the defaults when absent or null', () => {
      for (const value of [undefined, null]) {
        const row = expectSuccess(validate(booking({ currency: value, status: value }))).row;
        assert.equal(row.currency, 'USD');
        assert.equal(row.booking_status, 'CONFIRMED');
      }
    });

    it('reject empty strings and non-strings', () => {
      assert.equal(
        schemaReason(booking({ currency: '', status: ' ' })),
        'Empty optional fields: currency, status',
      );
      assert.equal(
        schemaReason(booking({ currency: 840, status: false })),
        'Non-scalar fields: status; Invalid fields: currency must be a string',
      );
    });

    it('event_id: 1-128 characters of A-Z a-z 0-9 . _ : -', () => {
      assert.equal(
        expectSuccess(validate(booking({ event_id: 'evt:2026.10_07-A' }))).eventId,
        'evt:2026.10_07-A',
      );
      expectSuccess(validate(booking({ event_id: 'e'.repeat(128) })));
      for (const bad of ['e'.repeat(129), 'has space', 'évt', 'a/b']) {
        const failure = expectFailure(validate(booking({ event_id: bad })), 'SCHEMA_VALIDATION');
        assert.equal(
          failure.reason,
          'Invalid fields: event_id must be 1-128 characters of A-Z a-z 0-9 . _ : -',
        );
        assert.equal(failure.issues[0]?.kind, 'invalid_format');
      }
      assert.equal(
        schemaReason(booking({ event_id: 7 })),
        'Invalid fields: event_id must be a string',
      );
      assert.equal(schemaReason(booking({ event_id: '' })), 'Empty optional fields: event_id');
      assert.match(expectSuccess(validate(booking({ event_id: null }))).eventId, /^bk1-/);
    });
  });

  describe('duplicate keys', () => {
    const base = JSON.stringify(booking());
    const withKey = (fragment: string): string => `${base.slice(0, -1)},${fragment}}`;

    it('reject a contract key repeated with a different value', () => {
      const failure = expectFailure(validate(withKey('"fare":"1.00"')), 'SCHEMA_VALIDATION');
      assert.equal(failure.reason, 'Duplicate keys with different values: fare');
      assert.deepEqual(failure.issues, [
        {
          field: 'fare',
          kind: 'duplicate_key',
          message: 'fare appears more than once with different values',
        },
      ]);
    });

    it('see through \\u escapes in key names', () => {
      assert.equal(
        schemaReason(withKey('"f\\u0061re":"1.00"')),
        'Duplicate keys with different values: fare',
      );
    });

    it('treat 1 and 1.0 as different values (different source text)', () => {
      const text = JSON.stringify(booking({ fare: 1 })).replace('"fare":1', '"fare":1,"fare":1.0');
      assert.equal(schemaReason(text), 'Duplicate keys with different values: fare');
    });

    it('accept a contract key repeated with the same value', () => {
      expectSuccess(validate(withKey('"fare":"749.50"')));
      expectSuccess(validate(withKey('"origin" : "JFK"')));
    });

    it('leave duplicates of unknown keys and nested keys alone (last wins, like JSON.parse)', () => {
      const result = expectSuccess(
        validate(withKey('"note":"a","note":"b","meta":{"fare":"1","fare":"2"}')),
      );
      assert.deepEqual(result.extraFields, { note: 'b', meta: { fare: '2' } });
      assert.equal(result.row.fare_amount, '749.5');
    });

    it('are not fooled by key names inside string values', () => {
      const result = expectSuccess(validate(withKey('"note":"\\"fare\\": \\"1\\"","x":"fare"')));
      assert.equal(result.row.fare_amount, '749.5');
    });
  });

  describe('prototype safety', () => {
    it('keeps __proto__ and constructor as ordinary extra fields', () => {
      const text = JSON.stringify(booking()).replace(
        '{',
        '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},',
      );
      const result = expectSuccess(validate(text));
      assert.equal(Object.getPrototypeOf(result.extraFields), Object.prototype);
      assert.ok(Object.hasOwn(result.extraFields, '__proto__'));
      assert.deepEqual(Object.keys(result.extraFields), ['__proto__', 'constructor']);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });

    it('never takes a contract field from a __proto__ object', () => {
      const text = JSON.stringify(booking({ fare: undefined })).replace(
        '{',
        '{"__proto__":{"fare":"1"},',
      );
      assert.equal(schemaReason(text), 'Missing required fields: fare');
    });

    it('reads own properties only, even if Object.prototype was polluted elsewhere', () => {
      const prototype = Object.prototype as Record<string, unknown>;
      prototype.fare = '5';
      try {
        assert.equal(schemaReason(booking({ fare: undefined })), 'Missing required fields: fare');
      } finally {
        delete prototype.fare;
      }
    });
  });
});
