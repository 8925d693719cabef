// The catalogue of log lines: one named emitter per event an operator may grep or turn into a log-based metric.
// Each entry fixes the event's severity, message and jsonPayload fields; callers pass only the values.
import type { LogFields, Logger, Severity } from './logger';

/** Identifies the Pub/Sub message a line is about. */
export interface MessageRef {
  messageId: string;
  /** Pub/Sub publish time, RFC 3339 UTC, when known. */
  publishTime?: string | undefined;
}

/** Where a windowed line is: the pipeline, key and window (RFC 3339 bounds). */
export interface WindowRef {
  pipeline: string;
  key: string;
  windowStartMs: number;
  windowEndMs: number;
}

/** One catalogued event's emitter: writes its line through `log`, built from the call's values. */
export type LogEvent<A extends unknown[]> = (log: Logger, ...args: A) => void;

/**
 * Declares one catalogued event. `severity` and `message` may depend on the values (a function of them); `fields`
 * maps the values to the line's jsonPayload fields.
 */
function event<A extends unknown[]>(
  severity: Severity | ((...args: A) => Severity),
  message: string | ((...args: A) => string),
  fields: (...args: A) => LogFields,
): LogEvent<A> {
  return (log, ...args) =>
    log.write(
      typeof severity === 'function' ? severity(...args) : severity,
      typeof message === 'function' ? message(...args) : message,
      fields(...args),
    );
}

/**
 * Declares an event whose caller passes the jsonPayload fields as logged (`F`, snake_case); `outcome`, when given,
 * comes first.
 */
function fieldsEvent<F extends LogFields>(
  severity: Severity,
  message: string,
  outcome?: string,
): LogEvent<[F]> {
  return event(severity, message, (fields: F) => ({ ...(outcome && { outcome }), ...fields }));
}

/**
 * Declares an event about one Pub/Sub message: the caller passes the message, then the values `fields` maps;
 * `outcome` and `message_id` come first.
 */
function messageEvent<A extends unknown[]>(
  severity: Severity,
  message: string,
  outcome: string,
  fields: (...args: A) => LogFields,
): LogEvent<[MessageRef, ...A]> {
  return event(severity, message, (ref: MessageRef, ...args: A) => ({
    outcome,
    message_id: ref.messageId,
    ...fields(...args),
  }));
}

/** Epoch ms as RFC 3339 UTC, the form of every time field of a log line. */
export const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Declares a windowed event: the caller passes the fields as logged (`F`) and the window; the window's location
 * (`pipeline`, `window_key`, `window_start`, `window_end`, bounds RFC 3339 UTC) follows them.
 */
function windowEvent<F extends LogFields>(
  severity: Severity,
  message: string,
  outcome: string,
): LogEvent<[F, WindowRef]> {
  return event(severity, message, (fields: F, ref: WindowRef) => ({
    outcome,
    ...fields,
    pipeline: ref.pipeline,
    window_key: ref.key,
    window_start: iso(ref.windowStartMs),
    window_end: iso(ref.windowEndMs),
  }));
}

/** A valid event was written to Silver. `latencyMs` is publish→write in ms when publish time is known. */
export const silverWritten = fieldsEvent<{
  message_id: string;
  event_id: string;
  table: string;
  publish_to_write_ms: number | undefined;
}>('INFO', 'silver row written', 'silver');

/**
 * A message was quarantined with its failing stage; metric `quarantine rate by error_stage` counts these. `context`
 * adds the pipeline and the contract version the message was decoded as (`null`: none applied).
 */
export const messageQuarantined = event(
  'WARNING',
  'message quarantined',
  (
    ref: MessageRef,
    stage: string,
    reason: string,
    table: string,
    context?: { readonly pipeline: string; readonly contractVersion: string | null },
  ) => ({
    outcome: 'quarantine',
    ...(context && { pipeline: context.pipeline }),
    message_id: ref.messageId,
    error_stage: stage,
    error_reason: reason,
    ...(context && { contract_version: context.contractVersion }),
    table,
  }),
);

