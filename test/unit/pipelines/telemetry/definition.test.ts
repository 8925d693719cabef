// The telemetry definition composes: simulated readings (out of order, some without eventTs, unknown devices, a few
// malformed) go through its contract and both aggregations on the windowing core, and the final panes equal an
// independent computation from what was published; every message is accepted or rejected exactly once.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import type { ContractMessage } from '../../../../shared/pipeline/definition';
import { decodeVersioned } from '../../../../shared/pipeline/versioning';
import type { DeviceStats, TopDevice } from '../../../../shared/pipelines/telemetry/combine';
import type { TelemetrySettings } from '../../../../shared/pipelines/telemetry/contract';
import {
  TELEMETRY_PIPELINE,
  TELEMETRY_STRATEGY,
  TOP_N,
} from '../../../../shared/pipelines/telemetry/definition';
import { StaticDeviceDirectory } from '../../../../shared/pipelines/telemetry/device-directory';
import { createReduceFnRunner, MAX_WATERMARK_MS, type Pane } from '../../../../shared/windowing';
import { runTestStream, type TestStreamEvent } from '../../../support/test-stream';

const START_MS = Date.UTC(2026, 9, 7, 14, 0);
const MINUTE = 60_000;
const DEVICES = 120;
const REGIONS = ['eu-west', 'eu-north', 'us-east', 'ap-south'];

/** Devices 0..109 are in the directory; 110..119 were provisioned after its last reload. */
const directory = new StaticDeviceDirectory(
  new Map(
    Array.from({ length: DEVICES - 10 }, (_, i) => [
      `dev-${i}`,
      { region: REGIONS[i % REGIONS.length] ?? 'eu-west', site: `site-${i % 7}` },
    ]),
  ),
);
const settings: TelemetrySettings = {
  limits: {
    minTemperatureC: -55,
    maxTemperatureC: 125,
    maxFutureSkewMs: 300_000,
    maxEventAgeMs: 86_400_000,
  },
  devices: directory,
};

interface Published {
  readonly message: ContractMessage;
  /** The reading as published, or null for a malformed message. */
  readonly reading: { deviceId: string; eventTimeMs: number; milli: number } | null;
}

/** 3 minutes of readings every 10 s per device; 2 % without eventTs, 1 % malformed, delivered shuffled. */
function simulate(seed: number): Published[] {
  const rand = fc.sample(fc.integer({ min: 0, max: 1_000_000 }), {
    seed,
    numRuns: DEVICES * 18 * 3,
  });
  let r = 0;
  const next = (n: number) => (rand[r++] ?? 0) % n;
  const out: Published[] = [];
  for (let d = 0; d < DEVICES; d++) {
    for (let t = 0; t < 18; t++) {
      const eventTimeMs = START_MS + t * 10_000 + next(10_000);
      const milli = next(60_000) - 10_000;
      const id = `m-${d}-${t}`;
      const malformed = next(100) === 0;
      const noEventTs = next(50) === 0;
      const attributes: Record<string, string> = { deviceId: `dev-${d}`, contractVersion: '2' };
      if (!noEventTs) attributes.eventTs = new Date(eventTimeMs).toISOString();
      const data = malformed
        ? '{"temperatureC": '
        : `{"temperatureC": ${(milli / 1000).toFixed(3)}}`;
      out.push({
        message: { data: Buffer.from(data), attributes, messageId: id, publishTimeMs: eventTimeMs },
        reading: malformed ? null : { deviceId: `dev-${d}`, eventTimeMs, milli },
      });
    }
  }
  // Out-of-order delivery: a seeded shuffle.
  for (let i = out.length - 1; i > 0; i--) {
    const j = next(i + 1);
    [out[i], out[j]] = [out[j] as Published, out[i] as Published];
  }
  return out;
}

/** The last pane of every (key, window start). */
function finalPanes<T>(panes: readonly Pane<T>[]): Map<string, Pane<T>> {
  const last = new Map<string, Pane<T>>();
  for (const p of panes) last.set(`${p.key}|${p.window.startMs}`, p);
  return last;
}

