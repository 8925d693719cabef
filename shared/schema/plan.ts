// Plans one window's schema change for a table: which proposed columns to add, and why each other is refused.
import {
  checkColumnName,
  columnNameKey,
  describeName,
  MAX_COLUMNS_PER_TABLE,
  type NameRejectionCode,
} from './column-names';
import { addColumnDdlStatements, addColumnsDdl, isAddableType } from './ddl';
import { isPermanentSchemaError } from './permanence';
import { proposalTypes, type FieldProposal, type ProposedFields } from './proposals';
import { canWidenColumn } from './row';
import { compareSupport, totalSupport, type FieldSupport, type ProposalSupport } from './support';
import { isAssignable, widensTo } from './type-lattice';
import {
  BQ_TYPES,
  SchemaConfigError,
  type BqField,
  type BqType,
  type TableSchema,
  type TargetTableRef,
} from './types';

/** The guard rails of a schema change (design.md). */
export interface GuardConfig {
  /** Names no drift field may take, case-insensitive: the contract's fields and Silver's derived columns. */
  readonly protectedNames: readonly string[];
  /** Most columns one window's change may add to one table; an integer ≥ 0. */
  readonly maxNewColumnsPerWindow: number;
  /**
   * Most columns the table may have after the change, nested columns counted; an integer ≥ 0, clamped to
   * BigQuery's 10,000 (`MAX_COLUMNS_PER_TABLE`).
   */
  readonly maxColumnsPerTable: number;
}

/** Why a proposed field gets no column. */
export type RejectionCode =
  | NameRejectionCode
  | 'PROTECTED_NAME'
  | 'CASE_COLLISION'
  | 'CASE_VARIANT_LOST'
  | 'INCOMPATIBLE_WITH_COLUMN'
  | 'NEEDS_COLUMN_WIDENING'
  | 'UNSUPPORTED_TYPE'
  | 'WINDOW_CAP'
  | 'TABLE_CAP';

/** A proposed field that gets no column, with the reason. Every refused field has one; none is dropped. */
export interface RejectedField {
  /** The field name, exactly as proposed. */
  readonly field: string;
  readonly code: RejectionCode;
  /** Human-readable cause, for the error column of the rows that need the field. */
  readonly reason: string;
  /** `!isPermanentSchemaError(code)`: the rows needing the field may wait within their retry budget. */
  readonly retryable: boolean;
}

/** A contest the plan decided: case variants of one new name, or the conflicting types of one new field. */
export interface ResolvedConflict {
  /** `case`: names equal ignoring case; `type`: value types with no common BigQuery type. */
  readonly kind: 'case' | 'type';
  /** The field whose column it is about (the winning name for `case`). */
  readonly field: string;
  /** The winner: a field name (`case`) or a type (`type`). */
  readonly winner: string;
  /** Every contender in winning order, with its support (rows 0 when no waiting row was counted). */
  readonly contenders: readonly { readonly value: string; readonly support: FieldSupport }[];
}

/** One window's change for one table. */
export interface SchemaChangePlan {
  /** Columns to add: `NULLABLE`, sorted by name, at most the caps allow. */
  readonly addColumns: readonly BqField[];
  /** Proposed fields that already are columns of a compatible type: nothing to do. */
  readonly unchanged: readonly string[];
  /** Every other proposed field, sorted by name, with its reason. */
  readonly rejected: readonly RejectedField[];
  /** Case and type contests decided by support, for the audit record and the logs; sorted by field. */
  readonly resolved: readonly ResolvedConflict[];
  /** The single `ALTER TABLE … ADD COLUMN IF NOT EXISTS …` statement (BigQuery), or `null` when nothing is added. */
  readonly ddl: string | null;
  /** The same change as one statement per column (`addColumnDdlStatements`); empty when nothing is added. */
  readonly ddlPerColumn: readonly string[];
}

function requireCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new SchemaConfigError(`${name} must be an integer >= 0, got ${value}`);
  }
}

/** Number of columns of a schema, nested `RECORD` columns counted, as BigQuery's column limit counts them. */
export function countColumns(fields: readonly BqField[]): number {
  return fields.reduce((n, f) => n + 1 + (f.fields === undefined ? 0 : countColumns(f.fields)), 0);
}

