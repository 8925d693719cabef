// The routing of a pipeline definition's functions, with stubbed dependencies: which entry points are registered,
// cold-start building, HTTP method and Cloud Scheduler handling, a failed build refused and retried, and the status
// of a run over several aggregations.
import assert from 'node:assert/strict';
import { DeliveryRefused } from '../../../shared/errors';
import type { AnyPipelineDefinition } from '../../../shared/pipeline/definition';
import {
  pipelineEntryPoints,
  registerPipelineFunctions,
  type EntryPointFactories,
  type FunctionsFramework,
} from '../../../shared/pipeline/runtime/entry-points';
import { combinedStatus } from '../../../shared/pipeline/runtime/fire';
import type { PipelineFireDeps } from '../../../shared/pipeline/runtime/fire';
import type { PipelineIngestDeps } from '../../../shared/pipeline/runtime/ingest';
import {
  aggregationNamespace,
  aggregationPaths,
  pipelineNamespaces,
} from '../../../shared/pipeline/runtime/namespace';
import { PIPELINES } from '../../../shared/pipelines';
import { BOOKING_PIPELINE } from '../../../shared/pipelines/booking/definition';
import { TELEMETRY_PIPELINE } from '../../../shared/pipelines/telemetry/definition';
import type { SweepDeps } from '../../../shared/drift/sweep';

const telemetry = TELEMETRY_PIPELINE as unknown as AnyPipelineDefinition;
const booking = BOOKING_PIPELINE as unknown as AnyPipelineDefinition;
const silent = () => undefined;

interface Calls {
  ingestBuilds: number;
  fireBuilds: number;
  sweepBuilds: number;
  fired: { loop: boolean }[];
  ingested: number;
  swept: number;
}

function stubs(calls: Calls, ingestFails = 0, sweepOk = true): EntryPointFactories {
  let failures = ingestFails;
  const fireDeps: PipelineFireDeps = { pipeline: 'telemetry', aggregations: [] };
  return {
    ingestDeps: () => {
      calls.ingestBuilds += 1;
      if (failures > 0) {
        failures -= 1;
        return Promise.reject(new Error('device directory: BigQuery unavailable'));
      }
      return Promise.resolve({} as PipelineIngestDeps);
    },
    fireDeps: () => {
      calls.fireBuilds += 1;
      return fireDeps;
    },
    loopOptions: () => ({ loopMs: 58_000, pollMs: 5_000 }),
    fire: (_deps, loop) => {
      calls.fired.push({ loop: loop !== undefined });
      return Promise.resolve({ status: 200, body: { ok: true } });
    },
    ingest: () => {
      calls.ingested += 1;
      return Promise.resolve({
        destination: 'quarantine',
        messageId: 'm',
        stage: 'PARSE_JSON',
        reason: 'r',
        version: null,
      });
    },
    sweepDeps: () => {
      calls.sweepBuilds += 1;
      return {} as SweepDeps;
    },
    sweep: () => {
      calls.swept += 1;
      return Promise.resolve({ ok: sweepOk, tables: [] });
    },
  };
}

const fresh = (): Calls => ({
  ingestBuilds: 0,
  fireBuilds: 0,
  sweepBuilds: 0,
  fired: [],
  ingested: 0,
  swept: 0,
});
const request = (method: string, headers: Record<string, string> = {}) => ({
  method,
  get: (h: string) => headers[h.toLowerCase()],
});