/** BigQuery rejected a row as data (per-row insert error); the row is routed to the bad-data table instead. */
export const rowRejectedBySink = messageEvent(
  'ERROR',
  'row rejected by BigQuery, routed to bad data',
  'bad_data',
  (table: string, insertId: string, error: string) => ({ insert_id: insertId, table, error }),
);

/** A row went to the bad-data table. */
export const badDataWritten = messageEvent(
  'WARNING',
  'row written to bad-data table',
  'bad_data',
  (targetDest: string, table: string) => ({ target_dest: targetDest, table }),
);

/** The retry-age guard routed a message that kept failing to the bad-data table (acked); `age_ms` in ms. */
export const retryAgeExceeded = fieldsEvent<{
  message_id: string;
  target_dest: string;
  age_ms: number;
  error: string;
  table: string;
}>('ERROR', 'message still failing past the retry age, routed to bad data', 'bad_data');

/** A transient failure: the invocation throws and Pub/Sub redelivers (or, past OFFVIA_MAX_RETRY_AGE_MS, the retry-age guard routes the message to bad data). */
export const transientFailure = messageEvent(
  'ERROR',
  'transient failure: redelivery, or bad data once past the retry-age guard',
  'retry',
  (operation: string, error: string) => ({ operation, error }),
);

/** The trigger payload was not a Pub/Sub message at all (wrong event type or shape); logged once its quarantine row is written. */
export const malformedTrigger = event(
  'ERROR',
  'malformed Pub/Sub CloudEvent',
  (ref: MessageRef, error: string) => ({ outcome: 'quarantine', message_id: ref.messageId, error }),
);

/** Configuration loaded at cold start (values, no secrets). */
export const configLoaded = event(
  'INFO',
  'configuration loaded',
  (summary: Record<string, unknown>) => ({ config: summary }),
);

// ---- schema drift: the ingest gate and the schemaSweep function ---------------------------------------------------

/** A valid event's row waits in the schema-retry store (its extra fields are not all columns yet). */
export const rowHeldForSchema = fieldsEvent<{
  message_id: string;
  event_id: string;
  table: string;
  schema_window: string;
  /** The first 20 proposed names; `proposed_count` counts them all. */
  proposed_fields: readonly string[];
  proposed_count: number;
  error: string;
  retry_store: 'stored' | 'already stored (redelivery)';
}>('NOTICE', 'row held for a schema change', 'schema_retry');

/** A drift row is too large for the retry store (a Firestore document holds 1 MiB): it goes to bad data now. */
export const driftRowTooLarge = messageEvent(
  'ERROR',
  'drift row too large for the retry store, routed to bad data',
  'bad_data',
  (table: string, bytes: number, maxBytes: number) => ({
    table,
    row_bytes: bytes,
    max_bytes: maxBytes,
  }),
);

/** Another sweep holds the table's lease; this sweep leaves the table to it. */
export const sweepTableBusy = event(
  'INFO',
  'schema sweep: table leased by another sweep, skipped',
  (table: string) => ({ component_step: 'lease', table }),
);

/** A table update (DDL) was applied for the listed schema windows. */
export const schemaUpdateApplied = fieldsEvent<{
  table: string;
  update_id: string;
  schema_windows: readonly string[];
  added_columns: readonly string[];
  ddl: readonly string[];
  catalog_patched: readonly string[];
  rejected_fields: number;
}>('NOTICE', 'schema update applied', 'schema_update');

/** A table update failed; its changes stay pending and are retried by the next sweep. */
export const schemaUpdateFailed = event(
  'ERROR',
  'schema update failed, change stays pending',
  (table: string, updateId: string, error: string) => ({
    outcome: 'schema_update_failed',
    table,
    update_id: updateId,
    error,
  }),
);

