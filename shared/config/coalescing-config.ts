// Configuration of coalesced BigQuery writes in ingestBooking (issue 8), read once at cold start.
import type { CoalescingOptions } from '../sinks/coalescing-writer';
import { type Env, readBool, readInt } from './env';

/** Whether rows of concurrent invocations share insertAll calls, and the limits of one call. */
export interface CoalescingConfig extends CoalescingOptions {
  /** `OFFVIA_BQ_COALESCE` (default true); false: one insertAll call per row, as before. */
  readonly enabled: boolean;
}

/**
 * Reads OFFVIA_BQ_COALESCE (true), OFFVIA_BQ_COALESCE_MAX_ROWS (500; 1–500, BigQuery's recommended rows per
 * request), OFFVIA_BQ_COALESCE_MAX_BYTES (5,242,880; 1,024–9,437,184: BigQuery caps a request at 10 MB) and
 * OFFVIA_BQ_COALESCE_LINGER_MS (5; 0–1,000: added to a lone event's latency).
 * @throws ConfigError naming the first bad variable
 */
export function loadCoalescingConfig(env: Env): CoalescingConfig {
  return {
    enabled: readBool(env, 'OFFVIA_BQ_COALESCE', true),
    maxRows: readInt(env, 'OFFVIA_BQ_COALESCE_MAX_ROWS', 500, 1, 500),
    maxBytes: readInt(env, 'OFFVIA_BQ_COALESCE_MAX_BYTES', 5 * 1024 * 1024, 1024, 9 * 1024 * 1024),
    lingerMs: readInt(env, 'OFFVIA_BQ_COALESCE_LINGER_MS', 5, 0, 1000),
  };
}
