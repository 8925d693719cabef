// The generic ingest of a pipeline definition: one pushed Pub/Sub message → versioned decode → Silver (insertId =
// event id) and each aggregation's windows, or the quarantine / dead-letter table; transient failures refuse the
// delivery so Pub/Sub redelivers. Every message ends in Silver, the quarantine table or bad data, and the logs say
// which.
import { createHash } from 'node:crypto';
import { tableName, type TableRef } from '../../config/env';
import { DeliveryRefused, TransientError, errorText } from '../../errors';
import type { BadDataRow } from '../../ingest/ingest-booking';
import { keptPayload } from '../../ingest/quarantine-row';
import { INGEST_VARS } from '../../config/ingest-config';
import type { Logger } from '../../logging/logger';
import * as logs from '../../logging/logs';
import {
  decodePushedEvent,
  type DecodeResult,
  type PubSubMessage,
  type PushedEvent,
} from '../../pubsub/message';
import type { InsertRow, RowWriter } from '../../sinks/row-writer';
import type { ElementOutcome } from '../../state/keyed-windows';
import type { AnyPipelineDefinition, ContractMessage, VersionAccepted } from '../definition';
import { decodeVersioned } from '../versioning';
import type { AggregationWindows } from './windows';

/** Payload bytes kept in a retry-age bad-data row when the deps name no limit (the variable's default). */
const DEFAULT_PAYLOAD_MAX_BYTES = INGEST_VARS.quarantinePayloadMaxBytes.default;

/** Where one message ended; every message gets one of these, or the call throws (redelivery). */
export type PipelineIngestOutcome =
  | {
      readonly destination: 'silver';
      readonly messageId: string;
      readonly eventId: string;
      readonly version: string;
      /** Per aggregation: what its windows did with the element (`skipped`: the aggregation takes no part). */
      readonly windows: Readonly<Record<string, ElementOutcome['kind'] | 'skipped'>>;
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
      /** The table BigQuery refused the row for. */
      readonly targetDest: string;
      readonly error: string;
    };

/** What the generic ingest needs; the composition root builds it from the environment, tests from emulators. */
export interface PipelineIngestDeps {
  readonly definition: AnyPipelineDefinition;
  /** The definition's settings, built once at cold start (`definition.createSettings`). */
  readonly settings: unknown;
  readonly writer: RowWriter;
  /** The project tables without one belong to (for `target_dest` and log lines); `undefined`: the client's. */
  readonly projectId: string | undefined;
  /** The definition's aggregations, built, in the definition's order. */
  readonly aggregations: readonly Pick<AggregationWindows, 'aggregation' | 'pipeline' | 'holds'>[];
  readonly logger: Logger;
  /** Processing time, epoch ms UTC. */
  readonly now: () => number;
  /**
   * The retry-age guard (`OFFVIA_MAX_RETRY_AGE_MS`, as booking's): a message still failing when it is older than
   * this (publish time to now, ms) is written to the bad-data table and acked instead of being refused again.
   * Absent: no guard (the ingest subscription's dead-letter topic takes what keeps failing).
   */
  readonly maxRetryAgeMs?: number;
  /** Longest payload kept in a retry-age bad-data row, bytes (`OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES`). */
  readonly payloadMaxBytes?: number;
}

/**
 * The whole job for one push: decode what the Functions Framework passed (a CloudEvent, or a Pub/Sub push body it
 * did not convert), then {@link ingestPipelineMessage}. Resolves (ack) once the message is in Silver and counted in
 * every aggregation, or in the quarantine or bad-data table. A refused delivery holds each aggregation's watermark
 * behind its publish time until it is processed (when holds are on).
 * @throws DeliveryRefused (Pub/Sub redelivers) whatever failed; its message names only the message id (the framework
 *   writes it into the 5xx body); the failure was logged with its context and is the `cause`.
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
 * Routes one decoded message. Accepted (`decodeVersioned`): the Silver row with insertId = the event id, then the
 * element of each aggregation (`input(event)`) into its windows, where the store's dedup ids count it once however
 * often it is redelivered. Rejected: the definition's quarantine row with insertId = the message id. A row BigQuery
 * refuses as data goes to the bad-data table (an accepted event is still counted: it is valid). An envelope that is
 * not a Pub/Sub message is rejected at the contract's first stage.
 * @throws TransientError (or whatever a dependency threw) when BigQuery or Firestore failed: Pub/Sub must redeliver
 */
