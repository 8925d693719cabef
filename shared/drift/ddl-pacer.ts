// Paces a sweep's DDL statements under BigQuery's per-table metadata update rate (pure: times in, a wait out).

/** A rate limit: at most `updates` operations in any `windowMs` (sliding window). */
export interface UpdateRate {
  /** Operations allowed per window, an integer ≥ 1. */
  readonly updates: number;
  /** Window length, ms, an integer ≥ 1. */
  readonly windowMs: number;
}

/**
 * BigQuery's limit on table metadata updates (every schema DDL statement is one): 5 per 10 s per table; over it,
 * 403 `rateLimitExceeded` (https://cloud.google.com/bigquery/quotas, "Tables").
 */
export const TABLE_UPDATE_RATE: UpdateRate = { updates: 5, windowMs: 10_000 };

/**
 * Longest a sweep waits, in total, for the table-update rate while adding columns, ms. Past it the next sweep
 * goes on, so a sweep stays inside its function timeout and lease whatever the number of columns.
 */
export const DDL_PACING_BUDGET_MS = 30_000;

/**
 * How long to wait, ms, before one more update keeps every window of `rate.windowMs` at `rate.updates` or fewer
 * updates, given the times of earlier updates (`recentMs`, ms since the epoch, any order).
 * @throws RangeError for a rate that is not two positive integers.
 */
export function updateDelayMs(
  recentMs: readonly number[],
  nowMs: number,
  rate: UpdateRate = TABLE_UPDATE_RATE,
): number {
  if (!Number.isSafeInteger(rate.updates) || rate.updates < 1) {
    throw new RangeError(`rate.updates must be an integer >= 1, got ${rate.updates}`);
  }
  if (!Number.isSafeInteger(rate.windowMs) || rate.windowMs < 1) {
    throw new RangeError(`rate.windowMs must be an integer >= 1, got ${rate.windowMs}`);
  }
  const sorted = [...recentMs].sort((a, b) => a - b);
  const oldestOfLast = sorted[sorted.length - rate.updates];
  if (oldestOfLast === undefined) return 0;
  return Math.max(0, oldestOfLast + rate.windowMs - nowMs);
}
