// `offvia --pipeline NAME`: which registered pipeline a command works on, which commands apply to it, and where
// its layers are, resolved from its definition (its tables and `operatorColumns`) instead of booking constants.
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
 * The commands that run for a pipeline other than booking (booking runs every command). Each other command answers
 * with the reason in `unavailableReason`.
 */
export const MULTI_PIPELINE_COMMANDS: readonly string[] = [
  'status',
  'trace',
  'quarantine list',
  'query',
  'dashboard',
  'snapshot create',
  'snapshot list',
  'snapshot delete',
  'seek',
  'replay',
];

/**
 * Why `command` (its full path, e.g. `gold restate`) does not apply to `pipeline`, or `null` when it does. The
 * reasons name what the command is built on, so an operator sees whether it is a gap or a mismatch.
 */
export function unavailableReason(pipeline: AnyPipelineDefinition, command: string): string | null {
  if (command === 'replay' && pipeline.tables.bronze === null) {
    return `it replays Bronze, and ${pipeline.name} declares no Bronze table (tables.bronze)`;
  }
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
