// Type inference from JSON values, including lossless-json numbers and the widening order it feeds.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse as losslessParse } from 'lossless-json';
import { BQ_TYPES, inferType, isAssignable, maximalTypes, widensTo } from '../../../shared/schema';

function typeOf(value: unknown): string | null {
  const r = inferType(value);
  return r.ok ? r.type : `error:${r.code}`;
}

describe('schema/infer', () => {
  it('maps each JSON value kind to one BigQuery type', () => {
    const cases: [unknown, string | null][] = [
      ['2026-10-07T14:10:00Z', 'STRING'], // no timestamp guessing
      ['', 'STRING'],
      [42, 'INT64'],
      [-0, 'INT64'],
      [Number.MAX_SAFE_INTEGER, 'INT64'],
      [Number.MAX_SAFE_INTEGER + 1, 'FLOAT64'], // already rounded by JSON.parse
      [1e21, 'FLOAT64'],
      [749.5, 'FLOAT64'],
      [true, 'BOOL'],
      [{ a: 1 }, 'JSON'], // never a RECORD
      [[1, 2], 'JSON'], // never REPEATED
      [[], 'JSON'],
      [Object.create(null) as object, 'JSON'],
      [null, null], // no information
    ];
    for (const [value, want] of cases) assert.equal(typeOf(value), want, JSON.stringify(value));
  });

  it('keeps exact integers exact with lossless-json and bigint', () => {
    const v = losslessParse(
      '{"a":9223372036854775807,"b":9223372036854775808,"c":123456789012345678901234567890123,' +
        '"d":1.50,"e":1e3,"f":1e400,"g":-12}',
    ) as Record<string, unknown>;
    assert.equal(typeOf(v.a), 'INT64');
    assert.equal(typeOf(v.b), 'NUMERIC', 'one past INT64');
    assert.equal(typeOf(v.c), 'BIGNUMERIC', '33 digits');
    assert.equal(typeOf(v.d), 'FLOAT64');
    assert.equal(typeOf(v.e), 'FLOAT64', 'an exponent means FLOAT64');
    assert.equal(typeOf(v.f), 'error:NON_FINITE_NUMBER');
    assert.equal(typeOf(v.g), 'INT64');
    assert.equal(typeOf(2n ** 63n - 1n), 'INT64');
    assert.equal(typeOf(-(2n ** 63n) - 1n), 'NUMERIC');
    assert.equal(typeOf(10n ** 38n - 1n), 'BIGNUMERIC', '38 digits');
    // Beyond BIGNUMERIC's 38 integer digits no type is exact: an error, never a rounded FLOAT64.
    assert.equal(typeOf(10n ** 38n), 'error:NUMBER_OUT_OF_RANGE');
    assert.equal(typeOf(losslessParse('-1' + '0'.repeat(40))), 'error:NUMBER_OUT_OF_RANGE');
    const r = inferType(10n ** 40n);
    assert.ok(!r.ok && /41 digits/.test(r.message), JSON.stringify(r));
  });

  it('reports values JSON cannot hold instead of guessing', () => {
    assert.equal(typeOf(Number.NaN), 'error:NON_FINITE_NUMBER');
    assert.equal(typeOf(Number.POSITIVE_INFINITY), 'error:NON_FINITE_NUMBER');
    assert.equal(typeOf(undefined), 'error:UNSUPPORTED_VALUE');
    assert.equal(
      typeOf(() => 1),
      'error:UNSUPPORTED_VALUE',
    );
    assert.equal(typeOf(new Date(0)), 'error:UNSUPPORTED_VALUE');
  });

  it('types every value JSON.parse can produce', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const r = inferType(JSON.parse(JSON.stringify(value)) as unknown);
        assert.ok(r.ok);
        if (value === null) assert.equal(r.type, null);
        else if (typeof value === 'object') assert.equal(r.type, 'JSON');
      }),
    );
  });

  describe('the widening order', () => {
    it('is a partial order: reflexive, antisymmetric, transitive', () => {
      for (const a of BQ_TYPES) {
        assert.ok(widensTo(a, a));
        for (const b of BQ_TYPES) {
          if (a !== b) assert.ok(!(widensTo(a, b) && widensTo(b, a)), `${a} ${b}`);
          for (const c of BQ_TYPES) if (widensTo(a, b) && widensTo(b, c)) assert.ok(widensTo(a, c));
        }
      }
    });

    it('widens only numeric types, and only towards FLOAT64', () => {
      assert.ok(widensTo('INT64', 'FLOAT64'));
      assert.ok(widensTo('INT64', 'NUMERIC'));
      assert.ok(widensTo('NUMERIC', 'BIGNUMERIC'));
      assert.ok(!widensTo('FLOAT64', 'INT64'));
      assert.ok(!widensTo('FLOAT64', 'NUMERIC'));
      assert.ok(!widensTo('INT64', 'STRING'));
      assert.ok(!widensTo('STRING', 'JSON'));
    });

    it('keeps the widest types of a set', () => {
      assert.deepEqual(maximalTypes(['INT64', 'FLOAT64', 'NUMERIC']), ['FLOAT64']);
      assert.deepEqual(maximalTypes(['STRING', 'INT64', 'FLOAT64', 'STRING']), [
        'STRING',
        'FLOAT64',
      ]);
    });

    it('lets a JSON column take anything, and REPEATED or RECORD columns take no drift value', () => {
      assert.ok(isAssignable('STRING', { name: 'j', type: 'JSON', mode: 'NULLABLE' }));
      assert.ok(isAssignable('INT64', { name: 'f', type: 'FLOAT64', mode: 'REQUIRED' }));
      assert.ok(!isAssignable('STRING', { name: 'r', type: 'STRING', mode: 'REPEATED' }));
      assert.ok(!isAssignable('JSON', { name: 's', type: 'RECORD', mode: 'NULLABLE' }));
    });
  });
});
