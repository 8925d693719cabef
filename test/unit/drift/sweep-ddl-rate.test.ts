// The schema sweep's DDL under BigQuery's table metadata update rate (5 per 10 s per table, 403 past it), with a
// stub admin that refuses past the limit and, like the local emulator, lists new columns only once its call
// finished (the catalog is patched after the DDL).
import assert from 'node:assert/strict';
import sinon from 'sinon';
import { tableName, type TableRef } from '../../../shared/config/env';
import type { SchemaDriftConfig } from '../../../shared/config/schema-drift-config';
import {
  DdlError,
  runSchemaSweep,
  type AddColumnsResult,
  type TableAdmin,
} from '../../../shared/drift';
import type { BqField, TableSchema } from '../../../shared/schema';
import {
  AFTER_W0,
  MIN,
  SILVER,
  SILVER_FIELDS,
  W0,
  bookingPayload,
} from '../../support/drift-fixtures';
import { driftRig } from '../../support/drift-rig';

/**
 * A TableAdmin that refuses a statement with 403 `rateLimitExceeded` when 5 statements already ran in the last
 * 10 s of `clock` (BigQuery's table-update rate), plus any statement `othersUse` says another writer's update
 * took the slot of. A refused statement adds nothing; the statements before it in the same call did add their
 * columns to storage, but the catalog (`getSchema`) lists them only when the whole call succeeded, as the local
 * emulator does until `BigQueryTableAdmin` patches the catalog at the end of `addColumns`.
 */
class RateLimitedAdmin implements TableAdmin {
  readonly catalog: BqField[] = [...SILVER_FIELDS];
  readonly storage = new Set(SILVER_FIELDS.map((f) => f.name));
  /** Every statement BigQuery received, with its time and whether it was refused. */
  readonly statements: { atMs: number; statement: string; refused: boolean }[] = [];
  othersUse: (n: number) => boolean = () => false;

  constructor(private readonly clock: () => number) {}

  getSchema(table: TableRef): Promise<TableSchema> {
    assert.equal(tableName(table), tableName(SILVER));
    return Promise.resolve({ fields: [...this.catalog] });
  }

  addColumns(
    _table: TableRef,
    columns: readonly BqField[],
    statements: readonly string[],
  ): Promise<AddColumnsResult> {
    for (const statement of statements) {
      const now = this.clock();
      const recent = this.statements.filter(
        (s) => !s.refused && s.atMs > now - 10_000 && s.atMs <= now,
      ).length;
      const refused = recent >= 5 || this.othersUse(this.statements.length + 1);
      this.statements.push({ atMs: now, statement, refused });
      if (refused) {
        return Promise.reject(
          new DdlError(
            `${statement}: Exceeded rate limits: too many table update operations for this table`,
            { rateLimited: true },
          ),
        );
      }
      for (const c of columns) if (statement.includes(`\`${c.name}\``)) this.storage.add(c.name);
    }
    for (const c of columns) {
      if (this.storage.has(c.name) && !this.catalog.some((f) => f.name === c.name)) {
        this.catalog.push(c);
      }
    }
    return Promise.resolve({ catalogPatched: [] });
  }

