// Extra fields to row values: conversions per column type, and an error for every field that cannot be written.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse as losslessParse } from 'lossless-json';
import { extraFieldsToRow, type RowTarget } from '../../../shared/schema';
import { PROTECTED, silverWith } from './fixtures';

const TARGET_ROW: RowTarget = {
  schema: silverWith(
    { name: 'seat', type: 'STRING', mode: 'NULLABLE' },
    { name: 'bags', type: 'INT64', mode: 'NULLABLE' },
    { name: 'weight', type: 'FLOAT64', mode: 'NULLABLE' },
    { name: 'miles', type: 'NUMERIC', mode: 'NULLABLE' },
    { name: 'vip', type: 'BOOL', mode: 'NULLABLE' },
    { name: 'extras', type: 'JSON', mode: 'NULLABLE' },
    { name: 'Promo', type: 'STRING', mode: 'NULLABLE' },
  ),
  protectedNames: PROTECTED,
};

describe('schema/row', () => {
  it('converts values for a streaming insert by column type', () => {
    const extra = losslessParse(
      '{"seat":"12A","bags":2,"weight":23,"miles":1200,"vip":false,' +
        '"extras":{"meal":"VGML","big":12345678901234567890}}',
    ) as Record<string, unknown>;
    const { values, errors } = extraFieldsToRow(extra, TARGET_ROW);
    assert.deepEqual(errors, []);
    assert.deepEqual(values, {
      seat: '12A',
      bags: 2, // lossless safe integer in an INT64 column → number
      weight: 23,
      miles: '1200',
      vip: false,
      extras: '{"meal":"VGML","big":12345678901234567890}', // JSON text, big number exact
    });
  });

  it('writes integers beyond 2^53 into INT64 and NUMERIC columns exactly, as decimal text', () => {
    const extra = losslessParse(
      '{"bags":9007199254740993,"miles":123456789012345678901234567}',
    ) as Record<string, unknown>;
    const { values, errors } = extraFieldsToRow(extra, TARGET_ROW);
    assert.deepEqual(errors, []);
    assert.deepEqual(values, { bags: '9007199254740993', miles: '123456789012345678901234567' });
  });

  it('writes plain JSON.parse numbers as numbers and any value into a JSON column as JSON text', () => {
    const { values, errors } = extraFieldsToRow(
      { bags: 3, weight: 1.25, miles: 7, extras: 'just text' },
      TARGET_ROW,
    );
    assert.deepEqual(errors, []);
    assert.deepEqual(values, { bags: 3, weight: 1.25, miles: '7', extras: '"just text"' });
  });

  it('keeps nulls for existing columns and leaves out nulls that have no column', () => {
    const { values, errors, nullFields } = extraFieldsToRow(
      { seat: null, brand_new: null, other: 'x' },
      TARGET_ROW,
    );
    assert.deepEqual(values, { seat: null });
    assert.deepEqual(nullFields, ['brand_new'], 'listed, so the gate can log them');
    assert.deepEqual(
      errors.map((e) => e.code),
      ['NO_COLUMN'],
    );
  });

  it('reports every field it cannot write, never dropping one', () => {
    const { values, errors } = extraFieldsToRow(
      {
        loyalty: 'gold', // no column yet: the drift the retry store waits out
        promo: 'X', // column is "Promo"
        fare_amount: 1, // derived column
        ORIGIN: 'JFK', // contract field in another case
        bags: 'two', // STRING into INT64
        weight: { kg: 1 }, // JSON into FLOAT64
        miles: 1.5, // FLOAT64 into NUMERIC: BigQuery could widen the column
        broken: undefined,
        seat: '1A',
      },
      TARGET_ROW,
    );
    assert.deepEqual(values, { seat: '1A' });
    assert.deepEqual(
      errors.map((e) => [e.field, e.code]),
      [
        ['loyalty', 'NO_COLUMN'],
        ['promo', 'CASE_COLLISION'],
        ['fare_amount', 'PROTECTED_NAME'],
        ['ORIGIN', 'PROTECTED_NAME'],
        ['bags', 'INCOMPATIBLE_WITH_COLUMN'],
        ['weight', 'INCOMPATIBLE_WITH_COLUMN'],
        ['miles', 'NEEDS_COLUMN_WIDENING'],
        ['broken', 'UNSUPPORTED_VALUE'],
      ],
    );
    assert.match(errors[0]?.reason ?? '', /no such field/);
  });

  it('treats a __proto__ key from JSON.parse as a field, without touching prototypes', () => {
    const extra = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const target: RowTarget = {
      ...TARGET_ROW,
      schema: silverWith({ name: '__proto__', type: 'JSON', mode: 'NULLABLE' }),
    };
    const { values, errors } = extraFieldsToRow(extra, target);
    assert.deepEqual(errors, []);
    assert.ok(Object.hasOwn(values, '__proto__'));
    assert.equal(JSON.stringify(values), '{"__proto__":"{\\"polluted\\":true}"}');
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('accounts for every field: a value, a left-out null, or an error', () => {
    const names = fc.constantFrom(
      'seat',
      'bags',
      'weight',
      'extras',
      'Promo',
      'promo',
      'fare',
      'new_one',
    );
    fc.assert(
      fc.property(fc.dictionary(names, fc.jsonValue()), (extra) => {
        const { values, errors, nullFields } = extraFieldsToRow(extra, TARGET_ROW);
        for (const field of Object.keys(extra)) {
          const written = Object.hasOwn(values, field);
          const failed = errors.some((e) => e.field === field);
          const leftOut = nullFields.includes(field);
          assert.equal(Number(written) + Number(failed) + Number(leftOut), 1, field);
          if (leftOut) assert.equal(extra[field], null);
        }
      }),
    );
  });
});
