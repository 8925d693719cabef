// Planning a window's change: new NULLABLE columns only, compatibility, guard rails, caps and hostile names.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  mergeFieldSets,
  planSchemaChange,
  proposalOf,
  SchemaConfigError,
  type ProposedFields,
  supportOf,
  type RejectionCode,
  type SchemaChangePlan,
} from '../../../shared/schema';
import { fields, GUARD, proposedArb, SILVER, silverWith, TARGET } from './fixtures';

function plan(proposed: ProposedFields, current = SILVER, guard = GUARD): SchemaChangePlan {
  return planSchemaChange(current, proposed, guard, TARGET);
}

function codes(p: SchemaChangePlan): [string, RejectionCode][] {
  return p.rejected.map((r) => [r.field, r.code]);
}

describe('schema/plan', () => {
  it('adds new fields as NULLABLE columns with one ALTER TABLE statement', () => {
    const p = plan(fields(['seat', 'STRING'], ['bags', 'INT64'], ['extras', 'JSON']));
    assert.deepEqual(p.addColumns, [
      { name: 'bags', type: 'INT64', mode: 'NULLABLE' },
      { name: 'extras', type: 'JSON', mode: 'NULLABLE' },
      { name: 'seat', type: 'STRING', mode: 'NULLABLE' },
    ]);
    assert.deepEqual(p.rejected, []);
    assert.equal(
      p.ddl,
      'ALTER TABLE `offvia-local.offvia_silver.fact_bookings` ADD COLUMN IF NOT EXISTS `bags` INT64, ' +
        'ADD COLUMN IF NOT EXISTS `extras` JSON, ADD COLUMN IF NOT EXISTS `seat` STRING',
    );
    assert.equal(p.ddlPerColumn.length, 3);
    assert.match(
      p.ddlPerColumn[2] ?? '',
      /^ALTER TABLE `offvia-local\.offvia_silver\.fact_bookings` ADD COLUMN IF NOT EXISTS `seat` STRING$/,
    );
  });

  it('needs nothing for a field that already is a column of a compatible type', () => {
    const current = silverWith(
      { name: 'seat', type: 'STRING', mode: 'NULLABLE' },
      { name: 'weight', type: 'FLOAT64', mode: 'NULLABLE' },
      { name: 'miles', type: 'NUMERIC', mode: 'NULLABLE' },
      { name: 'extras', type: 'JSON', mode: 'NULLABLE' },
    );
    const p = plan(
      fields(['seat', 'STRING'], ['weight', 'INT64'], ['miles', 'INT64'], ['extras', 'STRING']),
      current,
    );
    assert.deepEqual(p.unchanged, ['extras', 'miles', 'seat', 'weight']);
    assert.deepEqual(p.addColumns, []);
    assert.deepEqual(p.rejected, []);
    assert.equal(p.ddl, null);
  });

  it('rejects a field whose type an existing column cannot take, and never alters the column', () => {
    const current = silverWith(
      { name: 'bags', type: 'INT64', mode: 'NULLABLE' },
      { name: 'tags', type: 'STRING', mode: 'REPEATED' },
      { name: 'price', type: 'NUMERIC', mode: 'NULLABLE' },
    );
    const p = plan(fields(['bags', 'STRING'], ['tags', 'STRING'], ['price', 'FLOAT64']), current);
    assert.deepEqual(codes(p), [
      ['bags', 'INCOMPATIBLE_WITH_COLUMN'],
      // NUMERIC → FLOAT64 is a widening BigQuery allows on the column: an operator's call, so not final.
      ['price', 'NEEDS_COLUMN_WIDENING'],
      ['tags', 'INCOMPATIBLE_WITH_COLUMN'],
    ]);
    assert.deepEqual(
      p.rejected.map((r) => r.retryable),
      [false, true, false],
    );
    assert.match(
      p.rejected[0]?.reason ?? '',
      /"bags" has STRING values; column "bags" is NULLABLE INT64/,
    );
    assert.equal(p.ddl, null);
  });

  it('checks every conflicting type against an existing column (a JSON column takes them all)', () => {
    const conflict = mergeFieldSets(fields(['meta', 'STRING']), fields(['meta', 'INT64']));
    const json = plan(conflict, silverWith({ name: 'meta', type: 'JSON', mode: 'NULLABLE' }));
    assert.deepEqual(json.unchanged, ['meta']);
    const str = plan(conflict, silverWith({ name: 'meta', type: 'STRING', mode: 'NULLABLE' }));
    assert.deepEqual(codes(str), [['meta', 'INCOMPATIBLE_WITH_COLUMN']]);
  });

  describe('contests (one rogue event must not block a column for everyone)', () => {
    const T0 = Date.UTC(2026, 9, 7, 14, 9, 0);
    const rowsOf = (...rows: [Record<string, unknown>, number][]) =>
      supportOf(rows.map(([extraFields, at]) => ({ extraFields, processedTimestampMs: T0 + at })));

    it('gives a type-conflicting new field the type with the most rows', () => {
      const conflict = mergeFieldSets(
        fields(['promo', 'STRING'], ['seat', 'STRING']),
        fields(['promo', 'INT64']),
      );
      const support = rowsOf([{ promo: 1 }, 0], [{ promo: 'A' }, 5], [{ promo: 'B' }, 9]);
      const p = planSchemaChange(SILVER, conflict, GUARD, TARGET, support);
      assert.deepEqual(p.rejected, []);
      assert.deepEqual(p.addColumns, [
        { name: 'promo', type: 'STRING', mode: 'NULLABLE' },
        { name: 'seat', type: 'STRING', mode: 'NULLABLE' },
      ]);
      assert.deepEqual(p.resolved, [
        {
          kind: 'type',
          field: 'promo',
          winner: 'STRING',
          contenders: [
            { value: 'STRING', support: { rows: 2, firstSeenMs: T0 + 5 } },
            { value: 'INT64', support: { rows: 1, firstSeenMs: T0 } },
          ],
        },
      ]);
    });

    it('counts a row for the conflicting type its value widens to; ties go to the earliest, then type order', () => {
      const conflict = proposalOf(['FLOAT64', 'STRING']);
      const proposed = new Map([['x', conflict]]);
      // One INT64 and one FLOAT64 row back FLOAT64 (2), two STRING rows back STRING (2): a tie on rows,
      // FLOAT64 was seen first.
      const tie = rowsOf([{ x: 'a' }, 3], [{ x: 'b' }, 4], [{ x: 1 }, 1], [{ x: 1.5 }, 8]);
      assert.equal(
        planSchemaChange(SILVER, proposed, GUARD, TARGET, tie).addColumns[0]?.type,
        'FLOAT64',
      );
      const later = rowsOf([{ x: 'a' }, 0], [{ x: 'b' }, 4], [{ x: 1 }, 1], [{ x: 1.5 }, 8]);
      assert.equal(
        planSchemaChange(SILVER, proposed, GUARD, TARGET, later).addColumns[0]?.type,
        'STRING',
      );
      // No evidence at all: BQ_TYPES order, where STRING comes before FLOAT64.
      assert.equal(plan(proposed).addColumns[0]?.type, 'STRING');
    });

    it('lets the case variant with the most rows win and rejects only the others, retryably', () => {
      const proposed = fields(['loyalty_tier', 'STRING'], ['Loyalty_Tier', 'STRING']);
      const support = rowsOf(
        [{ Loyalty_Tier: 'silver' }, 0],
        [{ loyalty_tier: 'gold' }, 10],
        [{ loyalty_tier: 'gold' }, 20],
      );
      const p = planSchemaChange(SILVER, proposed, GUARD, TARGET, support);
      assert.deepEqual(
        p.addColumns.map((c) => c.name),
        ['loyalty_tier'],
      );
      assert.deepEqual(codes(p), [['Loyalty_Tier', 'CASE_VARIANT_LOST']]);
      assert.equal(p.rejected[0]?.retryable, true);
      assert.match(p.rejected[0]?.reason ?? '', /"loyalty_tier", which wins \(2 vs 1 waiting rows/);
      assert.equal(p.resolved[0]?.winner, 'loyalty_tier');
    });

    it('breaks a tie in rows by the earliest first seen, then by name order', () => {
      const proposed = fields(['loyalty_tier', 'STRING'], ['Loyalty_Tier', 'STRING']);
      const earlierUpper = rowsOf([{ Loyalty_Tier: 's' }, 0], [{ loyalty_tier: 'g' }, 10]);
      assert.deepEqual(
        planSchemaChange(SILVER, proposed, GUARD, TARGET, earlierUpper).addColumns.map(
          (c) => c.name,
        ),
        ['Loyalty_Tier'],
      );
      const sameTime = rowsOf([{ Loyalty_Tier: 's' }, 0], [{ loyalty_tier: 'g' }, 0]);
      assert.deepEqual(
        planSchemaChange(SILVER, proposed, GUARD, TARGET, sameTime).addColumns.map((c) => c.name),
        ['Loyalty_Tier'], // 'L' < 'l' in code-unit order
      );
    });
  });

  it('rejects types ADD COLUMN cannot create', () => {
    const p = plan(new Map([['addr', proposalOf(['RECORD'])]]));
    assert.deepEqual(codes(p), [['addr', 'UNSUPPORTED_TYPE']]);
  });

  describe('hostile field names', () => {
    it('creates no column for reserved, too long or illegal names, with a reason for each', () => {
      const hostile: [string, RejectionCode][] = [
        ['', 'EMPTY_NAME'],
        ['x'.repeat(301), 'NAME_TOO_LONG'],
        ['a-b', 'ILLEGAL_CHARACTERS'],
        ['1st', 'ILLEGAL_CHARACTERS'],
        ['drop`; DROP TABLE t; --', 'ILLEGAL_CHARACTERS'],
        ['naïve', 'ILLEGAL_CHARACTERS'],
        ['_PARTITIONTIME', 'RESERVED_PREFIX'],
        ['_table_suffix', 'RESERVED_PREFIX'],
        ['__ROOT__', 'RESERVED_PREFIX'],
        ['select', 'RESERVED_KEYWORD'],
        ['Window', 'RESERVED_KEYWORD'],
      ];
      const p = plan(fields(...hostile.map(([n]): [string, 'STRING'] => [n, 'STRING'])));
      assert.deepEqual(p.addColumns, []);
      assert.equal(p.ddl, null);
      assert.deepEqual(
        codes(p),
        [...hostile].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      );
      for (const r of p.rejected) {
        assert.ok(r.reason.length > 0 && r.reason.length < 300, r.reason);
        assert.equal(r.retryable, false);
      }
    });

    it('rejects contract and derived names in any case (a producer never writes a derived column)', () => {
      const p = plan(
        fields(
          ['ORIGIN', 'STRING'],
          ['Fare', 'FLOAT64'],
          ['fare_amount', 'INT64'],
          ['booking_status', 'STRING'],
        ),
      );
      assert.deepEqual(codes(p), [
        ['Fare', 'PROTECTED_NAME'],
        ['ORIGIN', 'PROTECTED_NAME'],
        ['booking_status', 'PROTECTED_NAME'],
        ['fare_amount', 'PROTECTED_NAME'],
      ]);
      assert.deepEqual(
        p.unchanged,
        [],
        'an existing derived column is not "compatible": it is protected',
      );
    });

    it('rejects names that differ only in case from a column, or from each other', () => {
      const current = silverWith({ name: 'promo', type: 'STRING', mode: 'NULLABLE' });
      const p = plan(
        fields(
          ['PROMO', 'STRING'],
          ['promo', 'STRING'],
          ['Seat', 'STRING'],
          ['seat', 'STRING'],
          ['meal', 'BOOL'],
        ),
        current,
      );
      assert.deepEqual(codes(p), [
        ['PROMO', 'CASE_COLLISION'],
        ['seat', 'CASE_VARIANT_LOST'], // without row support, name order decides: 'Seat' < 'seat'
      ]);
      assert.equal(p.rejected[0]?.retryable, false, 'a collision with a column is final');
      assert.deepEqual(p.unchanged, ['promo']);
      assert.deepEqual(
        p.addColumns.map((c) => c.name),
        ['Seat', 'meal'],
      );
    });

    it('keeps reasons short when a name comes in hundreds of case variants', () => {
      const variants = Array.from({ length: 512 }, (_, i) =>
        [...'abcdefghi'].map((c, bit) => ((i >> bit) & 1 ? c.toUpperCase() : c)).join(''),
      );
      const p = plan(fields(...variants.map((n): [string, 'STRING'] => [n, 'STRING'])));
      assert.equal(p.rejected.length, 511);
      assert.ok(p.rejected.every((r) => r.code === 'CASE_VARIANT_LOST' && r.reason.length < 300));
      assert.deepEqual(
        p.addColumns.map((c) => c.name),
        ['ABCDEFGHI'],
      );
    });

    it('turns a flood of 500 fields into at most the cap of columns and a rejection for every other one', () => {
      const flood = fields(
        ...Array.from({ length: 500 }, (_, i): [string, 'INT64'] => [
          `f${String(i).padStart(3, '0')}`,
          'INT64',
        ]),
      );
      const p = plan(flood);
      assert.equal(p.addColumns.length, GUARD.maxNewColumnsPerWindow);
      assert.equal(p.rejected.length, 500 - GUARD.maxNewColumnsPerWindow);
      assert.ok(p.rejected.every((r) => r.code === 'WINDOW_CAP' && r.retryable));
      const all = [...p.addColumns.map((c) => c.name), ...p.rejected.map((r) => r.field)].sort();
      assert.deepEqual(all, [...flood.keys()], 'every field is accounted for exactly once');
      assert.deepEqual(
        p.addColumns.map((c) => c.name),
        [...flood.keys()].slice(0, GUARD.maxNewColumnsPerWindow),
        'the cap takes names in a deterministic order',
      );
    });

    it('stops at the per-table cap, and never past BigQuery’s 10,000 columns', () => {
      const current = silverWith(
        ...Array.from({ length: 9_985 }, (_, i) => ({
          name: `c${i}`,
          type: 'STRING' as const,
          mode: 'NULLABLE' as const,
        })),
      ); // 12 + 9,985 = 9,997 columns
      const flood = fields(
        ...Array.from({ length: 20 }, (_, i): [string, 'BOOL'] => [`n${i + 10}`, 'BOOL']),
      );
      const p = plan(flood, current, {
        ...GUARD,
        maxColumnsPerTable: 50_000,
        maxNewColumnsPerWindow: 100,
      });
      assert.equal(p.addColumns.length, 3);
      assert.equal(p.rejected.length, 17);
      // Retryable: an operator may raise OFFVIA_SCHEMA_MAX_COLUMNS_PER_TABLE within the rows' budget.
      assert.ok(p.rejected.every((r) => r.code === 'TABLE_CAP' && r.retryable));

      const small = plan(fields(['a1', 'BOOL'], ['a2', 'BOOL']), SILVER, {
        ...GUARD,
        maxColumnsPerTable: 13,
      });
      assert.deepEqual(codes(small), [['a2', 'TABLE_CAP']]);
    });

    it('counts nested columns towards the table cap', () => {
      const current = silverWith({
        name: 'rec',
        type: 'RECORD',
        mode: 'NULLABLE',
        fields: [
          { name: 'x', type: 'STRING', mode: 'NULLABLE' },
          { name: 'y', type: 'STRING', mode: 'NULLABLE' },
        ],
      }); // 12 + 3
      const p = plan(fields(['a1', 'BOOL'], ['a2', 'BOOL']), current, {
        ...GUARD,
        maxColumnsPerTable: 16,
      });
      assert.deepEqual(codes(p), [['a2', 'TABLE_CAP']]);
    });
  });

  it('fails fast on an invalid guard or target (configuration, not data)', () => {
    assert.throws(
      () => plan(fields(), SILVER, { ...GUARD, maxNewColumnsPerWindow: -1 }),
      SchemaConfigError,
    );
    assert.throws(
      () => plan(fields(), SILVER, { ...GUARD, maxColumnsPerTable: 1.5 }),
      SchemaConfigError,
    );
    assert.throws(
      () => planSchemaChange(SILVER, fields(['x', 'BOOL']), GUARD, { ...TARGET, tableId: 'a`b' }),
      SchemaConfigError,
    );
  });

  describe('properties', () => {
    const currentArb = fc
      .subarray(['promo', 'seat', 'Meal_Pref', 'x1'])
      .chain((names) =>
        fc.tuple(
          ...names.map((name) =>
            fc.constantFrom('STRING', 'INT64', 'FLOAT64', 'JSON').map((type) => ({
              name,
              type,
              mode: 'NULLABLE' as const,
            })),
          ),
        ),
      )
      .map((extra) => silverWith(...extra));
    const guardArb = fc.record({
      protectedNames: fc.constant(GUARD.protectedNames),
      maxNewColumnsPerWindow: fc.integer({ min: 0, max: 5 }),
      maxColumnsPerTable: fc.integer({ min: 10, max: 25 }),
    });

    it('puts every proposed field in exactly one outcome, within the caps, all NULLABLE', () => {
      fc.assert(
        fc.property(proposedArb, currentArb, guardArb, (proposed, current, guard) => {
          const p = planSchemaChange(current, proposed, guard, TARGET);
          const outcomes = [
            ...p.addColumns.map((c) => c.name),
            ...p.unchanged,
            ...p.rejected.map((r) => r.field),
          ];
          assert.deepEqual(outcomes.sort(), [...proposed.keys()].sort());
          assert.ok(p.addColumns.length <= guard.maxNewColumnsPerWindow);
          assert.ok(
            current.fields.length + p.addColumns.length <=
              Math.max(guard.maxColumnsPerTable, current.fields.length),
          );
          assert.ok(p.addColumns.every((c) => c.mode === 'NULLABLE'));
          assert.equal(p.ddl === null, p.addColumns.length === 0);
          assert.equal(p.ddlPerColumn.length, p.addColumns.length);
        }),
      );
    });

    it('gives the same plan whatever order the proposals were merged in', () => {
      fc.assert(
        fc.property(proposedArb, proposedArb, currentArb, (a, b, current) => {
          assert.deepEqual(
            planSchemaChange(current, mergeFieldSets(a, b), GUARD, TARGET),
            planSchemaChange(current, mergeFieldSets(b, a), GUARD, TARGET),
          );
        }),
      );
    });

    it('gives at most one column per case-insensitive name, whatever the proposals', () => {
      fc.assert(
        fc.property(proposedArb, currentArb, (proposed, current) => {
          const p = planSchemaChange(current, proposed, GUARD, TARGET);
          const keys = [...current.fields, ...p.addColumns].map((c) => c.name.toLowerCase());
          assert.equal(new Set(keys).size, keys.length);
        }),
      );
    });
  });
});
