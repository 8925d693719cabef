// `offvia snapshot create|list|delete` and `offvia seek`: Pub/Sub snapshots of a pipeline's ingest subscription and
// seeking it back to a snapshot or a time, for a safe cutover.
import { PubSub, type Subscription } from '@google-cloud/pubsub';
import type { Command } from 'commander';
import { INGEST_SUBSCRIPTION_VAR } from '../config/registry';
import type { CliAction } from '../dashboard/command';
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { tableName } from '../config/env';
import { query, type OpsContext } from './context';
import { EXIT, NotFoundError, OpsError, UsageError, describeBackendError } from './errors';
import { keyValues, table, toJson, type Io } from './output';
import { parseTimeFlag } from './selection';

/** Pub/Sub's resource-name rule for a subscription or snapshot id. */
const RESOURCE_ID = /^(?!goog)[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$/;

/** A snapshot or subscription id checked against Pub/Sub's rule. @throws UsageError naming `what` otherwise. */
export function parseResourceId(text: string, what: string): string {
  if (!RESOURCE_ID.test(text)) {
    throw new UsageError(
      `${what}: expected a Pub/Sub id (3–255 of A-Z a-z 0-9 - _ . ~ + %, starting with a letter, not goog…), got ${JSON.stringify(text)}`,
    );
  }
  return text;
}

/** What a seek goes back to: a snapshot of the subscription's topic, or a publish time (epoch ms, UTC). */
export type SeekTarget = { snapshot: string } | { timeMs: number };

/** 0001-01-01T00:00:00Z, the lower bound of a protobuf Timestamp (`Date.UTC` would read year 1 as 1901). */
const EARLIEST_TIMESTAMP_MS = Date.parse('0001-01-01T00:00:00Z');

/**
 * The seek target from `--snapshot` / `--time` (exactly one). A time (RFC 3339, or a duration back from `nowMs`) is
 * truncated to the second: the Node client mangles sub-seconds, and earlier only redelivers more (idempotent).
 * @throws UsageError for none or both flags, a bad value, or a future time (it would acknowledge the backlog).
 */
export function parseSeekTarget(
  flags: { snapshot?: string | undefined; time?: string | undefined },
  nowMs: number,
): SeekTarget {
  if ((flags.snapshot === undefined) === (flags.time === undefined)) {
    throw new UsageError('seek: give exactly one of --snapshot NAME and --time T');
  }
  if (flags.snapshot !== undefined)
    return { snapshot: parseResourceId(flags.snapshot, '--snapshot') };
  const ms = parseTimeFlag(flags.time ?? '', '--time', nowMs);
  if (ms > nowMs) {
    throw new UsageError(
      '--time: in the future; seeking there would acknowledge every message not yet delivered (a purge)',
    );
  }
  // SeekRequest.time is a protobuf Timestamp, which starts at year 1: Pub/Sub answers INVALID_ARGUMENT before it.
  if (ms < EARLIEST_TIMESTAMP_MS) {
    throw new UsageError(
      '--time: before 0001-01-01T00:00:00Z, the earliest time Pub/Sub accepts; any time before the retention seeks as far back as is retained',
    );
  }
  return { timeMs: Math.floor(ms / 1000) * 1000 };
}

/** A snapshot as `snapshot list` shows it. */
export interface SnapshotInfo {
  name: string;
  topic: string;
  /** RFC 3339 UTC; Pub/Sub keeps a snapshot at most 7 days, less the age of the oldest unacked message. */
  expireTime: string | null;
}

/** Seconds of a protobuf Duration or Timestamp as the client returns it. */
function seconds(value: unknown): number | null {
  if (typeof value !== 'object' || value === null) return null;
  const { seconds: s, nanos: n } = value as { seconds?: unknown; nanos?: unknown };
  if (s === undefined || s === null) return null;
  return Number(s) + (typeof n === 'number' ? n / 1e9 : 0);
}

function isoOf(value: unknown): string | null {
  const s = seconds(value);
  return s === null ? null : new Date(s * 1000).toISOString();
}

/** gRPC status codes the Pub/Sub API answers with. */
const GRPC = { notFound: 5, alreadyExists: 6, failedPrecondition: 9 } as const;

function grpcCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** Where the Pub/Sub commands act: the client, the subscription and its topic. */
export interface SeekTargetSubscription {
  readonly pubsub: PubSub;
  readonly subscription: Subscription;
  /** The subscription id (not the path). */
  readonly name: string;
  /** How it was chosen, for the output: `--subscription`, OFFVIA_INGEST_SUBSCRIPTION, local default, discovered. */
  readonly chosenBy: string;
}

/**
 * The pipeline's ingest subscription: `--subscription`, else `OFFVIA_INGEST_SUBSCRIPTION`, else the local stack's,
 * else the one `eventarc-*` subscription of the pipeline's topic (Eventarc's push subscription).
 * @throws UsageError when none or several Eventarc subscriptions are found; OpsError when Pub/Sub fails.
 */
export async function ingestSubscription(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  pubsub: PubSub,
  flag: string | undefined,
): Promise<SeekTargetSubscription> {
  const pick = (name: string, chosenBy: string): SeekTargetSubscription => ({
    pubsub,
    subscription: pubsub.subscription(name),
    name,
    chosenBy,
  });
  if (flag !== undefined) return pick(parseResourceId(flag, '--subscription'), '--subscription');
  const fromEnv = ctx.env[INGEST_SUBSCRIPTION_VAR.name];
  if (fromEnv !== undefined && fromEnv !== '') {
    return pick(
      parseResourceId(fromEnv, INGEST_SUBSCRIPTION_VAR.name),
      INGEST_SUBSCRIPTION_VAR.name,
    );
  }
  const topic = pipeline.pubsub.topic;
  if (ctx.mode === 'local') return pick(pipeline.pubsub.subscriptions.ingest, 'the local stack');
  let names: string[];
  try {
    const [subs] = await pubsub.topic(topic).getSubscriptions();
    names = subs.map((s) => s.name.split('/').pop() ?? s.name);
  } catch (err) {
    throw describeBackendError(`Pub/Sub (subscriptions of ${topic})`, err, ctx.describe.hint);
  }
  const eventarc = names.filter((n) => n.startsWith('eventarc-'));
  if (eventarc.length !== 1) {
    throw new UsageError(
      `found ${eventarc.length} eventarc-* subscriptions on ${topic} (${names.join(', ') || 'none'}): ` +
        `pass --subscription or set ${INGEST_SUBSCRIPTION_VAR.name}`,
    );
  }
  return pick(eventarc[0] ?? '', `discovered on ${topic}`);
}

/** What `seek` reports. */
export interface SeekReport {
  dryRun: boolean;
  subscription: string;
  chosenBy: string;
  /** `snapshot NAME` or the RFC 3339 UTC time. */
  target: string;
  /** Retention of the topic and of the subscription, seconds; null when none. */
  topicRetentionSeconds: number | null;
  retainAckedMessages: boolean;
  subscriptionRetentionSeconds: number | null;
  /** Bronze rows published at or after the time (what a time seek redelivers at most); null for a snapshot. */
  bronzeMessagesSince: number | null;
  warnings: string[];
}

/**
 * The warnings of a time seek: before the retention, expunged messages are not restored (Pub/Sub `SeekRequest.time`);
 * past `maxRetryAgeMs`, the retry-age guard parks failing redeliveries in bad data (docs/delivery-guarantees.md).
 */
export function seekWarnings(
  target: SeekTarget,
  nowMs: number,
  retention: { topicS: number | null; subscriptionS: number | null; retainAcked: boolean },
  maxRetryAgeMs: number,
): string[] {
  if (!('timeMs' in target)) return [];
  const warnings: string[] = [];
  const backMs = nowMs - target.timeMs;
  const keptS = Math.max(
    retention.topicS ?? 0,
    retention.retainAcked ? (retention.subscriptionS ?? 0) : 0,
  );
  if (keptS === 0) {
    warnings.push(
      'neither the topic retains messages nor the subscription retains acknowledged ones: the seek redelivers only unacknowledged messages (deploy with --topic-retention)',
    );
  } else if (backMs > keptS * 1000) {
    warnings.push(
      `the time is ${Math.round(backMs / 60_000)} min back but messages are retained ${Math.round(keptS / 60)} min: older ones are not restored`,
    );
  }
  if (backMs > maxRetryAgeMs) {
    warnings.push(
      `messages older than OFFVIA_MAX_RETRY_AGE_MS (${maxRetryAgeMs / 60_000} min) that fail transiently on redelivery go to bad data (retry-age guard); re-drive them with 'offvia bad-data redrive'`,
    );
  }
  return warnings;
}

/**
 * Runs `seek`: reads the subscription's and the topic's retention, warns, and (unless a dry run) seeks.
 * @throws NotFoundError for an unknown snapshot or subscription; UsageError when the subscription is on another
 *   pipeline's topic; OpsError when Pub/Sub or BigQuery fail.
 */
export async function seek(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  target: SeekTargetSubscription,
  to: SeekTarget,
  dryRun: boolean,
  nowMs: number,
): Promise<SeekReport> {
  const topic = pipeline.pubsub.topic;
  let subMeta: Record<string, unknown>;
  let topicMeta: Record<string, unknown>;
  try {
    [subMeta] = (await target.subscription.getMetadata()) as unknown as [Record<string, unknown>];
    [topicMeta] = (await target.pubsub.topic(topic).getMetadata()) as unknown as [
      Record<string, unknown>,
    ];
  } catch (err) {
    if (grpcCode(err) === GRPC.notFound) {
      throw new NotFoundError(`subscription ${target.name} or topic ${topic} not found`);
    }
    throw describeBackendError(`Pub/Sub (subscription ${target.name})`, err, ctx.describe.hint);
  }
  // Seeking another pipeline's subscription would redeliver its messages: refuse before anything moves.
  if (typeof subMeta.topic === 'string' && !subMeta.topic.endsWith(`/topics/${topic}`)) {
    throw new UsageError(
      `subscription ${target.name} is on ${subMeta.topic}, not on pipeline ${pipeline.name}'s topic ${topic}`,
    );
  }
  const retention = {
    topicS: seconds(topicMeta.messageRetentionDuration),
    subscriptionS: seconds(subMeta.messageRetentionDuration),
    retainAcked: subMeta.retainAckedMessages === true,
  };
  let bronzeSince: number | null = null;
  const bronze = pipeline.tables.bronze;
  if ('timeMs' in to && bronze !== null) {
    const [row] = await query<{ n: unknown }>(
      ctx,
      `SELECT COUNT(*) AS n FROM \`${tableName(bronze, ctx.projectId)}\` WHERE publish_time >= TIMESTAMP_MILLIS(@t)`,
      { t: to.timeMs },
      { t: 'INT64' },
    );
    bronzeSince = Number(row?.n ?? 0);
  }
  const report: SeekReport = {
    dryRun,
    subscription: target.name,
    chosenBy: target.chosenBy,
    target: 'snapshot' in to ? `snapshot ${to.snapshot}` : new Date(to.timeMs).toISOString(),
    topicRetentionSeconds: retention.topicS,
    retainAckedMessages: retention.retainAcked,
    subscriptionRetentionSeconds: retention.subscriptionS,
    bronzeMessagesSince: bronzeSince,
    warnings: seekWarnings(to, nowMs, retention, ctx.ingest.maxRetryAgeMs),
  };
  if (dryRun) {
    // A mistyped snapshot must fail the dry run too, not only the real seek.
    if ('snapshot' in to) {
      const full = `projects/${ctx.projectId}/snapshots/${to.snapshot}`;
      const known = await listSnapshots(ctx, pipeline, target.pubsub);
      if (!known.some((s) => s.name === full)) {
        throw new NotFoundError(`snapshot ${to.snapshot} not found (expired or deleted?)`);
      }
    }
    return report;
  }
  try {
    await target.subscription.seek('snapshot' in to ? to.snapshot : new Date(to.timeMs));
  } catch (err) {
    if (grpcCode(err) === GRPC.notFound) {
      throw new NotFoundError(
        'snapshot' in to
          ? `snapshot ${to.snapshot} not found (expired or deleted?)`
          : `subscription ${target.name} not found`,
      );
    }
    throw describeBackendError(`Pub/Sub (seek ${target.name})`, err, ctx.describe.hint);
  }
  return report;
}

/**
 * Creates a snapshot of the subscription's acknowledgment state.
 * @throws UsageError when the name is taken; NotFoundError for no subscription; OpsError when Pub/Sub refuses (e.g.
 *   the backlog is nearly 7 days old, so the snapshot would expire within an hour).
 */
export async function createSnapshot(
  ctx: OpsContext,
  target: SeekTargetSubscription,
  name: string,
): Promise<SnapshotInfo> {
  try {
    const [snapshot, response] = await target.subscription.createSnapshot(name);
    const r = response as { topic?: string; expireTime?: unknown } | undefined;
    return { name: snapshot.name, topic: r?.topic ?? '', expireTime: isoOf(r?.expireTime) };
  } catch (err) {
    if (grpcCode(err) === GRPC.alreadyExists) {
      throw new UsageError(`snapshot ${name} exists: pick another name or delete it first`);
    }
    if (grpcCode(err) === GRPC.notFound)
      throw new NotFoundError(`subscription ${target.name} not found`);
    if (grpcCode(err) === GRPC.failedPrecondition) {
      throw new OpsError(
        `snapshot ${name} refused: the oldest unacked message of ${target.name} is nearly 7 days old, so the snapshot would expire within an hour (${(err instanceof Error ? err.message : String(err)).split('\n')[0]})`,
      );
    }
    throw describeBackendError(`Pub/Sub (create snapshot ${name})`, err, ctx.describe.hint);
  }
}

/** The project's snapshots of the pipeline's topic, by name. @throws OpsError when Pub/Sub fails. */
export async function listSnapshots(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  pubsub: PubSub,
): Promise<SnapshotInfo[]> {
  try {
    const [snapshots] = await pubsub.getSnapshots();
    return snapshots
      .map((s) => {
        const m = (s.metadata ?? {}) as { topic?: string | null; expireTime?: unknown };
        return { name: s.name, topic: m.topic ?? '', expireTime: isoOf(m.expireTime) };
      })
      .filter((s) => s.topic === '' || s.topic.endsWith(`/topics/${pipeline.pubsub.topic}`))
      .sort((a, b) => a.name.localeCompare(b.name));
  } catch (err) {
    throw describeBackendError('Pub/Sub (list snapshots)', err, ctx.describe.hint);
  }
}

/** Deletes a snapshot. @throws NotFoundError when there is none by that name; OpsError when Pub/Sub fails. */
export async function deleteSnapshot(ctx: OpsContext, pubsub: PubSub, name: string): Promise<void> {
  try {
    await pubsub.snapshot(name).delete();
  } catch (err) {
    if (grpcCode(err) === GRPC.notFound) throw new NotFoundError(`snapshot ${name} not found`);
    throw describeBackendError(`Pub/Sub (delete snapshot ${name})`, err, ctx.describe.hint);
  }
}

/** Formats the seek report. */
export function formatSeek(r: SeekReport): string {
  const days = (s: number | null) => (s === null ? 'none' : `${(s / 86_400).toFixed(2)} d`);
  return [
    r.dryRun
      ? `seek --dry-run: would seek ${r.subscription} to ${r.target}; nothing changed`
      : `seek: ${r.subscription} sought to ${r.target}; Pub/Sub redelivers what is now unacknowledged (up to a minute to take full effect)`,
    keyValues([
      ['subscription', `${r.subscription} (${r.chosenBy})`],
      ['topic retention', days(r.topicRetentionSeconds)],
      [
        'subscription retains acked',
        `${r.retainAckedMessages} (retention ${days(r.subscriptionRetentionSeconds)})`,
      ],
      ...(r.bronzeMessagesSince === null
        ? []
        : ([['Bronze messages published since', r.bronzeMessagesSince]] as const)),
    ]),
    ...r.warnings.map((w) => `warning: ${w}`),
  ].join('\n');
}

/** Flags shared by the snapshot and seek commands. */
interface SubscriptionFlags {
  subscription?: string;
}

/** Registers `offvia snapshot` and `offvia seek`; the Pub/Sub client is made per command (`pubsubOf`, tests stub it). */
export function addSnapshotCommands(
  program: Command,
  action: CliAction,
  deps: { readonly io: Io; readonly now: () => number },
  pubsubOf: (ctx: OpsContext) => PubSub = (ctx) => new PubSub({ projectId: ctx.projectId }),
): void {
  const withPubSub = async <T>(
    ctx: OpsContext,
    body: (pubsub: PubSub) => Promise<T>,
  ): Promise<T> => {
    const pubsub = pubsubOf(ctx);
    try {
      return await body(pubsub);
    } finally {
      await pubsub.close();
    }
  };
  const subscriptionOption = [
    '--subscription <id>',
    `the ingest push subscription (default: ${INGEST_SUBSCRIPTION_VAR.name}, else the local stack's, else the pipeline topic's eventarc-* one)`,
  ] as const;
  const snapshot = program
    .command('snapshot')
    .description('Pub/Sub snapshots of the ingest subscription (before a risky deploy)');
  snapshot
    .command('create')
    .description("snapshot the ingest subscription's acknowledgment state (kept up to 7 days)")
    .argument('<name>', 'snapshot id, e.g. before-deploy-2026-12-01')
    .option(...subscriptionOption)
    .action(
      action(async (open, flags, name: string, opts: SubscriptionFlags) => {
        parseResourceId(name, 'snapshot name');
        if (opts.subscription !== undefined) parseResourceId(opts.subscription, '--subscription');
        const ctx = open();
        const info = await withPubSub(ctx, async (pubsub) =>
          createSnapshot(
            ctx,
            await ingestSubscription(ctx, ctx.pipeline, pubsub, opts.subscription),
            name,
          ),
        );
        deps.io.out(
          flags.json
            ? toJson(info)
            : `snapshot ${info.name} created (topic ${info.topic || '?'}, expires ${info.expireTime ?? 'unknown'})`,
        );
      }),
    );
  snapshot
    .command('list')
    .description("snapshots of the pipeline's topic, with their expiry")
    .action(
      action(async (open, flags) => {
        const ctx = open();
        const list = await withPubSub(ctx, (pubsub) => listSnapshots(ctx, ctx.pipeline, pubsub));
        deps.io.out(
          flags.json
            ? toJson(list)
            : table(
                ['snapshot', 'topic', 'expires (UTC)'],
                list.map((s) => [s.name, s.topic, s.expireTime]),
                100,
              ),
        );
      }),
    );
  snapshot
    .command('delete')
    .description('delete a snapshot')
    .argument('<name>', 'snapshot id')
    .action(
      action(async (open, flags, name: string) => {
        parseResourceId(name, 'snapshot name');
        const ctx = open();
        await withPubSub(ctx, (pubsub) => deleteSnapshot(ctx, pubsub, name));
        deps.io.out(flags.json ? toJson({ deleted: name }) : `snapshot ${name} deleted`);
      }),
    );

  program
    .command('seek')
    .description(
      'seek the ingest subscription back to a snapshot or a time: Pub/Sub redelivers what is then unacknowledged and the pipeline reprocesses it idempotently',
    )
    .option('--snapshot <name>', 'a snapshot made with offvia snapshot create')
    .option('--time <time>', 'an RFC 3339 time, or a duration back from now (30m, 2h)')
    .option(...subscriptionOption)
    .option(
      '--dry-run',
      'show the subscription, its retention and what would be redelivered; change nothing',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  offvia snapshot create before-deploy\n  offvia seek --snapshot before-deploy --dry-run\n  offvia seek --time 2026-12-01T21:00:00Z',
    )
    .action(
      action(
        async (
          open,
          flags,
          opts: SubscriptionFlags & { snapshot?: string; time?: string; dryRun?: boolean },
        ) => {
          const to = parseSeekTarget(opts, deps.now());
          if (opts.subscription !== undefined) parseResourceId(opts.subscription, '--subscription');
          const ctx = open();
          const report = await withPubSub(ctx, async (pubsub) =>
            seek(
              ctx,
              ctx.pipeline,
              await ingestSubscription(ctx, ctx.pipeline, pubsub, opts.subscription),
              to,
              opts.dryRun === true,
              deps.now(),
            ),
          );
          deps.io.out(flags.json ? toJson(report) : formatSeek(report));
          return EXIT.ok;
        },
      ),
    );
}
