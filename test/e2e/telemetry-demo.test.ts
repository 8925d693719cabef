// End to end on the local stack, the telemetry pipeline: the simulator (deploy/local/telemetry-demo/) publishes
// 2,000 devices × 3 minutes of readings with the real Pub/Sub client and checks Silver, the dead-letter table and the
// latest gold panes against its independent computation.
import assert from 'node:assert/strict';
import { SIM_REGIONS } from '../../deploy/local/telemetry-demo/plan';
import { formatTelemetrySummary, runTelemetryDemo } from '../../deploy/local/telemetry-demo/run';

describe('e2e: telemetry simulator (Pub/Sub → ingestTelemetry → BigQuery, fireTelemetryWindows → gold)', function () {
  // The emulator's push keeps about 2 deliveries in flight (docs/local-stack.md), so 6,000 readings take many
  // minutes on a loaded machine; docs/pipelines.md has the measured time.
  this.timeout(45 * 60_000);

  before(function () {
    if (!process.env.PUBSUB_EMULATOR_HOST || !process.env.BIGQUERY_EMULATOR_HOST) {
      throw new Error('the local stack is not running: run through deploy/local/with-stack.sh');
    }
  });

  it('2,000 devices × 3 minutes: every message routed once, every device pane and regional top-10 as computed', async () => {
    const result = await runTelemetryDemo({
      devices: 2000,
      minutes: 3,
      readingsPerMinute: 1,
      seed: 2026,
      timeoutMs: 30 * 60_000,
      log: (line) => process.stderr.write(`      ${line}\n`),
    });
    process.stderr.write(formatTelemetrySummary(result));
    assert.deepEqual(result.failures, []);
    const s = result.summary;
    // 2,000 × 3 readings, less the far-ahead device's 3, plus 20 without eventTs; and the malformed messages.
    assert.equal(s.expectedSilver, 2000 * 3 - 3 + 20);
    assert.equal(s.inSilver, s.expectedSilver);
    assert.ok(s.inDeadLetter >= 18 + 3, `only ${s.inDeadLetter} dead letters`);
    assert.equal(s.inSilver + s.inDeadLetter, s.published);
    assert.ok(s.devicePanesExpected >= 1990 * 3, `${s.devicePanesExpected} device panes expected`);
    assert.equal(s.devicePanesMatching, s.devicePanesExpected);
    assert.ok(s.regionPanesExpected >= SIM_REGIONS.length * 3);
    assert.equal(s.regionPanesMatching, s.regionPanesExpected);
    assert.ok(
      s.unknownDeviceReadings >= 10 * 3,
      `${s.unknownDeviceReadings} unknown-device readings`,
    );
    assert.equal(s.readingsPastLateness, 0);
  });
});
