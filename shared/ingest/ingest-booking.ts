// ingestBooking's logic: decode → validate → route each message to Silver, quarantine or bad data, exactly once.
import { createHash } from 'node:crypto';
import {
  ERROR_STAGES,
  type ErrorStage,
  type ValidationSuccess,
  validateBooking,
} from '../contract';
import type { IngestConfig } from '../config/ingest-config';
import { tableName, type TableRef } from '../config/env';
import {
  type AttemptObservations,
  describeObservations,
  observeAttempt,
} from '../attempt-observations';
import { DeliveryRefused, TransientError, errorText } from '../errors';
import type { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import {
  type DecodeResult,
  type PubSubMessage,
  type PushedEvent,
  decodePushedEvent,
} from '../pubsub/message';
import { type InsertRow, type RowWriter, insertIdProblem } from '../sinks/row-writer';
import type { PassengerIdConfig } from '../config/passenger-id-config';
import { protectPassengerId } from './passenger-id';
import { keptPayload, quarantineRow } from './quarantine-row';
import { resolveVersion } from '../pipeline/versioning';
import { BOOKING_PIPELINE } from '../pipelines/booking/definition';

/** Where one message ended. Every message gets exactly one of these, or the call throws (redelivery). */
export type IngestOutcome =
  | { destination: 'silver'; messageId: string; eventId: string }
  | { destination: 'quarantine'; messageId: string; stage: ErrorStage; reason: string }
  | { destination: 'bad_data'; messageId: string; targetDest: string; error: string }
  | { destination: 'schema_retry'; messageId: string; eventId: string; reason: string };

/**
 * Schema drift (bad-data design, issue 5): for a valid event, either the values of its extra top-level fields that
 * are already columns of the target table (to add to the Silver row), or `held` once the row is durably stored in
 * the schema-retry store, waiting for the sweep's table update.
 */
export interface SchemaDriftGate {
  /** @throws TransientError when the schema or the retry store cannot be reached (redelivery). */
  route(
    event: ValidationSuccess,
    message: PubSubMessage,
    receivedAtMs: number,
    row: InsertRow,
  ): Promise<
    | { action: 'write'; extraColumns: Record<string, unknown> }
    | { action: 'held'; reason: string }
    | DriftBadData
  >;
  /**
   * Optional: BigQuery refused the row written after `route` said `write` (per-row `invalid`). The gate may hold
   * it (e.g. "no such field": its cached schema was stale, or a new column is not yet accepted by streaming) and
   * answer `held` once it is durably in the retry store; `undefined` sends it to the bad-data table as before.
   * `row` is the row without its extra columns, as passed to `route`.
   * @throws TransientError when the retry store cannot be reached (redelivery).
   */
  holdRejected?(
    event: ValidationSuccess,
    message: PubSubMessage,
    receivedAtMs: number,
    row: InsertRow,
    rejection: { error: string; missingFields: readonly string[] },
  ): Promise<{ action: 'held'; reason: string } | DriftBadData | undefined>;
}

/**
 * The gate wrote the row to the bad-data table itself (a permanent schema error, or a row too large to wait);
 * `targetDest` and `error` are that row's columns.
 */
export type DriftBadData = { action: 'bad_data'; targetDest: string; error: string };

/**
 * Event-time window state (issue 4): counts a valid event once in its windows (dedup by event_id) after it was
 * durably stored, and emits the element-driven panes that are due.
 */
export interface WindowStateSink {
  /** @throws TransientError when the keyed store cannot be reached (redelivery; the dedup ledger makes it safe). */
  record(event: ValidationSuccess, message: PubSubMessage, receivedAtMs: number): Promise<void>;
}

/** What the ingest path needs; tests pass emulator-backed or stubbed writers and a fixed clock. */
export interface IngestDeps {
  writer: RowWriter;
  config: IngestConfig;
  logger: Logger;
  /** Epoch ms, UTC. */
  now: () => number;
  /** Optional schema-drift gate; without it extra fields are ignored (the lab's behaviour). */
  schemaDrift?: SchemaDriftGate;
  /** Optional window-state sink; without it no aggregates are kept. */
  windowState?: WindowStateSink;
  /**
   * Optional watermark holds (with the window state): a refused delivery records its message's publish time, so
   * the watermark waits for the backlog; a processed message releases it. Never throws.
   */
  watermarkHolds?: {
    failed(
      message: { messageId: string; publishTimeMs: number | undefined },
      nowMs: number,
    ): Promise<void>;
    processed(
      message: { messageId: string; publishTimeMs: number | undefined },
      nowMs: number,
    ): Promise<void>;
  };
  /**
   * Optional: the instant a message's event-time window is checked against (epoch ms UTC), instead of its receipt.
   * `offvia replay` passes the publish time, so replaying a message next month gives the verdict it got live
   * (an event stamped ahead of the clock stays quarantined; an old one does not become too old).
   */
  rulesAtMs?: (message: PubSubMessage) => number | undefined;
  /**
   * What happens to `passenger_id` before Silver (OFFVIA_PASSENGER_ID_MODE); absent: stored as received. With
   * `hmac-sha256` the Silver row, the retry store and bad data hold the keyed hash, never the raw id.
   */
  passengerId?: PassengerIdConfig;
}

/** A row of `offvia_quarantine.bad_data` (sql/040). */
export interface BadDataRow {
  bad_data: string;
  target_dest: string;
  error: string;
  insert_time: string;
  processed_timestamp: string;
  retry_count: number;
  source_message_id: string;
  insert_id: string;
}

/**
 * Routes one decoded Pub/Sub message. Valid events go to Silver with insertId = event_id; rejected ones to
 * quarantine with insertId = message id and their failing stage; a row BigQuery itself refuses goes to the
 * bad-data table. Resolves once the row is durably written (ack).
 *
 * Retry-age guard (issue 6): a message that still fails when it is older (publish time to now) than
 * `config.maxRetryAgeMs` is not thrown back for yet another redelivery: it is written to the bad-data table with
 * the failing step as `target_dest`, its bytes and attributes (replayable), and acked, so it ends in a table well
 * before the subscription's dead-letter horizon instead of being retried until it is dead-lettered.
 * @throws TransientError (or whatever a dependency threw) when a write failed for an infrastructure reason and the
 *   message is younger than the guard, or the guard's bad-data write failed too (Pub/Sub must redeliver).
 */
export async function ingestMessage(
  decoded: DecodeResult,
  deps: IngestDeps,
): Promise<IngestOutcome> {
  const progress: Progress = { step: 'decode' };
  const messageId = decoded.ok ? decoded.message.messageId : decoded.messageId;
  const attempt = observeAttempt(() => routeMessage(decoded, deps, progress));
  try {
    return await withDeadline(attempt.result, attempt.observations, decoded, deps, progress);
  } catch (err) {
    if (decoded.ok) {
      const message = decoded.message;
      const ageMs =
        message.publishTimeMs === undefined ? undefined : deps.now() - message.publishTimeMs;
      if (ageMs !== undefined && ageMs > deps.config.maxRetryAgeMs) {
        return retryAgeExceeded(message, progress.step, errorText(err), ageMs, deps, err);
      }
    }
    // Every failure leaves a line with its context, once (the writes log their own), before Pub/Sub redelivers.
    if (!isReported(err))
      logs.transientFailure(deps.logger, { messageId }, progress.step, errorText(err));
    throw err;
  }
}

/**
 * ingestBooking's whole job for one push: decode what the Functions Framework passed ({@link PushedEvent}: a
 * CloudEvent, or a Pub/Sub push body it did not convert), then {@link ingestMessage}. Resolves (ack) once the
 * message is in Silver, quarantine, the retry store or bad data.
 * @throws DeliveryRefused (Pub/Sub redelivers) whatever failed; its message names only the message id, because the
 *   framework writes it into the 5xx body; the failure itself was logged with its context, and is the `cause`.
 */
export async function ingestPushedEvent(
  event: PushedEvent,
  deps: IngestDeps,
): Promise<IngestOutcome> {
  const decoded = decodePushedEvent(event);
  let outcome: IngestOutcome;
  try {
    outcome = await ingestMessage(decoded, deps);
  } catch (err) {
    // The message goes back to Pub/Sub: hold the watermark behind it until it is processed.
    if (decoded.ok) await deps.watermarkHolds?.failed(decoded.message, deps.now());
    throw new DeliveryRefused(decoded.ok ? decoded.message.messageId : decoded.messageId, {
      cause: err,
    });
  }
  if (decoded.ok) await deps.watermarkHolds?.processed(decoded.message, deps.now());
  return outcome;
}

/** Errors already logged with their context by the step that saw them (so the catch-all does not log twice). */
const reportedErrors = new WeakSet<object>();

function markReported(err: unknown): void {
  if (typeof err === 'object' && err !== null) reportedErrors.add(err);
}

function isReported(err: unknown): boolean {
  return typeof err === 'object' && err !== null && reportedErrors.has(err);
}

/**
 * Resolves or rejects as `attempt` does, or rejects with a TransientError once `config.attemptDeadlineMs` has
 * passed. Its reason names what the attempt ran into, from `observations`: transactions still being retried after
 * aborted commits (contention), or else a dependency that hangs rather than fails. The attempt goes on in the
 * background; whatever it still writes is idempotent (insertIds, the dedup ledger, the retry store's one document
 * per insertId), and a late failure is logged, not thrown.
 */
async function withDeadline(
  attempt: Promise<IngestOutcome>,
  observations: AttemptObservations,
  decoded: DecodeResult,
  deps: IngestDeps,
  progress: Progress,
): Promise<IngestOutcome> {
  const ms = deps.config.attemptDeadlineMs;
  const ref = { messageId: decoded.ok ? decoded.message.messageId : decoded.messageId };
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      const seen = describeObservations(observations) ?? 'a dependency hangs';
      reject(
        new TransientError(
          progress.step,
          `no answer within ${ms} ms (OFFVIA_ATTEMPT_DEADLINE_MS): ${seen}`,
        ),
      );
    }, ms);
  });
  attempt.catch((err: unknown) => {
    if (timedOut) {
      logs.transientFailure(
        deps.logger,
        ref,
        `${progress.step} (after the attempt deadline)`,
        errorText(err),
      );
    }
  });
  try {
    return await Promise.race([attempt, deadline]);
  } catch (err) {
    if (timedOut) {
      logs.transientFailure(deps.logger, ref, progress.step, errorText(err));
      markReported(err);
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** The step a message was at when it failed: the table (or window store) it was being written to. */
interface Progress {
  step: string;
}

/**
 * The retry-age guard's route: a bad-data row holding the message (text and base64 bytes, attributes, publish
 * time), the step that kept failing and its last error; insertId `retry-age:<message id>`, so a redelivery racing
 * it adds no second row. If the event already reached Silver (only the window state failed), the row says so.
 * @throws the original error when the bad-data table refuses the row or is down too (redelivery, then dead letter).
 */
async function retryAgeExceeded(
  message: PubSubMessage,
  step: string,
  error: string,
  ageMs: number,
  deps: IngestDeps,
  original: unknown,
): Promise<IngestOutcome> {
  const receivedAtMs = deps.now();
  const reason = `retry age exceeded: still failing ${ageMs} ms after publish (limit OFFVIA_MAX_RETRY_AGE_MS=${deps.config.maxRetryAgeMs}) at ${step}: ${error}`;
  const bad: BadDataRow = {
    // The body capped as in quarantine (exact base64 only when not UTF-8), so the row fits an insertAll request
    // whatever the message size; Bronze has the whole message.
    bad_data: JSON.stringify({
      ...keptPayload(message.data, deps.config.quarantinePayloadMaxBytes),
      attributes: message.attributes,
      publish_time: message.publishTime ?? null,
    }),
    target_dest: step,
    error: reason,
    insert_time: new Date(receivedAtMs).toISOString(),
    processed_timestamp: new Date(receivedAtMs).toISOString(),
    retry_count: 0,
    source_message_id: message.messageId,
    insert_id: `retry-age:${message.messageId}`,
  };
  const badTable = deps.config.badDataTable;
  let result;
  try {
    [result] = await deps.writer.insertRows(badTable, [
      { insertId: bad.insert_id, json: { ...bad } },
    ]);
  } catch (err) {
    logs.transientFailure(deps.logger, message, `insertAll ${tableName(badTable)}`, errorText(err));
    throw original;
  }
  if (result !== undefined && !result.ok) {
    logs.transientFailure(deps.logger, message, `insertAll ${tableName(badTable)}`, result.error);
    throw original;
  }
  logs.retryAgeExceeded(deps.logger, message, step, ageMs, error, tableName(badTable));
  return { destination: 'bad_data', messageId: message.messageId, targetDest: step, error: reason };
}

async function routeMessage(
  decoded: DecodeResult,
  deps: IngestDeps,
  progress: Progress,
): Promise<IngestOutcome> {
  const receivedAtMs = deps.now();
  if (!decoded.ok) {
    // An envelope-level failure: the row keeps the envelope's text and whatever attributes it carried.
    const message = {
      messageId: decoded.messageId,
      publishTimeMs: undefined,
      attributes: decoded.attributes,
      data: Buffer.from(decoded.raw),
    };
    progress.step = tableName(deps.config.quarantineTable, deps.config.projectId);
    const outcome = await quarantine(
      message,
      'PARSE_JSON',
      `Invalid Pub/Sub CloudEvent: ${decoded.reason}`,
      receivedAtMs,
      deps,
    );
    // Logged once the row is durable, so a failed write is never first reported as quarantined, then as a retry.
    if (outcome.destination === 'quarantine') {
      logs.malformedTrigger(deps.logger, message, decoded.reason);
    }
    return outcome;
  }
  const message = decoded.message;
  // The contract version first (attribute `contractVersion`, absent meaning "1"): a producer ahead of this
  // consumer, or one still on a retired version, is quarantined at SCHEMA_VALIDATION naming the version, never
  // validated as another version.
  const version = resolveVersion(BOOKING_PIPELINE.contract, message);
  if (!version.ok) {
    progress.step = tableName(deps.config.quarantineTable, deps.config.projectId);
    // Booking names its version in an attribute, so the refusal is always at the schema stage.
    const stage = ERROR_STAGES.find((s) => s === version.stage) ?? 'SCHEMA_VALIDATION';
    return quarantine(message, stage, version.reason, receivedAtMs, deps);
  }
  const validated = validateBooking(message.data, {
    messageId: message.messageId,
    receivedAtMs,
    maxFutureSkewMs: deps.config.maxFutureSkewMs,
    maxEventAgeMs: deps.config.maxEventAgeMs,
    defaultCurrency: deps.config.defaultCurrency,
    ...rulesAt(deps, message),
  });
  if (!validated.ok) {
    progress.step = tableName(deps.config.quarantineTable, deps.config.projectId);
    return quarantine(message, validated.stage, validated.reason, receivedAtMs, deps);
  }
  // Once, before anything stores the row: every copy made from it below carries the pseudonym.
  const result = deps.passengerId ? protectPassengerId(validated, deps.passengerId) : validated;

  const silver = deps.config.silverTable;
  const windowStep = 'window state (Firestore): event not counted in the aggregates';
  const row: InsertRow = {
    insertId: result.eventId,
    // The version the row was validated as (sql/046): readers tell a row of a later version from today's.
    json: { ...result.row, event_id: result.eventId, contract_version: version.version },
  };
  // Window state counts each valid booking once per delivery, after its row is durably stored somewhere.
  let counted = false;
  const countInWindows = async (where: string): Promise<void> => {
    if (counted) return;
    counted = true;
    progress.step = `${windowStep}; ${where}`;
    await deps.windowState?.record(result, message, receivedAtMs);
  };
  const held = async (reason: string): Promise<IngestOutcome> => {
    await countInWindows('the row waits in the schema-retry store');
    return {
      destination: 'schema_retry',
      messageId: message.messageId,
      eventId: result.eventId,
      reason,
    };
  };
  const routedToBadData = async (drift: DriftBadData): Promise<IngestOutcome> => {
    // A valid booking: counted in gold like any other (docs/windows.md).
    await countInWindows('the row is in the bad-data table');
    return {
      destination: 'bad_data',
      messageId: message.messageId,
      targetDest: drift.targetDest,
      error: drift.error,
    };
  };
  let onRejected: OnRejected | undefined;
  const gate = deps.schemaDrift;
  if (gate) {
    progress.step = `schema-retry store for ${tableName(silver, deps.config.projectId)}`;
    const drift = await gate.route(result, message, receivedAtMs, row);
    if (drift.action === 'held') return held(drift.reason);
    if (drift.action === 'bad_data') return routedToBadData(drift);
    const base: InsertRow = { insertId: row.insertId, json: { ...row.json } };
    // defineProperty, not assignment: a column named `__proto__` must stay a property of the row.
    for (const [column, value] of Object.entries(drift.extraColumns)) {
      Object.defineProperty(row.json, column, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    if (gate.holdRejected) {
      const holdRejected = gate.holdRejected.bind(gate);
      onRejected = async (rejection) => {
        const drift = await holdRejected(result, message, receivedAtMs, base, rejection);
        if (drift === undefined) return undefined;
        return drift.action === 'held' ? held(drift.reason) : routedToBadData(drift);
      };
    }
  }
  progress.step = tableName(silver, deps.config.projectId);
  const outcome = await writeOrBadData(message, silver, row, receivedAtMs, deps, onRejected);
  if (outcome !== undefined) {
    // Gold aggregates contract-valid bookings wherever their row is stored (docs/windows.md): a row BigQuery
    // refused is a valid booking in bad data, counted like one held or routed by the gate (counted once).
    if (outcome.destination === 'bad_data')
      await countInWindows('the row is in the bad-data table');
    return outcome;
  }
  const latency =
    message.publishTimeMs === undefined ? undefined : deps.now() - message.publishTimeMs;
  logs.silverWritten(deps.logger, message, result.eventId, tableName(silver), latency);
  await countInWindows(`the event is in ${tableName(silver, deps.config.projectId)}`);
  return { destination: 'silver', messageId: message.messageId, eventId: result.eventId };
}

/** The `rulesAtMs` validation option when the deps set a rules clock and it answers for this message. */
function rulesAt(deps: IngestDeps, message: PubSubMessage): { rulesAtMs?: number } {
  const at = deps.rulesAtMs?.(message);
  return at === undefined ? {} : { rulesAtMs: at };
}

async function quarantine(
  message: Pick<PubSubMessage, 'messageId' | 'publishTimeMs' | 'attributes' | 'data'>,
  stage: ErrorStage,
  reason: string,
  receivedAtMs: number,
  deps: IngestDeps,
): Promise<IngestOutcome> {
  const table = deps.config.quarantineTable;
  const json = quarantineRow(
    message,
    stage,
    reason,
    receivedAtMs,
    deps.config.quarantinePayloadMaxBytes,
  );
  const row: InsertRow = { insertId: message.messageId, json: { ...json } };
  const outcome = await writeOrBadData(message, table, row, receivedAtMs, deps);
  if (outcome !== undefined) return outcome;
  logs.messageQuarantined(deps.logger, message, stage, reason, tableName(table));
  return { destination: 'quarantine', messageId: message.messageId, stage, reason };
}

/** A chance to route a row BigQuery refused elsewhere than bad data (the drift gate); `undefined` declines. */
type OnRejected = (rejection: {
  error: string;
  missingFields: readonly string[];
}) => Promise<IngestOutcome | undefined>;

/**
 * Writes one row; if BigQuery refuses it as data, writes it to the bad-data table instead and returns that outcome.
 * Returns `undefined` when the row landed where it was meant to.
 */
async function writeOrBadData(
  message: Pick<PubSubMessage, 'messageId'>,
  table: TableRef,
  row: InsertRow,
  receivedAtMs: number,
  deps: IngestDeps,
  onRejected?: OnRejected,
): Promise<IngestOutcome | undefined> {
  const [result] = await write(deps, table, [row], message.messageId);
  if (result === undefined || result.ok) return undefined;
  const heldInstead = await onRejected?.(result);
  if (heldInstead !== undefined) return heldInstead;
  const targetDest = tableName(table, deps.config.projectId);
  logs.rowRejectedBySink(deps.logger, message, targetDest, row.insertId, result.error);
  const badData = JSON.stringify(row.json);
  // A row refused for lacking an insertId still gets a stable one here: the hash of its content.
  const insertId =
    insertIdProblem(row) === undefined
      ? row.insertId
      : `sha256:${createHash('sha256').update(badData, 'utf8').digest('hex')}`;
  const bad: BadDataRow = {
    bad_data: badData,
    target_dest: targetDest,
    error: result.error,
    insert_time: new Date(deps.now()).toISOString(),
    processed_timestamp: new Date(receivedAtMs).toISOString(),
    retry_count: 0,
    source_message_id: message.messageId,
    insert_id: insertId,
  };
  const badTable = deps.config.badDataTable;
  const [badResult] = await write(
    deps,
    badTable,
    [{ insertId: `bad:${insertId}`, json: { ...bad } }],
    message.messageId,
  );
  if (badResult !== undefined && !badResult.ok) {
    // Nowhere durable left to put it: refuse the message so Pub/Sub redelivers and, in the end, dead-letters it.
    throw new TransientError(
      `insertAll ${tableName(badTable)}`,
      `bad-data row refused: ${badResult.error}`,
    );
  }
  logs.badDataWritten(deps.logger, message, targetDest, tableName(badTable));
  return { destination: 'bad_data', messageId: message.messageId, targetDest, error: result.error };
}

async function write(deps: IngestDeps, table: TableRef, rows: InsertRow[], messageId: string) {
  try {
    return await deps.writer.insertRows(table, rows);
  } catch (err) {
    const operation =
      err instanceof TransientError ? err.operation : `insertAll ${tableName(table)}`;
    logs.transientFailure(deps.logger, { messageId }, operation, errorText(err));
    markReported(err);
    throw err;
  }
}
