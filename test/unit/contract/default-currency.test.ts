// The default currency: the lab's USD, another ISO 4217 code, or none (a booking without currency is rejected).
import assert from 'node:assert/strict';
import { loadIngestConfig } from '../../../shared/config/ingest-config';
import { validateBooking } from '../../../shared/contract';
import { ConfigError } from '../../../shared/errors';
import { booking, expectFailure, expectSuccess, OPTIONS } from './fixtures';

function withoutCurrency(overrides: Record<string, unknown> = {}): string {
  const fields = booking(overrides);
  delete fields.currency;
  return JSON.stringify(fields);
}

describe('default currency (OFFVIA_DEFAULT_CURRENCY)', () => {
  it("defaults to the lab's USD, reads another code, and reads none as no default", () => {
    assert.equal(loadIngestConfig({}).defaultCurrency, 'USD');
    assert.equal(loadIngestConfig({ OFFVIA_DEFAULT_CURRENCY: '' }).defaultCurrency, 'USD');
    assert.equal(loadIngestConfig({ OFFVIA_DEFAULT_CURRENCY: 'EUR' }).defaultCurrency, 'EUR');
    assert.equal(loadIngestConfig({ OFFVIA_DEFAULT_CURRENCY: 'none' }).defaultCurrency, null);
    assert.equal(loadIngestConfig({ OFFVIA_DEFAULT_CURRENCY: ' NONE ' }).defaultCurrency, null);
  });

  for (const value of ['usd', 'EURO', 'E1R', '€', 'null', 'USD,EUR']) {
    it(`refuses OFFVIA_DEFAULT_CURRENCY=${JSON.stringify(value)} at cold start, naming the variable`, () => {
      assert.throws(
        () => loadIngestConfig({ OFFVIA_DEFAULT_CURRENCY: value }),
        (e: unknown) =>
          e instanceof ConfigError &&
          e.variable === 'OFFVIA_DEFAULT_CURRENCY' &&
          /ISO 4217.*or none/.test(e.message),
      );
    });
  }

  it('files a booking without currency under the configured default', () => {
    assert.equal(expectSuccess(validateBooking(withoutCurrency(), OPTIONS)).row.currency, 'USD');
    const eur = validateBooking(withoutCurrency(), { ...OPTIONS, defaultCurrency: 'EUR' });
    assert.equal(expectSuccess(eur).row.currency, 'EUR');
    const sent = validateBooking(JSON.stringify(booking({ currency: 'GBP' })), {
      ...OPTIONS,
      defaultCurrency: null,
    });
    assert.equal(expectSuccess(sent).row.currency, 'GBP', 'a currency sent is kept');
  });

  it('without a default, a missing or null currency is SCHEMA_VALIDATION, listed with the other missing fields', () => {
    const options = { ...OPTIONS, defaultCurrency: null };
    const missing = expectFailure(validateBooking(withoutCurrency(), options), 'SCHEMA_VALIDATION');
    assert.equal(missing.reason, 'Missing required fields: currency');
    const alsoNoFare = JSON.parse(withoutCurrency()) as Record<string, unknown>;
    delete alsoNoFare.fare;
    assert.equal(
      expectFailure(validateBooking(JSON.stringify(alsoNoFare), options), 'SCHEMA_VALIDATION')
        .reason,
      'Missing required fields: currency, fare',
    );
    const nullCurrency = JSON.stringify(booking({ currency: null }));
    assert.equal(
      expectFailure(validateBooking(nullCurrency, options), 'SCHEMA_VALIDATION').reason,
      'Missing required fields: currency',
    );
  });

  it('refuses a malformed default passed to validateBooking (a programming error, not data)', () => {
    assert.throws(
      () => validateBooking(withoutCurrency(), { ...OPTIONS, defaultCurrency: 'eur' }),
      TypeError,
    );
  });
});
