// The sample messages of the registered pipelines and of the payments fixture (what `npm run demo -- --pipeline
// NAME --samples` publishes) end where each says when decoded: Silver, or the named quarantine stage.
import assert from 'node:assert/strict';
import type { BigQuery } from '@google-cloud/bigquery';
import { Logger } from '../../../shared/logging/logger';
import type { AnyPipelineDefinition } from '../../../shared/pipeline/definition';
import { decodeVersioned } from '../../../shared/pipeline/versioning';
import { discoverPipelines, pipelineDirs } from '../../../shared/pipelines';
import { loadTelemetryConfig } from '../../../shared/pipelines/telemetry/config';
import { StaticDeviceDirectory } from '../../../shared/pipelines/telemetry/device-directory';

const NOW_MS = Date.UTC(2026, 11, 5, 10, 0, 0);

/** Settings without side inputs: telemetry's device directory is an empty static one (unknown devices pass). */
async function settingsOf(p: AnyPipelineDefinition): Promise<unknown> {
  if (p.name === 'telemetry') {
    return { limits: loadTelemetryConfig({}), devices: new StaticDeviceDirectory(new Map()) };
  }
  const io = {
    bigquery: {} as BigQuery,
    logger: new Logger('test', () => undefined),
    now: () => NOW_MS,
  };
  return p.createSettings({}, io);
}

const PIPELINES_AND_FIXTURE = discoverPipelines(
  pipelineDirs({ OFFVIA_EXTRA_PIPELINE_DIRS: 'test/fixtures/pipelines' }),
);

describe('sample messages of every pipeline', () => {
  for (const p of PIPELINES_AND_FIXTURE) {
    it(`${p.name}: each sample ends where it says, and there are accepted and rejected ones`, async () => {
      const settings = await settingsOf(p);
      const samples = p.samples(NOW_MS);
      assert.ok(samples.some((s) => s.expect.layer === 'silver'));
      assert.ok(samples.some((s) => s.expect.layer === 'quarantine'));
      samples.forEach((sample, i) => {
        const outcome = decodeVersioned(
          p.contract,
          {
            data: Buffer.from(sample.data, 'utf8'),
            attributes: sample.attributes,
            messageId: `m-${i}`,
            publishTimeMs: NOW_MS,
          },
          { receivedAtMs: NOW_MS, settings },
        );
        const ended = outcome.ok
          ? { layer: 'silver' }
          : { layer: 'quarantine', stage: outcome.stage };
        assert.deepEqual(
          ended,
          sample.expect,
          `${sample.description}: ${outcome.ok ? '' : outcome.reason}`,
        );
      });
    });
  }
});