describe('telemetry definition: contract and aggregations end to end on the windowing core', () => {
  const published = simulate(20261201);
  const receivedAtMs = START_MS + 4 * MINUTE;
  const outcomes = published.map((p) =>
    decodeVersioned(TELEMETRY_PIPELINE.contract, p.message, { receivedAtMs, settings }),
  );

  it("runs the scenario's strategy: fixed 1 min, early every 30 s, late per element, 10 min lateness, accumulating", () => {
    assert.deepEqual(TELEMETRY_STRATEGY, {
      windowFn: { kind: 'fixed', sizeMs: 60_000, offsetMs: 0 },
      allowedLatenessMs: 600_000,
      trigger: {
        earlyFirings: { processingTimeDelayMs: 30_000 },
        lateFirings: { elementCount: 1 },
      },
      accumulationMode: 'ACCUMULATING',
    });
    assert.deepEqual(
      TELEMETRY_PIPELINE.aggregations.map((a) => [
        a.name,
        a.strategy === TELEMETRY_STRATEGY,
        a.shards,
      ]),
      [
        ['telemetry_device_1m', true, 1],
        ['telemetry_region_top_1m', true, 16],
      ],
    );
  });

  it('accepts every well-formed reading and rejects every malformed one, exactly once', () => {
    assert.equal(outcomes.length, published.length);
    published.forEach((p, i) => {
      const outcome = outcomes[i];
      assert.ok(outcome);
      assert.equal(outcome.ok, p.reading !== null, p.message.messageId);
      if (!outcome.ok) assert.equal(outcome.stage, 'PARSE_JSON');
    });
    assert.ok(
      outcomes.some((o) => !o.ok),
      'the simulation produced no malformed message',
    );
    assert.ok(outcomes.some((o) => o.ok && o.eventTimeSource === 'PUBLISH_TIME'));
  });

  for (const aggregation of TELEMETRY_PIPELINE.aggregations) {
    it(`${aggregation.name}: final panes equal an independent computation from the published readings`, () => {
      assert.deepEqual(aggregation.strategy, TELEMETRY_STRATEGY);
      const elements = outcomes.flatMap((o) => {
        if (!o.ok) return [];
        const input = aggregation.input(o);
        return input ? [{ key: input.key, value: input.value, timestampMs: o.eventTimeMs }] : [];
      });
      // Bundles of 50 as delivered, 5 s of processing time between them, then the end of input.
      const events: TestStreamEvent<never>[] = [];
      for (let i = 0; i < elements.length; i += 50) {
        events.push({ kind: 'elements', elements: elements.slice(i, i + 50) });
        events.push({ kind: 'processingTime', advanceByMs: 5_000 });
      }
      events.push({ kind: 'watermark', watermarkMs: MAX_WATERMARK_MS });
      const runner = createReduceFnRunner(aggregation.strategy, aggregation.combineFn);
      const result = runTestStream(runner, events, { processingTimeMs: START_MS });
      assert.equal(result.dropped.length, 0);
      const final = finalPanes(result.panes);

      const readings = published.flatMap((p) => (p.reading ? [p.reading] : []));
      const windowOf = (ms: number) => Math.floor(ms / MINUTE) * MINUTE;
      if (aggregation.name === 'telemetry_device_1m') {
        const expected = new Map<string, number[]>();
        for (const r of readings) {
          const k = `${r.deviceId}|${windowOf(r.eventTimeMs)}`;
          expected.set(k, [...(expected.get(k) ?? []), r.milli]);
        }
        assert.equal(final.size, expected.size);
        for (const [k, values] of expected) {
          const pane = final.get(k) as Pane<DeviceStats> | undefined;
          assert.ok(pane, k);
          assert.equal(pane.value.count, values.length, k);
          assert.equal(pane.value.minC, (Math.min(...values) / 1000).toString(), k);
          assert.equal(pane.value.maxC, (Math.max(...values) / 1000).toString(), k);
          const avg = values.reduce((a, b) => a + b, 0) / values.length / 1000;
          assert.ok(
            Math.abs(Number(pane.value.avgC) - avg) < 1e-9,
            `${k}: ${pane.value.avgC} vs ${avg}`,
          );
        }
      } else {
        const regionOf = (id: string) => directory.lookup(id)?.region;
        const highest = new Map<string, Map<string, number>>();
        for (const r of readings) {
          const region = regionOf(r.deviceId);
          if (region === undefined) continue; // unknown devices rank nowhere
          const k = `${region}|${windowOf(r.eventTimeMs)}`;
          const devices = highest.get(k) ?? new Map<string, number>();
          devices.set(r.deviceId, Math.max(devices.get(r.deviceId) ?? -Infinity, r.milli));
          highest.set(k, devices);
        }
        assert.equal(final.size, highest.size);
        for (const [k, devices] of highest) {
          const expected = [...devices.entries()]
            .sort(([da, a], [db, b]) => b - a || (da < db ? -1 : 1))
            .slice(0, TOP_N)
            .map(([deviceId, m], i) => ({
              rank: i + 1,
              deviceId,
              maxTemperatureC: (m / 1000).toString(),
            }));
          assert.deepEqual((final.get(k) as Pane<TopDevice[]> | undefined)?.value, expected, k);
        }
        assert.ok(
          ![...final.values()].some((p) =>
            (p.value as TopDevice[]).some((d) => directory.lookup(d.deviceId) === undefined),
          ),
          'an unknown device ranked',
        );
      }
      // Every gold row can be built from the panes.
      for (const pane of result.panes.slice(0, 20)) {
        const row = aggregation.goldRow(pane, 'id', aggregation.strategy.accumulationMode);
        assert.equal(row.insert_id, 'id');
      }
    });
  }
});
