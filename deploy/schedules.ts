// The Cloud Scheduler jobs of the product: which HTTP function is called how often. The local scheduler loop
// (deploy/local/scheduler.ts) reads this list, and so must the cloud deploy script, so both keep one cadence.

/** One scheduled call of an HTTP function. */
export interface Schedule {
  /** The HTTP function's name (its entry point in functions/index.ts). */
  readonly functionName: string;
  /** Cloud Scheduler cron expression (UTC), for `gcloud scheduler jobs create http --schedule`. */
  readonly cron: string;
  /** The same cadence in seconds, for the local loop (which aligns calls to multiples of it, as cron does). */
  readonly everySeconds: number;
}

/**
 * The schedules. schemaSweep runs every minute: a 3-minute schema window is then swept within a minute of
 * closing (plus the grace), and waiting rows are retried at least once per window. Add fireWindows here when it
 * exists (one line), e.g. `{ functionName: 'fireWindows', cron: '* * * * *', everySeconds: 60 }`.
 */
export const SCHEDULES: readonly Schedule[] = [
  { functionName: 'schemaSweep', cron: '* * * * *', everySeconds: 60 },
  { functionName: 'fireWindows', cron: '* * * * *', everySeconds: 60 },
];
