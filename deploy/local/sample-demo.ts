// `npm run demo -- --pipeline NAME --samples` (or `--pipeline NAME FILE`): publishes a pipeline's sample messages (or
// a file's lines) to its topic on the stack, then shows where each one ended: Silver, quarantine, bad data or the
// schema-retry store. Exit 0 only if each ended in exactly one place, and where its sample says.
import { PubSub } from '@google-cloud/pubsub';
import { tableName } from '../../shared/config/env';
import type { AnyPipelineDefinition, SampleOutcome } from '../../shared/pipeline/definition';
import {
  formatTable,
  pollUntil,
  queryRows,
  readRetryStore,
  stackBigQuery,
  stackEnv,
} from './layers';
import type { Row } from './layers';

/** A message to publish: a sample, or a file's line (then nothing is expected but one landing). */
export interface DemoMessage {
  readonly description: string;
  readonly data: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly expect: SampleOutcome | undefined;
}

/** Where each message id landed: the layer and, for quarantine, the stage; several entries when it landed twice. */
export type Landings = ReadonlyMap<string, readonly SampleOutcome[]>;

/** A landing as text: `silver`, `quarantine PARSE_JSON`, `badData`, `retryStore`. */
export function outcomeText(o: SampleOutcome | undefined): string {
  if (o === undefined) return 'any one place';
  return o.layer === 'quarantine' ? `quarantine ${o.stage}` : o.layer;
}

/**
 * Where the pipeline's messages `ids` landed. Every Silver, quarantine and bad-data table has a
 * `source_message_id` column (docs/pipelines.md); the quarantine stage is its `stage` column (booking's
 * `error_stage`). The schema-retry store is read for a pipeline with schema drift `sweep` only.
 */
export async function readLandings(
  pipeline: AnyPipelineDefinition,
  projectId: string,
  ids: readonly string[],
): Promise<Map<string, SampleOutcome[]>> {
  const bq = stackBigQuery(stackEnv());
  const rows = (table: string): Promise<Row[]> =>
    queryRows(
      bq,
      `SELECT * FROM \`${table}\` WHERE source_message_id IN UNNEST(@ids)`,
      { ids: [...ids] },
      { ids: ['STRING'] },
    );
  const t = pipeline.tables;
  const [silver, quarantine, badData] = await Promise.all(
    [t.silver, t.quarantine, t.badData].map((ref) => rows(tableName(ref, projectId))),
  );
  const retry = pipeline.schemaDrift.mode === 'sweep' ? await readRetryStore(projectId, ids) : [];
  const landings = new Map<string, SampleOutcome[]>(ids.map((id) => [id, []]));
  const add = (r: Row, o: SampleOutcome) => landings.get(String(r.source_message_id))?.push(o);
  for (const r of silver ?? []) add(r, { layer: 'silver' });
  for (const r of quarantine ?? [])
    add(r, { layer: 'quarantine', stage: String(r.stage ?? r.error_stage) });
  for (const r of badData ?? []) add(r, { layer: 'badData' });
  for (const r of retry) add(r, { layer: 'retryStore' });
  return landings;
}

/** The failed checks: a message that landed nowhere, twice, or elsewhere than its sample says. */
export function landingFailures(
  messages: readonly DemoMessage[],
  ids: readonly string[],
  landings: Landings,
): string[] {
  return messages.flatMap((m, i) => {
    const got = landings.get(ids[i] ?? '') ?? [];
    if (got.length !== 1) return [`${m.description}: landed ${got.length} times, expected once`];
    if (m.expect !== undefined && outcomeText(got[0]) !== outcomeText(m.expect)) {
      return [
        `${m.description}: ended in ${outcomeText(got[0])}, expected ${outcomeText(m.expect)}`,
      ];
    }
    return [];
  });
}

/**
 * Publishes `messages` to the pipeline's topic, waits until each landed (or `timeoutMs`), prints a table and
 * returns the exit code: 0 when every check passed, 1 otherwise.
 */
export async function runSampleDemo(
  pipeline: AnyPipelineDefinition,
  messages: readonly DemoMessage[],
  timeoutMs = 60_000 + messages.length * 50,
): Promise<number> {
  const { projectId } = stackEnv();
  const pubsub = new PubSub({ projectId });
  const topic = pubsub.topic(pipeline.pubsub.topic);
  const ids = await Promise.all(
    messages.map((m) =>
      topic.publishMessage({ data: Buffer.from(m.data, 'utf8'), attributes: { ...m.attributes } }),
    ),
  );
  await pubsub.close();
  process.stdout.write(`published ${ids.length} messages to ${pipeline.pubsub.topic}\n`);
  const started = Date.now();
  let landings: Landings = new Map();
  await pollUntil(started + timeoutMs, 500, async () => {
    landings = await readLandings(pipeline, projectId, ids);
    return [...landings.values()].every((l) => l.length > 0);
  });
  process.stdout.write(`waited ${Date.now() - started} ms\n\n`);
  const table = messages.map((m, i) => ({
    message_id: ids[i],
    sample: m.description,
    expected: outcomeText(m.expect),
    ended: (landings.get(ids[i] ?? '') ?? []).map(outcomeText).join(' + ') || 'nowhere yet',
  }));
  process.stdout.write(formatTable(`Pipeline ${pipeline.name}`, table, 60));
  const failures = landingFailures(messages, ids, landings);
  if (failures.length > 0) {
    process.stdout.write(`FAILED:\n${failures.map((f) => `  - ${f}`).join('\n')}\n`);
    return 1;
  }
  process.stdout.write(`OK: each of the ${ids.length} messages ended where expected\n`);
  return 0;
}
