// The functions of a pipeline definition as handlers the Functions Framework registers (functions/index.ts).
import { runSchemaSweep, type SweepDeps } from '../../drift/sweep';
import { createSchemaSweepDeps } from '../../drift/sweep-runtime';
import { DeliveryRefused, errorText } from '../../errors';
import * as logs from '../../logging/logs';
import type { Env } from '../../config/env';
import { Logger, type LogSink } from '../../logging/logger';
import type { CloudEvent } from '@google-cloud/functions-framework';
import {
  decodePushedEvent,
  type PushedEvent,
  type RawMessagePublishedData,
} from '../../pubsub/message';
import type { HttpAnswer } from '../../state/fire-windows';
import type { TimerLoopOptions } from '../../state/timer-loop';
import type { AnyPipelineDefinition } from '../definition';
import { createPipelineFireDeps, createPipelineIngestDeps, pipelineLoopOptions } from './compose';
import { firePipelineWindowsHttp, type PipelineFireDeps } from './fire';
import {
  ingestPipelinePushedEvent,
  type PipelineIngestDeps,
  type PipelineIngestOutcome,
} from './ingest';

/** The request fields fireWindows reads (an Express request satisfies it). */
export interface FireRequest {
  readonly method: string;
  get(header: string): string | undefined;
}

/** How the handlers build their dependencies; tests pass stubs. */
export interface EntryPointFactories {
  readonly ingestDeps: (definition: AnyPipelineDefinition, env: Env) => Promise<PipelineIngestDeps>;
  readonly fireDeps: (definition: AnyPipelineDefinition, env: Env) => PipelineFireDeps;
  readonly loopOptions: (env: Env) => TimerLoopOptions;
  readonly fire: (deps: PipelineFireDeps, loop?: TimerLoopOptions) => Promise<HttpAnswer>;
  readonly ingest: (event: PushedEvent, deps: PipelineIngestDeps) => Promise<PipelineIngestOutcome>;
  readonly sweepDeps: (definition: AnyPipelineDefinition, env: Env) => SweepDeps;
  readonly sweep: (deps: SweepDeps) => Promise<{ readonly ok: boolean }>;
}

/** The real factories: clients from the environment. */
export const REAL_FACTORIES: EntryPointFactories = {
  ingestDeps: (definition, env) => createPipelineIngestDeps(definition, env),
  fireDeps: (definition, env) => createPipelineFireDeps(definition, env),
  loopOptions: pipelineLoopOptions,
  fire: firePipelineWindowsHttp,
  ingest: ingestPipelinePushedEvent,
  sweepDeps: (definition, env) => createSchemaSweepDeps(definition, env),
  sweep: runSchemaSweep,
};

/** A pipeline's handlers and their cold-start hooks. */
export interface PipelineEntryPoints {
  /**
   * The ingest function (`functions.ingest.entryPoint`): {@link ingestPipelinePushedEvent}.
   * @throws DeliveryRefused (Pub/Sub redelivers) on any failure, including dependencies that could not be built
   *   (e.g. the device directory's first load failed): the next delivery tries to build them again
   */
  ingest(event: PushedEvent): Promise<PipelineIngestOutcome>;
  /**
   * The fireWindows function (`functions.fireWindows.entryPoint`), POST only: 405 otherwise. A Cloud Scheduler call
   * (`X-CloudScheduler: true`) runs the timer loop, any other one pass ({@link firePipelineWindowsHttp}); 500 with
   * the error when the dependencies cannot be built.
   */
  fireWindows(request: FireRequest): Promise<HttpAnswer & { allow?: string }>;
  /**
   * The schema sweep (`functions.schemaSweep.entryPoint`), POST only: 405 otherwise. Answers one sweep's JSON
   * summary: 200 when every table was swept (or left to a concurrent sweep), 500 when any failed (Cloud Scheduler
   * retries) or the dependencies cannot be built.
   */
  schemaSweep(request: FireRequest): Promise<HttpAnswer & { allow?: string }>;
  /** Builds the schemaSweep dependencies now (cold start). @throws ConfigError for a bad variable */
  warmSchemaSweep(): void;
  /** Starts building the ingest dependencies now (cold start); a failure is logged and retried by the next call. */
  warmIngest(): void;
  /** Builds the fireWindows dependencies now (cold start). @throws ConfigError for a bad variable */
  warmFireWindows(): void;
}

/**
 * The handlers of `definition`, building their dependencies from `env` on first use (or through the `warm*` hooks)
 * and keeping them for the instance's life; a failed ingest build is retried by the next delivery.
 */
