// The telemetry pipeline's configuration: defaults, the plausible range, and fail-fast errors naming the variable.
import assert from 'node:assert/strict';

import { ConfigError } from '../../../../shared/errors';
import { loadTelemetryConfig } from '../../../../shared/pipelines/telemetry/config';

/** The temperature range, the reference table and its refresh set to non-default values. */
const EVERY_VARIABLE = {
  OFFVIA_TELEMETRY_MIN_TEMPERATURE_C: '-40',
  OFFVIA_TELEMETRY_MAX_TEMPERATURE_C: '85',
  OFFVIA_TELEMETRY_REFERENCE_TABLE: 'p-roject1.ref.devices_v2',
  OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS: '60000',
};

describe('config: telemetry', () => {
  it('defaults to a -55..125 °C plausible range, 5 min future skew, 7 days age, 5 min reference refresh', () => {
    assert.deepEqual(loadTelemetryConfig({}), {
      minTemperatureC: -55,
      maxTemperatureC: 125,
      maxFutureSkewMs: 300_000,
      maxEventAgeMs: 7 * 86_400_000,
      referenceTable: { datasetId: 'offvia_telemetry_ref', tableId: 'devices' },
      referenceRefreshMs: 300_000,
      referenceMaxDevices: 1_000_000,
    });
  });

  it('reads every variable', () => {
    const config = loadTelemetryConfig(EVERY_VARIABLE);
    assert.equal(config.minTemperatureC, -40);
    assert.equal(config.maxTemperatureC, 85);
    assert.deepEqual(config.referenceTable, {
      projectId: 'p-roject1',
      datasetId: 'ref',
      tableId: 'devices_v2',
    });
    assert.equal(config.referenceRefreshMs, 60_000);
  });

  it('fails fast naming the variable: an empty range, a value out of bounds, a malformed table', () => {
    const fails = (env: Record<string, string>, variable: string, message: RegExp) =>
      assert.throws(
        () => loadTelemetryConfig(env),
        (err: unknown) =>
          err instanceof ConfigError && err.variable === variable && message.test(err.message),
      );
    fails(
      { OFFVIA_TELEMETRY_MIN_TEMPERATURE_C: '30', OFFVIA_TELEMETRY_MAX_TEMPERATURE_C: '30' },
      'OFFVIA_TELEMETRY_MAX_TEMPERATURE_C',
      /30 °C is not above/,
    );
    fails(
      { OFFVIA_TELEMETRY_MIN_TEMPERATURE_C: '-300' },
      'OFFVIA_TELEMETRY_MIN_TEMPERATURE_C',
      /\[-273, 1000\]/,
    );
    fails(
      { OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS: '500' },
      'OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS',
      /10000/,
    );
    fails(
      { OFFVIA_TELEMETRY_REFERENCE_TABLE: 'devices' },
      'OFFVIA_TELEMETRY_REFERENCE_TABLE',
      /dataset\.table/,
    );
  });
});
