// Configuration of coalesced BigQuery writes in ingestBooking (issue 8), read once at cold start.
import { ConfigError } from '../errors';
import type { CoalescingOptions } from '../sinks/coalescing-writer';
import { type Env, readBool, readInt } from './env';

/** Whether rows of concurrent invocations share insertAll calls, and the limits of one call. */
export interface CoalescingConfig extends CoalescingOptions {
  /** `OFFVIA_BQ_COALESCE` (default true); false: one insertAll call per row, as before. */
  readonly enabled: boolean;
}

/**
 * Reads OFFVIA_BQ_COALESCE (true), OFFVIA_BQ_COALESCE_MAX_ROWS (500; 1–500, BigQuery's recommended rows per
 * request), OFFVIA_BQ_COALESCE_MAX_BYTES (5,242,880; 1,024–9,437,184: BigQuery caps a request at 10 MB),
 * OFFVIA_BQ_COALESCE_LINGER_MS (5; 0–1,000: added to a lone event's latency), OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT
 * (1; 1–100: insertAll calls per table in flight before a batch waits for one to settle, group commit) and
 * OFFVIA_BQ_COALESCE_MAX_HOLD_MS (1,000; from the linger up to 60,000: longest a batch waits behind calls in
 * flight, so a hung call does not hold every row).
 * @throws ConfigError naming the first bad variable (OFFVIA_BQ_COALESCE_MAX_HOLD_MS also when it is below
 * OFFVIA_BQ_COALESCE_LINGER_MS)
 */
export function loadCoalescingConfig(env: Env): CoalescingConfig {
  const config: CoalescingConfig = {
    enabled: readBool(env, 'OFFVIA_BQ_COALESCE', true),
    maxRows: readInt(env, 'OFFVIA_BQ_COALESCE_MAX_ROWS', 500, 1, 500),
    maxBytes: readInt(env, 'OFFVIA_BQ_COALESCE_MAX_BYTES', 5 * 1024 * 1024, 1024, 9 * 1024 * 1024),
    lingerMs: readInt(env, 'OFFVIA_BQ_COALESCE_LINGER_MS', 5, 0, 1000),
    maxInFlight: readInt(env, 'OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT', 1, 1, 100),
    maxHoldMs: readInt(env, 'OFFVIA_BQ_COALESCE_MAX_HOLD_MS', 1000, 0, 60_000),
  };
  if (config.maxHoldMs < config.lingerMs) {
    throw new ConfigError(
      'OFFVIA_BQ_COALESCE_MAX_HOLD_MS',
      `${config.maxHoldMs} ms is less than OFFVIA_BQ_COALESCE_LINGER_MS (${config.lingerMs} ms): a batch ` +
        'waits at least the linger',
    );
  }
  return config;
}
