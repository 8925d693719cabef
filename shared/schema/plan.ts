// Plans one window's schema change for a table: which proposed columns to add, and why each other is refused.
import {
  checkColumnName,
  columnNameKey,
  describeName,
  MAX_COLUMNS_PER_TABLE,
  type NameRejectionCode,
} from './column-names';
import { addColumnDdlStatements, addColumnsDdl, isAddableType } from './ddl';
import { proposalTypes, type FieldProposal, type ProposedFields } from './proposals';
import { isAssignable } from './type-lattice';
import { SchemaConfigError, type BqField, type TableSchema, type TargetTableRef } from './types';

/** The guard rails of a schema change (issue 5, "Guard rails"; design.md). */
export interface GuardConfig {
  /**
   * Names no drift field may take, compared case-insensitively: the contract's input fields and Silver's
   * derived columns (e.g. `origin`, `fare`, `origin_airport`, `fare_amount`, `ingestion_timestamp`,
   * `source_message_id`, `event_id`). Without them a producer could write a derived column.
   */
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
  | 'INCOMPATIBLE_WITH_COLUMN'
  | 'TYPE_CONFLICT'
  | 'UNSUPPORTED_TYPE'
  | 'WINDOW_CAP'
  | 'TABLE_CAP';

/** A proposed field that gets no column, with the reason. Every refused field has one; none is dropped. */
export interface RejectedField {
  /** The field name, exactly as proposed. */
  readonly field: string;
  /** Machine-readable cause. */
  readonly code: RejectionCode;
  /** Human-readable cause, for the error column of the rows that need the field. */
  readonly reason: string;
  /**
   * Whether a later window may accept the field without anyone changing configuration or the table
   * (only `WINDOW_CAP`). The rows still wait within their retry budget either way.
   */
  readonly retryable: boolean;
}

/** One window's change for one table. */
export interface SchemaChangePlan {
  /** Columns to add: `NULLABLE`, sorted by name, at most the caps allow. */
  readonly addColumns: readonly BqField[];
  /** Proposed fields that already are columns of a compatible type: nothing to do. */
  readonly unchanged: readonly string[];
  /** Every other proposed field, sorted by name, with its reason. */
  readonly rejected: readonly RejectedField[];
  /** The single `ALTER TABLE … ADD COLUMN IF NOT EXISTS …` statement (BigQuery), or `null` when nothing is added. */
  readonly ddl: string | null;
  /**
   * The same change as one statement per column, for the local emulator, which takes one ALTER command per
   * statement (see `addColumnDdlStatements`); empty when nothing is added.
   */
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
 *    (`isAssignable`: same type, a numeric widening such as INT64 into FLOAT64, or a JSON column), else
 *    `INCOMPATIBLE_WITH_COLUMN`. Existing columns are never altered: widening one (ALTER COLUMN SET DATA TYPE)
 *    is an operator's decision.
 * 4. `CASE_COLLISION`: an existing column differs only in case, or another new proposed field does (then all of
 *    them are refused, so the outcome does not depend on which event came first).
 * 5. `TYPE_CONFLICT` (the merged proposal is a conflict) or `UNSUPPORTED_TYPE` (a type ADD COLUMN cannot create).
 * 6. Caps, in name order: the first `min(room, guard.maxNewColumnsPerWindow)` candidates get columns, where
 *    room is `guard.maxColumnsPerTable` (at most BigQuery's 10,000) minus the table's columns. The rest are
 *    `TABLE_CAP` when the table's room is what binds, else `WINDOW_CAP` (retryable: a later window may add
 *    them). A flood of fields yields at most the cap of columns and a rejection for every other field.
 * Deterministic: the same inputs give the same plan, whatever order the proposals were merged in.
 * @param current the table's schema now (see `tableSchemaFromApi`).
 * @param proposed the window's merged proposals (`mergeFieldSets`).
 * @param guard the guard rails.
 * @param target the table, for the DDL; from configuration only.
 * @throws SchemaConfigError for an invalid guard or target (configuration errors, never data errors).
 */
export function planSchemaChange(
  current: TableSchema,
  proposed: ProposedFields,
  guard: GuardConfig,
  target: TargetTableRef,
): SchemaChangePlan {
  requireCount('maxNewColumnsPerWindow', guard.maxNewColumnsPerWindow);
  requireCount('maxColumnsPerTable', guard.maxColumnsPerTable);

  const rejected: RejectedField[] = [];
  const unchanged: string[] = [];
  const reject = (field: string, code: RejectionCode, reason: string): void => {
    rejected.push({ field, code, reason, retryable: code === 'WINDOW_CAP' });
  };

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
        reject(
          name,
          'INCOMPATIBLE_WITH_COLUMN',
          `field ${describeName(name)} has ${refused.join(', ')} values; column ${describeName(column.name)} ` +
            `is ${column.mode} ${column.type} and existing columns are never altered`,
        );
      }
    } else {
      candidates.push([name, proposal]);
    }
  }

  // Step 4: case collisions, with existing columns and among new names.
  const candidatesByKey = new Map<string, string[]>();
  for (const [name] of candidates) {
    const key = columnNameKey(name);
    const group = candidatesByKey.get(key);
    if (group === undefined) candidatesByKey.set(key, [name]);
    else group.push(name);
  }
  const newColumns: BqField[] = [];
  for (const [name, proposal] of candidates) {
    const key = columnNameKey(name);
    const existing = byKey.get(key);
    const siblings = (candidatesByKey.get(key) ?? []).filter((n) => n !== name);
    if (existing !== undefined) {
      reject(
        name,
        'CASE_COLLISION',
        `field ${describeName(name)} differs only in case from column ${describeName(existing.name)}`,
      );
    } else if (siblings.length > 0) {
      reject(
        name,
        'CASE_COLLISION',
        `field ${describeName(name)} differs only in case from proposed field(s) ` +
          siblings.slice(0, 3).map(describeName).join(', ') +
          (siblings.length > 3 ? ` and ${siblings.length - 3} more` : ''),
      );
    } else if (!proposal.ok) {
      // Step 5.
      reject(name, 'TYPE_CONFLICT', `field ${describeName(name)}: ${proposal.message}`);
    } else if (!isAddableType(proposal.type)) {
      reject(
        name,
        'UNSUPPORTED_TYPE',
        `field ${describeName(name)}: cannot add a ${proposal.type} column`,
      );
    } else {
      newColumns.push({ name, type: proposal.type, mode: 'NULLABLE' });
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
  for (const column of newColumns.slice(limit)) {
    if (tableBinds) {
      reject(
        column.name,
        'TABLE_CAP',
        `table has ${columnCount} columns and its cap is ${tableCap}; field ${describeName(column.name)} gets none`,
      );
    } else {
      reject(
        column.name,
        'WINDOW_CAP',
        `this window already adds ${guard.maxNewColumnsPerWindow} columns (the per-window cap); ` +
          `field ${describeName(column.name)} may get one in a later window`,
      );
    }
  }

  rejected.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  return {
    addColumns,
    unchanged,
    rejected,
    ddl: addColumns.length === 0 ? null : addColumnsDdl(target, addColumns),
    ddlPerColumn: addColumns.length === 0 ? [] : addColumnDdlStatements(target, addColumns),
  };
}