/**
 * Plans the change for one (target table, schema window): only new `NULLABLE` columns, as BigQuery allows on an
 * existing table (https://cloud.google.com/bigquery/docs/managing-table-schemas#add_an_empty_column). Each
 * proposed field, in name order, ends in exactly one of `addColumns`, `unchanged`, `rejected`:
 * 1. Name rules (`checkColumnName`): empty, too long, illegal characters, reserved prefix, reserved keyword.
 * 2. `PROTECTED_NAME`: equal, ignoring case, to a `guard.protectedNames` entry.
 * 3. An existing column of exactly that name: `unchanged` if every proposed type is assignable to it
 *    (`isAssignable`), else `NEEDS_COLUMN_WIDENING` when BigQuery could widen the column to every refused type
 *    (`canWidenColumn`), or `INCOMPATIBLE_WITH_COLUMN`. Existing columns are never altered.
 * 4. `CASE_COLLISION` when an existing column differs only in case. New names that differ only in case from each
 *    other are a contest: the name with the most supporting rows (`support`), then the earliest first seen, then
 *    code-unit order wins; the others are `CASE_VARIANT_LOST` (retryable).
 * 5. A merged type conflict is a contest too: the type with the most rows (a row counts for the conflicting type
 *    its value widens to), then the earliest first seen, then `BQ_TYPES` order, becomes the column's type. A
 *    type ADD COLUMN cannot create is `UNSUPPORTED_TYPE`.
 * 6. Caps, in name order: the first `min(room, guard.maxNewColumnsPerWindow)` candidates get columns, where
 *    room is `guard.maxColumnsPerTable` (at most BigQuery's 10,000) minus the table's columns. The rest are
 *    `TABLE_CAP` when the table's room binds, else `WINDOW_CAP` (retryable).
 * Deterministic: the same inputs give the same plan, whatever order the proposals were merged in.
 * @param current the table's schema now (see `tableSchemaFromApi`).
 * @param proposed the window's merged proposals (`mergeFieldSets`).
 * @param guard the guard rails.
 * @param target the table, for the DDL; from configuration only.
 * @param support rows behind each (field, type) (`supportOf` over the waiting rows); without it every contest is
 *   decided by name or type order alone.
 * @throws SchemaConfigError for an invalid guard or target (configuration errors, never data errors).
 */
