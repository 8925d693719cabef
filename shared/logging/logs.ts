// The catalogue of log lines: one named function per event an operator may grep or turn into a log-based metric.
import type { Logger } from './logger';

/** Identifies the Pub/Sub message a line is about. */
export interface MessageRef {
  messageId: string;
  /** Pub/Sub publish time, RFC 3339 UTC, when known. */
  publishTime?: string | undefined;
}

/** A valid event was written to Silver. `latencyMs` is publish→write in ms when publish time is known. */
export function silverWritten(
  log: Logger,
  ref: MessageRef,
  eventId: string,
  table: string,
  latencyMs: number | undefined,
): void {
  log.write('INFO', 'silver row written', {
    outcome: 'silver',
    message_id: ref.messageId,
    event_id: eventId,
    table,
    publish_to_write_ms: latencyMs,
  });
}

/**
 * A message was quarantined with its failing stage; metric `quarantine rate by error_stage` counts these. `context`
 * adds the pipeline and the contract version the message was decoded as (`null`: none applied).
 */
export function messageQuarantined(
  log: Logger,
  ref: MessageRef,
  stage: string,
  reason: string,
  table: string,
  context?: { readonly pipeline: string; readonly contractVersion: string | null },
): void {
  log.write('WARNING', 'message quarantined', {
    outcome: 'quarantine',
    ...(context && { pipeline: context.pipeline }),
    message_id: ref.messageId,
    error_stage: stage,
    error_reason: reason,
    ...(context && { contract_version: context.contractVersion }),
    table,
  });
}

/** BigQuery rejected a row as data (per-row insert error); the row is routed to the bad-data table instead. */
export function rowRejectedBySink(
  log: Logger,
  ref: MessageRef,
  table: string,
  insertId: string,
  error: string,
): void {
  log.write('ERROR', 'row rejected by BigQuery, routed to bad data', {
    outcome: 'bad_data',
    message_id: ref.messageId,
    insert_id: insertId,
    table,
    error,
  });
}

/** A row went to the bad-data table. */
export function badDataWritten(
  log: Logger,
  ref: MessageRef,
  targetDest: string,
  table: string,
): void {
  log.write('WARNING', 'row written to bad-data table', {
    outcome: 'bad_data',
    message_id: ref.messageId,
    target_dest: targetDest,
    table,
  });
}

/**
 * The retry-age guard routed a message that kept failing to the bad-data table (acked): an operator replays it from
 * there (or from Bronze) once `step` works again.
 */
export function retryAgeExceeded(
  log: Logger,
  ref: MessageRef,
  step: string,
  ageMs: number,
  error: string,
  table: string,
): void {
  log.write('ERROR', 'message still failing past the retry age, routed to bad data', {
    outcome: 'bad_data',
    message_id: ref.messageId,
    target_dest: step,
    age_ms: ageMs,
    error,
    table,
  });
}

/** A transient failure: the invocation throws and Pub/Sub redelivers (or, past OFFVIA_MAX_RETRY_AGE_MS, the retry-age guard routes the message to bad data). */
export function transientFailure(
  log: Logger,
  ref: MessageRef,
  operation: string,
  error: string,
): void {
  log.write('ERROR', 'transient failure: redelivery, or bad data once past the retry-age guard', {
    outcome: 'retry',
    message_id: ref.messageId,
    operation,
    error,
  });
}

/** The trigger payload was not a Pub/Sub message at all (wrong event type or shape); logged once its quarantine row is written. */
export function malformedTrigger(log: Logger, ref: MessageRef, error: string): void {
  log.write('ERROR', 'malformed Pub/Sub CloudEvent', {
    outcome: 'quarantine',
    message_id: ref.messageId,
    error,
  });
}

/** Configuration loaded at cold start (values, no secrets). */
export function configLoaded(log: Logger, summary: Record<string, unknown>): void {
  log.write('INFO', 'configuration loaded', { config: summary });
}

// ---- schema drift (issue 5): the ingest gate and the schemaSweep function ----------------------------------------