/** The windows' changes were planned and recorded without a table update (propose mode, or nothing to add). */
export const schemaChangeRecorded = event(
  'INFO',
  (d: { status: 'applied' | 'proposed' }) =>
    `schema change recorded (${d.status}), no table update`,
  (d: {
    table: string;
    status: 'applied' | 'proposed';
    windows: readonly string[];
    columns: readonly string[];
    rejected: number;
  }) => ({
    outcome: d.status === 'proposed' ? 'schema_proposed' : 'schema_nothing_to_add',
    table: d.table,
    schema_windows: d.windows,
    proposed_columns: d.columns,
    rejected_fields: d.rejected,
  }),
);

/** A due update waits: the table was updated too recently for BigQuery's metadata-update rate (times in ms). */
export const schemaUpdateDeferred = event(
  'INFO',
  'schema update deferred (table metadata update rate)',
  (table: string, lastUpdateMs: number, minIntervalMs: number) => ({
    table,
    last_update: iso(lastUpdateMs),
    min_update_interval_ms: minIntervalMs,
  }),
);

/**
 * A table update stopped part-way at BigQuery's table metadata update rate (a 403 `rateLimitExceeded`, or the
 * sweep's pacing budget spent): the columns added so far stay, the next sweep adds the rest.
 */
export const schemaUpdateRateLimited = fieldsEvent<{
  table: string;
  update_id: string;
  added_columns: readonly string[];
  remaining_columns: readonly string[];
  reason: string;
}>(
  'WARNING',
  'schema update stopped at the table-update rate, the rest next sweep',
  'schema_update_rate_limited',
);

/**
 * BigQuery did not write some waiting rows for a reason that is not their data (`stopped` beside a refused row,
 * `timeout`, `backendError`): they are re-sent at once, within the same sweep.
 */
export const sweepRowsResent = fieldsEvent<{
  table: string;
  attempt: number;
  rows: number;
  reasons: readonly string[];
}>('INFO', 'waiting rows not written, re-sent at once');

/** An insertAll call of the sweep failed as a whole; its rows stay in the retry store, within their budget. */
export const sweepInsertFailed = fieldsEvent<{
  table: string;
  rows: number;
  attempt: number;
  error: string;
}>('ERROR', 'sweep insert failed, rows stay in the retry store', 'retry');

/**
 * Why a waiting row went to bad data: retryable errors outlived the budget (`retry_budget`), a schema error no wait
 * can clear (`permanent_error`), or BigQuery refused the row's data on insert (`insert_invalid`).
 */
export type DriftBadDataCause = 'retry_budget' | 'permanent_error' | 'insert_invalid';

const DRIFT_BAD_DATA_MESSAGE: Record<DriftBadDataCause, string> = {
  retry_budget: 'row past its retry budget, written to bad data',
  insert_invalid: 'row refused by BigQuery as invalid, written to bad data',
  permanent_error: 'row with a permanent schema error, written to bad data',
};

/** A waiting row passed its retry budget (or cannot be cleared, see `cause`) and was written to the bad-data table. */
export const driftRowToBadData = event(
  'WARNING',
  (d: { bad_data_cause: DriftBadDataCause }) => DRIFT_BAD_DATA_MESSAGE[d.bad_data_cause],
  (d: {
    message_id: string;
    insert_id: string;
    target_dest: string;
    retry_count: number;
    bad_data_cause: DriftBadDataCause;
    error: string;
  }) => ({ outcome: 'bad_data', ...d }),
);

/**
 * A schema plan decided a contest by waiting-row support: case variants of one new name, or the conflicting types
 * of one new field. The winner gets the column; rows of the other spellings or types reach bad data once it exists.
 */
export const schemaContestResolved = event(
  'NOTICE',
  'schema contest resolved',
  (
    table: string,
    windows: readonly string[],
    contest: {
      kind: 'case' | 'type';
      field: string;
      winner: string;
      contenders: readonly { value: string; support: { rows: number; firstSeenMs: number } }[];
    },
  ) => ({
    table,
    schema_windows: windows,
    contest: contest.kind,
    field: contest.field,
    winner: contest.winner,
    contenders: contest.contenders.slice(0, 10).map((c) => ({
      value: c.value,
      rows: c.support.rows,
      first_seen: Number.isFinite(c.support.firstSeenMs) ? iso(c.support.firstSeenMs) : null,
    })),
  }),
);

