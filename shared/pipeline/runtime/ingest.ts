// The ingest of every pipeline definition: one pushed Pub/Sub message to Silver, the schema-retry store, bad data or
// quarantine, and to each aggregation's windows; transient failures refuse the delivery so Pub/Sub redelivers.
import { createHash } from 'node:crypto';
import { tableName, type TableRef } from '../../config/env';
import {
  type AttemptObservations,
  describeObservations,
  observeAttempt,
} from '../../attempt-observations';
import { defineField } from '../../contract/json-payload';
import { DeliveryRefused, TransientError, errorText } from '../../errors';
import { keptPayload } from '../../ingest/quarantine-row';
import { INGEST_VARS } from '../../config/ingest-config';
import type { Logger } from '../../logging/logger';
import * as logs from '../../logging/logs';
import {
  decodePushedEvent,
  isHeartbeat,
  type DecodeResult,
  type PubSubMessage,
  type PushedEvent,
} from '../../pubsub/message';
import { type InsertRow, type RowWriter, insertIdProblem } from '../../sinks/row-writer';
import type { ElementOutcome } from '../../state/keyed-windows';
import type { ElementRecorder } from '../../state/session-pipeline';
import { JointMemberRecorder, type JointInput } from '../../state/windowed-pipeline';
import type { AnyPipelineDefinition, ContractMessage, VersionAccepted } from '../definition';
import { decodeVersioned } from '../versioning';
import type { AnyAggregation } from './windows';

/** Payload bytes kept in quarantine and retry-age rows when the deps name no limit (the variable's default). */
const DEFAULT_PAYLOAD_MAX_BYTES = INGEST_VARS.quarantinePayloadMaxBytes.default;

/** What each aggregation did with an accepted event (`skipped`: it takes no part). */
export type WindowOutcomes = Readonly<Record<string, ElementOutcome['kind'] | 'skipped'>>;

/** Where one message ended; every message gets one of these, or the call throws (redelivery). */
export type PipelineIngestOutcome =
  | {
      readonly destination: 'silver';
      readonly messageId: string;
      readonly eventId: string;
      readonly version: string;
      /** Per aggregation: what its windows did with the element. */
      readonly windows: WindowOutcomes;
    }
  | {
      readonly destination: 'quarantine';
      readonly messageId: string;
      readonly stage: string;
      readonly reason: string;
      readonly version: string | null;
    }
  | {
      readonly destination: 'bad_data';
      readonly messageId: string;
      /** The table BigQuery refused the row for, or the step that kept failing (retry-age guard). */
      readonly targetDest: string;
      readonly error: string;
    }
  | {
      /**
       * A watermark heartbeat (`HEARTBEAT_ATTRIBUTE`): its publish time was recorded for each aggregation's
       * watermark, and it went nowhere else (docs/windows.md "Heartbeats").
       */
      readonly destination: 'heartbeat';
      readonly messageId: string;
      /** Its Pub/Sub publish time, epoch ms UTC; `null` when the push carried none (then nothing was recorded). */
      readonly publishTimeMs: number | null;
    }
  | {
      /** A valid event whose extra fields are not all columns yet: its row waits in the schema-retry store. */
      readonly destination: 'schema_retry';
      readonly messageId: string;
      readonly eventId: string;
      readonly reason: string;
    };

/** A row of a pipeline's bad-data table (booking: `offvia_quarantine.bad_data`, sql/040), as streamed. */
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

/** What the schema-drift gate reads of an accepted event: its id and the payload fields the contract does not know. */
export type DriftEvent = Pick<VersionAccepted<unknown, unknown>, 'eventId' | 'extraFields'>;

/** The gate wrote the row to bad data itself (permanent schema error, row too large to wait); its columns. */
export type DriftBadData = { action: 'bad_data'; targetDest: string; error: string };

/**
 * Schema drift (`schemaDrift.mode` `sweep`): an accepted event's extra fields that are already Silver columns (to add
 * to the row), or `held` once the row is durably in the schema-retry store, waiting for the sweep's table update.
 */