/** A valid event's row waits in the schema-retry store (its extra fields are not all columns yet). */
export function rowHeldForSchema(
  log: Logger,
  ref: MessageRef,
  details: {
    eventId: string;
    table: string;
    windowId: string;
    proposed: readonly string[];
    errors: string;
    stored: 'created' | 'exists';
  },
): void {
  log.write('NOTICE', 'row held for a schema change', {
    outcome: 'schema_retry',
    message_id: ref.messageId,
    event_id: details.eventId,
    table: details.table,
    schema_window: details.windowId,
    proposed_fields: details.proposed.slice(0, 20),
    proposed_count: details.proposed.length,
    error: details.errors,
    retry_store: details.stored === 'created' ? 'stored' : 'already stored (redelivery)',
  });
}

/** A drift row is too large for the retry store (a Firestore document holds 1 MiB): it goes to bad data now. */
export function driftRowTooLarge(
  log: Logger,
  ref: MessageRef,
  table: string,
  bytes: number,
  maxBytes: number,
): void {
  log.write('ERROR', 'drift row too large for the retry store, routed to bad data', {
    outcome: 'bad_data',
    message_id: ref.messageId,
    table,
    row_bytes: bytes,
    max_bytes: maxBytes,
  });
}

/** Another sweep holds the table's lease; this sweep leaves the table to it. */
export function sweepTableBusy(log: Logger, table: string): void {
  log.write('INFO', 'schema sweep: table leased by another sweep, skipped', {
    component_step: 'lease',
    table,
  });
}

/** A table update (DDL) was applied for the listed schema windows. */
export function schemaUpdateApplied(
  log: Logger,
  details: {
    table: string;
    updateId: string;
    windows: readonly string[];
    columns: readonly string[];
    statements: readonly string[];
    catalogPatched: readonly string[];
    rejected: number;
  },
): void {
  log.write('NOTICE', 'schema update applied', {
    outcome: 'schema_update',
    table: details.table,
    update_id: details.updateId,
    schema_windows: details.windows,
    added_columns: details.columns,
    ddl: details.statements,
    catalog_patched: details.catalogPatched,
    rejected_fields: details.rejected,
  });
}

/** A table update failed; its changes stay pending and are retried by the next sweep. */
export function schemaUpdateFailed(
  log: Logger,
  table: string,
  updateId: string,
  error: string,
): void {
  log.write('ERROR', 'schema update failed, change stays pending', {
    outcome: 'schema_update_failed',
    table,
    update_id: updateId,
    error,
  });
}

/** The windows' changes were planned and recorded without a table update (propose mode, or nothing to add). */
export function schemaChangeRecorded(
  log: Logger,
  details: {
    table: string;
    status: 'applied' | 'proposed';
    windows: readonly string[];
    columns: readonly string[];
    rejected: number;
  },
): void {
  log.write('INFO', `schema change recorded (${details.status}), no table update`, {
    outcome: details.status === 'proposed' ? 'schema_proposed' : 'schema_nothing_to_add',
    table: details.table,
    schema_windows: details.windows,
    proposed_columns: details.columns,
    rejected_fields: details.rejected,
  });
}

/** A due update waits: the table was updated too recently for BigQuery's metadata-update rate. */
export function schemaUpdateDeferred(
  log: Logger,
  table: string,
  lastUpdateMs: number,
  minIntervalMs: number,
): void {
  log.write('INFO', 'schema update deferred (table metadata update rate)', {
    table,
    last_update: new Date(lastUpdateMs).toISOString(),
    min_update_interval_ms: minIntervalMs,
  });
}

/**
 * A table update stopped part-way at BigQuery's table metadata update rate (a 403 `rateLimitExceeded`, or the
 * sweep's pacing budget spent): the columns added so far stay, the rest are added by the next sweep, which plans
 * against the table as it is (never from the start).
 */
export function schemaUpdateRateLimited(
  log: Logger,
  details: {
    table: string;
    updateId: string;
    added: readonly string[];
    remaining: readonly string[];
    reason: string;
  },
): void {
  log.write('WARNING', 'schema update stopped at the table-update rate, the rest next sweep', {
    outcome: 'schema_update_rate_limited',
    table: details.table,
    update_id: details.updateId,
    added_columns: details.added,
    remaining_columns: details.remaining,
    reason: details.reason,
  });
}

/**
 * BigQuery did not write some waiting rows for a reason that is not their data (`stopped` beside a refused row,
 * `timeout`, `backendError`): they are re-sent at once, within the same sweep.
 */
