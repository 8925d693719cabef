// Coalesces concurrent BigQuery writes inside one instance: rows bound for the same table, from many invocations,
// go out as one insertAll call; each caller still gets exactly its own rows' results, or the batch's failure.
import type { TableRef } from '../config/env';
import type { InsertRow, RowResult, RowWriter } from './row-writer';

/** Limits of one coalesced insertAll call. */
export interface CoalescingOptions {
  /**
   * Most rows per call, 1..500. BigQuery recommends at most 500 rows per insertAll request (streaming quotas,
   * "Streaming inserts": maximum rows per request 50,000, recommended 500).
   */
  readonly maxRows: number;
  /**
   * Most request bytes per call (the rows' JSON, UTF-8, plus insertIds), 1 KiB..9 MiB. BigQuery caps an insertAll
   * HTTP request at 10 MB; 9 MiB leaves room for the envelope. A single caller whose rows alone exceed it is sent
   * on its own, unbatched.
   */
  readonly maxBytes: number;
  /**
   * How long the first row of a batch waits for company, ms (0..1000). A full batch goes at once. This is added to
   * the latency of a lone event, so it stays a few milliseconds.
   */
  readonly lingerMs: number;
}

/** Defaults: 500 rows, 5 MiB, 5 ms. */
export const DEFAULT_COALESCING: CoalescingOptions = {
  maxRows: 500,
  maxBytes: 5 * 1024 * 1024,
  lingerMs: 5,
};

/** One caller's rows waiting in a batch. */
interface Pending {
  readonly rows: readonly InsertRow[];
  readonly bytes: number;
  readonly resolve: (results: RowResult[]) => void;
  readonly reject: (error: unknown) => void;
}

interface Batch {
  readonly table: TableRef;
  readonly callers: Pending[];
  rows: number;
  bytes: number;
  timer: NodeJS.Timeout | undefined;
}

/** Approximate request bytes of rows: their JSON and insertIds in UTF-8, plus per-row envelope. */
export function requestBytes(rows: readonly InsertRow[]): number {
  let bytes = 0;
  for (const row of rows) {
    bytes += Buffer.byteLength(JSON.stringify(row.json), 'utf8');
    bytes += Buffer.byteLength(row.insertId, 'utf8') + 32;
  }
  return bytes;
}

function tableKey(table: TableRef): string {
  return `${table.projectId ?? ''}:${table.datasetId}.${table.tableId}`;
}

/**
 * A RowWriter that gathers the rows of concurrent `insertRows` calls for the same table into one call of the
 * wrapped writer, bounded by `maxRows`, `maxBytes` and `lingerMs`. A caller's rows are never split across calls.
 *
 * Per-row results are handed back to the caller that sent the row, in its order. When the wrapped call throws
 * (a TransientError: the request failed, or some row was not written for a non-data reason), every caller of that
 * batch gets the error: none of them may ack, since BigQuery's response does not prove its rows were written.
 * Their redeliveries carry the same insertIds, so rows that did land are deduplicated (best effort, then the
 * `event_id` dedup view), as for any redelivery.
 */
export class CoalescingRowWriter implements RowWriter {
  private readonly open = new Map<string, Batch>();

  /**
   * @param inner the writer doing the actual insertAll calls
   * @throws RangeError when an option is out of range
   */
  constructor(
    private readonly inner: RowWriter,
    private readonly options: CoalescingOptions = DEFAULT_COALESCING,
  ) {
    const { maxRows, maxBytes, lingerMs } = options;
    if (!Number.isSafeInteger(maxRows) || maxRows < 1 || maxRows > 500) {
      throw new RangeError(`maxRows must be an integer in [1, 500], got ${maxRows}`);
    }
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1024 || maxBytes > 9 * 1024 * 1024) {
      throw new RangeError(`maxBytes must be an integer in [1024, 9437184], got ${maxBytes}`);
    }
    if (!Number.isFinite(lingerMs) || lingerMs < 0 || lingerMs > 1000) {
      throw new RangeError(`lingerMs must be in [0, 1000], got ${lingerMs}`);
    }
  }

  /**
   * Queues `rows` for `table`; resolves with one result per row, in order, once the batch holding them was written.
   * @throws whatever the wrapped writer threw for that batch (TransientError: do not ack)
   */
  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    if (rows.length === 0) return Promise.resolve([]);
    const bytes = requestBytes(rows);
    const { maxRows, maxBytes } = this.options;
    if (rows.length > maxRows || bytes > maxBytes) {
      // Too big to share a call: it goes alone, as without coalescing.
      return this.inner.insertRows(table, rows);
    }
    return new Promise<RowResult[]>((resolve, reject) => {
      const key = tableKey(table);
      let batch = this.open.get(key);
      if (
        batch !== undefined &&
        (batch.rows + rows.length > maxRows || batch.bytes + bytes > maxBytes)
      ) {
        this.flush(key, batch);
        batch = undefined;
      }
      if (batch === undefined) {
        batch = { table, callers: [], rows: 0, bytes: 0, timer: undefined };
        this.open.set(key, batch);
        const opened = batch;
        batch.timer = setTimeout(() => this.flush(key, opened), this.options.lingerMs);
      }
      batch.callers.push({ rows, bytes, resolve, reject });
      batch.rows += rows.length;
      batch.bytes += bytes;
      if (batch.rows >= maxRows) this.flush(key, batch);
    });
  }

  /** Rows waiting for their batch to be sent (tests, metrics). */
  get waitingRows(): number {
    let n = 0;
    for (const batch of this.open.values()) n += batch.rows;
    return n;
  }

  /** Sends `batch` now (once): closes it to new rows and settles every caller. */
  private flush(key: string, batch: Batch): void {
    if (this.open.get(key) !== batch) return;
    this.open.delete(key);
    if (batch.timer !== undefined) clearTimeout(batch.timer);
    void this.send(batch);
  }

  /** Never rejects: the outcome, success or failure, goes to each caller of the batch. */
  private async send(batch: Batch): Promise<void> {
    const rows = batch.callers.flatMap((c) => c.rows);
    let results: RowResult[];
    try {
      results = await this.inner.insertRows(batch.table, rows);
      if (results.length !== rows.length) {
        throw new Error(
          `insertAll into ${batch.table.datasetId}.${batch.table.tableId}: ${rows.length} rows sent, ` +
            `${results.length} results`,
        );
      }
    } catch (err) {
      for (const caller of batch.callers) caller.reject(err);
      return;
    }
    let at = 0;
    for (const caller of batch.callers) {
      caller.resolve(results.slice(at, at + caller.rows.length));
      at += caller.rows.length;
    }
  }
}