  /** How often a successful statement added each column (more than once: the DDL started over). */
  addedPerColumn(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const s of this.statements) {
      if (s.refused) continue;
      for (const m of s.statement.matchAll(/ADD COLUMN IF NOT EXISTS `([^`]+)`/g)) {
        const name = m[1] ?? '';
        counts.set(name, (counts.get(name) ?? 0) + 1);
      }
    }
    return counts;
  }
}

function setup(overrides: Partial<SchemaDriftConfig>) {
  const rig = driftRig({
    config: overrides,
    admin: (lease) => new RateLimitedAdmin(lease.now),
    startMs: W0,
    schemaTtlMs: 0,
    recordSleeps: true,
  });
  const { admin, writer, lines, slept, deps, store, clock, leaseClock } = rig;
  return {
    admin,
    writer,
    lines,
    slept,
    deps,
    store,
    /** One booking at W0 carrying `n` new fields `f01`…, so one window proposes `n` columns. */
    async holdFields(n: number) {
      const extra = Object.fromEntries(
        Array.from({ length: n }, (_, i) => [`f${String(i + 1).padStart(2, '0')}`, i]),
      );
      await rig.route(bookingPayload(1, extra), 'm-1', W0);
    },
    /** The next scheduled sweep: one minute later by both clocks. */
    async sweepAt(ms: number) {
      clock.set(ms);
      leaseClock.set(leaseClock.now() + MIN);
      return runSchemaSweep(deps);
    },
    waiting: () => rig.waiting().length,
  };
}

const FIELDS_12 = Array.from({ length: 12 }, (_, i) => `f${String(i + 1).padStart(2, '0')}`);

describe('runSchemaSweep under the table metadata update rate', () => {
  afterEach(() => sinon.restore());

  it('per_column: paces 12 ALTERs at 5 per 10 s, none refused, all land in one sweep', async () => {
    const s = setup({ ddlStyle: 'per_column', maxNewColumnsPerWindow: 12 });
    await s.holdFields(12);
    const result = await s.sweepAt(AFTER_W0);
    const [table] = result.tables;
    assert.equal(result.ok, true, table?.error ?? '');
    assert.deepEqual(table?.update?.columns, FIELDS_12);
    assert.equal(s.admin.statements.filter((x) => x.refused).length, 0, 'no 403');
    assert.equal(s.admin.statements.length, 12);
    // Never more than 5 in any 10 s window.
    for (const a of s.admin.statements) {
      const inWindow = s.admin.statements.filter(
        (b) => b.atMs >= a.atMs && b.atMs < a.atMs + 10_000,
      ).length;
      assert.ok(inWindow <= 5, `${inWindow} statements within 10 s of ${a.atMs}`);
    }
    assert.deepEqual(s.slept, [10_000, 10_000], 'two waits: after the 5th and the 10th statement');
    assert.equal(table?.rows.inserted, 1);
    assert.equal(s.waiting(), 0);
  });

  it('per_column: a 403 from another writer stops this sweep’s DDL; the next sweep resumes, never starts over', async () => {
    const s = setup({ ddlStyle: 'per_column', maxNewColumnsPerWindow: 12 });
    await s.holdFields(12);
    // Another writer takes the table's slot at every 4th statement we send.
    s.admin.othersUse = (n) => n % 4 === 0;
    let at = AFTER_W0;
    const results = [];
    for (let sweep = 1; sweep <= 6 && s.waiting() > 0; sweep++) {
      results.push(await s.sweepAt(at));
      at += MIN;
    }
    // Statements 4, 8 and 12 are refused: each sweep lands 3 columns and stops, so 4 sweeps for 12.
    assert.equal(results.length, 4, `all columns within 4 sweeps, took ${results.length}`);
    for (const r of results) {
      assert.equal(r.ok, true, `a rate limit is not a failure: ${r.tables[0]?.error ?? ''}`);
    }
    assert.equal(results[0]?.tables[0]?.notAppliedReason, 'update_rate');
    assert.deepEqual(
      results[0]?.tables[0]?.update?.columns,
      ['f01', 'f02', 'f03'],
      'what landed before the 403 is kept',
    );
    // Each column was added exactly once: nothing re-issued after it landed.
    assert.deepEqual(
      [...s.admin.addedPerColumn().values()],
      FIELDS_12.map(() => 1),
    );
    assert.deepEqual(
      s.admin.catalog.slice(SILVER_FIELDS.length).map((f) => f.name),
      FIELDS_12,
    );
    assert.equal(s.writer.rows(SILVER)[0]?.json.f12, 11);
    assert.ok(
      s.lines.some(
        (l) => l.message === 'schema update stopped at the table-update rate, the rest next sweep',
      ),
    );
  });

  it('per_column: stops pacing past the 30 s budget and goes on next sweep from the columns that exist', async () => {
    const s = setup({
      ddlStyle: 'per_column',
      maxNewColumnsPerWindow: 25,
      maxNewFieldsPerEvent: 25,
    });
    await s.holdFields(25);
    const first = await s.sweepAt(AFTER_W0);
    assert.equal(first.ok, true);
    assert.equal(first.tables[0]?.update?.columns.length, 20, '5 + 5 + 5 + 5 within 30 s');
    assert.equal(first.tables[0]?.notAppliedReason, 'update_rate');
    assert.equal(first.tables[0]?.notApplied.length, 5);
    const second = await s.sweepAt(AFTER_W0 + MIN);
    assert.equal(second.tables[0]?.update?.columns.length, 5);
    assert.equal(second.tables[0]?.rows.inserted, 1);
    assert.equal(s.admin.statements.length, 25, 'no statement sent twice');
  });

  it('single: a 403 defers the one statement to the next sweep, without failing the table', async () => {
    const s = setup({ ddlStyle: 'single' });
    await s.holdFields(3);
    s.admin.othersUse = (n) => n === 1;
    const first = await s.sweepAt(AFTER_W0);
    assert.equal(first.ok, true);
    assert.equal(first.tables[0]?.notAppliedReason, 'update_rate');
    assert.equal(first.tables[0]?.rows.waiting, 1);
    const second = await s.sweepAt(AFTER_W0 + MIN);
    assert.deepEqual(second.tables[0]?.update?.columns, ['f01', 'f02', 'f03']);
    assert.equal(second.tables[0]?.rows.inserted, 1);
  });
});