export function sweepRowsResent(
  log: Logger,
  table: string,
  details: { attempt: number; rows: number; reasons: readonly string[] },
): void {
  log.write('INFO', 'waiting rows not written, re-sent at once', {
    table,
    attempt: details.attempt,
    rows: details.rows,
    reasons: details.reasons,
  });
}

/** An insertAll call of the sweep failed as a whole; its rows stay in the retry store, within their budget. */
export function sweepInsertFailed(
  log: Logger,
  details: { table: string; rows: number; attempt: number; error: string },
): void {
  log.write('ERROR', 'sweep insert failed, rows stay in the retry store', {
    outcome: 'retry',
    table: details.table,
    rows: details.rows,
    attempt: details.attempt,
    error: details.error,
  });
}

/** A waiting row passed its retry budget and was written to the bad-data table. */
export function driftRowToBadData(
  log: Logger,
  details: {
    messageId: string;
    insertId: string;
    targetDest: string;
    retryCount: number;
    error: string;
    /**
     * `retry_budget`: retryable errors outlived the budget; `permanent_error`: a schema error no wait can clear;
     * `insert_invalid`: BigQuery refused the row's data on insert (reason `invalid`), which no re-send can clear.
     */
    cause: 'retry_budget' | 'permanent_error' | 'insert_invalid';
  },
): void {
  log.write(
    'WARNING',
    details.cause === 'retry_budget'
      ? 'row past its retry budget, written to bad data'
      : details.cause === 'insert_invalid'
        ? 'row refused by BigQuery as invalid, written to bad data'
        : 'row with a permanent schema error, written to bad data',
    {
      outcome: 'bad_data',
      message_id: details.messageId,
      insert_id: details.insertId,
      target_dest: details.targetDest,
      retry_count: details.retryCount,
      bad_data_cause: details.cause,
      error: details.error,
    },
  );
}

/**
 * A schema plan decided a contest by waiting-row support: case variants of one new name, or the conflicting types
 * of one new field. The winner gets the column; rows of the other spellings or types reach bad data once it exists.
 */
export function schemaContestResolved(
  log: Logger,
  table: string,
  windows: readonly string[],
  contest: {
    kind: 'case' | 'type';
    field: string;
    winner: string;
    contenders: readonly { value: string; support: { rows: number; firstSeenMs: number } }[];
  },
): void {
  log.write('NOTICE', 'schema contest resolved', {
    table,
    schema_windows: windows,
    contest: contest.kind,
    field: contest.field,
    winner: contest.winner,
    contenders: contest.contenders.slice(0, 10).map((c) => ({
      value: c.value,
      rows: c.support.rows,
      first_seen: Number.isFinite(c.support.firstSeenMs)
        ? new Date(c.support.firstSeenMs).toISOString()
        : null,
    })),
  });
}

/**
 * Extra fields of an event whose value is `null` and that are no column: nothing to store and no type to
 * propose, so they are left out of the row (Bronze keeps the raw message). Logged once per event, at ingest.
 */
export function nullExtraFieldsLeftOut(
  log: Logger,
  ref: MessageRef,
  details: { eventId: string; table: string; fields: readonly string[] },
): void {
  log.write('INFO', 'null extra fields left out of the row', {
    message_id: ref.messageId,
    event_id: details.eventId,
    table: details.table,
    null_fields: details.fields.slice(0, 20),
    null_field_count: details.fields.length,
  });
}

/** A held row's extra fields carry an error no schema change can clear: it goes to bad data at ingest. */
export function driftRowRejectedAtIngest(
  log: Logger,
  ref: MessageRef,
  details: { eventId: string; table: string; error: string },
): void {
  log.write('WARNING', 'row with a permanent schema error, routed to bad data at ingest', {
    outcome: 'bad_data',
    message_id: ref.messageId,
    event_id: details.eventId,
    table: details.table,
    bad_data_cause: 'permanent_error',
    error: details.error,
  });
}

/** BigQuery refused a bad-data row; the row stays in the retry store (nothing is dropped). */
export function badDataRefused(
  log: Logger,
  details: { messageId: string; insertId: string; table: string; error: string },
): void {
  log.write('ERROR', 'bad-data row refused, row kept in the retry store', {
    outcome: 'retry',
    message_id: details.messageId,
    insert_id: details.insertId,
    table: details.table,
    error: details.error,
  });
}

