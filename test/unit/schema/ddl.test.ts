// The ADD COLUMN statement: exact text, backtick quoting, and refusal of anything that could inject SQL.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  addColumnDdlStatements,
  addColumnsDdl,
  quoteColumnName,
  quoteTablePath,
  SchemaConfigError,
  type BqField,
} from '../../../shared/schema';
import { TARGET } from './fixtures';

/** Half plain identifiers, half arbitrary text (quotes, backslashes, newlines, surrogates). */
const nameOrNoise = fc.oneof(
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,30}$/),
  fc.string({ unit: 'binary', maxLength: 30 }),
);

const col = (name: string, type: BqField['type'] = 'STRING'): BqField => ({
  name,
  type,
  mode: 'NULLABLE',
});

describe('schema/ddl', () => {
  it('writes one ALTER TABLE statement with one ADD COLUMN IF NOT EXISTS per column', () => {
    assert.equal(
      addColumnsDdl(TARGET, [col('loyalty_tier'), col('bags', 'INT64'), col('meta', 'JSON')]),
      'ALTER TABLE `offvia-local.offvia_silver.fact_bookings` ' +
        'ADD COLUMN IF NOT EXISTS `loyalty_tier` STRING, ' +
        'ADD COLUMN IF NOT EXISTS `bags` INT64, ' +
        'ADD COLUMN IF NOT EXISTS `meta` JSON',
    );
  });

  it('writes the same change one statement per column for the local emulator', () => {
    assert.deepEqual(addColumnDdlStatements(TARGET, [col('loyalty_tier'), col('bags', 'INT64')]), [
      'ALTER TABLE `offvia-local.offvia_silver.fact_bookings` ADD COLUMN IF NOT EXISTS `loyalty_tier` STRING',
      'ALTER TABLE `offvia-local.offvia_silver.fact_bookings` ADD COLUMN IF NOT EXISTS `bags` INT64',
    ]);
    assert.throws(() => addColumnDdlStatements(TARGET, []), SchemaConfigError);
    assert.throws(() => addColumnDdlStatements(TARGET, [col('a b')]), SchemaConfigError);
  });

  it('names dataset.table when the target has no project', () => {
    assert.equal(
      quoteTablePath({ datasetId: 'offvia_silver', tableId: 'fact_bookings' }),
      '`offvia_silver.fact_bookings`',
    );
  });

  it('refuses table ids that could break out of the quotes', () => {
    const bad = [
      { ...TARGET, projectId: 'p`; DROP TABLE x; --' },
      { ...TARGET, projectId: 'UPPER-case' },
      { ...TARGET, datasetId: 'a.b' },
      { ...TARGET, datasetId: '' },
      { ...TARGET, tableId: 'fact bookings' },
      { ...TARGET, tableId: 'x\\`' },
      { ...TARGET, tableId: 'x\n' },
    ];
    for (const t of bad)
      assert.throws(() => quoteTablePath(t), SchemaConfigError, JSON.stringify(t));
  });

  it('refuses column names that could inject SQL, and anything addColumnsDdl must not add', () => {
    assert.throws(() => quoteColumnName('a` INT64, DROP COLUMN `b'), SchemaConfigError);
    assert.throws(() => quoteColumnName(''), SchemaConfigError);
    assert.throws(() => addColumnsDdl(TARGET, []), SchemaConfigError);
    assert.throws(() => addColumnsDdl(TARGET, [col('select')]), SchemaConfigError);
    assert.throws(() => addColumnsDdl(TARGET, [col('_PARTITIONTIME')]), SchemaConfigError);
    assert.throws(
      () => addColumnsDdl(TARGET, [{ name: 'x', type: 'STRING', mode: 'REQUIRED' }]),
      /only NULLABLE/,
    );
    assert.throws(() => addColumnsDdl(TARGET, [col('x', 'RECORD')]), /cannot create/);
  });

  it('quotes nothing but a plain identifier (any string)', () => {
    fc.assert(
      fc.property(nameOrNoise, (name) => {
        let quoted: string;
        try {
          quoted = quoteColumnName(name);
        } catch (err) {
          assert.ok(err instanceof SchemaConfigError);
          return;
        }
        assert.match(quoted, /^`[A-Za-z_][A-Za-z0-9_]*`$/);
      }),
    );
  });
});