export async function ingestPipelineMessage(
  decoded: DecodeResult,
  deps: PipelineIngestDeps,
): Promise<PipelineIngestOutcome> {
  const receivedAtMs = deps.now();
  const messageId = decoded.ok ? decoded.message.messageId : decoded.messageId;
  let step = 'decode';
  try {
    if (!decoded.ok) {
      const message: ContractMessage = {
        messageId: decoded.messageId,
        publishTimeMs: undefined,
        attributes: decoded.attributes,
        data: Buffer.from(decoded.raw),
      };
      const stage = deps.definition.contract.stages[0] ?? 'PARSE_JSON';
      step = tableName(deps.definition.tables.quarantine, deps.projectId);
      const outcome = await quarantine(
        message,
        { stage, reason: `Invalid Pub/Sub CloudEvent: ${decoded.reason}`, version: null },
        receivedAtMs,
        deps,
      );
      if (outcome.destination === 'quarantine')
        logs.malformedTrigger(deps.logger, message, decoded.reason);
      return outcome;
    }
    const message = decoded.message;
    const outcome = decodeVersioned(deps.definition.contract, message, {
      receivedAtMs,
      settings: deps.settings,
    });
    if (!outcome.ok) {
      step = tableName(deps.definition.tables.quarantine, deps.projectId);
      return await quarantine(message, outcome, receivedAtMs, deps);
    }
    const silver = deps.definition.tables.silver;
    step = tableName(silver, deps.projectId);
    const row: InsertRow = { insertId: outcome.eventId, json: { ...(outcome.row as object) } };
    const refused = await writeOrBadData(message, silver, row, receivedAtMs, deps);
    step = `window state (Firestore): event not counted in the aggregates; the row is in ${
      refused === undefined
        ? tableName(silver, deps.projectId)
        : tableName(deps.definition.tables.badData, deps.projectId)
    }`;
    const windows = await countInWindows(outcome, message, receivedAtMs, deps);
    if (refused !== undefined) return refused;
    const latency =
      message.publishTimeMs === undefined ? undefined : deps.now() - message.publishTimeMs;
    logs.silverWritten(deps.logger, message, outcome.eventId, tableName(silver), latency);
    return {
      destination: 'silver',
      messageId,
      eventId: outcome.eventId,
      version: outcome.version,
      windows,
    };
  } catch (err) {
    const operation = err instanceof TransientError ? err.operation : step;
    if (decoded.ok && deps.maxRetryAgeMs !== undefined) {
      const publishedMs = decoded.message.publishTimeMs;
      const ageMs = publishedMs === undefined ? undefined : deps.now() - publishedMs;
      if (ageMs !== undefined && ageMs > deps.maxRetryAgeMs) {
        return retryAgeExceeded(decoded.message, operation, errorText(err), ageMs, deps, err);
      }
    }
    // One line with the context before Pub/Sub redelivers (the writes and window sinks do not log it themselves).
    logs.transientFailure(deps.logger, { messageId }, operation, errorText(err));
    throw err;
  }
}

/**
 * The retry-age guard's route, as booking's: a bad-data row holding the message (text, base64 bytes when not
 * UTF-8, attributes, publish time), the step that kept failing and its last error; insertId
 * `retry-age:<message id>`, so a redelivery racing it adds no second row.
 * @throws the original error when the bad-data table refuses the row or is down too (redelivery, then dead letter)
 */
