// Sample telemetry messages and where each must end (`npm run demo -- --pipeline telemetry --samples`).
import type { PipelineSample } from '../../pipeline/definition';

/**
 * The samples for a receive time `nowMs` (epoch ms UTC): readings a minute older, inside the skew and age limits,
 * from a device the directory need not know (it still reaches Silver).
 */
export function telemetrySamples(nowMs: number): readonly PipelineSample[] {
  const eventTs = new Date(nowMs - 60_000).toISOString();
  const reading = (contractVersion: string) => ({
    deviceId: 'sample-device-1',
    eventTs,
    contractVersion,
  });
  return [
    {
      description: 'a version 2 reading',
      data: '{"temperatureC":21.5,"humidityPct":40}',
      attributes: reading('2'),
      expect: { layer: 'silver' },
    },
    {
      description: 'a version 1 reading (field `temp`), still accepted',
      data: '{"temp":19.25}',
      attributes: { ...reading('1'), eventTs: new Date(nowMs - 120_000).toISOString() },
      expect: { layer: 'silver' },
    },
    {
      description: 'a body that is not JSON',
      data: '{"temperatureC": 21.5',
      attributes: reading('2'),
      expect: { layer: 'quarantine', stage: 'PARSE_JSON' },
    },
    {
      description: 'no deviceId attribute',
      data: '{"temperatureC":21.5}',
      attributes: { eventTs, contractVersion: '2' },
      expect: { layer: 'quarantine', stage: 'SCHEMA_VALIDATION' },
    },
    {
      description: 'a reading hotter than the plausible range',
      data: '{"temperatureC":900}',
      attributes: reading('2'),
      expect: { layer: 'quarantine', stage: 'RANGE_VALIDATION' },
    },
    {
      description: 'an eventTs a day ahead of the receive time',
      data: '{"temperatureC":21.5}',
      attributes: { ...reading('2'), eventTs: new Date(nowMs + 86_400_000).toISOString() },
      expect: { layer: 'quarantine', stage: 'EVENT_TIME_VALIDATION' },
    },
  ];
}
