// The telemetry contract: a table of good and bad messages with the stage each ends at, the Silver row of a good
// one, the publish-time fallback, enrichment and unknown devices, the versions, and the dead-letter row.
import assert from 'node:assert/strict';

import type { ContractMessage } from '../../../../shared/pipeline/definition';
import { decodeVersioned } from '../../../../shared/pipeline/versioning';
import { formatEpochMs } from '../../../../shared/contract/event-time';
import {
  TELEMETRY_CONTRACT,
  telemetryEventId,
  type TelemetrySettings,
} from '../../../../shared/pipelines/telemetry/contract';
import { StaticDeviceDirectory } from '../../../../shared/pipelines/telemetry/device-directory';
import { deadLetterRow } from '../../../../shared/pipelines/telemetry/rows';

const RECEIVED_AT_MS = Date.UTC(2026, 9, 7, 14, 11, 0);
const PUBLISHED_AT_MS = RECEIVED_AT_MS - 2_000;

const SETTINGS: TelemetrySettings = {
  limits: {
    minTemperatureC: -55,
    maxTemperatureC: 125,
    maxFutureSkewMs: 5 * 60_000,
    maxEventAgeMs: 7 * 86_400_000,
  },
  devices: new StaticDeviceDirectory(
    new Map([['dev-1', { region: 'eu-west', site: 'Milano Nord' }]]),
  ),
};

function message(data: string | Uint8Array, attributes: Record<string, string>): ContractMessage {
  return {
    data: typeof data === 'string' ? Buffer.from(data) : Buffer.from(data),
    attributes,
    messageId: 'm-1',
    publishTimeMs: PUBLISHED_AT_MS,
  };
}

function decode(data: string | Uint8Array, attributes: Record<string, string>) {
  return decodeVersioned(TELEMETRY_CONTRACT, message(data, attributes), {
    receivedAtMs: RECEIVED_AT_MS,
    settings: SETTINGS,
  });
}

const TS = '2026-10-07T14:10:30Z';
const V2 = { deviceId: 'dev-1', eventTs: TS, contractVersion: '2' };

