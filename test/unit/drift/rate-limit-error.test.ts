// isRateLimitError against the error shapes the BigQuery client raises for a DDL refused at the table-update rate.
import assert from 'node:assert/strict';
import { isRateLimitError } from '../../../shared/drift';

describe('isRateLimitError', () => {
  it('recognises 403 rateLimitExceeded in errors, in a job errorResult, or by its message', () => {
    const message =
      'Exceeded rate limits: too many table update operations for this table. For more information, see ' +
      'https://cloud.google.com/bigquery/docs/troubleshoot-quotas';
    assert.ok(
      isRateLimitError(
        Object.assign(new Error(message), {
          code: 403,
          errors: [{ reason: 'rateLimitExceeded', message }],
        }),
      ),
    );
    assert.ok(
      isRateLimitError(
        Object.assign(new Error('job failed'), {
          response: { status: { errorResult: { reason: 'rateLimitExceeded', message } } },
        }),
      ),
    );
    assert.ok(isRateLimitError(new Error(message)));
  });

  it('is false for a long-term quota, other failures and non-errors', () => {
    assert.equal(
      isRateLimitError(
        Object.assign(new Error('Quota exceeded: table operations per day'), {
          code: 403,
          errors: [{ reason: 'quotaExceeded' }],
        }),
      ),
      false,
    );
    assert.equal(isRateLimitError(new Error('Syntax error')), false);
    assert.equal(isRateLimitError(null), false);
    assert.equal(isRateLimitError('rateLimitExceeded'), false);
  });
});
