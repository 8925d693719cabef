// The registry: every folder under shared/pipelines/ whose `definition` module exports a definition is a pipeline;
// nothing else lists them (docs/pipelines.md).
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { AnyPipelineDefinition } from '../pipeline/definition';

/** The pipeline every command works on when `--pipeline` is absent; listed first. */
export const DEFAULT_PIPELINE_NAME = 'booking';

/**
 * The variable naming further folders of pipelines, for tests only: comma-separated paths relative to the
 * repository root (for compiled code, to `build/`), e.g. `test/fixtures/pipelines`. Unset in Google Cloud.
 */
export const EXTRA_PIPELINE_DIRS_VAR = 'OFFVIA_EXTRA_PIPELINE_DIRS';

/** The repository root as this module sees it: the source tree under tsx, `build/` for compiled code. */
const TREE_ROOT = path.resolve(__dirname, '..', '..');

/** Whether a module export is a pipeline definition (the fields every registry reader relies on). */
function isDefinition(value: unknown): value is AnyPipelineDefinition {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<Record<keyof AnyPipelineDefinition, unknown>>;
  return (
    typeof v.name === 'string' &&
    typeof v.contract === 'object' &&
    typeof v.functions === 'object' &&
    typeof v.pubsub === 'object'
  );
}

/** The folders directly under `dir` that hold a `definition.ts` (sources) or `definition.js` (build), by name. */
function definitionFolders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter(
      (e) =>
        e.isDirectory() &&
        ['definition.ts', 'definition.js'].some((f) => existsSync(path.join(dir, e.name, f))),
    )
    .map((e) => e.name)
    .sort();
}

/**
 * The pipelines defined in the folders directly under each of `dirs` (absolute paths): each `definition` module
 * must export exactly one definition, named as the folder. Sorted by name, the default first. Synchronous
 * (`require`), so the registry is a constant at import.
 * @throws Error naming the folder when its module exports no definition, several, or one named otherwise
 */
export function discoverPipelines(dirs: readonly string[]): AnyPipelineDefinition[] {
  const found: AnyPipelineDefinition[] = [];
  for (const dir of dirs) {
    for (const folder of definitionFolders(dir)) {
      const where = path.join(dir, folder, 'definition');
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const exported = Object.values(require(where) as Record<string, unknown>);
      const definitions = exported.filter(isDefinition);
      if (definitions.length !== 1 || definitions[0]?.name !== folder) {
        throw new Error(
          `${where} must export exactly one pipeline definition named ${JSON.stringify(folder)} ` +
            `(found: ${JSON.stringify(definitions.map((d) => d.name))})`,
        );
      }
      found.push(definitions[0]);
    }
  }
  const rank = (p: AnyPipelineDefinition) => (p.name === DEFAULT_PIPELINE_NAME ? 0 : 1);
  return found.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
}

/** The folders the registry reads: this one, then those of {@link EXTRA_PIPELINE_DIRS_VAR} (absolute paths). */
export function pipelineDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const extra = (env[EXTRA_PIPELINE_DIRS_VAR] ?? '')
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '');
  return [__dirname, ...extra.map((d) => path.resolve(TREE_ROOT, d))];
}

/** The registered pipelines, booking first (the default of every command that takes `--pipeline`). */
export const PIPELINES: readonly AnyPipelineDefinition[] = discoverPipelines(pipelineDirs());

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