export interface SchemaDriftGate {
  /** @throws TransientError when the schema or the retry store cannot be reached (redelivery). */
  route(
    event: DriftEvent,
    message: PubSubMessage,
    receivedAtMs: number,
    row: InsertRow,
  ): Promise<
    | { action: 'write'; extraColumns: Record<string, unknown> }
    | { action: 'held'; reason: string }
    | DriftBadData
  >;
  /**
   * Optional: BigQuery refused the row `route` said to `write` (e.g. "no such field": a stale cached schema). The
   * gate may answer `held` once it is in the retry store; `undefined` sends it to bad data. `row` is without its
   * extra columns.
   * @throws TransientError when the retry store cannot be reached (redelivery).
   */
  holdRejected?(
    event: DriftEvent,
    message: PubSubMessage,
    receivedAtMs: number,
    row: InsertRow,
    rejection: { error: string; missingFields: readonly string[] },
  ): Promise<{ action: 'held'; reason: string } | DriftBadData | undefined>;
}

/** A delivery hold call: the message as delivered, processing time epoch ms UTC. */
type HoldCall = (
  message: Pick<PubSubMessage, 'messageId' | 'publishTimeMs'>,
  nowMs: number,
) => Promise<void>;

/** One aggregation as the ingest uses it: its definition, its per-event path and its delivery holds. */
export interface IngestAggregation {
  readonly aggregation: AnyAggregation;
  /** Counts an element once (dedup by event id); a `JointMemberRecorder` when on the pipeline's joint path. */
  readonly pipeline: ElementRecorder<never>;
  /** Watermark holds of refused deliveries; `undefined` when holds are off. */
  readonly holds: { readonly failed: HoldCall; readonly processed: HoldCall } | undefined;
  /** Where heartbeats are recorded (`HeartbeatStore`); absent: heartbeats are acked and recorded nowhere. */
  readonly heartbeats?: {
    recordHeartbeat(publishTimeMs: number, nowMs: number): Promise<void>;
  };
}

/** What the ingest needs; the composition root builds it from the environment, tests from emulators or stubs. */
export interface PipelineIngestDeps {
  /** The definition, configured for this deployment (`configure`, applied by the composition root). */
  readonly definition: AnyPipelineDefinition;
  /** The definition's settings, built once at cold start (`definition.createSettings`). */
  readonly settings: unknown;
  readonly writer: RowWriter;
  /** The project tables without one belong to (for `target_dest` and log lines); `undefined`: the client's. */
  readonly projectId: string | undefined;
  /** The definition's aggregations, built, in the definition's order. */
  readonly aggregations: readonly IngestAggregation[];
  readonly logger: Logger;
  /** Processing time, epoch ms UTC. */
  readonly now: () => number;
  /**
   * The retry-age guard (`OFFVIA_MAX_RETRY_AGE_MS`): a message still failing when older than this (publish time to
   * now, ms) goes to bad data and is acked. Absent: no guard (the dead-letter topic takes what keeps failing).
   */
  readonly maxRetryAgeMs?: number;
  /**
   * Longest one delivery may take, ms (`OFFVIA_ATTEMPT_DEADLINE_MS`): a hanging dependency is then a transient
   * failure like any other. Absent: no deadline.
   */
  readonly attemptDeadlineMs?: number;
  /** Longest payload kept in quarantine and retry-age rows, bytes (`OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES`). */
  readonly payloadMaxBytes?: number;
  /** The schema-drift gate, when the definition's `schemaDrift.mode` is `sweep`; absent: extra fields ignored. */
  readonly schemaDrift?: SchemaDriftGate;
  /** `DecodeContext.rulesAtMs` for a message (epoch ms UTC); `offvia replay` passes the publish time. */
  readonly rulesAtMs?: (message: PubSubMessage) => number | undefined;
}

/**
 * The whole job for one push: {@link decodePushedEvent}, then {@link ingestPipelineMessage}. A refused delivery holds
 * each aggregation's watermark behind its publish time until it is processed (when holds are on).
 * @throws DeliveryRefused (Pub/Sub redelivers) whatever failed, naming only the message id (the framework writes it
 *   into the 5xx body); the failure was logged with its context and is the `cause`.
 */