describe('pipeline runtime entry points', function () {
  it('registers ingest (cloudEvent), schemaSweep when drift is on and fireWindows (http) of every pipeline', function () {
    const registered: [string, string][] = [];
    const framework: FunctionsFramework = {
      cloudEvent: (name) => registered.push(['cloudEvent', name]),
      http: (name) => registered.push(['http', name]),
    };
    const calls = fresh();
    const names = registerPipelineFunctions(framework, PIPELINES, {}, stubs(calls));
    assert.deepEqual(registered, [
      ['cloudEvent', 'ingestBooking'],
      ['http', 'schemaSweep'],
      ['http', 'fireWindows'],
      ['cloudEvent', 'ingestTelemetry'],
      ['http', 'fireTelemetryWindows'],
    ]);
    assert.deepEqual(names, [
      'ingestBooking',
      'schemaSweep',
      'fireWindows',
      'ingestTelemetry',
      'fireTelemetryWindows',
    ]);
    // Nothing is built unless FUNCTION_TARGET names the entry point.
    assert.deepEqual([calls.ingestBuilds, calls.fireBuilds, calls.sweepBuilds], [0, 0, 0]);
  });

  it('builds the dependencies at cold start only for the FUNCTION_TARGET entry point', function () {
    const framework: FunctionsFramework = { cloudEvent: silent, http: silent };
    /** Builds of ingest, fireWindows and the sweep when the process serves `target`. */
    const builds = (target: string) => {
      const calls = fresh();
      registerPipelineFunctions(framework, PIPELINES, { FUNCTION_TARGET: target }, stubs(calls));
      return [calls.ingestBuilds, calls.fireBuilds, calls.sweepBuilds];
    };
    assert.deepEqual(builds('fireTelemetryWindows'), [0, 1, 0]);
    assert.deepEqual(builds('ingestTelemetry'), [1, 0, 0]);
    assert.deepEqual(builds('schemaSweep'), [0, 0, 1]);
  });

  it('schemaSweep takes POST only and answers 200, 500 when a table failed or the dependencies cannot be built', async function () {
    const calls = fresh();
    const entry = pipelineEntryPoints(booking, {}, stubs(calls), silent);
    const get = await entry.schemaSweep(request('GET'));
    assert.equal(get.status, 405);
    assert.equal(get.allow, 'POST');
    assert.deepEqual(get.body, { error: 'schemaSweep takes POST' });
    assert.equal((await entry.schemaSweep(request('POST'))).status, 200);
    assert.equal((await entry.schemaSweep(request('POST'))).status, 200);
    assert.deepEqual([calls.sweepBuilds, calls.swept], [1, 2]);
    const failing = pipelineEntryPoints(booking, {}, stubs(fresh(), 0, false), silent);
    assert.equal((await failing.schemaSweep(request('POST'))).status, 500);
    const logged: Record<string, unknown>[] = [];
    const broken = pipelineEntryPoints(
      booking,
      {},
      {
        ...stubs(fresh()),
        sweepDeps: () => {
          throw new Error('OFFVIA_SCHEMA_LEASE_MS: must be >= 10000');
        },
      },
      (e) => logged.push(e),
    );
    const answer = await broken.schemaSweep(request('POST'));
    assert.equal(answer.status, 500);
    assert.match(String(answer.body.error), /OFFVIA_SCHEMA_LEASE_MS/);
    assert.equal(logged[0]?.outcome, 'schema_sweep_failed');
  });

  it('fireWindows takes POST only; a Cloud Scheduler call runs the timer loop, any other one pass', async function () {
    const calls = fresh();
    const entry = pipelineEntryPoints(telemetry, {}, stubs(calls), silent);
    const get = await entry.fireWindows(request('GET'));
    assert.equal(get.status, 405);
    assert.equal(get.allow, 'POST');
    assert.deepEqual(get.body, { error: 'fireTelemetryWindows takes POST' });
    assert.equal((await entry.fireWindows(request('POST'))).status, 200);
    await entry.fireWindows(request('POST', { 'x-cloudscheduler': 'true' }));
    assert.deepEqual(calls.fired, [{ loop: false }, { loop: true }]);
    assert.equal(calls.fireBuilds, 1);
  });

  it('fireWindows answers 500 with the error when its dependencies cannot be built', async function () {
    const factories: EntryPointFactories = {
      ...stubs(fresh()),
      fireDeps: () => {
        throw new Error('OFFVIA_WINDOW_KEY_GROUPS: must be >= 1');
      },
    };
    const logged: unknown[] = [];
    const entry = pipelineEntryPoints(telemetry, {}, factories, (e) => logged.push(e));
    const answer = await entry.fireWindows(request('POST'));
    assert.equal(answer.status, 500);
    assert.match(String(answer.body.error), /OFFVIA_WINDOW_KEY_GROUPS/);
    assert.equal(logged.length, 1);
  });

  it('refuses a delivery while the ingest dependencies fail to build, and builds them again next time', async function () {
    const calls = fresh();
    const logged: Record<string, unknown>[] = [];
    const entry = pipelineEntryPoints(telemetry, {}, stubs(calls, 1), (e) => logged.push(e));
    const event = { id: 'ce-1', data: { message: { data: '', messageId: 'm-1' } } };
    await assert.rejects(entry.ingest(event), (err: unknown) => {
      assert.ok(err instanceof DeliveryRefused);
      assert.match(err.message, /"m-1"/);
      assert.doesNotMatch(err.message, /BigQuery/);
      return true;
    });
    assert.match(String(logged[0]?.error), /device directory/);
    await entry.ingest(event);
    await entry.ingest(event);
    assert.deepEqual([calls.ingestBuilds, calls.ingested], [2, 2]);
  });

  it('answers the worst status of the aggregations', function () {
    assert.equal(combinedStatus([200, 200]), 200);
    assert.equal(combinedStatus([200, 503]), 503);
    assert.equal(combinedStatus([503, 500]), 500);
    assert.equal(combinedStatus([]), 200);
  });

  it('gives every aggregation its own Firestore namespace under the windows root', function () {
    const [device] = telemetry.aggregations;
    assert.ok(device);
    const paths = aggregationPaths(aggregationNamespace(telemetry, device));
    assert.equal(paths.watermark, 'offviaTelemetryWindows/telemetry_device_1m/meta/watermark');
    assert.equal(paths.keyGroups, 'offviaTelemetryWindows/telemetry_device_1m/keyGroups');
    assert.deepEqual(
      pipelineNamespaces(telemetry).map((n) => n.paths.namespace),
      [
        'offviaTelemetryWindows/telemetry_device_1m',
        'offviaTelemetryWindows/telemetry_region_top_1m',
      ],
    );
  });
});
