// Retry-minute accounting and schema-change windows: pure functions of timestamps, with the clock passed in.

/** Milliseconds in a minute. */
export const MS_PER_MINUTE = 60_000;

/** The default schema-change window, in minutes (bad-data design: "Nel dubbio, mantenga il valore predefinito di 3"). */
export const DEFAULT_SCHEMA_WINDOW_MINUTES = 3;

function requireTimestamp(name: string, ms: number): void {
  if (!Number.isSafeInteger(ms)) {
    throw new RangeError(`${name} must be an integer number of ms since the epoch, got ${ms}`);
  }
}

function requireMinutes(name: string, minutes: number, min: number): void {
  if (
    !Number.isSafeInteger(minutes) ||
    minutes < min ||
    minutes * MS_PER_MINUTE > Number.MAX_SAFE_INTEGER
  ) {
    throw new RangeError(`${name} must be an integer number of minutes >= ${min}, got ${minutes}`);
  }
}

/** floor(n / d) for integers n and d > 0, computed exactly in BigInt (no double rounding at boundaries). */
function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d; // truncates toward zero
  return n % d !== 0n && n < 0n ? q - 1n : q;
}

/**
 * The derived retry count of a waiting row: `floor((nowMs − processedTimestampMs) / (windowMinutes · 60000))`,
 * the schema-migration attempts (one per window) it has seen. Derived from time, never incremented (bad-data
 * design). Clock skew (`nowMs < processedTimestampMs`) gives 0, never negative.
 * @param processedTimestampMs when the row was first received, ms since the epoch (UTC), an integer.
 * @param nowMs the current time, ms since the epoch (UTC), an integer.
 * @param windowMinutes the schema-change window length in minutes, an integer ≥ 1.
 * @throws RangeError on a non-integer timestamp or a window that is not an integer ≥ 1.
 */
export function retryCount(
  processedTimestampMs: number,
  nowMs: number,
  windowMinutes: number,
): number {
  requireTimestamp('processedTimestampMs', processedTimestampMs);
  requireTimestamp('nowMs', nowMs);
  requireMinutes('windowMinutes', windowMinutes, 1);
  if (nowMs < processedTimestampMs) return 0;
  const elapsedMs = BigInt(nowMs) - BigInt(processedTimestampMs);
  return Number(floorDiv(elapsedMs, BigInt(windowMinutes * MS_PER_MINUTE)));
}

/**
 * Whether a waiting row has used up its retry budget: at least `retryMinutes` have passed since it was first
 * received (`nowMs − processedTimestampMs ≥ retryMinutes · 60000`). Such a row goes to the bad-data table.
 * Clock skew (`nowMs < processedTimestampMs`) is never past the budget.
 * @param processedTimestampMs when the row was first received, ms since the epoch (UTC), an integer.
 * @param nowMs the current time, ms since the epoch (UTC), an integer.
 * @param retryMinutes the retry budget in minutes, an integer ≥ 0 (0: the first failed retry is final).
 * @throws RangeError on a non-integer timestamp or a negative/non-integer budget.
 */
export function isPastBudget(
  processedTimestampMs: number,
  nowMs: number,
  retryMinutes: number,
): boolean {
  requireTimestamp('processedTimestampMs', processedTimestampMs);
  requireTimestamp('nowMs', nowMs);
  requireMinutes('retryMinutes', retryMinutes, 0);
  return BigInt(nowMs) - BigInt(processedTimestampMs) >= BigInt(retryMinutes * MS_PER_MINUTE);
}

/**
 * A fixed processing-time window of the schema-change batching: [startMs, endMs), aligned to the epoch.
 * The key of a pending change is (target table, window id).
 */
export interface SchemaWindow {
  /** Inclusive start, ms since the epoch (UTC), a multiple of the window length. */
  readonly startMs: number;
  /** Exclusive end, ms since the epoch (UTC): `startMs + windowMinutes · 60000`. */
  readonly endMs: number;
  /**
   * Stable id: the start in ISO-8601 UTC and the length, e.g. `2026-10-07T14:09:00.000Z_3m`. Contains no `/`,
   * so it can be part of a Firestore document id; a changed window length never reuses an id.
   */
  readonly id: string;
}

/** Largest |ms| a JavaScript Date holds; windows beyond it have no ISO id. */
const MAX_DATE_MS = 8_640_000_000_000_000n;

/**
 * The fixed processing-time window a drift row belongs to, from its `processed_timestamp` (changes are combined
 * per target table per window).
 * @param tsMs processing time, ms since the epoch (UTC), an integer within the Date range (±8.64e15).
 * @param windowMinutes window length in minutes, an integer ≥ 1 (default 3, `DEFAULT_SCHEMA_WINDOW_MINUTES`).
 * @throws RangeError on a non-integer or out-of-range timestamp or a bad window length.
 */
export function schemaWindowOf(tsMs: number, windowMinutes: number): SchemaWindow {
  requireTimestamp('tsMs', tsMs);
  requireMinutes('windowMinutes', windowMinutes, 1);
  const sizeMs = BigInt(windowMinutes * MS_PER_MINUTE);
  const start = floorDiv(BigInt(tsMs), sizeMs) * sizeMs;
  const end = start + sizeMs;
  if (start < -MAX_DATE_MS || end > MAX_DATE_MS) {
    throw new RangeError(
      `the window of tsMs ${tsMs} (${windowMinutes} min) is outside the range of dates`,
    );
  }
  const startMs = Number(start);
  return {
    startMs,
    endMs: Number(end),
    id: `${new Date(startMs).toISOString()}_${windowMinutes}m`,
  };
}

/**
 * Whether a schema window has closed, so its pending change may be applied: `nowMs ≥ endMs + graceMs` (the
 * grace lets proposals stamped just before the end land first).
 * @param nowMs the current time, ms since the epoch (UTC), an integer.
 * @param graceMs extra wait after the end, ms, an integer ≥ 0 (default 0).
 * @throws RangeError on a non-integer time or a negative grace.
 */
export function isWindowClosed(window: SchemaWindow, nowMs: number, graceMs = 0): boolean {
  requireTimestamp('nowMs', nowMs);
  if (!Number.isSafeInteger(graceMs) || graceMs < 0) {
    throw new RangeError(`graceMs must be an integer >= 0, got ${graceMs}`);
  }
  return nowMs >= window.endMs + graceMs;
}