async function retryAgeExceeded(
  message: PubSubMessage,
  step: string,
  error: string,
  ageMs: number,
  deps: PipelineIngestDeps,
  original: unknown,
): Promise<PipelineIngestOutcome> {
  const nowMs = deps.now();
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

/**
 * Folds an accepted event into every aggregation that takes part (`input` not `null`), concurrently; each resolves
 * once committed (or found a duplicate, or dropped as too late).
 * @throws the first failure once all have settled (the others are committed; a redelivery is deduplicated there)
 */
async function countInWindows(
  event: VersionAccepted<unknown, unknown>,
  message: Pick<PubSubMessage, 'messageId'>,
  receivedAtMs: number,
  deps: PipelineIngestDeps,
): Promise<Record<string, ElementOutcome['kind'] | 'skipped'>> {
  const settled = await Promise.allSettled(
    deps.aggregations.map(async (a) => {
      const input = a.aggregation.input(event);
      if (input === null) return 'skipped' as const;
      const outcome = await a.pipeline.record(input.key, {
        eventId: event.eventId,
        messageId: message.messageId,
        value: input.value,
        timestampMs: event.eventTimeMs,
        receivedAtMs,
      });
      return outcome.kind;
    }),
  );
  const result: Record<string, ElementOutcome['kind'] | 'skipped'> = {};
  for (const [i, s] of settled.entries()) {
    const name = deps.aggregations[i]?.aggregation.name ?? String(i);
    // Thrown as it is: the caller logs it with the step (the window state) before the delivery is refused.
    if (s.status === 'rejected') throw s.reason;
    result[name] = s.value;
  }
  return result;
}

async function quarantine(
  message: ContractMessage,
  rejection: { readonly stage: string; readonly reason: string; readonly version: string | null },
  receivedAtMs: number,
  deps: PipelineIngestDeps,
): Promise<PipelineIngestOutcome> {
  const table = deps.definition.tables.quarantine;
  const json = deps.definition.quarantineRow(message, rejection, receivedAtMs);
  const refused = await writeOrBadData(
    message,
    table,
    { insertId: message.messageId, json },
    receivedAtMs,
    deps,
  );
  if (refused !== undefined) return refused;
  deadLettered(deps.logger, message, deps.definition.name, rejection, tableName(table));
  return {
    destination: 'quarantine',
    messageId: message.messageId,
    stage: rejection.stage,
    reason: rejection.reason,
    version: rejection.version,
  };
}

/**
 * A rejected message is in the pipeline's quarantine (dead-letter) table: one WARNING line, `outcome: quarantine`,
 * as booking's `message quarantined`, with the pipeline and the contract version.
 */
function deadLettered(
  logger: Logger,
  message: Pick<PubSubMessage, 'messageId'>,
  pipeline: string,
  rejection: { readonly stage: string; readonly reason: string; readonly version: string | null },
  table: string,
): void {
  logger.write('WARNING', 'message quarantined', {
    outcome: 'quarantine',
    pipeline,
    message_id: message.messageId,
    error_stage: rejection.stage,
    error_reason: rejection.reason,
    contract_version: rejection.version,
    table,
  });
}

/**
 * Writes one row; when BigQuery refuses it as data, writes it to the pipeline's bad-data table instead and returns
 * that outcome. `undefined` when the row landed where it was meant to.
 * @throws TransientError when a write failed for an infrastructure reason, or the bad-data row was refused too
 */
async function writeOrBadData(
  message: Pick<PubSubMessage, 'messageId'>,
  table: TableRef,
  row: InsertRow,
  receivedAtMs: number,
  deps: PipelineIngestDeps,
): Promise<PipelineIngestOutcome | undefined> {
  const [result] = await deps.writer.insertRows(table, [row]);
  if (result === undefined || result.ok) return undefined;
  const targetDest = tableName(table, deps.projectId);
  logs.rowRejectedBySink(deps.logger, message, targetDest, row.insertId, result.error);
  const badData = JSON.stringify(row.json);
  const insertId =
    row.insertId === '' // a row refused for lacking an insertId gets a stable one: its content's hash
      ? `sha256:${createHash('sha256').update(badData, 'utf8').digest('hex')}`
      : row.insertId;
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
  const [badResult] = await deps.writer.insertRows(badTable, [
    { insertId: `bad:${insertId}`, json: { ...bad } },
  ]);
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
