// Telemetry contract settings for tests on the stack: the plausible range and the future skew of the configuration's
// defaults, a one-day event age, and a fixed device directory instead of the reference table.
import type { TelemetrySettings } from '../../shared/pipelines/telemetry/contract';
import { loadTelemetryConfig } from '../../shared/pipelines/telemetry/config';
import {
  StaticDeviceDirectory,
  type DeviceReference,
} from '../../shared/pipelines/telemetry/device-directory';

/** Oldest event accepted, ms: a day (the tests' readings are minutes old). */
const MAX_EVENT_AGE_MS = 86_400_000;

/**
 * Settings whose directory knows exactly `devices` (device id → region and site): −55..125 °C and a 5-minute future
 * skew (loadTelemetryConfig's defaults), readings at most a day old.
 */
export function telemetrySettings(
  devices: Iterable<readonly [string, DeviceReference]>,
): TelemetrySettings {
  const { minTemperatureC, maxTemperatureC, maxFutureSkewMs } = loadTelemetryConfig({});
  return {
    limits: { minTemperatureC, maxTemperatureC, maxFutureSkewMs, maxEventAgeMs: MAX_EVENT_AGE_MS },
    devices: new StaticDeviceDirectory(new Map(devices)),
  };
}
