// Column-name rules: BigQuery's alphabet and length, reserved prefixes and keywords, case folding.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkColumnName, columnNameKey, MAX_COLUMN_NAME_LENGTH } from '../../../shared/schema';

function codeOf(name: string): string {
  const check = checkColumnName(name);
  return check.ok ? 'OK' : check.code;
}

describe('schema/column-names', () => {
  it('accepts letters, digits and underscores starting with a letter or underscore', () => {
    for (const name of ['promo', 'Promo_Code', '_private', 'a1', 'x', '__proto', 'seat_2']) {
      assert.equal(codeOf(name), 'OK', name);
    }
  });

  it('rejects illegal characters and a leading digit (no flexible column names), naming the character', () => {
    const hostile = [
      'a-b',
      'a b',
      '1abc',
      'ünï',
      'a`b',
      'a;DROP TABLE x',
      'a.b',
      'a\nb',
      'emoji😀',
      'tab\t',
      '$x',
    ];
    for (const name of hostile)
      assert.equal(codeOf(name), 'ILLEGAL_CHARACTERS', JSON.stringify(name));
    const check = checkColumnName('a-b');
    assert.ok(!check.ok);
    assert.match(check.reason, /"-" \(U\+002D\)/);
    const digit = checkColumnName('9lives');
    assert.ok(!digit.ok);
    assert.match(digit.reason, /"9"/);
  });

  it('rejects the empty name and names longer than 300 characters', () => {
    assert.equal(codeOf(''), 'EMPTY_NAME');
    assert.equal(codeOf('a'.repeat(MAX_COLUMN_NAME_LENGTH)), 'OK');
    assert.equal(codeOf('a'.repeat(MAX_COLUMN_NAME_LENGTH + 1)), 'NAME_TOO_LONG');
    const check = checkColumnName('b'.repeat(10_000));
    assert.ok(!check.ok);
    assert.ok(check.reason.length < 200, 'a hostile name is cut in the reason');
  });

  it("rejects BigQuery's reserved prefixes in any case", () => {
    const names = [
      '_TABLE_SUFFIX',
      '_table_x',
      '_FILE_NAME',
      '_PARTITIONTIME',
      '_partitiondate',
      '_ROW_TIMESTAMP',
      '__ROOT__x',
      '_COLON_a',
      '_Colon_',
    ];
    for (const name of names) assert.equal(codeOf(name), 'RESERVED_PREFIX', name);
    assert.equal(codeOf('_partitio'), 'OK', 'a name shorter than the prefix is fine');
  });

  it('rejects GoogleSQL reserved keywords in any case', () => {
    for (const name of [
      'select',
      'SELECT',
      'Select',
      'from',
      'qualify',
      'struct',
      'null',
      'true',
    ]) {
      assert.equal(codeOf(name), 'RESERVED_KEYWORD', name);
    }
    assert.equal(codeOf('selected'), 'OK');
    assert.equal(codeOf('date'), 'OK', 'DATE is a type name, not a reserved keyword');
  });

  it('rejects names special to JavaScript objects in any case, e.g. __proto__ and constructor', () => {
    const names = [
      '__proto__',
      '__PROTO__',
      'constructor',
      'Constructor',
      'prototype',
      'toString',
      'hasOwnProperty',
      'valueOf',
      '__defineGetter__',
    ];
    for (const name of names) assert.equal(codeOf(name), 'JS_SPECIAL_NAME', name);
    // Every own property of Object.prototype this runtime has is covered, not just the ones listed above.
    for (const name of Object.getOwnPropertyNames(Object.prototype)) {
      assert.equal(codeOf(name), 'JS_SPECIAL_NAME', name);
    }
    assert.equal(codeOf('proto_version'), 'OK');
    assert.equal(codeOf('constructor_id'), 'OK');
  });

  it('folds case the way BigQuery compares names', () => {
    assert.equal(columnNameKey('Promo_CODE'), 'promo_code');
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/), (name) => {
        assert.equal(columnNameKey(name), columnNameKey(name.toUpperCase()));
        assert.equal(columnNameKey(name), name.toLowerCase());
      }),
    );
  });

  it('accepts exactly the classic alphabet, minus reserved prefixes and keywords (any string)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/),
          fc.string({ unit: 'binary', maxLength: 40 }),
        ),
        (name) => {
          const valid = /^[A-Za-z_][A-Za-z0-9_]{0,299}$/.test(name);
          const check = checkColumnName(name);
          if (check.ok) assert.ok(valid, name);
          else if (valid)
            assert.ok(
              ['RESERVED_PREFIX', 'RESERVED_KEYWORD', 'JS_SPECIAL_NAME'].includes(check.code),
              name,
            );
        },
      ),
    );
  });
});