export function pipelineEntryPoints(
  definition: AnyPipelineDefinition,
  env: Env,
  factories: EntryPointFactories = REAL_FACTORIES,
  sink?: LogSink,
): PipelineEntryPoints {
  const logger = new Logger(definition.functions.ingest.entryPoint, sink);
  const fireLogger = new Logger(definition.functions.fireWindows.entryPoint, sink);
  const sweepName = definition.functions.schemaSweep?.entryPoint ?? 'schemaSweep';
  const sweepLogger = new Logger(sweepName, sink);
  let ingestDeps: Promise<PipelineIngestDeps> | undefined;
  let fireDeps: PipelineFireDeps | undefined;
  let sweepDeps: SweepDeps | undefined;
  let loop: TimerLoopOptions | undefined;
  const buildIngest = (): Promise<PipelineIngestDeps> => {
    if (ingestDeps === undefined) {
      const building = factories.ingestDeps(definition, env);
      ingestDeps = building;
      building.catch((err: unknown) => {
        if (ingestDeps === building) ingestDeps = undefined;
        logger.write('ERROR', 'ingest dependencies not built; the next delivery retries', {
          outcome: 'retry',
          pipeline: definition.name,
          error: errorText(err),
        });
      });
    }
    return ingestDeps;
  };
  const buildFire = (): PipelineFireDeps => {
    fireDeps ??= factories.fireDeps(definition, env);
    return fireDeps;
  };
  const buildSweep = (): SweepDeps => {
    sweepDeps ??= factories.sweepDeps(definition, env);
    return sweepDeps;
  };
  return {
    async ingest(event) {
      let deps: PipelineIngestDeps;
      try {
        deps = await buildIngest();
      } catch (err) {
        const decoded = decodePushedEvent(event);
        throw new DeliveryRefused(decoded.ok ? decoded.message.messageId : decoded.messageId, {
          cause: err,
        });
      }
      return factories.ingest(event, deps);
    },
    async fireWindows(request) {
      if (request.method !== 'POST') return notPost(definition.functions.fireWindows.entryPoint);
      let deps: PipelineFireDeps;
      try {
        deps = buildFire();
        loop ??= factories.loopOptions(env);
      } catch (err) {
        fireLogger.write('ERROR', 'fireWindows run failed', {
          outcome: 'fire_windows_failed',
          pipeline: definition.name,
          error: errorText(err),
        });
        return {
          status: 500,
          body: { status: 'failed', pipeline: definition.name, error: errorText(err) },
        };
      }
      const scheduled = request.get('x-cloudscheduler') === 'true';
      return scheduled ? factories.fire(deps, loop) : factories.fire(deps);
    },
    async schemaSweep(request) {
      if (request.method !== 'POST') return notPost(sweepName);
      let deps: SweepDeps | undefined;
      try {
        deps = buildSweep();
        const result = await factories.sweep(deps);
        return { status: result.ok ? 200 : 500, body: { ...result } };
      } catch (err) {
        logs.sweepTableFailed(deps?.logger ?? sweepLogger, '*', errorText(err));
        return { status: 500, body: { ok: false, error: errorText(err) } };
      }
    },
    warmSchemaSweep() {
      buildSweep();
    },
    warmIngest() {
      void buildIngest(); // a failure is logged by buildIngest's own handler
    },
    warmFireWindows() {
      buildFire();
    },
  };
}

/** The answer to a call other than POST. */
function notPost(name: string): HttpAnswer & { allow: string } {
  return { status: 405, allow: 'POST', body: { error: `${name} takes POST` } };
}

/** The Functions Framework's registration calls (the module satisfies it; tests pass a recorder). */
export interface FunctionsFramework {
  cloudEvent<T>(name: string, handler: (event: CloudEvent<T>) => Promise<void>): unknown;
  http(name: string, handler: (req: FireRequest, res: FireResponse) => Promise<void>): unknown;
}

/** The response calls fireWindows makes (an Express response satisfies it). */
export interface FireResponse {
  status(code: number): FireResponse;
  set(field: string, value: string): FireResponse;
  json(body: unknown): unknown;
}

/**
 * Registers every pipeline's ingest (cloudEvent), schemaSweep when it has one, and fireWindows (http) entry points,
 * and builds the dependencies of the one `env.FUNCTION_TARGET` names at once: a bad variable fails the cold start.
 * @returns the entry point names registered, in order
 */
export function registerPipelineFunctions(
  framework: FunctionsFramework,
  pipelines: readonly AnyPipelineDefinition[],
  env: Env,
  factories: EntryPointFactories = REAL_FACTORIES,
): string[] {
  const names: string[] = [];
  const http = (
    name: string,
    handle: (req: FireRequest) => Promise<HttpAnswer & { allow?: string }>,
  ) => {
    framework.http(name, async (req, res) => {
      const answer = await handle(req);
      if (answer.allow !== undefined) res.set('Allow', answer.allow);
      res.status(answer.status).json(answer.body);
    });
    names.push(name);
  };
  for (const definition of pipelines) {
    const entry = pipelineEntryPoints(definition, env, factories);
    const ingestName = definition.functions.ingest.entryPoint;
    const sweepName = definition.functions.schemaSweep?.entryPoint;
    const fireName = definition.functions.fireWindows.entryPoint;
    if (env.FUNCTION_TARGET === ingestName) entry.warmIngest();
    if (env.FUNCTION_TARGET === fireName) entry.warmFireWindows();
    if (sweepName !== undefined && env.FUNCTION_TARGET === sweepName) entry.warmSchemaSweep();
    framework.cloudEvent<RawMessagePublishedData>(ingestName, async (event) => {
      await entry.ingest(event);
    });
    names.push(ingestName);
    if (sweepName !== undefined) http(sweepName, (req) => entry.schemaSweep(req));
    http(fireName, (req) => entry.fireWindows(req));
  }
  return names;
}