/** [description, data, attributes, expected stage or 'ok', reason pattern]. */
const CASES: [string, string | Uint8Array, Record<string, string>, string, RegExp?][] = [
  ['v2 reading', '{"temperatureC": 21.5}', V2, 'ok'],
  ['v2 with humidity', '{"temperatureC": -3.125, "humidityPct": 40}', V2, 'ok'],
  ['v1 reading, no version attribute', '{"temp": 20}', { deviceId: 'dev-1', eventTs: TS }, 'ok'],
  ['unknown device', '{"temperatureC": 21.5}', { ...V2, deviceId: 'dev-new' }, 'ok'],
  [
    'no eventTs: publish time',
    '{"temperatureC": 21.5}',
    { deviceId: 'dev-1', contractVersion: '2' },
    'ok',
  ],
  ['lower bound inclusive', '{"temperatureC": -55}', V2, 'ok'],
  ['upper bound inclusive', '{"temperatureC": 125.000}', V2, 'ok'],
  ['broken JSON', '{"temperatureC": 21.5', V2, 'PARSE_JSON', /not JSON/],
  ['empty payload', '', V2, 'PARSE_JSON', /empty/],
  ['invalid UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), V2, 'PARSE_JSON', /not UTF-8/],
  ['JSON array', '[21.5]', V2, 'SCHEMA_VALIDATION', /must be a JSON object, got an array/],
  [
    'missing deviceId',
    '{"temperatureC": 21.5}',
    { eventTs: TS, contractVersion: '2' },
    'SCHEMA_VALIDATION',
    /missing attribute deviceId/,
  ],
  [
    'deviceId with a slash',
    '{"temperatureC": 21.5}',
    { ...V2, deviceId: 'a/b' },
    'SCHEMA_VALIDATION',
    /attribute deviceId "a\/b"/,
  ],
  [
    'missing temperature',
    '{"humidityPct": 40}',
    V2,
    'SCHEMA_VALIDATION',
    /missing field temperatureC/,
  ],
  [
    'temperature as text',
    '{"temperatureC": "21.5"}',
    V2,
    'SCHEMA_VALIDATION',
    /temperatureC must be a number, got a string/,
  ],
  [
    'v1 field in a v2 message',
    '{"temp": 21.5}',
    V2,
    'SCHEMA_VALIDATION',
    /missing field temperatureC/,
  ],
  [
    'retired v0',
    '{"tempF": 70}',
    { ...V2, contractVersion: '0' },
    'SCHEMA_VALIDATION',
    /contract version "0" is retired \(accepted: 1, 2\)/,
  ],
  [
    'unknown v3',
    '{"temperatureC": 21.5}',
    { ...V2, contractVersion: '3' },
    'SCHEMA_VALIDATION',
    /unknown contract version "3"/,
  ],
  [
    'too hot',
    '{"temperatureC": 125.001}',
    V2,
    'RANGE_VALIDATION',
    /125.001 °C is outside the plausible range \[-55, 125\]/,
  ],
  ['too cold', '{"temperatureC": -60}', V2, 'RANGE_VALIDATION', /outside the plausible range/],
  [
    'four fraction digits',
    '{"temperatureC": 21.1234}',
    V2,
    'RANGE_VALIDATION',
    /more than 3 fraction digits/,
  ],
  [
    'humidity above 100',
    '{"temperatureC": 21.5, "humidityPct": 101}',
    V2,
    'RANGE_VALIDATION',
    /humidityPct 101 % is outside/,
  ],
  [
    'eventTs without offset',
    '{"temperatureC": 21.5}',
    { ...V2, eventTs: '2026-10-07T14:10:30' },
    'EVENT_TIME_VALIDATION',
    /Invalid eventTs: .*offset/,
  ],
  [
    'eventTs not a date',
    '{"temperatureC": 21.5}',
    { ...V2, eventTs: 'yesterday' },
    'EVENT_TIME_VALIDATION',
    /Invalid eventTs/,
  ],
  [
    'clock 10 minutes ahead',
    '{"temperatureC": 21.5}',
    { ...V2, eventTs: '2026-10-07T14:21:00Z' },
    'EVENT_TIME_VALIDATION',
    /too far in the future/,
  ],
  [
    '8 days old',
    '{"temperatureC": 21.5}',
    { ...V2, eventTs: '2026-09-29T14:10:00Z' },
    'EVENT_TIME_VALIDATION',
    /too old/,
  ],
];

describe('telemetry contract', () => {
  for (const [what, data, attributes, stage, reason] of CASES) {
    it(`${what}: ${stage}`, () => {
      const outcome = decode(data, attributes);
      assert.equal(outcome.ok ? 'ok' : outcome.stage, stage, JSON.stringify(outcome));
      if (!outcome.ok && reason) assert.match(outcome.reason, reason);
    });
  }

  it('maps a v2 reading to its Silver row, keys and element, exactly', () => {
    const outcome = decode('{"temperatureC": 21.5, "humidityPct": 40.25, "firmware": "1.2"}', {
      ...V2,
      eventTs: '2026-10-07T16:10:30.123456789+02:00',
    });
    assert.ok(outcome.ok);
    assert.equal(outcome.version, '2');
    assert.equal(outcome.eventTimeMs, Date.UTC(2026, 9, 7, 14, 10, 30, 123));
    assert.equal(outcome.eventTimeSource, 'ATTRIBUTE');
    assert.deepEqual(outcome.keys, { device: 'dev-1', region: 'eu-west' });
    assert.deepEqual(outcome.element, { deviceId: 'dev-1', temperatureMilliC: 21_500 });
    const expectedId = telemetryEventId('dev-1', '2026-10-07T14:10:30.123456Z');
    assert.equal(outcome.eventId, expectedId);
    assert.deepEqual(outcome.row, {
      event_id: expectedId,
      device_id: 'dev-1',
      event_timestamp: '2026-10-07T14:10:30.123456Z',
      event_time_source: 'ATTRIBUTE',
      temperature_c: '21.5',
      humidity_pct: '40.25',
      region: 'eu-west',
      site: 'Milano Nord',
      reference_status: 'KNOWN',
      contract_version: '2',
      extra_fields: '{"firmware":"1.2"}',
      publish_time: '2026-10-07T14:10:58.000000Z',
      ingestion_timestamp: '2026-10-07T14:11:00.000000Z',
      source_message_id: 'm-1',
    });
  });

  it('gives the same event id to the same reading whatever the offset spelling (the insertId dedups it)', () => {
    const a = decode('{"temperatureC": 21.5}', { ...V2, eventTs: '2026-10-07T14:10:30Z' });
    const b = decode('{"temperatureC": 21.5}', { ...V2, eventTs: '2026-10-07T16:10:30+02:00' });
    const c = decode('{"temperatureC": 21.5}', { ...V2, deviceId: 'dev-2' });
    assert.ok(a.ok && b.ok && c.ok);
    assert.equal(a.eventId, b.eventId);
    assert.notEqual(a.eventId, c.eventId);
  });

  it('checks the event-time skews at rulesAtMs when given (a replay), keeping the receipt as ingestion time', () => {
    const replayedAtMs = RECEIVED_AT_MS + 30 * 86_400_000;
    const replay = (rulesAtMs?: number) =>
      decodeVersioned(TELEMETRY_CONTRACT, message('{"temperatureC": 21.5}', V2), {
        receivedAtMs: replayedAtMs,
        settings: SETTINGS,
        ...(rulesAtMs !== undefined && { rulesAtMs }),
      });
    const late = replay();
    assert.equal(late.ok ? 'ok' : late.stage, 'EVENT_TIME_VALIDATION');
    const live = replay(PUBLISHED_AT_MS);
    assert.ok(live.ok);
    assert.equal(live.row.ingestion_timestamp, formatEpochMs(replayedAtMs));
  });

  it('falls back to the publish time when eventTs is absent, and records it', () => {
    const outcome = decode('{"temperatureC": 21.5}', { deviceId: 'dev-1', contractVersion: '2' });
    assert.ok(outcome.ok);
    assert.equal(outcome.eventTimeMs, PUBLISHED_AT_MS);
    assert.equal(outcome.eventTimeSource, 'PUBLISH_TIME');
    assert.equal(outcome.row.event_time_source, 'PUBLISH_TIME');
    assert.equal(outcome.row.event_timestamp, '2026-10-07T14:10:58.000000Z');
  });

  it('keeps an unknown device (Silver, per-device panes) without region or site', () => {
    const outcome = decode('{"temperatureC": 21.5}', { ...V2, deviceId: 'dev-new' });
    assert.ok(outcome.ok);
    assert.equal(outcome.row.reference_status, 'UNKNOWN_DEVICE');
    assert.equal(outcome.row.region, null);
    assert.equal(outcome.row.site, null);
    assert.deepEqual(outcome.keys, { device: 'dev-new' });
  });

  it('maps v1 to the same Silver columns, with no humidity and version 1 recorded', () => {
    const outcome = decode('{"temp": 19.75}', { deviceId: 'dev-1', eventTs: TS });
    assert.ok(outcome.ok);
    assert.equal(outcome.row.contract_version, '1');
    assert.equal(outcome.row.temperature_c, '19.75');
    assert.equal(outcome.row.humidity_pct, null);
  });

  it('builds the dead-letter row: payload, error, stage, deviceId, parse time; bytes kept as base64', () => {
    const bytes = new Uint8Array([0x7b, 0xff, 0x7d]);
    const outcome = decode(bytes, V2);
    assert.ok(!outcome.ok);
    const row = deadLetterRow(message(bytes, V2), outcome, RECEIVED_AT_MS);
    assert.equal(row.stage, 'PARSE_JSON');
    assert.equal(row.device_id, 'dev-1');
    assert.equal(row.parse_time, '2026-10-07T14:11:00.000000Z');
    assert.equal(row.payload_base64, Buffer.from(bytes).toString('base64'));
    assert.equal(row.payload, '{\ufffd}');
    assert.equal(row.contract_version, '2');
    assert.equal(row.source_message_id, 'm-1');
    assert.equal((JSON.parse(row.attributes) as Record<string, string>).deviceId, 'dev-1');
    const retired = decode('{}', { contractVersion: '7' });
    assert.ok(!retired.ok);
    const noDevice = deadLetterRow(
      message('{}', { contractVersion: '7' }),
      retired,
      RECEIVED_AT_MS,
    );
    assert.equal(noDevice.device_id, null);
    assert.equal(noDevice.contract_version, null);
    assert.equal(noDevice.payload_base64, null);
    const big = deadLetterRow(message('x'.repeat(70_000), V2), retired, RECEIVED_AT_MS);
    assert.equal(big.payload_truncated, true);
    assert.equal(big.payload.length, 64 * 1024);
  });
});
