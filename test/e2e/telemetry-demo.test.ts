// End to end on the local stack, the telemetry pipeline: the simulator (deploy/local/telemetry-demo/) publishes
// 2,000 devices × 3 minutes of readings (the acceptance run) with the real Pub/Sub client and checks Silver,
// the dead-letter table and the latest gold panes against its independent computation.
// OFFVIA_TELEMETRY_E2E_DEVICES / OFFVIA_TELEMETRY_E2E_MINUTES run it smaller (docs/pipelines.md: the emulator's push
// limits the rate, and on a loaded machine 6,000 readings take longer than the allowed lateness).
import assert from 'node:assert/strict';
import { positiveIntFromEnv } from '../../deploy/local/resources';
import { SIM_REGIONS } from '../../deploy/local/telemetry-demo/plan';
import { formatTelemetrySummary, runTelemetryDemo } from '../../deploy/local/telemetry-demo/run';

const DEVICES = positiveIntFromEnv('OFFVIA_TELEMETRY_E2E_DEVICES', 2000);
const MINUTES = positiveIntFromEnv('OFFVIA_TELEMETRY_E2E_MINUTES', 3);
/**
 * Deliveries in flight through the simulator's push relay (cloud-like push concurrency) instead of the stack's own
 * push subscription (the emulator keeps about 2 in flight); 0, the default, keeps the stack's push.
 */
const RELAY = Number(process.env.OFFVIA_TELEMETRY_E2E_PUSH_RELAY ?? '0');

describe('e2e: telemetry simulator (Pub/Sub → ingestTelemetry → BigQuery, fireTelemetryWindows → gold)', function () {
  // The emulator's push keeps about 2 deliveries in flight (docs/local-stack.md): one message's latency sets the rate.
  this.timeout(45 * 60_000);

  before(function () {
    if (!process.env.PUBSUB_EMULATOR_HOST || !process.env.BIGQUERY_EMULATOR_HOST) {
      throw new Error('the local stack is not running: run through deploy/local/with-stack.sh');
    }
  });

  it(`${DEVICES} devices × ${MINUTES} minutes: every message routed once, every device pane and regional top-10 as computed`, async () => {
    const result = await runTelemetryDemo({
      devices: DEVICES,
      minutes: MINUTES,
      readingsPerMinute: 1,
      seed: 2026,
      timeoutMs: 30 * 60_000,
      pushRelayInFlight: RELAY > 0 ? RELAY : undefined,
      log: (line) => process.stderr.write(`      ${line}\n`),
    });
    process.stderr.write(formatTelemetrySummary(result));
    assert.deepEqual(result.failures, []);
    const s = result.summary;
    const unknown = Math.max(1, Math.round(DEVICES * 0.005));
    const withoutEventTs = Math.max(1, Math.round(DEVICES * 0.01));
    // Every device's readings, less the far-ahead device's, plus one reading without eventTs for 1 % of them.
    assert.equal(s.expectedSilver, DEVICES * MINUTES - MINUTES + withoutEventTs);
    assert.equal(s.inSilver, s.expectedSilver);
    assert.ok(s.inDeadLetter >= 6 + MINUTES, `only ${s.inDeadLetter} dead letters`);
    assert.equal(s.inSilver + s.inDeadLetter, s.published);
    assert.ok(
      s.devicePanesExpected >= (DEVICES - 1) * MINUTES,
      `${s.devicePanesExpected} device panes expected`,
    );
    assert.equal(s.devicePanesMatching, s.devicePanesExpected);
    assert.ok(s.regionPanesExpected >= Math.min(SIM_REGIONS.length, DEVICES - unknown) * MINUTES);
    assert.equal(s.regionPanesMatching, s.regionPanesExpected);
    assert.ok(
      s.unknownDeviceReadings >= unknown * MINUTES,
      `${s.unknownDeviceReadings} unknown-device readings`,
    );
    assert.equal(s.readingsPastLateness, 0);
  });
});