export async function ingestPipelinePushedEvent(
  event: PushedEvent,
  deps: PipelineIngestDeps,
): Promise<PipelineIngestOutcome> {
  const decoded = decodePushedEvent(event);
  let outcome: PipelineIngestOutcome;
  try {
    outcome = await ingestPipelineMessage(decoded, deps);
  } catch (err) {
    if (decoded.ok) {
      for (const a of deps.aggregations) await a.holds?.failed(decoded.message, deps.now());
    }
    throw new DeliveryRefused(decoded.ok ? decoded.message.messageId : decoded.messageId, {
      cause: err,
    });
  }
  if (decoded.ok) {
    for (const a of deps.aggregations) await a.holds?.processed(decoded.message, deps.now());
  }
  return outcome;
}

/**
 * Routes one decoded message; resolves (ack) once it is in Silver, the schema-retry store, quarantine or bad data.
 * Accepted: through the drift gate if any, the Silver row with insertId = the event id, then each aggregation's
 * element into its windows, where the dedup ids count it once however often it is redelivered (a valid event held or
 * in bad data is counted too, docs/windows.md). Rejected: the quarantine row with insertId = the message id (a
 * non-Pub/Sub envelope at the contract's first stage). Past `maxRetryAgeMs`: {@link retryAgeExceeded}. Every
 * failure is logged once, with its step.
 * @throws TransientError (or whatever a dependency threw) when BigQuery or Firestore failed and the message is
 *   younger than the guard, or the guard's bad-data write failed too: Pub/Sub must redeliver
 */
export async function ingestPipelineMessage(
  decoded: DecodeResult,
  deps: PipelineIngestDeps,
): Promise<PipelineIngestOutcome> {
  if (decoded.ok && isHeartbeat(decoded.message.attributes)) {
    return recordHeartbeat(decoded.message, deps);
  }
  const progress: Progress = { step: 'decode' };
  const messageId = decoded.ok ? decoded.message.messageId : decoded.messageId;
  const attempt = observeAttempt(() => routeMessage(decoded, deps, progress));
  try {
    return await withDeadline(attempt.result, attempt.observations, messageId, deps, progress);
  } catch (err) {
    if (decoded.ok && deps.maxRetryAgeMs !== undefined) {
      const publishedMs = decoded.message.publishTimeMs;
      const ageMs = publishedMs === undefined ? undefined : deps.now() - publishedMs;
      if (ageMs !== undefined && ageMs > deps.maxRetryAgeMs) {
        return retryAgeExceeded(decoded.message, progress.step, ageMs, deps, err);
      }
    }
    // Every failure leaves a line with its context, once (the writes log their own), before Pub/Sub redelivers.
    if (!isReported(err))
      logs.transientFailure(deps.logger, { messageId }, progress.step, errorText(err));
    throw err;
  }
}

/**
 * A heartbeat, recognised by its attribute before any validation: its publish time goes to every aggregation's
 * heartbeat record (the watermark's idle rule goes no further, `heartbeatHoldAt`), and nothing else is written.
 * @throws TransientError when a record cannot be written (Pub/Sub redelivers; the watermark waits meanwhile)
 */
async function recordHeartbeat(
  message: PubSubMessage,
  deps: PipelineIngestDeps,
): Promise<PipelineIngestOutcome> {
  const publishTimeMs = message.publishTimeMs ?? null;
  if (publishTimeMs !== null) {
    try {
      for (const a of deps.aggregations)
        await a.heartbeats?.recordHeartbeat(publishTimeMs, deps.now());
    } catch (err) {
      logs.transientFailure(
        deps.logger,
        { messageId: message.messageId },
        'heartbeat',
        errorText(err),
      );
      throw err;
    }
  }
  return { destination: 'heartbeat', messageId: message.messageId, publishTimeMs };
}

