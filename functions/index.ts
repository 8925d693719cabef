// Entry points for Cloud Functions gen2: parse the trigger, call shared/, map the result to ack or redelivery.
import * as functions from '@google-cloud/functions-framework';
import type { CloudEvent } from '@google-cloud/functions-framework';
import { type IngestDeps, ingestPushedEvent } from '../shared/ingest/ingest-booking';
import { createIngestDeps } from '../shared/ingest/runtime';
import type { RawMessagePublishedData } from '../shared/pubsub/message';
import { runSchemaSweep, type SweepDeps } from '../shared/drift/sweep';
import { createSchemaSweepDeps } from '../shared/drift/sweep-runtime';
import { errorText } from '../shared/errors';
import * as logs from '../shared/logging/logs';
import { createFireWindowsDeps, fireWindowsLoopOptions } from '../shared/aggregates/runtime';
import { fireWindowsLoopHttp, type TimerLoopOptions } from '../shared/state/timer-loop';
import { fireWindowsHttp, type FireWindowsDeps } from '../shared/state/fire-windows';
import type { BookingAccumulator, BookingAggregate } from '../shared/aggregates/booking-aggregates';
import { PIPELINES } from '../shared/pipelines';
import { registerPipelineFunctions } from '../shared/pipeline/runtime/entry-points';

let ingestDeps: IngestDeps | undefined;
/** Configuration is validated once per instance; when this instance serves ingestBooking, at cold start. */
function ingestDependencies(): IngestDeps {
  ingestDeps ??= createIngestDeps(process.env);
  return ingestDeps;
}
if (process.env.FUNCTION_TARGET === 'ingestBooking') ingestDependencies();

/**
 * Pub/Sub-triggered (Eventarc `google.cloud.pubsub.topic.v1.messagePublished`, or a push body the framework did not
 * convert). Returns normally once the message is in Silver, quarantine or bad data (Pub/Sub acks); throws
 * DeliveryRefused, whose message carries no internal text, on transient failures so Pub/Sub redelivers.
 */
functions.cloudEvent<RawMessagePublishedData>(
  'ingestBooking',
  async (event: CloudEvent<RawMessagePublishedData>): Promise<void> => {
    await ingestPushedEvent(event, ingestDependencies());
  },
);

let sweepDeps: SweepDeps | undefined;
/** Configuration is validated once per instance; when this instance serves schemaSweep, at cold start. */
function sweepDependencies(): SweepDeps {
  sweepDeps ??= createSchemaSweepDeps(process.env);
  return sweepDeps;
}
if (process.env.FUNCTION_TARGET === 'schemaSweep') sweepDependencies();

/**
 * HTTP, for Cloud Scheduler (every minute; OIDC-authenticated in the cloud). POST only. Runs one schema sweep over
 * the configured target tables and answers its JSON summary: 200 when every table was swept (or left to a
 * concurrent sweep), 500 when any failed (Cloud Scheduler retries; the failure is logged and nothing is lost).
 */
functions.http('schemaSweep', async (req, res) => {
  if (req.method !== 'POST') {
    res.status(405).set('Allow', 'POST').json({ error: 'schemaSweep takes POST' });
    return;
  }
  const deps = sweepDependencies();
  try {
    const result = await runSchemaSweep(deps);
    res.status(result.ok ? 200 : 500).json(result);
  } catch (err) {
    logs.sweepTableFailed(deps.logger, '*', errorText(err));
    res.status(500).json({ ok: false, error: errorText(err) });
  }
});

let fireDeps: FireWindowsDeps<bigint, BookingAccumulator, BookingAggregate> | undefined;
/** Configuration is validated once per instance; when this instance serves fireWindows, at cold start. */
function fireWindowsDependencies(): FireWindowsDeps<bigint, BookingAccumulator, BookingAggregate> {
  fireDeps ??= createFireWindowsDeps(process.env);
  return fireDeps;
}
if (process.env.FUNCTION_TARGET === 'fireWindows') fireWindowsDependencies();

let fireLoop: TimerLoopOptions | undefined;

/**
 * HTTP, for Cloud Scheduler (every minute; OIDC-authenticated in the cloud). POST only. Advances the watermark, fires
 * the due windows and writes their panes to the gold table; answers the run's JSON summary: 200 (also when another
 * run holds the lease), 503 when something failed transiently (Cloud Scheduler retries), 500 otherwise. A call from
 * Cloud Scheduler (header `X-CloudScheduler: true`, which Cloud Scheduler sets on HTTP targets) keeps serving
 * processing-time timers for `OFFVIA_FIRE_WINDOWS_LOOP_MS` (the timer loop); any other call (an operator, a test)
 * is one pass.
 */
functions.http('fireWindows', async (req, res) => {
  if (req.method !== 'POST') {
    res.status(405).set('Allow', 'POST').json({ error: 'fireWindows takes POST' });
    return;
  }
  const deps = fireWindowsDependencies();
  fireLoop ??= fireWindowsLoopOptions(process.env);
  const answer =
    req.get('x-cloudscheduler') === 'true'
      ? await fireWindowsLoopHttp(deps, fireLoop)
      : await fireWindowsHttp(deps);
  res.status(answer.status).json(answer.body);
});

/**
 * Every registered pipeline but booking (which runs through ingestBooking and fireWindows above) gets its two
 * functions from its definition (shared/pipeline/runtime/entry-points.ts): telemetry's `ingestTelemetry` and
 * `fireTelemetryWindows`. Dependencies are built once per instance, at cold start when `FUNCTION_TARGET` names one.
 * The deploy plan reads literal registrations only (deploy/gcloud/registry.ts), so it does not deploy these yet.
 */
registerPipelineFunctions(functions, PIPELINES, process.env);
