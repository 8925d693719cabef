// A RowWriter for `offvia replay` that does not write a quarantine or bad-data row the table already holds for the
// same message: an exact insertId dedup for replayed messages, where BigQuery's own is best effort for about a minute.
import type { TableRef } from '../config/env';
import {
  PartialInsertError,
  type InsertRow,
  type RowOutcome,
  type RowResult,
  type RowWriter,
} from '../sinks/row-writer';

/**
 * What the tables already hold for the messages being replayed (loaded per chunk before it runs):
 * quarantine message id → the stages it has rows at; bad data's `insert_id`s.
 */
export interface KnownRows {
  quarantine: Map<string, Set<string>>;
  badData: Set<string>;
  /** Bad data's `insert_id`s per `source_message_id` (rows to resolve when the message now lands elsewhere). */
  badDataByMessage: Map<string, string[]>;
  /** Rows not written because they were known, per layer (`quarantine`, `bad_data`); the chunk's summary. */
  skipped: Record<string, number>;
}

/** An empty registry. */
export function emptyKnownRows(): KnownRows {
  return { quarantine: new Map(), badData: new Set(), badDataByMessage: new Map(), skipped: {} };
}

function sameTable(a: TableRef, b: TableRef): boolean {
  return (
    a.datasetId === b.datasetId &&
    a.tableId === b.tableId &&
    (a.projectId ?? '') === (b.projectId ?? '')
  );
}

/**
 * Skips (answers `ok` without writing) a quarantine row whose message already has one at the same stage, and a
 * bad-data row whose `insert_id` is already there; everything else goes to `inner`. So the quarantine open view keeps
 * a replayed message's verdict unless it is now rejected at another stage. `known` is replaced per chunk.
 */
export class KnownRowsWriter implements RowWriter {
  known: KnownRows = emptyKnownRows();

  constructor(
    private readonly inner: RowWriter,
    private readonly quarantineTable: TableRef,
    private readonly badDataTable: TableRef,
    /** The quarantine table's stage and message-id columns (the definition's `operatorColumns.quarantine`). */
    private readonly quarantineColumns: { readonly stage: string; readonly messageId: string } = {
      stage: 'error_stage',
      messageId: 'source_message_id',
    },
  ) {}

  private isKnown(table: TableRef, row: InsertRow): string | undefined {
    if (sameTable(table, this.quarantineTable)) {
      const stage = row.json[this.quarantineColumns.stage];
      const id = row.json[this.quarantineColumns.messageId];
      if (typeof id === 'string' && typeof stage === 'string') {
        if (this.known.quarantine.get(id)?.has(stage) === true) return 'quarantine';
      }
    } else if (sameTable(table, this.badDataTable)) {
      const insertId = row.json.insert_id;
      if (typeof insertId === 'string' && this.known.badData.has(insertId)) return 'bad_data';
    }
    return undefined;
  }

  /**
   * @throws what `inner` throws; a `PartialInsertError` is re-thrown with one outcome per row given here (the
   *   skipped ones `ok`), as the port promises.
   */
  async insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    const layers = rows.map((r) => this.isKnown(table, r));
    const toWrite = rows.filter((_, i) => layers[i] === undefined);
    const merge = <T extends RowOutcome>(written: readonly T[]): (T | RowResult)[] => {
      let next = 0;
      return layers.map((l) =>
        l === undefined ? (written[next++] ?? { ok: true }) : { ok: true },
      );
    };
    let written: RowResult[] = [];
    if (toWrite.length > 0) {
      try {
        written = await this.inner.insertRows(table, toWrite);
      } catch (err) {
        if (!(err instanceof PartialInsertError)) throw err;
        const prefix = `${err.operation}: `;
        const text = err.message.startsWith(prefix)
          ? err.message.slice(prefix.length)
          : err.message;
        throw new PartialInsertError(err.operation, text, merge(err.outcomes), { cause: err });
      }
    }
    for (const layer of layers) {
      if (layer !== undefined) this.known.skipped[layer] = (this.known.skipped[layer] ?? 0) + 1;
    }
    return merge(written);
  }
}