/** The step a message was at when it failed: the table (or window store, or retry store) it was being written to. */
interface Progress {
  step: string;
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
 * Settles as `attempt` does, or rejects with a TransientError once `deps.attemptDeadlineMs` has passed, naming what
 * it ran into (`observations`). The attempt goes on in the background; what it still writes is idempotent
 * (insertIds, dedup ids, one retry-store document per insertId), and a late failure is logged, not thrown.
 */
async function withDeadline(
  attempt: Promise<PipelineIngestOutcome>,
  observations: AttemptObservations,
  messageId: string,
  deps: PipelineIngestDeps,
  progress: Progress,
): Promise<PipelineIngestOutcome> {
  const ms = deps.attemptDeadlineMs;
  if (ms === undefined) return attempt;
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
        { messageId },
        `${progress.step} (after the attempt deadline)`,
        errorText(err),
      );
    }
  });
  try {
    return await Promise.race([attempt, deadline]);
  } catch (err) {
    if (timedOut) {
      logs.transientFailure(deps.logger, { messageId }, progress.step, errorText(err));
      markReported(err);
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

async function routeMessage(
  decoded: DecodeResult,
  deps: PipelineIngestDeps,
  progress: Progress,
): Promise<PipelineIngestOutcome> {
  const receivedAtMs = deps.now();
  const { definition, projectId } = deps;
  const quarantineStep = tableName(definition.tables.quarantine, projectId);
  if (!decoded.ok) {
    const message: ContractMessage = {
      messageId: decoded.messageId,
      publishTimeMs: undefined,
      attributes: decoded.attributes,
      data: Buffer.from(decoded.raw),
    };
    const stage = definition.contract.stages[0] ?? 'PARSE_JSON';
    progress.step = quarantineStep;
    const outcome = await quarantine(
      message,
      { stage, reason: `Invalid Pub/Sub CloudEvent: ${decoded.reason}`, version: null },
      receivedAtMs,
      deps,
    );
    // Logged once the row is durable, so a failed write is never first reported as quarantined, then as a retry.
    if (outcome.destination === 'quarantine')
      logs.malformedTrigger(deps.logger, message, decoded.reason);
    return outcome;
  }
  const message = decoded.message;
  const rulesAtMs = deps.rulesAtMs?.(message);
  const event = decodeVersioned(definition.contract, message, {
    receivedAtMs,
    settings: deps.settings,
    ...(rulesAtMs !== undefined && { rulesAtMs }),
  });
  if (!event.ok) {
    progress.step = quarantineStep;
    return quarantine(message, event, receivedAtMs, deps);
  }
  const silver = definition.tables.silver;
  const silverName = tableName(silver, projectId);
  const row: InsertRow = { insertId: event.eventId, json: { ...(event.row as object) } };
  // The aggregations count each valid event once per delivery, after its row is durably stored somewhere.
  let counted = false;
  const count = async (where: string): Promise<WindowOutcomes> => {
    if (counted) return {};
    counted = true;
    progress.step = `window state (Firestore): event not counted in the aggregates; ${where}`;
    return countInWindows(event, message, receivedAtMs, deps);
  };
  const inBadData = 'the row is in the bad-data table';
  const { messageId } = message;
  const held = async (reason: string): Promise<PipelineIngestOutcome> => {
    await count('the row waits in the schema-retry store');
    return { destination: 'schema_retry', messageId, eventId: event.eventId, reason };
  };
  const routedToBadData = async (drift: DriftBadData): Promise<PipelineIngestOutcome> => {
    await count(inBadData);
    const { targetDest, error } = drift;
    return { destination: 'bad_data', messageId, targetDest, error };
  };
  let onRejected: OnRejected | undefined;
  const gate = deps.schemaDrift;
  if (gate) {
    progress.step = `schema-retry store for ${silverName}`;
    const drift = await gate.route(event, message, receivedAtMs, row);
    if (drift.action === 'held') return held(drift.reason);
    if (drift.action === 'bad_data') return routedToBadData(drift);
    const base: InsertRow = { insertId: row.insertId, json: { ...row.json } };
    // defineField, not assignment: a column named `__proto__` must stay a property of the row.
    for (const [column, value] of Object.entries(drift.extraColumns)) {
      defineField(row.json, column, value);
    }
    if (gate.holdRejected) {
      const holdRejected = gate.holdRejected.bind(gate);
      onRejected = async (rejection) => {
        const again = await holdRejected(event, message, receivedAtMs, base, rejection);
        if (again === undefined) return undefined;
        return again.action === 'held' ? held(again.reason) : routedToBadData(again);
      };
    }
  }
  progress.step = silverName;
  const refused = await writeOrBadData(message, silver, row, receivedAtMs, deps, onRejected);
  if (refused !== undefined) {
    // A row BigQuery refused is a valid event in bad data, counted like one held or routed by the gate (once).
    if (refused.destination === 'bad_data') await count(inBadData);
    return refused;
  }
  const latency =
    message.publishTimeMs === undefined ? undefined : deps.now() - message.publishTimeMs;
  logs.silverWritten(deps.logger, {
    message_id: message.messageId,
    event_id: event.eventId,
    table: tableName(silver),
    publish_to_write_ms: latency,
  });
  const windows = await count(`the event is in ${silverName}`);
  return {
    destination: 'silver',
    messageId: message.messageId,
    eventId: event.eventId,
    version: event.version,
    windows,
  };
}

/**
 * The retry-age guard's route: a bad-data row holding the message (capped as in quarantine, with attributes and
 * publish time: replayable), the step that kept failing (it says so when only the window state failed) and its last
 * error; insertId `retry-age:<message id>`, so a redelivery racing it adds no second row.
 * @throws the original error when the bad-data table refuses the row or is down too (redelivery, then dead letter)
 */
async function retryAgeExceeded(
  message: PubSubMessage,
  step: string,
  ageMs: number,
  deps: PipelineIngestDeps,
  original: unknown,
): Promise<PipelineIngestOutcome> {
  const nowMs = deps.now();
  const error = errorText(original);
  const reason = `retry age exceeded: still failing ${ageMs} ms after publish (limit OFFVIA_MAX_RETRY_AGE_MS=${String(deps.maxRetryAgeMs)}) at ${step}: ${error}`;
  const bad: BadDataRow = {
    bad_data: JSON.stringify({
      ...keptPayload(message.data, deps.payloadMaxBytes ?? DEFAULT_PAYLOAD_MAX_BYTES),
      attributes: message.attributes,
      publish_time: message.publishTime ?? null,
    }),
    target_dest: step,
    error: reason,
    insert_time: new Date(nowMs).toISOString(),
    processed_timestamp: new Date(nowMs).toISOString(),
    retry_count: 0,
    source_message_id: message.messageId,
    insert_id: `retry-age:${message.messageId}`,
  };
  const badTable = deps.definition.tables.badData;
  let failure: string | undefined;
  try {
    const [result] = await deps.writer.insertRows(badTable, [
      { insertId: bad.insert_id, json: { ...bad } },
    ]);
    if (result !== undefined && !result.ok) failure = result.error;
  } catch (err) {
    failure = errorText(err);
  }
  if (failure !== undefined) {
    logs.transientFailure(deps.logger, message, `insertAll ${tableName(badTable)}`, failure);
    throw original;
  }
  logs.retryAgeExceeded(deps.logger, {
    message_id: message.messageId,
    target_dest: step,
    age_ms: ageMs,
    error,
    table: tableName(badTable),
  });
  return { destination: 'bad_data', messageId: message.messageId, targetDest: step, error: reason };
}

/** The joint per-event path as the ingest calls it. */
interface JointRecording {
  record(inputs: readonly JointInput<never>[]): Promise<ElementOutcome[]>;
}

/**
 * Folds an accepted event into every aggregation that takes part (`input` not `null`), concurrently: a joint path's
 * members in one call (one transaction), the others each on its own.
 * @throws the first failure once all have settled (the others are committed; a redelivery is deduplicated there)
 */
async function countInWindows(
  event: VersionAccepted<unknown, unknown>,
  message: Pick<PubSubMessage, 'messageId'>,
  receivedAtMs: number,
  deps: PipelineIngestDeps,
): Promise<WindowOutcomes> {
  const kinds = new Map<number, ElementOutcome['kind'] | 'skipped'>();
  // Per joint pipeline: the event's inputs to its members, and their aggregations' indexes.
  const joints = new Map<JointRecording, { inputs: JointInput<never>[]; indexes: number[] }>();
  const work: Promise<void>[] = [];
  deps.aggregations.forEach((a, i) => {
    const input = a.aggregation.input(event);
    if (input === null) {
      kinds.set(i, 'skipped');
      return;
    }
    const element = {
      eventId: event.eventId,
      messageId: message.messageId,
      value: input.value,
      timestampMs: event.eventTimeMs,
      receivedAtMs,
    };
    const recorder = a.pipeline;
    if (!(recorder instanceof JointMemberRecorder)) {
      work.push(recorder.record(input.key, element).then((o) => void kinds.set(i, o.kind)));
      return;
    }
    const entry = joints.get(recorder.joint) ?? { inputs: [], indexes: [] };
    entry.inputs.push({ member: recorder.member, key: input.key, element });
    entry.indexes.push(i);
    joints.set(recorder.joint, entry);
  });
  for (const [joint, { inputs, indexes }] of joints) {
    work.push(
      joint
        .record(inputs)
        .then((outcomes) => outcomes.forEach((o, k) => kinds.set(indexes[k] ?? -1, o.kind))),
    );
  }
  const settled = await Promise.allSettled(work);
  for (const s of settled) if (s.status === 'rejected') throw s.reason;
  const result: Record<string, ElementOutcome['kind'] | 'skipped'> = {};
  deps.aggregations.forEach((a, i) => {
    const kind = kinds.get(i);
    if (kind !== undefined) result[a.aggregation.name] = kind;
  });
  return result;
}

async function quarantine(
  message: ContractMessage,
  rejection: { readonly stage: string; readonly reason: string; readonly version: string | null },
  receivedAtMs: number,
  deps: PipelineIngestDeps,
): Promise<PipelineIngestOutcome> {
  const table = deps.definition.tables.quarantine;
  const json = deps.definition.quarantineRow(
    message,
    rejection,
    receivedAtMs,
    deps.payloadMaxBytes ?? DEFAULT_PAYLOAD_MAX_BYTES,
  );
  const refused = await writeOrBadData(
    message,
    table,
    { insertId: message.messageId, json },
    receivedAtMs,
    deps,
  );
  if (refused !== undefined) return refused;
  logs.messageQuarantined(
    deps.logger,
    message,
    rejection.stage,
    rejection.reason,
    tableName(table),
    {
      pipeline: deps.definition.name,
      contractVersion: rejection.version,
    },
  );
  return {
    destination: 'quarantine',
    messageId: message.messageId,
    stage: rejection.stage,
    reason: rejection.reason,
    version: rejection.version,
  };
}

/** A chance to route a row BigQuery refused elsewhere than bad data (the drift gate); `undefined` declines. */
type OnRejected = (rejection: {
  error: string;
  missingFields: readonly string[];
}) => Promise<PipelineIngestOutcome | undefined>;

/**
 * Writes one row; a row BigQuery refuses as data goes to `onRejected`, else to bad data (that outcome is returned).
 * `undefined` when the row landed where it was meant to.
 * @throws TransientError when a write failed for an infrastructure reason (logged here, with its operation), or the
 *   bad-data row was refused too
 */
async function writeOrBadData(
  message: Pick<PubSubMessage, 'messageId'>,
  table: TableRef,
  row: InsertRow,
  receivedAtMs: number,
  deps: PipelineIngestDeps,
  onRejected?: OnRejected,
): Promise<PipelineIngestOutcome | undefined> {
  const [result] = await write(deps, table, row, message.messageId);
  if (result === undefined || result.ok) return undefined;
  const heldInstead = await onRejected?.(result);
  if (heldInstead !== undefined) return heldInstead;
  const targetDest = tableName(table, deps.projectId);
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
  const badTable = deps.definition.tables.badData;
  const [badResult] = await write(
    deps,
    badTable,
    { insertId: `bad:${insertId}`, json: { ...bad } },
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

/** One insertAll; a failure is logged here with its operation (and not again by the catch-all), then thrown. */
async function write(deps: PipelineIngestDeps, table: TableRef, row: InsertRow, messageId: string) {
  try {
    return await deps.writer.insertRows(table, [row]);
  } catch (err) {
    const operation =
      err instanceof TransientError ? err.operation : `insertAll ${tableName(table)}`;
    logs.transientFailure(deps.logger, { messageId }, operation, errorText(err));
    markReported(err);
    throw err;
  }
}
