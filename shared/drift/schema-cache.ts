// Per-instance cache of target-table schemas: a TTL, one fetch at a time per table, explicit invalidation.
import { tableName, type TableRef } from '../config/env';
import type { TableSchema } from '../schema';
import type { TableAdmin } from './table-admin';

/** A cached schema and when it was read (ms since the epoch, UTC). */
export interface CachedSchema {
  readonly schema: TableSchema;
  readonly fetchedMs: number;
}

/**
 * Caches `TableAdmin.getSchema` per table for `ttlMs`; concurrent misses share one `tables.get` call.
 * `invalidate` drops an entry; `get` with `maxAgeMs` re-reads an entry older than that.
 */
export class TableSchemaCache {
  private readonly entries = new Map<string, CachedSchema>();
  private readonly inflight = new Map<string, Promise<CachedSchema>>();

  /**
   * @param ttlMs how long an entry is trusted, ms ≥ 0 (0: every call reads).
   * @param now the clock, ms since the epoch (UTC).
   */
  constructor(
    private readonly admin: TableAdmin,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /**
   * The table's schema, from the cache when younger than `min(ttlMs, maxAgeMs)`.
   * @throws TransientError from `TableAdmin.getSchema`.
   */
  async get(table: TableRef, maxAgeMs = Infinity): Promise<CachedSchema> {
    const key = tableName(table);
    const hit = this.entries.get(key);
    if (hit !== undefined && this.now() - hit.fetchedMs < Math.min(this.ttlMs, maxAgeMs))
      return hit;
    const running = this.inflight.get(key);
    if (running !== undefined) return running;
    const fetch = (async () => {
      const fetchedMs = this.now();
      const schema = await this.admin.getSchema(table);
      const entry = { schema, fetchedMs };
      this.entries.set(key, entry);
      return entry;
    })().finally(() => this.inflight.delete(key));
    this.inflight.set(key, fetch);
    return fetch;
  }

  /** Forgets the table's schema; the next `get` reads it again. */
  invalidate(table: TableRef): void {
    this.entries.delete(tableName(table));
  }
}