/** Extra fields of an event that are `null` and no column (no type to propose) were left out of the row. */
export const nullExtraFieldsLeftOut = fieldsEvent<{
  message_id: string;
  event_id: string;
  table: string;
  /** The first 20 names; `null_field_count` counts them all. */
  null_fields: readonly string[];
  null_field_count: number;
}>('INFO', 'null extra fields left out of the row');

/** A held row's extra fields carry an error no schema change can clear: it goes to bad data at ingest. */
export const driftRowRejectedAtIngest = messageEvent(
  'WARNING',
  'row with a permanent schema error, routed to bad data at ingest',
  'bad_data',
  (d: { eventId: string; table: string; error: string }) => ({
    event_id: d.eventId,
    table: d.table,
    bad_data_cause: 'permanent_error',
    error: d.error,
  }),
);

/** BigQuery refused a bad-data row; the row stays in the retry store (nothing is dropped). */
export const badDataRefused = fieldsEvent<{
  message_id: string;
  insert_id: string;
  table: string;
  error: string;
}>('ERROR', 'bad-data row refused, row kept in the retry store', 'retry');

/** A retry-store document could not be read; it is left in place for an operator. */
export const driftRowMalformed = event(
  'ERROR',
  'malformed retry-store row left in place',
  (table: string, id: string, problem: string) => ({ table, row_id: id, problem }),
);

/** One table's sweep, summarised (the metric source for rows inserted, waiting and sent to bad data). */
export const sweepTableDone = fieldsEvent<Record<string, unknown>>(
  'INFO',
  'schema sweep of table done',
  'schema_sweep',
);

/** One table's sweep failed; what it finished is kept, the rest is retried by the next sweep. */
export const sweepTableFailed = event(
  'ERROR',
  'schema sweep of table failed',
  (table: string, error: string) => ({ outcome: 'schema_sweep_failed', table, error }),
);

// ---- windows, watermark and panes: the window-state sink and the fireWindows function -----------------------------

/** A valid event was left out of a window's aggregates as too late; log metric `dropped-late-events` (deploy/gcloud/monitoring.ts) counts these. */
export const windowElementDropped = windowEvent<{
  message_id: string;
  event_id: string;
  /** RFC 3339 UTC. */
  event_time: string;
  drop_reason: string;
  watermark_ms: number;
}>('WARNING', 'event dropped from window aggregates as too late (still in Silver)', 'dropped_late');

/** An event whose dedup id is already kept (redelivery or re-publish): window state left unchanged. */
export const windowDuplicateIgnored = fieldsEvent<{
  message_id: string;
  event_id: string;
  pipeline: string;
}>('INFO', 'duplicate event ignored by window state', 'window_duplicate');

/** A pane was written to the gold table. */
export const paneEmitted = windowEvent<{
  pane_timing: string;
  pane_index: number;
  pane_is_last: boolean;
  insert_id: string;
  table: string;
}>('INFO', 'pane emitted', 'pane');

/** Panes are committed in the outbox but could not be written now; fireWindows writes them on its next run. */
export const paneEmissionDeferred = fieldsEvent<{
  pipeline: string;
  /** The first 20 panes' insertIds; `pane_count` counts them all. */
  insert_ids: readonly string[];
  pane_count: number;
  error: string;
}>(
  'WARNING',
  'pane emission deferred to the next fireWindows run (panes kept in the outbox)',
  'pane_deferred',
);

/** BigQuery refused a pane row as data (a bug or a NUMERIC overflow); it goes to the bad-data table. */
export const paneRowRefused = fieldsEvent<{
  pipeline: string;
  insert_id: string;
  table: string;
  error: string;
}>('ERROR', 'pane row refused by BigQuery, routed to bad data', 'bad_data');

