// Checks over a list of pipeline definitions: each one well-formed, and no two sharing a name, table or state.
import { tableName, type TableRef } from '../config/env';
import {
  WindowingConfigError,
  validateWatermarkPolicy,
  validateWindowingStrategy,
} from '../windowing';
import type { AnyPipelineDefinition } from './definition';
import { contractProblems } from './versioning';

/** Pipeline and aggregation names: the windowed-pipeline rule of `OFFVIA_WINDOW_PIPELINE`. */
const PIPELINE_NAME = /^[a-z][a-z0-9_]{0,39}$/;
/** Pub/Sub topic and subscription ids (Pub/Sub resource-name rules). */
const PUBSUB_ID = /^(?!goog)[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$/;
/** BigQuery dataset ids (letters, digits, `_`, up to 1,024) and table ids (kept to the same plain alphabet). */
const BIGQUERY_ID = /^[A-Za-z_][A-Za-z0-9_]{0,1023}$/;
/** Firestore collection ids, kept to a plain alphabet (no `/`, not `__…__`), as the window and drift roots are. */
const COLLECTION_ID = /^[A-Za-z][A-Za-z0-9_]{0,99}$/;
/** Entry points: JavaScript identifiers the Functions Framework registers. */
const ENTRY_POINT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** Function base names: Cloud Run service names are at most 63 characters; 40 leaves the deploy's prefix room. */
const FUNCTION_BASE_NAME = /^[a-z][a-z0-9-]{0,38}[a-z0-9]$/;
/** Service account bases: IAM ids are 6–30 characters; 23 leaves room for the default prefix `offvia-`. */
const SERVICE_ACCOUNT_BASE = /^[a-z][a-z0-9-]{0,21}[a-z0-9]$/;

function check(problems: string[], pattern: RegExp, what: string, value: string): void {
  if (!pattern.test(value))
    problems.push(`${what} ${JSON.stringify(value)} breaks ${pattern.source}`);
}

/** Every table a pipeline names, with its role, as `dataset.table`. */
export function pipelineTables(p: AnyPipelineDefinition): { role: string; table: string }[] {
  const t = p.tables;
  const named = (role: string, ref: TableRef) => ({ role, table: tableName(ref) });
  return [
    ...(t.bronze ? [named('bronze', t.bronze)] : []),
    named('silver', t.silver),
    named('quarantine', t.quarantine),
    named('bad data', t.badData),
    ...t.reference.map((r) => named('reference', r)),
    ...t.views.map((r) => named('view', r)),
    ...t.operational.map((r) => named('operational', r)),
    ...p.aggregations.map((a) => named(`gold (${a.name})`, a.goldTable)),
  ];
}

/** Every Pub/Sub topic and subscription id a pipeline names. */
export function pipelinePubSubIds(p: AnyPipelineDefinition): { role: string; id: string }[] {
  const { pubsub } = p;
  const s = pubsub.subscriptions;
  const entries: [string, string | null][] = [
    ['topic', pubsub.topic],
    ['dead-letter topic', pubsub.deadLetterTopic],
    ['Bronze dead-letter topic', pubsub.bronzeDeadLetterTopic],
    ['ingest subscription', s.ingest],
    ['Bronze subscription', s.bronze],
    ['dead-letter hold subscription', s.deadLetterHold],
    ['Bronze dead-letter hold subscription', s.bronzeDeadLetterHold],
  ];
  return entries.flatMap(([role, id]) => (id === null ? [] : [{ role, id }]));
}

/** Every function a pipeline deploys. */
export function pipelineFunctions(
  p: AnyPipelineDefinition,
): { role: string; entryPoint: string; baseName: string }[] {
  const f = p.functions;
  return [
    { role: 'ingest', ...f.ingest },
    { role: 'fireWindows', ...f.fireWindows },
    ...(f.schemaSweep ? [{ role: 'schemaSweep', ...f.schemaSweep }] : []),
  ];
}

/** Every runtime service account base a pipeline names, with its role. */
export function pipelineServiceAccounts(
  p: AnyPipelineDefinition,
): { role: string; base: string }[] {
  const a = p.serviceAccounts;
  const entries: [string, string | null][] = [
    ['ingest account', a.ingest],
    ['fireWindows account', a.fireWindows],
    ['schemaSweep account', a.schemaSweep],
    ['Bronze writer account', a.bronze],
  ];
  return entries.flatMap(([role, base]) => (base === null ? [] : [{ role, base }]));
}

/** Every Firestore root collection a pipeline keeps state under. */
export function pipelineFirestoreRoots(p: AnyPipelineDefinition): string[] {
  return [
    p.firestore.windowsRoot,
    ...(p.firestore.schemaDriftRoot ? [p.firestore.schemaDriftRoot] : []),
  ];
}

/**
 * The problems of one definition: names that break their service's rules, an invalid windowing strategy or
 * watermark policy, an unsound version list, schema drift and its function or state root out of step.
 */
export function definitionProblems(p: AnyPipelineDefinition): string[] {
  const problems: string[] = [];
  check(problems, PIPELINE_NAME, 'pipeline name', p.name);
  for (const { role, id } of pipelinePubSubIds(p)) check(problems, PUBSUB_ID, role, id);
  for (const { role, table } of pipelineTables(p)) {
    for (const part of table.split('.')) check(problems, BIGQUERY_ID, `${role} table part`, part);
  }
  for (const { role, entryPoint, baseName } of pipelineFunctions(p)) {
    check(problems, ENTRY_POINT, `${role} entry point`, entryPoint);
    check(problems, FUNCTION_BASE_NAME, `${role} base name`, baseName);
  }
  for (const root of pipelineFirestoreRoots(p))
    check(problems, COLLECTION_ID, 'Firestore root', root);
  for (const { role, base } of pipelineServiceAccounts(p))
    check(problems, SERVICE_ACCOUNT_BASE, role, base);
  if ((p.serviceAccounts.schemaSweep !== null) !== (p.functions.schemaSweep !== null)) {
    problems.push(
      'serviceAccounts.schemaSweep is needed with functions.schemaSweep, and only then',
    );
  }
  if ((p.serviceAccounts.bronze !== null) !== (p.tables.bronze !== null)) {
    problems.push('serviceAccounts.bronze is needed with tables.bronze, and only then');
  }
  if (p.aggregations.length === 0) problems.push('no aggregation');
  for (const a of p.aggregations) {
    check(problems, PIPELINE_NAME, 'aggregation name', a.name);
    if (!Number.isSafeInteger(a.shards) || a.shards < 1 || a.shards > 100) {
      problems.push(`aggregation ${a.name}: shards ${a.shards} outside 1-100`);
    }
    try {
      validateWindowingStrategy(a.strategy);
      validateWatermarkPolicy(a.watermarkPolicy);
    } catch (err) {
      if (!(err instanceof WindowingConfigError)) throw err;
      problems.push(`aggregation ${a.name}: ${err.message}`);
    }
  }
  problems.push(...contractProblems(p.contract));
  const sweeps = p.schemaDrift.mode === 'sweep';
  if (sweeps !== (p.functions.schemaSweep !== null)) {
    problems.push('schemaDrift.mode "sweep" needs functions.schemaSweep, and only it');
  }
  if (sweeps !== (p.firestore.schemaDriftRoot !== null)) {
    problems.push('schemaDrift.mode "sweep" needs firestore.schemaDriftRoot, and only it');
  }
  return problems.map((problem) => `${p.name}: ${problem}`);
}

/** Reports every value claimed by more than one owner. */
function collisions(kind: string, claims: readonly { owner: string; value: string }[]): string[] {
  const owners = new Map<string, string[]>();
  for (const { owner, value } of claims) {
    const key = value.toLowerCase();
    owners.set(key, [...(owners.get(key) ?? []), owner]);
  }
  return [...owners.entries()]
    .filter(([, who]) => who.length > 1)
    .map(([value, who]) => `${kind} ${value} is used by ${who.join(' and ')}`);
}

/**
 * The problems of a registry: every definition's own (`definitionProblems`), plus any name, topic, subscription,
 * table, entry point, function, service account or Firestore root claimed twice, within one pipeline or across two
 * (case-insensitive: two spellings of one name only confuse an operator).
 * @returns empty when the registry is sound
 */
export function registryProblems(pipelines: readonly AnyPipelineDefinition[]): string[] {
  type Claims = (p: AnyPipelineDefinition) => { role: string; value: string }[];
  const claims: [string, Claims][] = [
    [
      'aggregation name',
      (p) => p.aggregations.map((a) => ({ role: 'aggregation', value: a.name })),
    ],
    ['Pub/Sub id', (p) => pipelinePubSubIds(p).map(({ role, id }) => ({ role, value: id }))],
    ['table', (p) => pipelineTables(p).map(({ role, table }) => ({ role, value: table }))],
    [
      'entry point',
      (p) => pipelineFunctions(p).map(({ role, entryPoint: value }) => ({ role, value })),
    ],
    ['function', (p) => pipelineFunctions(p).map(({ role, baseName: value }) => ({ role, value }))],
    [
      'service account',
      (p) => pipelineServiceAccounts(p).map(({ role, base }) => ({ role, value: base })),
    ],
    ['Firestore root', (p) => pipelineFirestoreRoots(p).map((value) => ({ role: 'state', value }))],
  ];
  return [
    ...pipelines.flatMap(definitionProblems),
    ...collisions(
      'pipeline name',
      pipelines.map((p) => ({ owner: p.name, value: p.name })),
    ),
    ...claims.flatMap(([kind, of]) =>
      collisions(
        kind,
        pipelines.flatMap((p) =>
          of(p).map((c) => ({ owner: `${p.name} ${c.role}`, value: c.value })),
        ),
      ),
    ),
  ];
}
