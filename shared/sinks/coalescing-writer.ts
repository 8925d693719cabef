// Coalesces one instance's concurrent BigQuery writes per table into one insertAll call (group commit).
import type { TableRef } from '../config/env';
import { type InsertRow, type RowResult, type RowWriter, withInsertIds } from './row-writer';

/** Limits of one coalesced insertAll call, and how many such calls per table may be in flight. */
export interface CoalescingOptions {
  /** Most rows per call, 1..500 (BigQuery's recommended maximum per insertAll request). */
  readonly maxRows: number;
  /**
   * Most request bytes per call (the rows' JSON and insertIds, UTF-8), 1 KiB..9 MiB (BigQuery caps a request at
   * 10 MB). A single caller whose rows alone exceed it is sent on its own.
   */
  readonly maxBytes: number;
  /** How long the first row of a batch waits for company, ms (0..1000); added to a lone event's latency. */
  readonly lingerMs: number;
  /**
   * Most insertAll calls in flight per table before a lingered batch waits for one to settle, an integer 1..100:
   * meanwhile new rows gather in the open batch, so batches grow with the load. A full batch is never held back.
   */
  readonly maxInFlight: number;
  /** Longest a batch waits from its first row before it is sent whatever is in flight, ms, in [lingerMs, 60000]. */
  readonly maxHoldMs: number;
}

/** Defaults: 500 rows, 5 MiB, 5 ms linger, 1 call in flight per table, 1000 ms hold. */
export const DEFAULT_COALESCING: CoalescingOptions = {
  maxRows: 500,
  maxBytes: 5 * 1024 * 1024,
  lingerMs: 5,
  maxInFlight: 1,
  maxHoldMs: 1000,
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
  /** The linger timer, then (once the linger elapsed with the table's calls at the cap) the hold timer. */
  timer: NodeJS.Timeout | undefined;
  /** The linger elapsed while the table's calls were at the cap: sent when one settles, or at `maxHoldMs`. */
  held: boolean;
}

/** Approximate request bytes of rows: their JSON and insertIds in UTF-8, plus per-row envelope. */
export function requestBytes(rows: readonly InsertRow[]): number {
  let bytes = 0;
  for (const row of rows) {
    bytes += Buffer.byteLength(JSON.stringify(row.json), 'utf8');
    bytes += Buffer.byteLength(String(row.insertId), 'utf8') + 32;
  }
  return bytes;
}

function tableKey(table: TableRef): string {
  return `${table.projectId ?? ''}:${table.datasetId}.${table.tableId}`;
}

/**
 * A RowWriter that gathers the rows of concurrent `insertRows` calls for the same table into one call of the
 * wrapped writer (group commit; docs/performance.md, "Coalesced BigQuery writes"), never splitting a caller's
 * rows. A batch goes when full, after `lingerMs` if a call slot is free (else when one settles), at the latest
 * after `maxHoldMs`. Each caller gets its own rows' results, or the wrapped call's error (do not ack).
 */
export class CoalescingRowWriter implements RowWriter {
  private readonly open = new Map<string, Batch>();
  /** insertAll calls in flight per table key; a key is absent at 0. */
  private readonly inFlight = new Map<string, number>();