/** A retry-store document could not be read; it is left in place for an operator. */
export function driftRowMalformed(log: Logger, table: string, id: string, problem: string): void {
  log.write('ERROR', 'malformed retry-store row left in place', { table, row_id: id, problem });
}

/** One table's sweep, summarised (the metric source for rows inserted, waiting and sent to bad data). */
export function sweepTableDone(log: Logger, summary: Record<string, unknown>): void {
  log.write('INFO', 'schema sweep of table done', { outcome: 'schema_sweep', ...summary });
}

/** One table's sweep failed; what it finished is kept, the rest is retried by the next sweep. */
export function sweepTableFailed(log: Logger, table: string, error: string): void {
  log.write('ERROR', 'schema sweep of table failed', {
    outcome: 'schema_sweep_failed',
    table,
    error,
  });
}

// ---- windows, watermark and panes (issue 4): the window-state sink and the fireWindows function -----------------

/** Where a windowed line is: the pipeline, key and window (RFC 3339 bounds). */
export interface WindowRef {
  pipeline: string;
  key: string;
  windowStartMs: number;
  windowEndMs: number;
}

function windowFields(ref: WindowRef): Record<string, unknown> {
  return {
    pipeline: ref.pipeline,
    window_key: ref.key,
    window_start: new Date(ref.windowStartMs).toISOString(),
    window_end: new Date(ref.windowEndMs).toISOString(),
  };
}

/** A valid event was left out of a window's aggregates as too late; metric `dropped late by window` counts these. */
export function windowElementDropped(
  log: Logger,
  ref: MessageRef,
  window: WindowRef,
  details: { eventId: string; eventTimeMs: number; reason: string; watermarkMs: number },
): void {
  log.write('WARNING', 'event dropped from window aggregates as too late (still in Silver)', {
    outcome: 'dropped_late',
    message_id: ref.messageId,
    event_id: details.eventId,
    event_time: new Date(details.eventTimeMs).toISOString(),
    drop_reason: details.reason,
    watermark_ms: details.watermarkMs,
    ...windowFields(window),
  });
}

/** An event whose dedup ledger entry exists (redelivery or re-publish): window state left unchanged. */
export function windowDuplicateIgnored(
  log: Logger,
  ref: MessageRef,
  pipeline: string,
  eventId: string,
): void {
  log.write('INFO', 'duplicate event ignored by window state', {
    outcome: 'window_duplicate',
    message_id: ref.messageId,
    event_id: eventId,
    pipeline,
  });
}

/** A pane was written to the gold table. */
export function paneEmitted(
  log: Logger,
  window: WindowRef,
  details: { timing: string; index: number; isLast: boolean; insertId: string; table: string },
): void {
  log.write('INFO', 'pane emitted', {
    outcome: 'pane',
    pane_timing: details.timing,
    pane_index: details.index,
    pane_is_last: details.isLast,
    insert_id: details.insertId,
    table: details.table,
    ...windowFields(window),
  });
}

/** Panes are committed in the outbox but could not be written now; fireWindows writes them on its next run. */
export function paneEmissionDeferred(
  log: Logger,
  pipeline: string,
  insertIds: readonly string[],
  error: string,
): void {
  log.write(
    'WARNING',
    'pane emission deferred to the next fireWindows run (panes kept in the outbox)',
    {
      outcome: 'pane_deferred',
      pipeline,
      insert_ids: insertIds.slice(0, 20),
      pane_count: insertIds.length,
      error,
    },
  );
}

/** BigQuery refused a pane row as data (a bug or a NUMERIC overflow); it goes to the bad-data table. */
export function paneRowRefused(
  log: Logger,
  details: { pipeline: string; insertId: string; table: string; error: string },
): void {
  log.write('ERROR', 'pane row refused by BigQuery, routed to bad data', {
    outcome: 'bad_data',
    pipeline: details.pipeline,
    insert_id: details.insertId,
    table: details.table,
    error: details.error,
  });
}

/** fireWindows moved the watermark (idle rule); the metric source for watermark progress and lag. */
export function watermarkAdvanced(
  log: Logger,
  details: { pipeline: string; watermarkMs: number; maxEventTimeMs: number | null; nowMs: number },
): void {
  log.write('INFO', 'watermark advanced', {
    outcome: 'watermark',
    pipeline: details.pipeline,
    watermark_ms: details.watermarkMs,
    max_event_time_ms: details.maxEventTimeMs,
    watermark_lag_ms: details.nowMs - details.watermarkMs,
  });
}

