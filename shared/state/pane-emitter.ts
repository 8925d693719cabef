// Writes committed panes from the outbox to the gold table (insertId per pane), routes refused rows to bad data,
// and deletes the outbox documents once the rows are durable.
import { tableName, type TableRef } from '../config/env';
import { TransientError, errorText } from '../errors';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import type { InsertRow, RowWriter } from '../sinks/row-writer';
import type { OutboxPane, WindowStore } from './window-store';

/** BigQuery's recommended maximum rows per insertAll request. */
const MAX_ROWS_PER_INSERT = 500;

/** What an emission did. */
export interface EmitResult {
  /** Panes now in the gold table. */
  readonly written: number;
  /** Panes BigQuery refused as data, now in the bad-data table. */
  readonly badData: number;
}

/** Wiring of a PaneEmitter. */
export interface PaneEmitterDeps {
  readonly pipeline: string;
  readonly writer: RowWriter;
  readonly goldTable: TableRef;
  readonly badDataTable: TableRef;
  /** Project for `target_dest` of bad-data rows when the table reference has none. */
  readonly projectId: string | undefined;
  readonly store: Pick<WindowStore<never>, 'deleteOutbox'>;
  readonly logger: Logger;
  /** Epoch ms. */
  readonly now: () => number;
}

/**
 * The last step of a firing. A pane is first committed to the outbox together with the state change that fired it,
 * then written here; a crash in between leaves it in the outbox for fireWindows. Re-writing a pane is harmless: the
 * insertId is the same (BigQuery's best-effort dedup) and the row identical (the latest-pane view dedups).
 */
export class PaneEmitter {
  constructor(private readonly deps: PaneEmitterDeps) {}

  /**
   * Writes `panes` to the gold table, refused rows to the bad-data table, then deletes their outbox documents.
   * @throws TransientError when BigQuery or the store fails, or a bad-data row is refused too (the panes stay in the
   * outbox and are retried)
   */
  async emit(panes: readonly OutboxPane[]): Promise<EmitResult> {
    let written = 0;
    let badData = 0;
    for (let i = 0; i < panes.length; i += MAX_ROWS_PER_INSERT) {
      const chunk = panes.slice(i, i + MAX_ROWS_PER_INSERT);
      const rows: InsertRow[] = chunk.map((p) => ({ insertId: p.insertId, json: { ...p.row } }));
      const results = await this.deps.writer.insertRows(this.deps.goldTable, rows);
      const refused = chunk.flatMap((pane, j) => {
        const result = results[j];
        return result !== undefined && !result.ok ? [{ pane, error: result.error }] : [];
      });
      if (refused.length > 0) await this.writeBadData(refused);
      badData += refused.length;
      written += chunk.length - refused.length;
      await this.deps.store.deleteOutbox(chunk.map((p) => p.insertId));
      const table = tableName(this.deps.goldTable);
      for (const pane of chunk) {
        if (refused.some((r) => r.pane === pane)) continue;
        logs.paneEmitted(
          this.deps.logger,
          {
            pane_timing: pane.timing,
            pane_index: pane.index,
            pane_is_last: pane.isLast,
            insert_id: pane.insertId,
            table,
          },
          {
            pipeline: this.deps.pipeline,
            key: pane.key,
            windowStartMs: pane.window.startMs,
            windowEndMs: pane.window.endMs,
          },
        );
      }
    }
    return { written, badData };
  }

  /**
   * `emit` right after the firing's commit: a TransientError is logged and the panes stay in the outbox for the next
   * fireWindows run (the state change is committed; redelivering the triggering message would not re-emit them).
   * @throws any non-transient error (a bug)
   */
  async emitOrDefer(panes: readonly OutboxPane[]): Promise<EmitResult | 'deferred'> {
    if (panes.length === 0) return { written: 0, badData: 0 };
    try {
      return await this.emit(panes);
    } catch (err) {
      if (!(err instanceof TransientError)) throw err;
      logs.paneEmissionDeferred(this.deps.logger, {
        pipeline: this.deps.pipeline,
        insert_ids: panes.slice(0, 20).map((p) => p.insertId),
        pane_count: panes.length,
        error: errorText(err),
      });
      return 'deferred';
    }
  }

  private async writeBadData(
    refused: readonly { pane: OutboxPane; error: string }[],
  ): Promise<void> {
    const targetDest = tableName(this.deps.goldTable, this.deps.projectId);
    const insertTime = new Date(this.deps.now()).toISOString();
    const rows: InsertRow[] = refused.map(({ pane, error }) => ({
      insertId: `bad:${pane.insertId}`,
      json: {
        bad_data: JSON.stringify(pane.row),
        target_dest: targetDest,
        error,
        insert_time: insertTime,
        processed_timestamp: new Date(pane.createdAtMs).toISOString(),
        retry_count: 0,
        source_message_id: null,
        insert_id: pane.insertId,
      },
    }));
    const results = await this.deps.writer.insertRows(this.deps.badDataTable, rows);
    const failed = results.find((r) => !r.ok);
    if (failed !== undefined && !failed.ok) {
      throw new TransientError(
        `insertAll ${tableName(this.deps.badDataTable)}`,
        `bad-data row for a refused pane refused too: ${failed.error}`,
      );
    }
    // Logged once the rows are in bad data: each line is one bad-data row for the bad-data-rows metric, and a
    // failed insert above is retried (the pane stays in the outbox) rather than announced as routed.
    for (const { pane, error } of refused) {
      logs.paneRowRefused(this.deps.logger, {
        pipeline: this.deps.pipeline,
        insert_id: pane.insertId,
        table: targetDest,
        error,
      });
    }
  }
}
