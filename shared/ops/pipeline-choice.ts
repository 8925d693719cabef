// `offvia --pipeline NAME`: which registered pipeline a command works on, which commands apply to it, and where
// its layers are (tables, columns, Firestore roots), resolved from its definition instead of booking constants.
import { tableName, type TableRef } from '../config/env';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { PIPELINES } from '../pipelines';
import { UsageError } from './errors';

/** The pipeline every command works on when `--pipeline` is absent: the booking pipeline, as before the registry. */
export const DEFAULT_PIPELINE = 'booking';

/**
 * The registered pipeline named by `--pipeline` (`undefined`: the default).
 * @throws UsageError (exit 2), one line naming the registered pipelines, for a name not in the registry
 */
export function choosePipeline(
  name: string | undefined,
  registry: readonly AnyPipelineDefinition[] = PIPELINES,
): AnyPipelineDefinition {
  const wanted = name ?? DEFAULT_PIPELINE;
  const found = registry.find((p) => p.name === wanted);
  if (found === undefined) {
    throw new UsageError(
      `--pipeline ${JSON.stringify(wanted)}: no such pipeline (registered: ${registry.map((p) => p.name).join(', ')})`,
    );
  }
  return found;
}

/**
 * Where a pipeline's rejected messages and accepted rows keep the columns `offvia` reads. The definition names
 * the tables; their column names differ by pipeline (the booking quarantine is the lab's `poisoned_events`, the
 * telemetry dead-letter table the study guide's payload / error / stage / parse time), so they are listed here.
 */
export interface PipelineOpsLayout {
  /** Silver: when a row was written, its event id (the insertId) and its Pub/Sub message id. */
  readonly silver: {
    readonly writtenAt: string;
    readonly eventId: string;
    readonly messageId: string;
    /** The view that keeps one row per event id. */
    readonly dedupView: TableRef;
    /** Event time (TIMESTAMP): places the event in its windows. */
    readonly eventTime: string;
    /**
     * Per aggregation name, the Silver column holding the key the aggregation counts the event under (a row whose
     * column is NULL takes no part in that aggregation, e.g. an unknown device in the regional ranking).
     */
    readonly keyColumns: Readonly<Record<string, string>>;
  };
  /** The quarantine or dead-letter table. */
  readonly quarantine: {
    readonly stage: string;
    readonly reason: string;
    /** When the message was rejected (the table's partitioning column where it has one). */
    readonly rejectedAt: string;
    readonly messageId: string;
    readonly payload: string;
    /** Other columns `quarantine list` shows (e.g. the device id), in order. */
    readonly extra: readonly string[];
  };
}

/** The layouts per pipeline name (booking's `status` and `trace` keep their own code: status.ts, trace.ts). */
const LAYOUTS: Readonly<Record<string, PipelineOpsLayout>> = {
  // Booking's own commands read its tables from the configuration (OFFVIA_* overrides); `quarantine list` uses this.
  booking: {
    silver: {
      writtenAt: 'ingestion_timestamp',
      eventId: 'event_id',
      messageId: 'source_message_id',
      dedupView: { datasetId: 'offvia_silver', tableId: 'fact_bookings_dedup' },
      eventTime: 'event_timestamp',
      // Booking's route key is three columns (trace.ts builds it); booking's trace never reads this map.
      keyColumns: {},
    },
    quarantine: {
      stage: 'error_stage',
      reason: 'error_reason',
      rejectedAt: 'received_timestamp',
      messageId: 'source_message_id',
      payload: 'raw_payload',
      extra: ['reprocess_run_id'],
    },
  },
  telemetry: {
    silver: {
      writtenAt: 'ingestion_timestamp',
      eventId: 'event_id',
      messageId: 'source_message_id',
      dedupView: { datasetId: 'offvia_telemetry_silver', tableId: 'readings_dedup' },
      eventTime: 'event_timestamp',
      keyColumns: { telemetry_device_1m: 'device_id', telemetry_region_top_1m: 'region' },
    },
    quarantine: {
      stage: 'stage',
      reason: 'error',
      rejectedAt: 'parse_time',
      messageId: 'source_message_id',
      payload: 'payload',
      extra: ['device_id', 'contract_version'],
    },
  },
};