/** Another fireWindows run holds the pipeline's lease; this run did nothing. */
export function fireWindowsBusy(
  log: Logger,
  pipeline: string,
  holder: string,
  expiresAtMs: number | null,
): void {
  log.write('INFO', 'fireWindows: lease held by another run, skipped', {
    outcome: 'fire_windows_busy',
    pipeline,
    lease_holder: holder,
    lease_expires_ms: expiresAtMs,
  });
}

/** This run's lease was taken over (it ran past its lease); it stopped, the new holder carries on. */
export function fireWindowsLeaseLost(
  log: Logger,
  pipeline: string,
  fence: number,
  error: string,
): void {
  log.write('WARNING', 'fireWindows: lease lost, run stopped', {
    outcome: 'fire_windows_lease_lost',
    pipeline,
    lease_fence: fence,
    error,
  });
}

/** Firing one window failed; its state is unchanged and the next run retries it. */
export function windowFiringFailed(log: Logger, window: WindowRef, error: string): void {
  log.write('ERROR', 'window firing failed, retried by the next fireWindows run', {
    outcome: 'window_firing_failed',
    error,
    ...windowFields(window),
  });
}

/**
 * One fireWindows run, summarised, with `watermark_lag_ms` (processing time minus watermark, ms) on every run
 * that has a watermark, written or not: the source of the watermark-lag metric, so a stuck watermark still
 * shows (watermarkAdvanced logs only when the watermark is written). No lag field before the first event
 * (`watermarkMs` null). One line per completed run: the fireWindows-runs metric and its absence alert count it.
 */
export function fireWindowsDone(
  log: Logger,
  summary: Record<string, unknown> & { processingTimeMs: number; watermarkMs: number | null },
): void {
  log.write('INFO', 'fireWindows run done', {
    outcome: 'fire_windows',
    ...summary,
    ...(summary.watermarkMs === null
      ? {}
      : { watermark_lag_ms: summary.processingTimeMs - summary.watermarkMs }),
  });
}

/** A fireWindows run failed as a whole (HTTP 5xx; Cloud Scheduler retries). */
export function fireWindowsFailed(log: Logger, pipeline: string, error: string): void {
  log.write('ERROR', 'fireWindows run failed', {
    outcome: 'fire_windows_failed',
    pipeline,
    error,
  });
}

// ---- watermark holds and the fireWindows timer loop ----------------------------------------------------------------

/**
 * A failed delivery's watermark hold could not be recorded (the hold store is unreachable too). The message is
 * still redelivered by Pub/Sub (it is not lost); only the watermark may then close its window before it arrives.
 */
export function watermarkHoldNotRecorded(log: Logger, ref: MessageRef, error: string): void {
  log.write('WARNING', 'watermark hold not recorded for a failed delivery', {
    outcome: 'watermark_hold_not_recorded',
    message_id: ref.messageId,
    error,
  });
}

/** A hold could not be released after its message was processed; it lapses at its lease instead. */
export function watermarkHoldNotReleased(log: Logger, ref: MessageRef, error: string): void {
  log.write('WARNING', 'watermark hold not released; it lapses at its lease', {
    outcome: 'watermark_hold_not_released',
    message_id: ref.messageId,
    error,
  });
}

/**
 * A message has kept its delivery failing for longer than OFFVIA_WATERMARK_HOLD_MAX_MS: it no longer holds the
 * watermark (so windows keep closing), and once it is delivered it may be dropped as late. One line per stuck
 * message per fireWindows pass, at ERROR, so Cloud Logging's error views and a log-based alert on
 * `jsonPayload.outcome="watermark_hold_stuck"` can find it; `offvia status` counts them too.
 */
export function watermarkHoldStuck(
  log: Logger,
  pipeline: string,
  details: { messageId: string; publishTimeMs: number; lastFailedAtMs: number; nowMs: number },
): void {
  log.write('ERROR', 'watermark hold stuck: a message keeps failing past the hold cap', {
    outcome: 'watermark_hold_stuck',
    pipeline,
    message_id: details.messageId,
    publish_time: new Date(details.publishTimeMs).toISOString(),
    last_failed_at: new Date(details.lastFailedAtMs).toISOString(),
    hold_age_ms: details.nowMs - details.publishTimeMs,
  });
}

