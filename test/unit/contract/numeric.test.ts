// parseNumeric / formatScaled: exact BigQuery NUMERIC (precision 38, scale 9) text ↔ scaled bigint.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { formatScaled, parseNumeric } from '../../../shared/contract';

const NUMERIC_MAX_SCALED = 10n ** 38n - 1n;

function canonicalOf(text: string): string {
  const parsed = parseNumeric(text);
  if (!parsed.ok) return assert.fail(`${text}: ${parsed.reason}`);
  return parsed.canonical;
}

function reasonOf(text: string): string {
  const parsed = parseNumeric(text);
  if (parsed.ok) return assert.fail(`${text} was accepted as ${parsed.canonical}`);
  return parsed.reason;
}

describe('parseNumeric', () => {
  const canonical: [string, string][] = [
    ['749.50', '749.5'],
    ['749.5', '749.5'],
    ['7.495e2', '749.5'],
    ['7495E-1', '749.5'],
    ['0.7495e+3', '749.5'],
    ['00012.3400', '12.34'],
    ['.5', '0.5'],
    ['5.', '5'],
    ['+1', '1'],
    ['-0', '0'],
    ['-0.000e5', '0'],
    ['1e3', '1000'],
    ['-12.5', '-12.5'],
    ['0.000000001', '0.000000001'],
    ['123.4560000000000000000', '123.456'],
    [`1${'0'.repeat(30)}e-10`, '100000000000000000000'],
    ['1e0000000000000000005', '100000'],
    ['0e999999999999999999', '0'],
    ['99999999999999999999999999999.999999999', '99999999999999999999999999999.999999999'],
    ['-99999999999999999999999999999.999999999', '-99999999999999999999999999999.999999999'],
  ];
  for (const [text, expected] of canonical) {
    it(`reads ${text} as ${expected}`, () => assert.equal(canonicalOf(text), expected));
  }

  it('scales by 10^9 exactly', () => {
    const parsed = parseNumeric('749.50');
    assert.ok(parsed.ok);
    assert.equal(parsed.scaled, 749_500_000_000n);
    const tiny = parseNumeric('1e-9');
    assert.ok(tiny.ok);
    assert.equal(tiny.scaled, 1n);
  });

  const notDecimal = [
    '',
    ' 1',
    '1 ',
    '0x10',
    'NaN',
    'Infinity',
    '-Infinity',
    '1_000',
    '1,5',
    '1e',
    'e5',
    '.',
    '-',
    '1.2.3',
    '++1',
    '١٢',
    '1e5.5',
  ];
  for (const text of notDecimal) {
    it(`rejects ${JSON.stringify(text)} as not a decimal`, () => {
      assert.equal(reasonOf(text), 'not a decimal number');
    });
  }

  it('rejects more than 9 fraction digits instead of rounding', () => {
    assert.match(reasonOf('1e-10'), /more than 9 fraction digits/);
    assert.match(reasonOf('0.0000000001'), /more than 9 fraction digits/);
    assert.match(reasonOf('1.0000000001'), /more than 9 fraction digits/);
  });

  it('rejects more than 29 integer digits', () => {
    assert.equal(canonicalOf('9'.repeat(29)), '9'.repeat(29));
    assert.match(reasonOf('1'.repeat(30)), /more than 29 integer digits/);
    assert.match(reasonOf('1e29'), /more than 29 integer digits/);
    assert.match(reasonOf('-1e29'), /more than 29 integer digits/);
  });

  it('handles huge exponents and mantissas without building huge strings', () => {
    const started = Date.now();
    assert.match(reasonOf('1e999999999'), /integer digits/);
    assert.match(reasonOf('1e-999999999'), /fraction digits/);
    assert.match(reasonOf(`1e${'9'.repeat(1000)}`), /integer digits/);
    assert.match(reasonOf('1'.repeat(1_000_000)), /integer digits/);
    assert.match(reasonOf(`0.${'0'.repeat(1_000_000)}1`), /fraction digits/);
    assert.equal(canonicalOf(`0.${'0'.repeat(1_000_000)}`), '0');
    assert.ok(Date.now() - started < 2000, 'linear time');
  });

  it('reads D×10^-9 written with an exponent as the scaled value D (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -NUMERIC_MAX_SCALED, max: NUMERIC_MAX_SCALED }), (scaled) => {
        const parsed = parseNumeric(`${scaled}e-9`);
        assert.ok(parsed.ok);
        assert.equal(parsed.scaled, scaled);
      }),
    );
  });

  it('ignores trailing fraction zeros and leading integer zeros (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: NUMERIC_MAX_SCALED }),
        fc.nat({ max: 40 }),
        fc.nat({ max: 40 }),
        (scaled, leading, trailing) => {
          const text = formatScaled(scaled);
          const padded =
            '0'.repeat(leading) + text + (text.includes('.') ? '' : '.') + '0'.repeat(trailing);
          assert.equal(canonicalOf(padded), text);
        },
      ),
    );
  });
});

describe('formatScaled', () => {
  it('formats scaled values as canonical text', () => {
    assert.equal(formatScaled(749_500_000_000n), '749.5');
    assert.equal(formatScaled(0n), '0');
    assert.equal(formatScaled(1n), '0.000000001');
    assert.equal(formatScaled(-1n), '-0.000000001');
    assert.equal(formatScaled(-1_000_000_000n), '-1');
    assert.equal(formatScaled(NUMERIC_MAX_SCALED), '99999999999999999999999999999.999999999');
  });

  it('round-trips through parseNumeric over the whole NUMERIC range (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -NUMERIC_MAX_SCALED, max: NUMERIC_MAX_SCALED }), (scaled) => {
        const text = formatScaled(scaled);
        const parsed = parseNumeric(text);
        assert.ok(parsed.ok, text);
        assert.equal(parsed.scaled, scaled);
        assert.equal(parsed.canonical, text);
      }),
    );
  });
});
