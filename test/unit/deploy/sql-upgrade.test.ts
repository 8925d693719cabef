// sql/ on a project where the lab already ran: CREATE TABLE IF NOT EXISTS leaves the lab's tables as they are, so
// every column our CREATEs have beyond the lab's DDL needs its own ALTER TABLE … ADD COLUMN IF NOT EXISTS, after
// the CREATE and before any view reads the table. The lab's DDL is test/support/lab-ddl.sql.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  addedColumns,
  type AddedColumns,
  type CreatedTable,
  createdTables,
} from '../../support/ddl-columns';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SQL_DIR = path.join(ROOT, 'sql');

/** Position of a statement across sql/ in the order the deploy runs it: file index, then offset. */
type Position = readonly [number, number];
const before = (a: Position, b: Position): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

describe('sql/ on a project where the lab already ran', () => {
  const files = readdirSync(SQL_DIR)
    .filter((n) => n.endsWith('.sql'))
    .sort()
    .map((name) => ({ name, sql: readFileSync(path.join(SQL_DIR, name), 'utf8') }));
  const creates: (CreatedTable & { at: Position })[] = files.flatMap((f, i) =>
    createdTables(f.sql).map((t) => ({ ...t, at: [i, t.offset] as const })),
  );
  const adds: (AddedColumns & { at: Position; file: string })[] = files.flatMap((f, i) =>
    addedColumns(f.sql).map((a) => ({ ...a, at: [i, a.offset] as const, file: f.name })),
  );
  const lab = new Map(
    createdTables(readFileSync(path.join(ROOT, 'test', 'support', 'lab-ddl.sql'), 'utf8')).map(
      (t) => [t.table, t],
    ),
  );

  it("reads the lab's three tables and our CREATEs of them", () => {
    assert.deepEqual(
      [...lab.values()].map((t) => [t.table, t.columns.length]),
      [
        ['offvia_silver.fact_bookings', 11],
        ['offvia_quarantine.poisoned_events', 5],
        ['offvia_bronze.raw_bookings', 5],
      ],
    );
    for (const table of lab.keys()) {
      assert.ok(
        creates.some((c) => c.table === table),
        `sql/ does not create ${table}`,
      );
    }
  });

  it("adds every column beyond the lab's DDL, one per statement, with IF NOT EXISTS, after the CREATE", () => {
    let checked = 0;
    for (const create of creates) {
      const labTable = lab.get(create.table);
      if (labTable === undefined) continue; // a table only we create: the CREATE makes it whole
      const labColumns = new Set(labTable.columns.map((c) => c.name));
      for (const column of create.columns.filter((c) => !labColumns.has(c.name))) {
        const matching = adds.filter(
          (a) => a.table === create.table && a.columns.some((c) => c.name === column.name),
        );
        assert.equal(
          matching.length,
          1,
          `${create.table}.${column.name}: expected one ADD COLUMN, found ${matching.length}`,
        );
        const [add] = matching;
        assert.ok(add);
        assert.equal(add.columns.length, 1, `${add.file}: one column per ALTER statement`);
        assert.ok(add.ifNotExists, `${add.file}: ADD COLUMN IF NOT EXISTS ${column.name}`);
        assert.equal(add.columns[0]?.type, column.type, `${create.table}.${column.name} type`);
        assert.ok(
          !column.notNull,
          `${create.table}.${column.name} is NOT NULL: BigQuery cannot add it to an existing table`,
        );
        assert.ok(before(create.at, add.at), `${add.file}: ADD ${column.name} before the CREATE`);
        checked += 1;
      }
    }
    // Silver's event_id and contract_version, the five replay columns of quarantine, and reprocess_run_id on both
    // (offvia lineage).
    assert.equal(checked, 9);
  });

  it('adds no column the CREATE lacks, to a table sql/ creates', () => {
    for (const add of adds) {
      const create = creates.find((c) => c.table === add.table);
      assert.ok(create, `${add.file}: ALTER of ${add.table}, which sql/ does not create`);
      for (const column of add.columns) {
        assert.ok(
          create.columns.some((c) => c.name === column.name && c.type === column.type),
          `${add.file}: ${add.table}.${column.name} ${column.type} is not in its CREATE`,
        );
      }
    }
  });

  it('runs each ADD before any view that reads its table is created', () => {
    const views = files.flatMap((f, i) =>
      [...f.sql.matchAll(/CREATE\s+(?:OR\s+REPLACE\s+)?VIEW[\s\S]*?;/gi)].map((m) => ({
        text: m[0],
        at: [i, m.index] as const,
      })),
    );
    assert.ok(views.length > 0);
    for (const add of adds) {
      for (const view of views.filter((v) => v.text.includes(`.${add.table}\``))) {
        assert.ok(before(add.at, view.at), `${add.file}: ADD after a view on ${add.table}`);
      }
    }
  });

  it('the parser sees several columns in one ALTER (so the one-per-statement check can fail)', () => {
    const [add] = addedColumns(
      'ALTER TABLE `p.d.t` ADD COLUMN IF NOT EXISTS a STRING, ADD COLUMN IF NOT EXISTS b INT64;',
    );
    assert.deepEqual(
      add?.columns.map((c) => c.name),
      ['a', 'b'],
    );
  });
});
