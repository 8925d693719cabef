// The telemetry simulator's plan: reproducible from its seed, every planned outcome is what the real contract decides,
// event ids are unique, and no reading is published after its window's allowed lateness has passed.
import assert from 'node:assert/strict';
import { decodeVersioned } from '../../../../shared/pipeline/versioning';
import {
  TELEMETRY_CONTRACT,
  type TelemetrySettings,
} from '../../../../shared/pipelines/telemetry/contract';
import { loadTelemetryConfig } from '../../../../shared/pipelines/telemetry/config';
import { TELEMETRY_STRATEGY } from '../../../../shared/pipelines/telemetry/definition';
import { StaticDeviceDirectory } from '../../../../shared/pipelines/telemetry/device-directory';
import {
  FAR_AHEAD_SKEW_MS,
  milliText,
  planTelemetryRun,
  publishPhases,
  rfc3339At,
  windowRange,
  type TelemetryPlan,
} from '../../../../deploy/local/telemetry-demo/plan';

const NOW_MS = Date.UTC(2026, 11, 2, 1, 0, 45, 123);

function settings(plan: TelemetryPlan): TelemetrySettings {
  return {
    // The deployed defaults: -55 to 125 °C, 5 minutes of future skew, 7 days of age.
    limits: loadTelemetryConfig({}),
    devices: new StaticDeviceDirectory(
      new Map(plan.directory.map((d) => [d.device_id, { region: d.region, site: d.site }])),
    ),
  };
}

