// The registry: every pipeline this system runs. Entry points, the local stack and the deploy plan will iterate
// over this list (docs/pipelines.md, "What is wired today"); registryProblems() must stay empty for it.
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { BOOKING_PIPELINE } from './booking/definition';
import { TELEMETRY_PIPELINE } from './telemetry/definition';

/** The registered pipelines, booking first (the default of every command that takes `--pipeline`). */
export const PIPELINES: readonly AnyPipelineDefinition[] = [BOOKING_PIPELINE, TELEMETRY_PIPELINE];

/**
 * The registered pipeline called `name`.
 * @throws RangeError naming the registered pipelines when there is none
 */
export function pipelineNamed(name: string): AnyPipelineDefinition {
  const found = PIPELINES.find((p) => p.name === name);
  if (found === undefined) {
    throw new RangeError(
      `no pipeline ${JSON.stringify(name)} (registered: ${PIPELINES.map((p) => p.name).join(', ')})`,
    );
  }
  return found;
}
