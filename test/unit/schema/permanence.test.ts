// Which rejections are final (bad data now) and which may still clear (the row waits within its budget).
import assert from 'node:assert/strict';
import { DRIFT_ERROR_PERMANENCE, isPermanentError } from '../../../shared/drift';
import { isPermanentSchemaError, SCHEMA_ERROR_PERMANENCE } from '../../../shared/schema';

describe('schema/permanence', () => {
  it('treats what no schema window and no allowed table change can fix as permanent', () => {
    const permanent = Object.entries(SCHEMA_ERROR_PERMANENCE)
      .filter(([, p]) => p === 'permanent')
      .map(([code]) => code)
      .sort();
    assert.deepEqual(permanent, [
      'CASE_COLLISION',
      'EMPTY_NAME',
      'ILLEGAL_CHARACTERS',
      'INCOMPATIBLE_WITH_COLUMN',
      'JS_SPECIAL_NAME',
      'NAME_TOO_LONG',
      'NON_FINITE_NUMBER',
      'NUMBER_OUT_OF_RANGE',
      'PROTECTED_NAME',
      'RESERVED_KEYWORD',
      'RESERVED_PREFIX',
      'UNSUPPORTED_TYPE',
      'UNSUPPORTED_VALUE',
    ]);
    assert.ok(isPermanentSchemaError('RESERVED_PREFIX'));
    for (const code of [
      'NO_COLUMN',
      'CASE_VARIANT_LOST',
      'NEEDS_COLUMN_WIDENING',
      'WINDOW_CAP',
      'TABLE_CAP',
    ] as const) {
      assert.equal(isPermanentSchemaError(code), false, code);
    }
  });

  it("classifies the drift layer's own codes, and an unknown stored code as retryable", () => {
    assert.equal(DRIFT_ERROR_PERMANENCE.FIELD_FLOOD, 'permanent');
    assert.equal(DRIFT_ERROR_PERMANENCE.UNREADABLE_ROW, 'permanent');
    assert.equal(DRIFT_ERROR_PERMANENCE.PROPOSAL_CAP, 'retryable');
    assert.equal(DRIFT_ERROR_PERMANENCE.INSERT_REJECTED, 'retryable');
    assert.equal(DRIFT_ERROR_PERMANENCE.INSERT_INVALID, 'permanent');
    assert.equal(DRIFT_ERROR_PERMANENCE.INSERT_NOT_WRITTEN, 'retryable');
    assert.ok(isPermanentError({ code: 'PROTECTED_NAME' }));
    assert.ok(!isPermanentError({ code: 'NO_COLUMN' }));
    // A code written by another version of the code must not send rows to bad data early.
    assert.ok(!isPermanentError({ code: 'SOMETHING_NEW' as 'NO_COLUMN' }));
  });
});
