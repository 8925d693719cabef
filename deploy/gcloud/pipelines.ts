// Which registered pipelines a deploy or teardown plan covers (`--pipeline`, `--all`), and the names the plan
// derives from a pipeline definition (service accounts, DDL files, monitoring prefix), checked before any step.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { pipelineServiceAccounts } from '../../shared/pipeline/registry-checks';
import { PIPELINES } from '../../shared/pipelines';
import { createdObjects, fillPlaceholders } from '../local/apply-sql';
import { FUNCTION_IMAGES_REPOSITORY } from './kms';
import { BUILD_SA, type DeployOptions, Names, SCHEDULER_SA, TRIGGER_SA } from './options';
import type { SqlFile } from './sql';

/** The pipeline deployed before the registry, every name kept (FUNCTION_SPECS); others come from their definition. */
export const BOOKING = 'booking';

/**
 * Service accounts every pipeline shares (push and trigger, Cloud Scheduler, Cloud Build), deleted only by
 * `teardown.sh --all`; no pipeline's own account may take these names.
 */
export const SHARED_ACCOUNT_BASES: readonly string[] = [TRIGGER_SA, SCHEDULER_SA, BUILD_SA];

/**
 * The pipelines named by `--pipeline` values (each a name or a comma list; repeats collapse), in registry order;
 * every registered pipeline when `names` is undefined.
 * @throws Error, one line naming the registered pipelines, for an unknown or empty name.
 */
export function selectPipelines(
  names: readonly string[] | undefined,
  registry: readonly AnyPipelineDefinition[] = PIPELINES,
): AnyPipelineDefinition[] {
  if (names === undefined) return [...registry];
  const wanted = new Set(names.flatMap((n) => n.split(',')).map((n) => n.trim()));
  const registered = registry.map((p) => p.name).join(', ');
  for (const name of wanted) {
    if (!registry.some((p) => p.name === name)) {
      throw new Error(
        `--pipeline: no pipeline ${JSON.stringify(name)} (registered: ${registered})`,
      );
    }
  }
  if (wanted.size === 0) throw new Error(`--pipeline: name one of ${registered}`);
  return registry.filter((p) => wanted.has(p.name));
}

/**
 * Checks that each selected pipeline's service account ids fit IAM's rule (6–30 lowercase letters, digits,
 * hyphens) with this `--name-prefix`, and that none takes a shared account's or the image repository's name.
 * @throws Error naming the pipeline, the account and the flag to change.
 */
export function checkPipelineAccounts(
  o: DeployOptions,
  pipelines: readonly AnyPipelineDefinition[],
): void {
  const names = new Names(o);
  for (const p of pipelines) {
    for (const { role, base } of pipelineServiceAccounts(p)) {
      const id = names.serviceAccountId(base);
      if (!/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/.test(id)) {
        throw new Error(
          `--name-prefix: pipeline ${p.name}'s ${role} ${id} is not 6–30 lowercase characters (shorten the prefix)`,
        );
      }
      if ([...SHARED_ACCOUNT_BASES, FUNCTION_IMAGES_REPOSITORY].includes(base)) {
        throw new Error(`pipeline ${p.name}: ${role} ${base} is the name of a shared resource`);
      }
    }
  }
}

/**
 * A pipeline's DDL files (`tables.ddlFiles`), read from `root` with `{{project}}` and `{{location}}` filled in; each
 * file's name is its path from the repository root.
 * @throws Error when a file is missing or a placeholder has no value.
 */
export function readPipelineSqlFiles(
  root: string,
  pipeline: AnyPipelineDefinition,
  project: string,
  location: string,
): SqlFile[] {
  return pipeline.tables.ddlFiles.map((file) => ({
    name: file,
    sql: fillPlaceholders(readFileSync(path.join(root, file), 'utf8'), { project, location }),
  }));
}

/**
 * Whether the DDL creating `dataset.table` partitions it (`PARTITION BY` in that statement): only a partitioned
 * table takes `partition_expiration_days`.
 */
export function isPartitioned(files: readonly SqlFile[], table: string): boolean {
  for (const file of files) {
    for (const statement of file.sql.split(/;\s*\n/)) {
      const created = createdObjects(statement).some(
        (o) => o.kind === 'TABLE' && `${o.datasetId}.${o.tableId ?? ''}` === table,
      );
      if (created) return /\bPARTITION\s+BY\b/i.test(statement.split(/\bAS\s+SELECT\b/i)[0] ?? '');
    }
  }
  return false;
}

/** The name prefix of a pipeline's metrics, alert policies and dashboard: `<prefix><pipeline>-`. */
export function monitoringPrefix(o: DeployOptions, pipeline: AnyPipelineDefinition): string {
  return `${o.namePrefix}${pipeline.name.replace(/_/g, '-')}-`;
}