/**
 * The column layout of a pipeline's tables for `offvia`.
 * @throws UsageError naming the file to extend when the pipeline has none (a newly registered pipeline)
 */
export function opsLayout(pipeline: AnyPipelineDefinition): PipelineOpsLayout {
  const layout = LAYOUTS[pipeline.name];
  if (layout === undefined) {
    throw new UsageError(
      `offvia has no table layout for pipeline ${pipeline.name}: add it to LAYOUTS in shared/ops/pipeline-choice.ts`,
    );
  }
  return layout;
}

/**
 * The commands that run for a pipeline other than booking (booking runs every command). Each other command answers
 * with the reason in `unavailableReason`.
 */
export const MULTI_PIPELINE_COMMANDS: readonly string[] = [
  'status',
  'trace',
  'quarantine list',
  'query',
  'dashboard',
];

/**
 * Why `command` (its full path, e.g. `gold restate`) does not apply to `pipeline`, or `null` when it does. The
 * reasons name what the command is built on, so an operator sees whether it is a gap or a mismatch.
 */
export function unavailableReason(pipeline: AnyPipelineDefinition, command: string): string | null {
  if (pipeline.name === DEFAULT_PIPELINE || MULTI_PIPELINE_COMMANDS.includes(command)) return null;
  const top = command.split(' ')[0] ?? command;
  const aggregations = pipeline.aggregations.map((a) => a.name).join(', ');
  switch (top) {
    case 'gold':
      return `it recomputes booking's route panes with booking's SQL over its Silver; ${pipeline.name}'s aggregations (${aggregations}) have no restatement query`;
    case 'bad-data':
      return pipeline.schemaDrift.mode === 'off'
        ? `it re-drives rows of the schema-drift gate and the booking ingest path, and schema drift is off for ${pipeline.name} (${pipeline.schemaDrift.extraFields.split(':')[0] ?? 'extra fields'})`
        : `it re-drives rows through the booking ingest path, which does not decode ${pipeline.name}'s contract`;
    case 'replay':
      return `it replays Bronze through the booking ingest path, which does not decode ${pipeline.name}'s contract`;
    case 'snapshot':
    case 'seek':
      return `it finds the ingest subscription of the booking topic; ${pipeline.name}'s (${pipeline.pubsub.subscriptions.ingest} on ${pipeline.pubsub.topic}) is not wired to it yet`;
    case 'quarantine':
      return `it sends fixed rows through the booking ingest path, which does not decode ${pipeline.name}'s contract (list them with 'offvia --pipeline ${pipeline.name} quarantine list')`;
    default:
      return `offvia runs only ${MULTI_PIPELINE_COMMANDS.join(', ')} for pipelines other than ${DEFAULT_PIPELINE}`;
  }
}

/**
 * Refuses a command that does not apply to the pipeline.
 * @throws UsageError (exit 2): `<command> is not available for pipeline <name>: <why>`
 */
export function assertCommandAvailable(pipeline: AnyPipelineDefinition, command: string): void {
  const why = unavailableReason(pipeline, command);
  if (why !== null) {
    throw new UsageError(`${command} is not available for pipeline ${pipeline.name}: ${why}`);
  }
}

/**
 * `--stage` values (repeatable, comma-separated, any case) checked against the pipeline's contract stages.
 * @throws UsageError for an empty list or a stage the pipeline's contract does not have
 */
export function pipelineStages(
  pipeline: AnyPipelineDefinition,
  values: readonly string[],
): string[] {
  const stages = values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim().toUpperCase())
    .filter((v) => v !== '');
  if (stages.length === 0) throw new UsageError('--stage: no value given');
  for (const stage of stages) {
    if (!pipeline.contract.stages.includes(stage)) {
      throw new UsageError(
        `--stage: unknown stage ${stage} for pipeline ${pipeline.name}; one of ${pipeline.contract.stages.join(', ')}`,
      );
    }
  }
  return stages;
}

/** Fully qualified `project.dataset.table` of a definition's table. */
export function qualifiedTable(ref: TableRef, projectId: string): string {
  return tableName(ref, projectId);
}
