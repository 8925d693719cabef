// The telemetry row of `npm run bench:keys`: the simulator's planned readings through the generic ingest in process,
// with only the Firestore emulator (device directory in memory, rows counted, not written), Firestore operations
// counted at the SDK, so its cost per million messages and rate stand beside booking's in the same run.
import { randomUUID } from 'node:crypto';
import type { Firestore } from '@google-cloud/firestore';
import type { TableRef } from '../../shared/config/env';
import { loadTelemetryConfig } from '../../shared/pipelines/telemetry/config';
import { Logger } from '../../shared/logging/logger';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { createPipelineParts, type PipelineParts } from '../../shared/pipeline/runtime/compose';
import {
  ingestPipelineMessage,
  type PipelineIngestDeps,
} from '../../shared/pipeline/runtime/ingest';
import { pipelineNamed } from '../../shared/pipelines';
import { StaticDeviceDirectory } from '../../shared/pipelines/telemetry/device-directory';
import type { InsertRow, RowResult, RowWriter } from '../../shared/sinks/row-writer';
import type { DecodeResult } from '../../shared/pubsub/message';
import { planTelemetryRun, type TelemetryPlan } from '../../deploy/local/telemetry-demo/plan';
import { countFirestoreOps, firestoreUsdPerMillion, type FirestoreOps } from './firestore-ops';

/** What one telemetry run measured. */
export interface TelemetryRate {
  readonly devices: number;
  readonly minutes: number;
  readonly inFlight: number;
  /** Messages ingested (readings and malformed ones). */
  readonly messages: number;
  readonly seconds: number;
  /** Firestore operations at the SDK over the ingest. */
  readonly ops: FirestoreOps;
  /** Accepted readings counted in every aggregation they take part in (or a duplicate / too late): all of them. */
  readonly allRouted: boolean;
}

/** Accepts every row (BigQuery is not part of this measurement). */
class DiscardingWriter implements RowWriter {
  insertRows(_table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    return Promise.resolve(rows.map(() => ({ ok: true as const })));
  }
}

/**
 * Telemetry's generic ingest in process on `db`: the parts of `definition` and the ingest's dependencies, with
 * `plan`'s device directory in memory and every BigQuery row accepted unwritten (only Firestore is exercised).
 */
export function inProcessTelemetry(
  definition: AnyPipelineDefinition,
  plan: TelemetryPlan,
  db: Firestore,
  logger: Logger,
): { parts: PipelineParts; deps: PipelineIngestDeps } {
  const parts = createPipelineParts(definition, process.env, logger, {
    firestore: db,
    writer: new DiscardingWriter(),
  });
  const deps = {
    definition,
    settings: {
      limits: loadTelemetryConfig(process.env),
      devices: new StaticDeviceDirectory(
        new Map(plan.directory.map((d) => [d.device_id, { region: d.region, site: d.site }])),
      ),
    },
    writer: parts.writer,
    projectId: parts.projectId,
    aggregations: parts.aggregations,
    logger,
    now: parts.now,
  };
  return { parts, deps };
}

/**
 * Ingests the planned run of `devices` × `minutes` (one reading a minute, the simulator's faults included) in publish
 * order with `inFlight` messages at once, on `db` (its operations are counted from now on: give it a client of its
 * own), in a windows root of its own.
 * @throws when Firestore fails
 */
export async function measureTelemetryRate(
  db: Firestore,
  options: { devices: number; minutes: number; inFlight: number },
): Promise<TelemetryRate> {
  const base = pipelineNamed('telemetry');
  const definition: AnyPipelineDefinition = {
    ...base,
    firestore: { windowsRoot: `benchTelemetry_${randomUUID().slice(0, 8)}`, schemaDriftRoot: null },
  };
  const plan = planTelemetryRun({
    devices: options.devices,
    minutes: options.minutes,
    readingsPerMinute: 1,
    seed: 7,
    nowMs: Date.now(),
  });
  const ops = countFirestoreOps(db);
  const { deps } = inProcessTelemetry(
    definition,
    plan,
    db,
    new Logger('benchTelemetry', () => undefined),
  );
  const messages = plannedDeliveries(plan, 'bench');
  let next = 0;
  let allRouted = true;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: Math.min(options.inFlight, messages.length) }, async () => {
      while (next < messages.length) {
        const m = messages[next++];
        if (m === undefined) return;
        const outcome = await ingestPipelineMessage(m, deps);
        if (outcome.destination === 'bad_data') allRouted = false;
      }
    }),
  );
  return {
    ...options,
    messages: messages.length,
    seconds: (Date.now() - started) / 1000,
    ops,
    allRouted,
  };
}

/** The telemetry row as one line, with the booking figures of the same run beside it. */
export function telemetryLine(
  t: TelemetryRate,
  booking: { usdPerMillion: number; perSecond: number; label: string } | undefined,
): string {
  const per = (n: number) => (n / t.messages).toFixed(2);
  const usd = firestoreUsdPerMillion(t.ops, t.messages);
  const rate = t.messages / t.seconds;
  const beside =
    booking === undefined
      ? ''
      : `; booking (${booking.label}) in this run: USD ${booking.usdPerMillion.toFixed(2)} per million, ` +
        `${booking.perSecond.toFixed(1)} events/s (telemetry's rate ${(rate / booking.perSecond).toFixed(2)}× ` +
        `booking's, target ≥ 0.7)`;
  return (
    `telemetry (generic runtime, 2 aggregations; ${t.devices} devices × ${t.minutes} min, ${t.messages} messages, ` +
    `${t.inFlight} in flight, counted at the SDK): reads / writes / deletes ${per(t.ops.reads)} / ` +
    `${per(t.ops.writes)} / ${per(t.ops.deletes)}, transactions ${per(t.ops.transactions)} per message; USD ` +
    `${usd.toFixed(2)} per million messages (target ≤ 0.60${usd <= 0.6 ? ', met' : ', MISSED'}); ` +
    `${rate.toFixed(1)} messages/s${beside}${t.allRouted ? '' : '; SOME MESSAGES WENT TO BAD DATA'}`
  );
}

/**
 * The plan's messages as the ingest receives them from Pub/Sub, all published at `publishTimeMs` (epoch ms UTC) with
 * ids `<idPrefix>-<publishTimeMs>-<index>`: for measuring the ingest in process, without the push.
 */
export function plannedDeliveries(
  plan: TelemetryPlan,
  idPrefix: string,
  publishTimeMs: number = Date.now(),
): DecodeResult[] {
  return plan.messages.map((m, i) => ({
    ok: true as const,
    message: {
      messageId: `${idPrefix}-${publishTimeMs}-${i}`,
      publishTime: new Date(publishTimeMs).toISOString(),
      publishTimeMs,
      attributes: { ...m.attributes },
      data: Buffer.from(m.data, 'utf8'),
      subscription: undefined,
    },
  }));
}