/** fireWindows moved the watermark (idle rule); the metric source for watermark progress and lag (ms). */
export const watermarkAdvanced = fieldsEvent<{
  pipeline: string;
  watermark_ms: number;
  max_event_time_ms: number | null;
  /** Processing time minus the new watermark, ms. */
  watermark_lag_ms: number;
}>('INFO', 'watermark advanced', 'watermark');

/** Another fireWindows run holds the pipeline's lease; this run did nothing. */
export const fireWindowsBusy = fieldsEvent<{
  pipeline: string;
  lease_holder: string;
  lease_expires_ms: number | null;
}>('INFO', 'fireWindows: lease held by another run, skipped', 'fire_windows_busy');

/** This run's lease was taken over (it ran past its lease); it stopped, the new holder carries on. */
export const fireWindowsLeaseLost = fieldsEvent<{
  pipeline: string;
  lease_fence: number;
  error: string;
}>('WARNING', 'fireWindows: lease lost, run stopped', 'fire_windows_lease_lost');

/** Firing one window failed; its state is unchanged and the next run retries it. */
export const windowFiringFailed = windowEvent<{ error: string }>(
  'ERROR',
  'window firing failed, retried by the next fireWindows run',
  'window_firing_failed',
);

/**
 * One fireWindows run, summarised: the fireWindows-runs metric and its absence alert count these. Every run with a
 * watermark (`watermarkMs` not null) carries `watermark_lag_ms` (processing time minus watermark, ms), the source
 * of the watermark-lag metric, so a stuck watermark still shows.
 */
export const fireWindowsDone = event(
  'INFO',
  'fireWindows run done',
  (
    summary: Record<string, unknown> & { processingTimeMs: number; watermarkMs: number | null },
  ) => ({
    outcome: 'fire_windows',
    ...summary,
    ...(summary.watermarkMs === null
      ? {}
      : { watermark_lag_ms: summary.processingTimeMs - summary.watermarkMs }),
  }),
);

/** A fireWindows run failed as a whole (HTTP 5xx; Cloud Scheduler retries). */
export const fireWindowsFailed = event(
  'ERROR',
  'fireWindows run failed',
  (pipeline: string, error: string) => ({ outcome: 'fire_windows_failed', pipeline, error }),
);

// ---- watermark holds and the fireWindows timer loop ----------------------------------------------------------------

/** A failed delivery's watermark hold could not be recorded: the watermark may close its window before redelivery. */
export const watermarkHoldNotRecorded = messageEvent(
  'WARNING',
  'watermark hold not recorded for a failed delivery',
  'watermark_hold_not_recorded',
  (error: string) => ({ error }),
);

/** A hold could not be released after its message was processed; it lapses at its lease instead. */
export const watermarkHoldNotReleased = messageEvent(
  'WARNING',
  'watermark hold not released; it lapses at its lease',
  'watermark_hold_not_released',
  (error: string) => ({ error }),
);

/**
 * A message has kept its delivery failing for longer than OFFVIA_WATERMARK_HOLD_MAX_MS: it no longer holds the
 * watermark, and once delivered it may be dropped as late. One line per stuck message per fireWindows pass, at
 * ERROR for the log-based alert on `outcome="watermark_hold_stuck"`.
 */
export const watermarkHoldStuck = fieldsEvent<{
  pipeline: string;
  message_id: string;
  /** RFC 3339 UTC, as `last_failed_at`. */
  publish_time: string;
  last_failed_at: string;
  /** Processing time minus publish time, ms. */
  hold_age_ms: number;
}>(
  'ERROR',
  'watermark hold stuck: a message keeps failing past the hold cap',
  'watermark_hold_stuck',
);

/** The watermark was held back by failing deliveries in this fireWindows pass (the idle rule would have moved it). */
export const watermarkHeld = fieldsEvent<{
  pipeline: string;
  /** RFC 3339 UTC. */
  oldest_held_publish_time: string;
  hold_cap_ms: number;
  held_messages: number;
}>('INFO', 'watermark held behind failing deliveries', 'watermark_held');