export function planSchemaChange(
  current: TableSchema,
  proposed: ProposedFields,
  guard: GuardConfig,
  target: TargetTableRef,
  support: ProposalSupport = new Map(),
): SchemaChangePlan {
  requireCount('maxNewColumnsPerWindow', guard.maxNewColumnsPerWindow);
  requireCount('maxColumnsPerTable', guard.maxColumnsPerTable);

  const rejected: RejectedField[] = [];
  const unchanged: string[] = [];
  const reject = (field: string, code: RejectionCode, reason: string): void => {
    rejected.push({ field, code, reason, retryable: !isPermanentSchemaError(code) });
  };
  const resolved: ResolvedConflict[] = [];

  const protectedKeys = new Set(guard.protectedNames.map(columnNameKey));
  const exact = new Map(current.fields.map((f) => [f.name, f]));
  const byKey = new Map(current.fields.map((f) => [columnNameKey(f.name), f]));
  const entries = [...proposed].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));

  // Steps 1–3; what is left is a candidate for a new column.
  const candidates: [string, FieldProposal][] = [];
  for (const [name, proposal] of entries) {
    const check = checkColumnName(name);
    const column = exact.get(name);
    if (!check.ok) {
      reject(name, check.code, check.reason);
    } else if (protectedKeys.has(columnNameKey(name))) {
      reject(
        name,
        'PROTECTED_NAME',
        `field ${describeName(name)} matches a contract or derived column name (case-insensitive)`,
      );
    } else if (column !== undefined) {
      const refused = proposalTypes(proposal).filter((t) => !isAssignable(t, column));
      if (refused.length === 0) unchanged.push(name);
      else {
        const widenable = refused.every((t) => canWidenColumn(column, t));
        reject(
          name,
          widenable ? 'NEEDS_COLUMN_WIDENING' : 'INCOMPATIBLE_WITH_COLUMN',
          `field ${describeName(name)} has ${refused.join(', ')} values; column ${describeName(column.name)} ` +
            `is ${column.mode} ${column.type} and existing columns are never altered` +
            (widenable ? ' (an operator may widen it)' : ''),
        );
      }
    } else {
      candidates.push([name, proposal]);
    }
  }

  // Step 4: case collisions with existing columns; contests among new names.
  const candidatesByKey = new Map<string, string[]>();
  for (const [name] of candidates) {
    const key = columnNameKey(name);
    const group = candidatesByKey.get(key);
    if (group === undefined) candidatesByKey.set(key, [name]);
    else group.push(name);
  }
  const caseWinners = new Map<string, string>();
  for (const [key, group] of candidatesByKey) {
    if (group.length < 2 || byKey.has(key)) continue;
    const ranked = group
      .map((value) => ({ value, support: totalSupport(support.get(value)) }))
      .sort((a, b) => compareSupport(a.support, b.support, a.value < b.value ? -1 : 1));
    const winner = ranked[0]?.value ?? '';
    caseWinners.set(key, winner);
    resolved.push({ kind: 'case', field: winner, winner, contenders: ranked });
  }
  const newColumns: BqField[] = [];
  for (const [name, proposal] of candidates) {
    const key = columnNameKey(name);
    const existing = byKey.get(key);
    const winner = caseWinners.get(key);
    if (existing !== undefined) {
      reject(
        name,
        'CASE_COLLISION',
        `field ${describeName(name)} differs only in case from column ${describeName(existing.name)}`,
      );
      continue;
    }
    if (winner !== undefined && winner !== name) {
      const mine = totalSupport(support.get(name));
      const theirs = totalSupport(support.get(winner));
      reject(
        name,
        'CASE_VARIANT_LOST',
        `field ${describeName(name)} differs only in case from proposed field ${describeName(winner)}, ` +
          `which wins (${theirs.rows} vs ${mine.rows} waiting rows, then earliest first seen, then name ` +
          'order); once it is a column this field collides with it',
      );
      continue;
    }
    // Step 5: a type contest, then the type must be one ADD COLUMN can create.
    let type: BqType;
    if (proposal.ok) type = proposal.type;
    else {
      const bySupport = support.get(name);
      const ranked = proposal.types
        .map((t) => ({ value: t, support: totalSupport(bySupport, (seen) => widensTo(seen, t)) }))
        .sort((a, b) =>
          compareSupport(
            a.support,
            b.support,
            BQ_TYPES.indexOf(a.value) - BQ_TYPES.indexOf(b.value),
          ),
        );
      type = ranked[0]?.value ?? 'STRING';
      resolved.push({ kind: 'type', field: name, winner: type, contenders: ranked });
    }
    if (!isAddableType(type)) {
      reject(name, 'UNSUPPORTED_TYPE', `field ${describeName(name)}: cannot add a ${type} column`);
    } else {
      newColumns.push({ name, type, mode: 'NULLABLE' });
    }
  }

  // Step 6: caps, in name order.
  const tableCap = Math.min(guard.maxColumnsPerTable, MAX_COLUMNS_PER_TABLE);
  const columnCount = countColumns(current.fields);
  const tableRoom = Math.max(0, tableCap - columnCount);
  // The cap that binds first names the rejection: the table's room, or the window's allowance.
  const tableBinds = tableRoom < guard.maxNewColumnsPerWindow;
  const limit = tableBinds ? tableRoom : guard.maxNewColumnsPerWindow;
  const addColumns = newColumns.slice(0, limit);
  for (const { name } of newColumns.slice(limit)) {
    reject(
      name,
      tableBinds ? 'TABLE_CAP' : 'WINDOW_CAP',
      tableBinds
        ? `table has ${columnCount} columns and its cap is ${tableCap}; field ${describeName(name)} gets none`
        : `this window already adds ${guard.maxNewColumnsPerWindow} columns (the per-window cap); ` +
            `field ${describeName(name)} may get one in a later window`,
    );
  }

  rejected.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  resolved.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  return {
    addColumns,
    unchanged,
    rejected,
    resolved,
    ddl: addColumns.length === 0 ? null : addColumnsDdl(target, addColumns),
    ddlPerColumn: addColumns.length === 0 ? [] : addColumnDdlStatements(target, addColumns),
  };
}