/** The watermark was held back by failing deliveries in this fireWindows pass (the idle rule would have moved it). */
export function watermarkHeld(
  log: Logger,
  pipeline: string,
  details: { oldestPublishTimeMs: number; capMs: number; heldMessages: number },
): void {
  log.write('INFO', 'watermark held behind failing deliveries', {
    outcome: 'watermark_held',
    pipeline,
    oldest_held_publish_time: new Date(details.oldestPublishTimeMs).toISOString(),
    hold_cap_ms: details.capMs,
    held_messages: details.heldMessages,
  });
}

/**
 * The ingest subscription's backlog (Cloud Monitoring's oldest unacknowledged message age) could not be read in this
 * fireWindows pass: the pass falls back to the holds of failing deliveries, at WARNING so it is never silent.
 */
export function watermarkBacklogReadFailed(log: Logger, pipeline: string, error: string): void {
  log.write(
    'WARNING',
    'watermark backlog hold unavailable: falling back to the holds of failing deliveries',
    {
      outcome: 'watermark_backlog_unavailable',
      pipeline,
      error,
    },
  );
}

/** The watermark was held back by the ingest subscription's unacknowledged backlog in this fireWindows pass. */
export function watermarkHeldBehindBacklog(
  log: Logger,
  pipeline: string,
  details: { oldestPublishTimeMs: number; capMs: number; sampledAtMs: number; ageMs: number },
): void {
  log.write('INFO', 'watermark held behind the subscription backlog', {
    outcome: 'watermark_held_backlog',
    pipeline,
    oldest_unacked_publish_time: new Date(details.oldestPublishTimeMs).toISOString(),
    hold_cap_ms: details.capMs,
    sampled_at: new Date(details.sampledAtMs).toISOString(),
    oldest_unacked_age_ms: details.ageMs,
  });
}

/**
 * The subscription's oldest unacknowledged message is older than the hold cap (`OFFVIA_WATERMARK_HOLD_MAX_MS`): it no
 * longer holds the watermark. At ERROR, like a stuck delivery hold (`outcome: watermark_hold_stuck`).
 */
export function watermarkBacklogStuck(
  log: Logger,
  pipeline: string,
  details: { oldestPublishTimeMs: number; nowMs: number },
): void {
  log.write('ERROR', 'watermark hold stuck: the subscription backlog is older than the hold cap', {
    outcome: 'watermark_hold_stuck',
    pipeline,
    source: 'monitoring',
    publish_time: new Date(details.oldestPublishTimeMs).toISOString(),
    hold_age_ms: details.nowMs - details.oldestPublishTimeMs,
  });
}

/** The timer loop of one scheduled fireWindows run ended: its passes, polls and timer latency. */
export function fireWindowsLoopDone(log: Logger, summary: Record<string, unknown>): void {
  log.write('INFO', 'fireWindows timer loop done', { outcome: 'fire_windows_loop', ...summary });
}

/**
 * The telemetry device directory (side input) was loaded from its reference table: device count, rows skipped as
 * malformed or repeated (those devices stay unknown until the table is fixed), and how long the query took (ms).
 */
export function deviceDirectoryLoaded(
  log: Logger,
  load: {
    table: string;
    devices: number;
    invalidRows: number;
    duplicateRows: number;
    loadMs: number;
  },
): void {
  log.write(
    load.invalidRows + load.duplicateRows > 0 ? 'WARNING' : 'INFO',
    'device directory loaded',
    {
      outcome: 'side_input_loaded',
      table: load.table,
      devices: load.devices,
      invalid_rows: load.invalidRows,
      duplicate_rows: load.duplicateRows,
      load_ms: load.loadMs,
    },
  );
}

/**
 * A background reload of the device directory failed; the last snapshot (`snapshot_age_ms` old) keeps serving and
 * the next lookup after the refresh interval tries again.
 */
export function deviceDirectoryReloadFailed(
  log: Logger,
  failure: { table: string; error: string; snapshotAgeMs: number },
): void {
  log.write('ERROR', 'device directory reload failed, serving the last snapshot', {
    outcome: 'side_input_stale',
    table: failure.table,
    error: failure.error,
    snapshot_age_ms: failure.snapshotAgeMs,
  });
}
