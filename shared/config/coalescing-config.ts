// Configuration of coalesced BigQuery writes in ingestBooking, read once at cold start.
import { ConfigError } from '../errors';
import type { CoalescingOptions } from '../sinks/coalescing-writer';
import type { Env } from './env';
import { type VarGroup, boolVar, readVars, bytesVar, countVar, msVar } from './spec';

/** Whether rows of concurrent invocations share insertAll calls, and the limits of one call. */
export interface CoalescingConfig extends CoalescingOptions {
  /** `OFFVIA_BQ_COALESCE` (default true); false: one insertAll call per row, as before. */
  readonly enabled: boolean;
}

/** The variables `loadCoalescingConfig` reads; docs/configuration.md is generated from these specs. */
export const COALESCING_VARS = {
  enabled: boolVar({
    name: 'OFFVIA_BQ_COALESCE',
    default: true,
    meaning:
      'rows of concurrent invocations bound for one table share `insertAll` calls; `false`: one call per row',
  }),
  maxRows: countVar([1, 500], {
    name: 'OFFVIA_BQ_COALESCE_MAX_ROWS',
    default: 500,
    meaning: 'rows in one coalesced call (BigQuery recommends at most 500 rows per request)',
  }),
  maxBytes: bytesVar([1024, 9 * 1024 * 1024], {
    name: 'OFFVIA_BQ_COALESCE_MAX_BYTES',
    default: 5 * 1024 * 1024,
    meaning: 'request bytes of one coalesced call (BigQuery caps a request at 10 MB)',
  }),
  lingerMs: msVar([0, 1000], {
    name: 'OFFVIA_BQ_COALESCE_LINGER_MS',
    default: 5,
    meaning: "how long a batch's first row waits for company; added to a lone event's latency",
  }),
  maxInFlight: countVar([1, 100], {
    name: 'OFFVIA_BQ_COALESCE_MAX_IN_FLIGHT',
    default: 1,
    meaning:
      'group commit: `insertAll` calls per table in flight before a batch whose linger elapsed waits for one to settle',
  }),
  maxHoldMs: msVar([0, 60_000], {
    name: 'OFFVIA_BQ_COALESCE_MAX_HOLD_MS',
    default: 1000,
    rangeText: 'at least `OFFVIA_BQ_COALESCE_LINGER_MS`',
    meaning:
      'longest a batch waits from its first row behind calls in flight, so a hung call does not hold every row',
  }),
} as const;

/** The reference section of the coalescing variables. */
export const COALESCING_VAR_GROUP: VarGroup = {
  title: 'Coalesced BigQuery writes',
  intro:
    'Read by `ingestBooking`: how rows of concurrent invocations share `insertAll` calls; see ' +
    '[performance](performance.md#coalesced-bigquery-writes).',
  vars: Object.values(COALESCING_VARS),
};

/**
 * Reads the `COALESCING_VARS` (defaults, ranges and meanings there).
 * @throws ConfigError naming the first bad variable (OFFVIA_BQ_COALESCE_MAX_HOLD_MS also when it is below
 * OFFVIA_BQ_COALESCE_LINGER_MS)
 */
export function loadCoalescingConfig(env: Env): CoalescingConfig {
  const v = COALESCING_VARS;
  const config: CoalescingConfig = readVars(env, v);
  if (config.maxHoldMs < config.lingerMs) {
    throw new ConfigError(
      'OFFVIA_BQ_COALESCE_MAX_HOLD_MS',
      `${config.maxHoldMs} ms is less than OFFVIA_BQ_COALESCE_LINGER_MS (${config.lingerMs} ms): a batch ` +
        'waits at least the linger',
    );
  }
  return config;
}
