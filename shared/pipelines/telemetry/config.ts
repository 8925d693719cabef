// Configuration of the telemetry pipeline's contract and side input, read from the environment once at cold start.
import { ConfigError } from '../../errors';
import type { Env } from '../../config/env';
import { MAX_EVENT_AGE_LIMIT_MS, MAX_FUTURE_SKEW_LIMIT_MS } from '../../config/ingest-config';
import { type VarGroup, type VarValues, intVar, readVars, tableVar } from '../../config/spec';

/** Every variable of `TELEMETRY_VARS` as read (temperatures in whole °C, durations in ms). */
export type TelemetryConfig = VarValues<typeof TELEMETRY_VARS>;

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const DAY_MS = 24 * 60 * MINUTE_MS;

/**
 * The variables `loadTelemetryConfig` reads; docs/configuration.md is generated from these specs. The default
 * plausible range, −55 to 125 °C, is the operating range of common digital temperature sensors: a reading outside
 * it is a faulty sensor or a garbled message, never weather.
 */
export const TELEMETRY_VARS = {
  minTemperatureC: intVar({
    name: 'OFFVIA_TELEMETRY_MIN_TEMPERATURE_C',
    default: -55,
    min: -273,
    max: 1000,
    unit: 'count',
    meaning:
      'lowest plausible temperature, whole °C inclusive; a colder reading is dead-lettered at `RANGE_VALIDATION`',
  }),
  maxTemperatureC: intVar({
    name: 'OFFVIA_TELEMETRY_MAX_TEMPERATURE_C',
    default: 125,
    min: -273,
    max: 1000,
    unit: 'count',
    rangeText: 'above `OFFVIA_TELEMETRY_MIN_TEMPERATURE_C`',
    meaning:
      'highest plausible temperature, whole °C inclusive; a hotter reading is dead-lettered at `RANGE_VALIDATION`',
  }),
  maxFutureSkewMs: intVar({
    name: 'OFFVIA_TELEMETRY_MAX_FUTURE_SKEW_MS',
    default: 5 * MINUTE_MS,
    min: 0,
    max: MAX_FUTURE_SKEW_LIMIT_MS,
    unit: 'ms',
    meaning:
      '`eventTs` later than receipt + this is dead-lettered at `EVENT_TIME_VALIDATION` (a device clock far ahead)',
  }),
  maxEventAgeMs: intVar({
    name: 'OFFVIA_TELEMETRY_MAX_EVENT_AGE_MS',
    default: 7 * DAY_MS,
    min: MINUTE_MS,
    max: MAX_EVENT_AGE_LIMIT_MS,
    unit: 'ms',
    meaning:
      '`eventTs` older than receipt − this is dead-lettered at `EVENT_TIME_VALIDATION`; older readings within it ' +
      'still reach Silver (late beyond the allowed lateness, they are dropped from the panes only)',
  }),
  referenceTable: tableVar({
    name: 'OFFVIA_TELEMETRY_REFERENCE_TABLE',
    default: 'offvia_telemetry_ref.devices',
    meaning:
      'reference data `device_id → region, site`, the side input the contract enriches readings from',
  }),
  referenceRefreshMs: intVar({
    name: 'OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS',
    default: 5 * MINUTE_MS,
    min: 10 * SECOND_MS,
    max: DAY_MS,
    unit: 'ms',
    meaning:
      'the device directory is reloaded in the background once it is this old; a failed reload keeps the last one',
  }),
  referenceMaxDevices: intVar({
    name: 'OFFVIA_TELEMETRY_REFERENCE_MAX_DEVICES',
    default: 1_000_000,
    min: 1,
    max: 10_000_000,
    unit: 'count',
    meaning:
      'most devices the in-memory directory holds; a larger reference table fails the load (memory is bounded)',
  }),
} as const;

/** The reference section of the telemetry variables. */
export const TELEMETRY_VAR_GROUP: VarGroup = {
  title: 'Telemetry pipeline: plausible ranges, event time, reference data',
  intro:
    "Read by the telemetry pipeline's contract and device directory (not wired to a function yet); see " +
    '[pipelines](pipelines.md#the-telemetry-pipeline).',
  vars: Object.values(TELEMETRY_VARS),
};

/**
 * Reads and validates the telemetry configuration.
 * @throws ConfigError naming the first bad variable (also when the maximum temperature is not above the minimum)
 */
export function loadTelemetryConfig(env: Env): TelemetryConfig {
  const v = TELEMETRY_VARS;
  const config = readVars(env, v);
  const { minTemperatureC: min, maxTemperatureC: max } = config;
  if (max > min) return config;
  throw new ConfigError(
    v.maxTemperatureC.name,
    `${max} °C is not above OFFVIA_TELEMETRY_MIN_TEMPERATURE_C (${min} °C)`,
  );
}
