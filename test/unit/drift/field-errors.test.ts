// classifyExtraFields: every extra field is a value, an error, or a proposal (never dropped); guard rails on names.
import assert from 'node:assert/strict';
import {
  classifyExtraFields,
  DRIFT_PROTECTED_NAMES,
  errorsText,
  withPlanRejections,
} from '../../../shared/drift';
import type { TableSchema } from '../../../shared/schema';
import { SILVER_FIELDS } from '../../support/drift-fixtures';

const SCHEMA: TableSchema = {
  fields: [...SILVER_FIELDS, { name: 'promo_code', type: 'STRING', mode: 'NULLABLE' }],
};
const RULES = { protectedNames: DRIFT_PROTECTED_NAMES, maxNewFieldsPerEvent: 20 };

describe('classifyExtraFields', () => {
  it('gives the values of fields that are columns, and no errors', () => {
    const v = classifyExtraFields({ promo_code: 'SUMMER', gone: null }, SCHEMA, RULES);
    assert.deepEqual(v.errors, []);
    assert.deepEqual(v.values, { promo_code: 'SUMMER' });
    assert.equal(v.proposed.size, 0);
  });

  it('proposes a field that is not a column yet, with its inferred type, and keeps a NO_COLUMN error', () => {
    const v = classifyExtraFields({ loyalty_points: 5, promo_code: 'X' }, SCHEMA, RULES);
    assert.deepEqual(
      v.errors.map((e) => [e.field, e.code]),
      [['loyalty_points', 'NO_COLUMN']],
    );
    assert.deepEqual([...v.proposed], [['loyalty_points', { ok: true, type: 'INT64' }]]);
  });

  it('refuses hostile names with the rule that refused them, and proposes none of them', () => {
    const extra: Record<string, unknown> = {
      select: 1,
      ['x'.repeat(301)]: 1,
      'bad-name': 1,
      '1leading': 1,
      _PARTITIONTIME: 1,
      fare_amount: 1,
      ORIGIN: 'JFK',
      Promo_Code: 'case',
      dupKey: 1,
      DUPKEY: 2,
    };
    const v = classifyExtraFields(extra, SCHEMA, RULES);
    const codes = new Map(v.errors.map((e) => [e.field, e.code]));
    assert.equal(codes.get('select'), 'RESERVED_KEYWORD');
    assert.equal(codes.get('x'.repeat(301)), 'NAME_TOO_LONG');
    assert.equal(codes.get('bad-name'), 'ILLEGAL_CHARACTERS');
    assert.equal(codes.get('1leading'), 'ILLEGAL_CHARACTERS');
    assert.equal(codes.get('_PARTITIONTIME'), 'RESERVED_PREFIX');
    assert.equal(codes.get('fare_amount'), 'PROTECTED_NAME');
    assert.equal(codes.get('ORIGIN'), 'PROTECTED_NAME');
    assert.equal(codes.get('Promo_Code'), 'CASE_COLLISION');
    assert.equal(codes.get('dupKey'), 'CASE_COLLISION');
    assert.equal(codes.get('DUPKEY'), 'CASE_COLLISION');
    assert.equal(v.errors.length, Object.keys(extra).length, 'one error per field, none dropped');
    assert.equal(v.proposed.size, 0);
  });

  it('treats more not-yet-column fields than the per-event cap as a flood: one FIELD_FLOOD, nothing proposed', () => {
    const extra = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`flood_${i}`, i]));
    const v = classifyExtraFields(extra, SCHEMA, RULES);
    assert.deepEqual(
      v.errors.map((e) => e.code),
      ['FIELD_FLOOD'],
    );
    assert.match(v.errors[0]?.reason ?? '', /500 fields that are not columns.*at most 20/);
    assert.equal(v.proposed.size, 0);
    const atCap = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f_${i}`, i]));
    assert.equal(classifyExtraFields(atCap, SCHEMA, RULES).proposed.size, 20);
  });

  it('keeps a `__proto__` field as a field, refused by name like a reserved word and never proposed', () => {
    const extra = JSON.parse('{"__proto__": 7}') as Record<string, unknown>;
    const v = classifyExtraFields(extra, SCHEMA, RULES);
    assert.deepEqual(
      v.errors.map((e) => [e.field, e.code]),
      [['__proto__', 'JS_SPECIAL_NAME']],
    );
    assert.deepEqual([...v.proposed.keys()], []);
  });

  it('reports a value of the wrong type for an existing column', () => {
    const v = classifyExtraFields({ promo_code: 12 }, SCHEMA, RULES);
    assert.deepEqual(
      v.errors.map((e) => e.code),
      ['INCOMPATIBLE_WITH_COLUMN'],
    );
  });
});

describe('withPlanRejections and errorsText', () => {
  it("replaces a NO_COLUMN error with the plan's reason", () => {
    const errors = withPlanRejections(
      [{ field: 'a', code: 'NO_COLUMN', reason: 'no such field' }],
      new Map([['a', { field: 'a', code: 'WINDOW_CAP', reason: 'conflict', retryable: true }]]),
    );
    assert.deepEqual(errors, [{ field: 'a', code: 'WINDOW_CAP', reason: 'conflict' }]);
  });

  it('spells out the first errors and counts the rest', () => {
    const errors = Array.from({ length: 25 }, (_, i) => ({
      field: `f${i}`,
      code: 'NO_COLUMN' as const,
      reason: `r${i}`,
    }));
    const text = errorsText(errors);
    assert.match(text, /^NO_COLUMN: r0; /);
    assert.match(text, /; … and 5 more$/);
    assert.equal(errorsText([]), '');
  });
});