  /**
   * @param inner the writer doing the actual insertAll calls
   * @param options limits of one call and of calls in flight per table (`DEFAULT_COALESCING` when absent)
   * @throws RangeError when an option is out of range: maxRows not an integer in [1, 500], maxBytes not an integer
   * in [1024, 9437184], lingerMs not in [0, 1000] ms, maxInFlight not an integer in [1, 100], maxHoldMs not an
   * integer in [lingerMs, 60000] ms
   */
  constructor(
    private readonly inner: RowWriter,
    private readonly options: CoalescingOptions = DEFAULT_COALESCING,
  ) {
    const { maxRows, maxBytes, lingerMs, maxInFlight, maxHoldMs } = options;
    if (!Number.isSafeInteger(maxRows) || maxRows < 1 || maxRows > 500) {
      throw new RangeError(`maxRows must be an integer in [1, 500], got ${maxRows}`);
    }
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1024 || maxBytes > 9 * 1024 * 1024) {
      throw new RangeError(`maxBytes must be an integer in [1024, 9437184], got ${maxBytes}`);
    }
    if (!Number.isFinite(lingerMs) || lingerMs < 0 || lingerMs > 1000) {
      throw new RangeError(`lingerMs must be in [0, 1000], got ${lingerMs}`);
    }
    if (!Number.isSafeInteger(maxInFlight) || maxInFlight < 1 || maxInFlight > 100) {
      throw new RangeError(`maxInFlight must be an integer in [1, 100], got ${maxInFlight}`);
    }
    if (!Number.isSafeInteger(maxHoldMs) || maxHoldMs < lingerMs || maxHoldMs > 60_000) {
      throw new RangeError(
        `maxHoldMs must be an integer in [lingerMs (${lingerMs}), 60000], got ${maxHoldMs}`,
      );
    }
  }

  /**
   * Queues `rows` for `table`; resolves with one result per row, in order, once the batch holding them was written.
   * A row without an insertId is answered `rejected` at once and not sent (`withInsertIds`).
   * @throws whatever the wrapped writer threw for that batch (TransientError: do not ack)
   */
  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    return withInsertIds(rows, (sendable) => this.enqueue(table, sendable));
  }

  private enqueue(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    if (rows.length === 0) return Promise.resolve([]);
    const key = tableKey(table);
    const bytes = requestBytes(rows);
    const { maxRows, maxBytes } = this.options;
    if (rows.length > maxRows || bytes > maxBytes) {
      // Too big to share a call: it goes alone, as without coalescing (and counts as a call in flight).
      return this.call(key, table, rows);
    }
    return new Promise<RowResult[]>((resolve, reject) => {
      let batch = this.open.get(key);
      if (
        batch !== undefined &&
        (batch.rows + rows.length > maxRows || batch.bytes + bytes > maxBytes)
      ) {
        this.flush(key, batch);
        batch = undefined;
      }
      if (batch === undefined) {
        batch = { table, callers: [], rows: 0, bytes: 0, timer: undefined, held: false };
        this.open.set(key, batch);
        const opened = batch;
        batch.timer = setTimeout(() => this.lingered(key, opened), this.options.lingerMs);
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

  /** insertAll calls in flight for `table` (tests, metrics). */
  callsInFlight(table: TableRef): number {
    return this.inFlight.get(tableKey(table)) ?? 0;
  }

  /** The linger elapsed: send `batch` if a slot is free, else hold it until a call settles or `maxHoldMs`. */
  private lingered(key: string, batch: Batch): void {
    if (this.open.get(key) !== batch) return;
    const { lingerMs, maxHoldMs, maxInFlight } = this.options;
    const rest = maxHoldMs - lingerMs;
    if ((this.inFlight.get(key) ?? 0) < maxInFlight || rest <= 0) {
      this.flush(key, batch);
      return;
    }
    batch.held = true;
    batch.timer = setTimeout(() => this.flush(key, batch), rest);
  }

  /** Sends `batch` now (once): closes it to new rows and settles every caller. */
  private flush(key: string, batch: Batch): void {
    if (this.open.get(key) !== batch) return;
    this.open.delete(key);
    if (batch.timer !== undefined) clearTimeout(batch.timer);
    void this.send(key, batch);
  }

  /** Never rejects: the outcome, success or failure, goes to each caller of the batch. */
  private async send(key: string, batch: Batch): Promise<void> {
    const rows = batch.callers.flatMap((c) => c.rows);
    let results: RowResult[];
    try {
      results = await this.call(key, batch.table, rows);
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

  /**
   * One call of the wrapped writer, counted in flight for `key` from the call until it settles (either way, once);
   * when it settles, the table's held batch goes if a slot is free.
   */
  private async call(
    key: string,
    table: TableRef,
    rows: readonly InsertRow[],
  ): Promise<RowResult[]> {
    this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
    try {
      return await this.inner.insertRows(table, rows);
    } finally {
      const left = (this.inFlight.get(key) ?? 1) - 1;
      if (left > 0) this.inFlight.set(key, left);
      else this.inFlight.delete(key);
      const held = this.open.get(key);
      if (held?.held && left < this.options.maxInFlight) this.flush(key, held);
    }
  }
}
