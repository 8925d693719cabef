// Booking's ingest dependencies for unit tests: the generic runtime's deps for the configured booking definition, with
// a stub writer, a fixed clock, the limits of loadIngestConfig and, when asked, stub window state.
import type { Env } from '../../shared/config/env';
import { loadIngestConfig } from '../../shared/config/ingest-config';
import type { PassengerIdConfig } from '../../shared/config/passenger-id-config';
import { Logger, type LogEntry } from '../../shared/logging/logger';
import { configuredDefinition } from '../../shared/pipeline/definition';
import type {
  IngestAggregation,
  PipelineIngestDeps,
  SchemaDriftGate,
} from '../../shared/pipeline/runtime/ingest';
import { BOOKING_PIPELINE, type BookingSettings } from '../../shared/pipelines/booking/definition';
import type { DecodeResult, PubSubMessage } from '../../shared/pubsub/message';
import type { RowWriter } from '../../shared/sinks/row-writer';
import type { ElementOutcome, WindowElement } from '../../shared/state/keyed-windows';

/** What a test sets; the rest comes from `env` as the functions read it. */
export interface BookingIngestOptions {
  readonly writer: RowWriter;
  /** Processing time, epoch ms UTC. */
  readonly now: () => number;
  /** Default: a logger on `now`'s clock that appends each entry to `logs` (or drops it when `logs` is not given). */
  readonly logger?: Logger;
  readonly logs?: LogEntry[];
  readonly env?: Env;
  readonly passengerId?: PassengerIdConfig;
  readonly schemaDrift?: SchemaDriftGate;
  /** Window state; default none (as with `OFFVIA_WINDOWS_ENABLED=false`). */
  readonly aggregations?: readonly IngestAggregation[];
  readonly rulesAtMs?: (message: PubSubMessage) => number | undefined;
}

/** The ingest's dependencies with every field assignable, so a test can swap one part. */
export type MutableIngestDeps = {
  -readonly [K in keyof PipelineIngestDeps]: PipelineIngestDeps[K];
};

/**
 * The generic ingest's dependencies for booking: its definition configured for `env`, its settings (event-time
 * window, default currency, passenger-id protection), and the retry age, attempt deadline and payload cap of
 * `loadIngestConfig(env)`.
 */
export function bookingIngestDeps(options: BookingIngestOptions): MutableIngestDeps {
  const env = options.env ?? {};
  const config = loadIngestConfig(env);
  const settings: BookingSettings = {
    maxFutureSkewMs: config.maxFutureSkewMs,
    maxEventAgeMs: config.maxEventAgeMs,
    defaultCurrency: config.defaultCurrency,
    ...(options.passengerId && { passengerId: options.passengerId }),
  };
  return {
    definition: configuredDefinition(BOOKING_PIPELINE, env),
    settings,
    writer: options.writer,
    projectId: config.projectId,
    aggregations: options.aggregations ?? [],
    logger: options.logger ?? new Logger('test', (e) => options.logs?.push(e), options.now),
    now: options.now,
    maxRetryAgeMs: config.maxRetryAgeMs,
    attemptDeadlineMs: config.attemptDeadlineMs,
    payloadMaxBytes: config.quarantinePayloadMaxBytes,
    ...(options.schemaDrift && { schemaDrift: options.schemaDrift }),
    ...(options.rulesAtMs && { rulesAtMs: options.rulesAtMs }),
  };
}

/**
 * Booking's route aggregation with stub window state: `record` gets the route key and the element (event id,
 * message id, fare × 10^9 as a bigint, event time) and answers as the store would (default `counted`).
 */
export function bookingWindowStub(
  record: (key: string, element: WindowElement<unknown>) => Promise<ElementOutcome | void>,
): IngestAggregation {
  const aggregation = BOOKING_PIPELINE.aggregations[0];
  if (aggregation === undefined) throw new Error('booking defines no aggregation');
  return {
    aggregation,
    pipeline: {
      record: async (key, element) =>
        (await record(key, element)) ?? { kind: 'counted', dropped: [] },
    },
    holds: undefined,
  };
}

/**
 * A decoded Pub/Sub message as ingest receives it: `data` (UTF-8 text or raw bytes), no attributes, published one
 * second before `nowMs` (ms since the epoch, UTC).
 */
export function decodedMessage(
  nowMs: number,
  data: string | Buffer,
  messageId = 'm-1',
): DecodeResult {
  return {
    ok: true,
    message: {
      messageId,
      publishTime: new Date(nowMs - 1000).toISOString(),
      publishTimeMs: nowMs - 1000,
      attributes: {},
      data: Buffer.isBuffer(data) ? data : Buffer.from(data),
      subscription: undefined,
    },
  };
}
