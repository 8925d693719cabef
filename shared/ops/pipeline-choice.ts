// `offvia --pipeline NAME`: which registered pipeline a command works on, which commands apply to it, and where
// its layers are (its definition's tables and `operatorColumns`).
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { PIPELINES } from '../pipelines';
import { UsageError } from './errors';

/** The pipeline every command works on when `--pipeline` is absent. */
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
 * Why `command` (its full path, e.g. `gold restate`) does not apply to `pipeline`, naming what the definition lacks;
 * `null` when it does. Every command runs for every pipeline that declares what it needs (`gold restate` refuses an
 * aggregation it cannot recompute itself, restate.ts).
 */
export function unavailableReason(pipeline: AnyPipelineDefinition, command: string): string | null {
  const { name, tables, operatorColumns } = pipeline;
  if (command === 'replay' && tables.bronze === null) {
    return `it replays Bronze, and ${name} declares no Bronze table (tables.bronze)`;
  }
  if (command === 'quarantine reprocess' || command === 'bad-data redrive') {
    const missing = [
      operatorColumns.openViews === null ? 'operatorColumns.openViews' : null,
      operatorColumns.resolutions === null ? 'operatorColumns.resolutions' : null,
    ].filter((m) => m !== null);
    return missing.length === 0
      ? null
      : `it selects open rows and records their resolutions, and ${name} declares none (${missing.join(', ')})`;
  }
  return null;
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