/**
 * The ingest subscription's backlog (Cloud Monitoring's oldest unacknowledged message age) could not be read in this
 * fireWindows pass: the pass falls back to the holds of failing deliveries, at WARNING so it is never silent.
 */
export const watermarkBacklogReadFailed = event(
  'WARNING',
  'watermark backlog hold unavailable: falling back to the holds of failing deliveries',
  (pipeline: string, error: string) => ({
    outcome: 'watermark_backlog_unavailable',
    pipeline,
    error,
  }),
);

/** The watermark was held back by the ingest subscription's unacknowledged backlog in this fireWindows pass. */
export const watermarkHeldBehindBacklog = fieldsEvent<{
  pipeline: string;
  /** RFC 3339 UTC, as `sampled_at`. */
  oldest_unacked_publish_time: string;
  hold_cap_ms: number;
  sampled_at: string;
  oldest_unacked_age_ms: number;
}>('INFO', 'watermark held behind the subscription backlog', 'watermark_held_backlog');

/**
 * The subscription's oldest unacknowledged message is older than the hold cap (`OFFVIA_WATERMARK_HOLD_MAX_MS`): it no
 * longer holds the watermark. At ERROR, like a stuck delivery hold (`outcome: watermark_hold_stuck`).
 */
export const watermarkBacklogStuck = fieldsEvent<{
  pipeline: string;
  source: 'monitoring';
  /** RFC 3339 UTC. */
  publish_time: string;
  /** Processing time minus publish time, ms. */
  hold_age_ms: number;
}>(
  'ERROR',
  'watermark hold stuck: the subscription backlog is older than the hold cap',
  'watermark_hold_stuck',
);

/**
 * The newest heartbeat the ingest path processed is older than the hold cap (`OFFVIA_WATERMARK_HOLD_MAX_MS`):
 * heartbeats stopped for good (topic deleted, scheduler paused, ingest down that long), so the heartbeat no longer
 * holds the watermark. At ERROR, like a stuck delivery hold (`outcome: watermark_hold_stuck`).
 */
export const watermarkHeartbeatStale = fieldsEvent<{
  pipeline: string;
  source: 'heartbeat';
  /** RFC 3339 UTC: publish time of the newest processed heartbeat. */
  publish_time: string;
  /** Processing time minus that publish time, ms. */
  hold_age_ms: number;
}>(
  'ERROR',
  'watermark hold stuck: no heartbeat processed within the hold cap, the watermark follows the idle rule alone',
  'watermark_hold_stuck',
);

/** The timer loop of one scheduled fireWindows run ended: its passes, polls and timer latency. */
export const fireWindowsLoopDone = fieldsEvent<Record<string, unknown>>(
  'INFO',
  'fireWindows timer loop done',
  'fire_windows_loop',
);

/**
 * The telemetry device directory (side input) was loaded from its reference table: device count, rows skipped as
 * malformed or repeated (WARNING when any), and how long the query took (ms).
 */
export const deviceDirectoryLoaded = event(
  (load: { invalid_rows: number; duplicate_rows: number }) =>
    load.invalid_rows + load.duplicate_rows > 0 ? 'WARNING' : 'INFO',
  'device directory loaded',
  (load: {
    table: string;
    devices: number;
    invalid_rows: number;
    duplicate_rows: number;
    load_ms: number;
  }) => ({ outcome: 'side_input_loaded', ...load }),
);

/**
 * A background reload of the device directory failed; the last snapshot (`snapshot_age_ms` old) keeps serving and
 * the next lookup after the refresh interval tries again.
 */
export const deviceDirectoryReloadFailed = fieldsEvent<{
  table: string;
  error: string;
  snapshot_age_ms: number;
}>('ERROR', 'device directory reload failed, serving the last snapshot', 'side_input_stale');
