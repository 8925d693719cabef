// Names of the Pub/Sub and BigQuery resources the local stack creates, shared by its scripts and tests.
// The same names are used in the cloud; only the push endpoint and the Bronze stand-in are local inventions.
import type { CreateSubscriptionOptions } from '@google-cloud/pubsub';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { PIPELINES } from '../../shared/pipelines';

/** Topic producers publish booking events to. */
export const BOOKING_TOPIC = 'booking-events';
/** Message retention of the local booking topic, seconds: 7 days, the deploy's `--topic-retention` default. */
export const LOCAL_TOPIC_RETENTION_S = 7 * 24 * 3600;
/** Topic that receives messages the push subscription gave up on after the maximum delivery attempts. */
export const BOOKING_DLQ_TOPIC = 'booking-events-dlq';
/** Pull subscription on the dead-letter topic, so dead letters are kept and can be inspected locally. */
export const BOOKING_DLQ_SUBSCRIPTION = 'booking-events-dlq-hold';
/** Push subscription delivering to the ingestBooking function, as Eventarc's subscription does in the cloud. */
export const INGEST_PUSH_SUBSCRIPTION = 'booking-events-ingest';
/** Pull subscription read by the Bronze stand-in (a BigQuery subscription in the cloud). */
export const BRONZE_SUBSCRIPTION = 'booking-events-bronze';
/** Dataset and table the Bronze subscription writes to. */
export const BRONZE_DATASET = 'offvia_bronze';
export const BRONZE_TABLE = 'raw_bookings';

/** The project the stack runs under: OFFVIA_PROJECT_ID, then GOOGLE_CLOUD_PROJECT, then the local default. */
export function projectIdFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.OFFVIA_PROJECT_ID || env.GOOGLE_CLOUD_PROJECT || 'offvia-local';
}

/** Full resource path of a topic, as Pub/Sub spells it in messages and subscriptions. */
export function topicPath(projectId: string, topic: string): string {
  return `projects/${projectId}/topics/${topic}`;
}

/** Full resource path of a subscription (also Bronze's subscription_name column). */
export function subscriptionPath(projectId: string, subscription: string): string {
  return `projects/${projectId}/subscriptions/${subscription}`;
}

/**
 * The push endpoint for a CloudEvent function on the Functions Framework: a path of the form
 * /projects/P/topics/T makes the framework turn the push body into the messagePublished CloudEvent Eventarc sends.
 */
export function pushEndpointFor(projectId: string, topic: string, port: number): string {
  return `http://127.0.0.1:${port}/${topicPath(projectId, topic)}`;
}

/** Ack deadline of the local push subscription, seconds: the function's timeout, as Eventarc's subscription has. */
export const INGEST_PUSH_ACK_DEADLINE_S = 60;

/**
 * Settings of the local push subscription to an ingest function at `pushEndpoint`: without the cloud's retry and
 * dead-letter policies, because the emulator's backoff task dies on its first error and strands every waiting
 * message; without them it redelivers about every second, and the retry-age guard (OFFVIA_MAX_RETRY_AGE_MS) still
 * bounds a message refused for good.
 */
export function ingestPushSubscriptionOptions(pushEndpoint: string): CreateSubscriptionOptions {
  return { pushConfig: { pushEndpoint }, ackDeadlineSeconds: INGEST_PUSH_ACK_DEADLINE_S };
}