describe('telemetry simulator: plan', () => {
  const options = { devices: 500, minutes: 3, readingsPerMinute: 2, seed: 7, nowMs: NOW_MS };
  const plan = planTelemetryRun(options);

  it('is reproducible from its seed, and another seed gives another stream', () => {
    assert.deepEqual(planTelemetryRun({ ...options }), plan);
    const other = planTelemetryRun({ ...options, seed: 8 });
    assert.notDeepEqual(other.messages, plan.messages);
  });

  it('simulates the M whole minutes ending at least 20 s before now', () => {
    assert.deepEqual(windowRange(NOW_MS, 3), {
      startMs: Date.UTC(2026, 11, 2, 0, 57),
      endMs: Date.UTC(2026, 11, 2, 1, 0),
    });
    assert.deepEqual(windowRange(Date.UTC(2026, 11, 2, 1, 0, 10), 1), {
      startMs: Date.UTC(2026, 11, 2, 0, 58),
      endMs: Date.UTC(2026, 11, 2, 0, 59),
    });
  });

  it('has every kind of message the scenario names', () => {
    const readings = plan.messages.filter((m) => m.expect.kind === 'reading');
    const rejected = plan.messages.filter((m) => m.expect.kind === 'rejected');
    // 500 devices × 3 min × 2, less the far-ahead device's 6, plus the readings without eventTs (1 %: 5).
    assert.equal(readings.length, 500 * 3 * 2 - 6 + 5);
    assert.equal(plan.unknownDevices.length, 3);
    for (const id of plan.unknownDevices)
      assert.ok(!plan.directory.some((d) => d.device_id === id));
    assert.equal(plan.directory.length, 497);
    assert.equal(
      readings.filter((m) => m.expect.kind === 'reading' && m.expect.eventTsMs === null).length,
      5,
    );
    assert.ok(readings.some((m) => m.expect.kind === 'reading' && m.expect.region === null));
    const versions = new Set(plan.messages.map((m) => m.attributes.contractVersion ?? 'absent'));
    for (const v of ['absent', '0', '1', '2', '7']) assert.ok(versions.has(v), `version ${v}`);
    const faults = new Set(
      rejected.map((m) => (m.expect.kind === 'rejected' ? m.expect.fault : '')),
    );
    for (const f of [
      'truncated JSON',
      'reading out of range',
      'retired version 0',
      'clock an hour ahead',
      'malformed eventTs',
    ]) {
      assert.ok(faults.has(f), f);
    }
    assert.deepEqual(
      Object.values(plan.skewedClocks).sort((a, b) => a - b),
      [-40_000, -7_000, 25_000, FAR_AHEAD_SKEW_MS],
    );
    assert.ok(
      plan.messages.every(
        (m) => m.orderingKey === m.attributes.deviceId || m.orderingKey === m.expect.deviceId,
      ),
    );
    assert.ok(plan.messages.some((m) => (m.attributes.eventTs ?? '').endsWith('+02:00')));
  });

  it('expects of every message what the real contract decides (stage for rejections, region for readings)', () => {
    const s = settings(plan);
    plan.messages.forEach((m, i) => {
      const outcome = decodeVersioned(
        TELEMETRY_CONTRACT,
        {
          data: Buffer.from(m.data),
          attributes: m.attributes,
          messageId: `m-${i}`,
          publishTimeMs: NOW_MS + 1_000,
        },
        { receivedAtMs: NOW_MS + 2_000, settings: s },
      );
      if (m.expect.kind === 'rejected') {
        assert.equal(outcome.ok, false, `message ${i} (${m.expect.fault}) was accepted`);
        if (!outcome.ok)
          assert.equal(outcome.stage, m.expect.stage, `message ${i}: ${outcome.reason}`);
        return;
      }
      assert.ok(outcome.ok, `message ${i} rejected: ${outcome.ok ? '' : outcome.reason}`);
      if (!outcome.ok) return;
      assert.equal(outcome.element.temperatureMilliC, m.expect.temperatureMilliC);
      assert.equal(outcome.eventTimeMs, m.expect.eventTsMs ?? NOW_MS + 1_000);
      assert.equal(outcome.keys.region, m.expect.region ?? undefined);
    });
  });

  it('gives every reading its own event id (deviceId + event time), so none is deduplicated away', () => {
    const seen = new Set<string>();
    for (const m of plan.messages) {
      if (m.expect.kind !== 'reading') continue;
      const key = `${m.expect.deviceId}|${m.expect.eventTsMs ?? 'publish time'}`;
      assert.ok(!seen.has(key), `two readings ${key}`);
      seen.add(key);
    }
  });

  it('publishes no reading after its window end + allowed lateness behind the largest event time before it', () => {
    let maxMs = -Infinity;
    for (const m of plan.messages) {
      if (m.expect.kind !== 'reading' || m.expect.eventTsMs === null) continue;
      const windowEnd = Math.floor(m.expect.eventTsMs / 60_000) * 60_000 + 60_000;
      assert.ok(windowEnd + TELEMETRY_STRATEGY.allowedLatenessMs > maxMs - 10_000);
      maxMs = Math.max(maxMs, m.expect.eventTsMs);
    }
    // …and the out-of-orderness is real: some readings come after a later one.
    let later = 0;
    maxMs = -Infinity;
    for (const m of plan.messages) {
      if (m.expect.kind !== 'reading' || m.expect.eventTsMs === null) continue;
      if (m.expect.eventTsMs < maxMs) later++;
      maxMs = Math.max(maxMs, m.expect.eventTsMs);
    }
    assert.ok(later > 100, `only ${later} readings out of order`);
  });

  it('cuts the publish order into phases, one per watermark minute, the readings without eventTs last', () => {
    const ooo = 10_000;
    const ends = publishPhases(plan.messages, ooo);
    assert.equal(ends.at(-1), plan.messages.length);
    assert.deepEqual(
      [...ends].sort((a, b) => a - b),
      ends,
    );
    assert.equal(new Set(ends).size, ends.length);
    // 3 minutes: the readings before the first bucket boundary, one phase per minute, the readings without eventTs.
    assert.ok(ends.length >= 4 && ends.length <= 6, `${ends.length} phases`);
    // Within a phase the watermark a delivery in any order reaches stays in the bucket of the phase's last message.
    let start = 0;
    let largest = -Infinity;
    for (const end of ends) {
      const phase = plan.messages.slice(start, end);
      const buckets = new Set<number>();
      for (const m of phase) {
        if (m.expect.kind !== 'reading') continue;
        largest = m.expect.eventTsMs === null ? Infinity : Math.max(largest, m.expect.eventTsMs);
        buckets.add(Math.floor((largest - ooo) / 60_000));
      }
      assert.ok(
        buckets.size <= 1,
        `phase ending at ${end} spans buckets ${[...buckets].join(', ')}`,
      );
      start = end;
    }
    const last = plan.messages.slice(ends.at(-2) ?? 0);
    assert.ok(last.every((m) => m.expect.kind === 'reading' && m.expect.eventTsMs === null));
    assert.deepEqual(publishPhases([], ooo), []);
  });

  it('writes numbers and times exactly', () => {
    assert.equal(milliText(21_537, 3), '21.537');
    assert.equal(milliText(-5, 3), '-0.005');
    assert.equal(milliText(21_500, 1), '21.5');
    assert.equal(rfc3339At(Date.UTC(2026, 0, 1, 0, 0, 5, 7), 0), '2026-01-01T00:00:05.007Z');
    assert.equal(rfc3339At(Date.UTC(2026, 0, 1, 0, 0, 5, 7), 120), '2026-01-01T02:00:05.007+02:00');
    assert.equal(
      rfc3339At(Date.UTC(2026, 0, 1, 0, 0, 5, 7), -300),
      '2025-12-31T19:00:05.007-05:00',
    );
  });

  it('refuses options out of bounds', () => {
    const ok = { devices: 1, minutes: 1, readingsPerMinute: 1, seed: 1, nowMs: NOW_MS };
    assert.throws(
      () => planTelemetryRun({ ...ok, devices: 0 }),
      /devices must be an integer from 1 to 50000/,
    );
    assert.throws(
      () => planTelemetryRun({ ...ok, minutes: 9 }),
      /minutes must be an integer from 1 to 8/,
    );
    assert.throws(() => planTelemetryRun({ ...ok, readingsPerMinute: 1.5 }), /readingsPerMinute/);
    // One device: it is the unknown device, so no clock is skewed, and it still sends readings.
    const one = planTelemetryRun(ok);
    assert.deepEqual(one.unknownDevices, ['sim-00001']);
    assert.ok(one.messages.some((m) => m.expect.kind === 'reading'));
  });
});
