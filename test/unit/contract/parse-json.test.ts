// PARSE_JSON: UTF-8 decoding, BOM, empty payloads, syntax errors with positions, nesting depth.
import assert from 'node:assert/strict';

import { MAX_NESTING_DEPTH } from '../../../shared/contract';
import {
  booking,
  expectFailure,
  expectSuccess,
  LAB_UNCLOSED,
  LAB_VALID,
  validate,
} from './fixtures';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

/** A booking whose extra field `deep` nests arrays so that the whole payload is `depth` levels deep. */
function nested(depth: number, fare: unknown = '749.50'): string {
  const event = JSON.stringify(booking({ fare }));
  const inner = depth - 1;
  return `${event.slice(0, -1)},"deep":${'['.repeat(inner)}${']'.repeat(inner)}}`;
}

describe('PARSE_JSON', () => {
  it("rejects the lab's unclosed JSON, saying where like Python's json module", () => {
    const failure = expectFailure(validate(LAB_UNCLOSED), 'PARSE_JSON');
    assert.match(failure.reason, /^Invalid JSON: .*: line 1 column 44 \(char 43\)$/);
    assert.equal(failure.issues[0]?.kind, 'invalid_json');
  });

  it('counts lines and columns across newlines', () => {
    const failure = expectFailure(validate('{\n  "a": 1,\n  "b": }'), 'PARSE_JSON');
    assert.match(failure.reason, /line 3 column 8 \(char 19\)$/);
  });

  const invalid = [
    '{"a":}',
    '{"a":1,}',
    '[1,2',
    "{'a':1}",
    '{"a":01}',
    'nul',
    '{} x',
    '{"a":"\u0001"}',
    'NaN',
  ];
  for (const text of invalid) {
    it(`rejects ${JSON.stringify(text)} with a position`, () => {
      const failure = expectFailure(validate(text), 'PARSE_JSON');
      assert.match(failure.reason, /^Invalid JSON: .*\(char \d+\)$/);
    });
  }

  it('rejects empty and whitespace-only payloads', () => {
    for (const payload of ['', ' \n\t\r ', new Uint8Array(0), utf8('\uFEFF')]) {
      assert.equal(expectFailure(validate(payload), 'PARSE_JSON').reason, 'payload is empty');
    }
  });

  it('rejects invalid UTF-8 instead of replacing it', () => {
    const cases = [
      Uint8Array.from([0x7b, 0xff, 0x7d]), // a byte that never occurs in UTF-8
      Uint8Array.from([0xc0, 0xaf]), // overlong "/"
      Uint8Array.from([0xed, 0xa0, 0x80]), // an encoded surrogate
      utf8(LAB_VALID)
        .slice(0, 20)
        .map((byte, i) => (i === 5 ? 0xe2 : byte)), // truncated sequence
    ];
    for (const bytes of cases) {
      const failure = expectFailure(validate(bytes), 'PARSE_JSON');
      assert.equal(failure.reason, 'payload is not valid UTF-8');
      assert.equal(failure.issues[0]?.kind, 'invalid_utf8');
    }
  });

  it('decodes UTF-8 bytes exactly like the same string', () => {
    const text = JSON.stringify(booking({ passenger_id: 'PAX-Zoë-東京-🛫' }));
    assert.deepEqual(validate(utf8(text)), validate(text));
    assert.equal(expectSuccess(validate(utf8(text))).row.passenger_id, 'PAX-Zoë-東京-🛫');
  });

  it('ignores one leading byte order mark, in bytes and in strings, but not two', () => {
    expectSuccess(validate(Uint8Array.from([0xef, 0xbb, 0xbf, ...utf8(LAB_VALID)])));
    expectSuccess(validate(`\uFEFF${LAB_VALID}`));
    expectFailure(validate(`\uFEFF\uFEFF${LAB_VALID}`), 'PARSE_JSON');
    expectFailure(
      validate(Uint8Array.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, 0x7b, 0x7d])),
      'PARSE_JSON',
    );
  });

  it(`accepts ${MAX_NESTING_DEPTH} levels of nesting and rejects one more`, () => {
    expectSuccess(validate(nested(MAX_NESTING_DEPTH)));
    const failure = expectFailure(validate(nested(MAX_NESTING_DEPTH + 1)), 'PARSE_JSON');
    assert.match(failure.reason, /^nesting too deep/);
    assert.equal(failure.issues[0]?.kind, 'too_deep');
  });

  it('rejects deep nesting of any size without overflowing the stack', () => {
    const deepArray = '['.repeat(200_000) + ']'.repeat(200_000);
    assert.match(expectFailure(validate(deepArray), 'PARSE_JSON').reason, /nesting too deep/);
    const deepObject = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    assert.match(expectFailure(validate(deepObject), 'PARSE_JSON').reason, /nesting too deep/);
    // Invalid and deep: the lossless locator overflows; V8's own message is used.
    assert.match(
      expectFailure(validate('['.repeat(200_000)), 'PARSE_JSON').reason,
      /^Invalid JSON: /,
    );
  });

  it('re-parses losslessly at the deepest accepted nesting (numeric fare)', () => {
    const result = expectSuccess(validate(nested(MAX_NESTING_DEPTH, 749.5)));
    assert.equal(result.row.fare_amount, '749.5');
  });
});