/** A positive integer from the environment, or the default; a malformed value is an error, not a silent default. */
export function positiveIntFromEnv(name: string, defaultValue: number, env = process.env): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return defaultValue;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) {
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** Fixed ports of booking's and telemetry's functions (the docs name them). */
const ESTABLISHED_PORTS: Readonly<Record<string, number>> = {
  ingestBooking: 8080,
  fireWindows: 8081,
  schemaSweep: 8082,
  ingestTelemetry: 8083,
  fireTelemetryWindows: 8084,
};

/**
 * Derived ports: blocks of three from here (ingest, fireWindows, schema sweep), away from the emulators and the
 * dashboard and below Linux's ephemeral range (32768 up).
 */
export const DERIVED_PORT_BASE = 20_000;
const DERIVED_BLOCKS = 3000;

/** FNV-1a (32 bits) of a text: a stable spread of pipeline names over the port blocks. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

/**
 * The default local port of every function of `pipelines`, by entry point: `ESTABLISHED_PORTS`, else the block
 * `fnv1a(name) mod 3000` (the next free one when two names meet, in name order). OFFVIA_<NAME>_PORT moves one.
 */
export function localFunctionPorts(
  pipelines: readonly AnyPipelineDefinition[],
): ReadonlyMap<string, number> {
  const ports = new Map<string, number>();
  const usedBlocks = new Set<number>();
  const byName = [...pipelines].sort((a, b) => a.name.localeCompare(b.name));
  for (const p of byName) {
    const { ingest, fireWindows, schemaSweep } = p.functions;
    const entries = [ingest.entryPoint, fireWindows.entryPoint, schemaSweep?.entryPoint];
    if (entries.every((e) => e === undefined || ESTABLISHED_PORTS[e] !== undefined)) {
      for (const e of entries) if (e !== undefined) ports.set(e, ESTABLISHED_PORTS[e] ?? 0);
      continue;
    }
    let block = fnv1a(p.name) % DERIVED_BLOCKS;
    while (usedBlocks.has(block)) block = (block + 1) % DERIVED_BLOCKS;
    usedBlocks.add(block);
    entries.forEach((e, i) => {
      if (e !== undefined) ports.set(e, DERIVED_PORT_BASE + 3 * block + i);
    });
  }
  return ports;
}

/** ingestTelemetry → INGEST_TELEMETRY: the stack's environment naming (OFFVIA_<NAME>_PORT, OFFVIA_<NAME>_URL). */
export function functionEnvName(entryPoint: string): string {
  return entryPoint.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

/** A function the local stack serves: its entry point, the Functions Framework signature and its default port. */
export interface LocalFunction {
  readonly entryPoint: string;
  /** `cloudevent` for a Pub/Sub-triggered ingest function (Eventarc), `http` for the scheduled ones. */
  readonly signature: 'cloudevent' | 'http';
  readonly defaultPort: number;
}

/**
 * The functions of the given pipelines in stack start order: per pipeline its ingest function, then its schema
 * sweep (when schema drift is on), then its fireWindows; default ports from {@link localFunctionPorts}.
 */
export function localFunctions(pipelines: readonly AnyPipelineDefinition[]): LocalFunction[] {
  const ports = localFunctionPorts(pipelines);
  return pipelines.flatMap((p) => {
    const entries: [string, LocalFunction['signature']][] = [
      [p.functions.ingest.entryPoint, 'cloudevent'],
    ];
    if (p.functions.schemaSweep !== null)
      entries.push([p.functions.schemaSweep.entryPoint, 'http']);
    entries.push([p.functions.fireWindows.entryPoint, 'http']);
    return entries.map(([entryPoint, signature]) => ({
      entryPoint,
      signature,
      defaultPort: ports.get(entryPoint) ?? 0,
    }));
  });
}

/**
 * The local port of a function of `pipelines` (default: the registry): OFFVIA_<NAME>_PORT, else its default.
 * @throws Error for an entry point no pipeline has, or a malformed OFFVIA_<NAME>_PORT
 */
export function localFunctionPort(
  entryPoint: string,
  env: NodeJS.ProcessEnv = process.env,
  pipelines: readonly AnyPipelineDefinition[] = PIPELINES,
): number {
  const defaultPort = localFunctionPorts(pipelines).get(entryPoint);
  if (defaultPort === undefined) throw new Error(`no local port for ${entryPoint}`);
  return positiveIntFromEnv(`OFFVIA_${functionEnvName(entryPoint)}_PORT`, defaultPort, env);
}

/** What the local stack creates in Pub/Sub for one pipeline. */
export interface LocalPubSubPlan {
  readonly pipeline: string;
  /** The topic, with its message retention in seconds (so `offvia seek --time` works locally as in the cloud). */
  readonly topic: { readonly name: string; readonly retentionSeconds: number };
  readonly deadLetterTopic: string;
  /** Pull subscriptions: the dead-letter hold and the Bronze stand-in's (a BigQuery subscription in the cloud). */
  readonly pullSubscriptions: readonly {
    readonly topic: string;
    readonly name: string;
    readonly options: CreateSubscriptionOptions;
  }[];
  /** The push subscription delivering to the pipeline's ingest function. */
  readonly ingest: { readonly name: string; readonly options: CreateSubscriptionOptions };
}

/**
 * The Pub/Sub resources of one pipeline on the local stack: the ingest push subscription is ordered when the
 * contract names an ordering-key attribute; no retry or dead-letter policy ({@link ingestPushSubscriptionOptions}).
 */
export function localPubSubPlan(
  pipeline: AnyPipelineDefinition,
  projectId: string,
  ingestPort: number,
): LocalPubSubPlan {
  const { topic, deadLetterTopic, subscriptions } = pipeline.pubsub;
  const pull: LocalPubSubPlan['pullSubscriptions'][number][] = [
    { topic: deadLetterTopic, name: subscriptions.deadLetterHold, options: {} },
  ];
  if (subscriptions.bronze !== null) {
    pull.push({ topic, name: subscriptions.bronze, options: { ackDeadlineSeconds: 60 } });
  }
  const ingestOptions = ingestPushSubscriptionOptions(
    pushEndpointFor(projectId, topic, ingestPort),
  );
  return {
    pipeline: pipeline.name,
    topic: { name: topic, retentionSeconds: LOCAL_TOPIC_RETENTION_S },
    deadLetterTopic,
    pullSubscriptions: pull,
    ingest: {
      name: subscriptions.ingest,
      options:
        pipeline.contract.orderingKeyAttribute === null
          ? ingestOptions
          : { ...ingestOptions, enableMessageOrdering: true },
    },
  };
}

/** The device directory's refresh on the local stack, ms (stack.sh's OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS). */
export const LOCAL_REFERENCE_REFRESH_MS = 10_000;

/** The directory refresh the local functions run with: OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS, else the local default. */
export function localReferenceRefreshMs(env: NodeJS.ProcessEnv = process.env): number {
  return positiveIntFromEnv(
    'OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS',
    LOCAL_REFERENCE_REFRESH_MS,
    env,
  );
}
