// EVENT_TIME_VALIDATION: strict RFC 3339, BigQuery TIMESTAMP range and precision, the receive-time window.
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { formatEpochMs } from '../../../shared/contract';
import { parseEventTime } from '../../../shared/contract/event-time';
import {
  booking,
  expectFailure,
  expectSuccess,
  OPTIONS,
  RECEIVED_AT_MS,
  validate,
} from './fixtures';

/** Epoch ms of 0001-01-01T00:00:00Z and of the last millisecond of 9999-12-31 (BigQuery TIMESTAMP's range). */
const MIN_MS = -62_135_596_800_000;
const MAX_MS = 253_402_300_799_999;

function instant(text: string): { epochMs: number; text: string } {
  const parsed = parseEventTime(text);
  if (!parsed.ok) return assert.fail(`${text}: ${parsed.reason}`);
  return { epochMs: parsed.value.epochMs, text: parsed.value.text };
}

function rejection(text: string): string {
  const result = validate(booking({ event_time: text }));
  return expectFailure(result, 'EVENT_TIME_VALIDATION').reason;
}

/** `ms` written as local time at `offsetMinutes` east of UTC, e.g. "2026-10-07T16:10:00.123+02:00". */
function withOffset(ms: number, offsetMinutes: number): string {
  const local = new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, 23);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${local}${sign}${hh}:${mm}`;
}

describe('event_time parsing', () => {
  it('normalizes to UTC with six fraction digits', () => {
    assert.deepEqual(instant('2026-10-07T14:10:00Z'), {
      epochMs: Date.UTC(2026, 9, 7, 14, 10),
      text: '2026-10-07T14:10:00.000000Z',
    });
    assert.equal(instant('2026-10-07T16:10:00+02:00').text, '2026-10-07T14:10:00.000000Z');
    assert.equal(instant('2026-10-07T08:40:00.5-05:30').text, '2026-10-07T14:10:00.500000Z');
    assert.equal(instant('2026-10-07T00:30:00-23:59').text, '2026-10-08T00:29:00.000000Z');
    assert.equal(instant('2026-10-07T14:10:00-00:00').text, '2026-10-07T14:10:00.000000Z');
  });

  it("accepts 't' or ' ' as separator and 'z' for UTC (RFC 3339 §5.6)", () => {
    const expected = '2026-10-07T14:10:00.000000Z';
    assert.equal(instant('2026-10-07t14:10:00z').text, expected);
    assert.equal(instant('2026-10-07 14:10:00Z').text, expected);
  });

  it('truncates beyond microseconds and floors epochMs', () => {
    const nanos = instant('2026-10-07T14:10:00.123456789Z');
    assert.equal(nanos.text, '2026-10-07T14:10:00.123456Z');
    assert.equal(nanos.epochMs, Date.UTC(2026, 9, 7, 14, 10, 0, 123));
    assert.equal(instant('2026-10-07T14:10:00.9999999Z').text, '2026-10-07T14:10:00.999999Z');
    // Before 1970 "floor" means towards the past: -0.5 ms is epoch ms -1.
    assert.equal(instant('1969-12-31T23:59:59.9995Z').epochMs, -1);
  });

  it('accepts the whole BigQuery TIMESTAMP range, leap days included', () => {
    assert.equal(instant('0001-01-01T00:00:00Z').epochMs, MIN_MS);
    assert.equal(instant('9999-12-31T23:59:59.999999Z').text, '9999-12-31T23:59:59.999999Z');
    assert.equal(instant('0099-03-01T00:00:00Z').text, '0099-03-01T00:00:00.000000Z');
    assert.equal(instant('2024-02-29T12:00:00Z').text, '2024-02-29T12:00:00.000000Z');
    assert.equal(instant('2000-02-29T12:00:00Z').text, '2000-02-29T12:00:00.000000Z');
  });

  it("rejects a missing offset with the lab's message", () => {
    assert.equal(
      rejection('2026-10-07T14:10:00'),
      'Invalid event_time: event_time must include an offset or Z',
    );
  });

  const malformed = [
    '2026-10-07',
    '2026-10-07T14:10Z',
    '2026-10-07T14:10:00+0200',
    '2026-10-07T14:10:00.Z',
    ' 2026-10-07T14:10:00Z',
    '2026-10-07T14:10:00Z ',
    '2026-10-07T14:10:00 Z',
    '26-10-07T14:10:00Z',
    '2026-10-7T14:10:00Z',
    '+2026-10-07T14:10:00Z',
    '2026-10-07T14:10:00.1234567890Z',
    'Wed, 07 Oct 2026 14:10:00 GMT',
    '1791382200000',
    'now',
  ];
  for (const text of malformed) {
    it(`rejects ${JSON.stringify(text)} as malformed`, () => {
      assert.match(rejection(text), /^Invalid event_time: /);
    });
  }

  const outOfRange: [string, RegExp][] = [
    ['2026-02-30T00:00:00Z', /2026-02-30 is not a calendar date/],
    ['2026-02-29T00:00:00Z', /not a calendar date/],
    ['2100-02-29T00:00:00Z', /not a calendar date/],
    ['2026-04-31T00:00:00Z', /not a calendar date/],
    ['2026-00-10T00:00:00Z', /month/],
    ['2026-13-10T00:00:00Z', /month/],
    ['2026-10-00T00:00:00Z', /not a calendar date/],
    ['2026-10-07T24:00:00Z', /hour 24/],
    ['2026-10-07T14:60:00Z', /minute 60/],
    ['2026-12-31T23:59:60Z', /second 60 .*leap seconds/],
    ['2026-10-07T14:10:00+24:00', /offset hour 24/],
    ['2026-10-07T14:10:00+05:60', /offset minute 60/],
    ['0000-01-01T00:00:00Z', /year 0000/],
    ['0001-01-01T00:00:00+00:01', /outside BigQuery TIMESTAMP's range/],
    ['9999-12-31T23:59:59-00:01', /outside BigQuery TIMESTAMP's range/],
  ];
  for (const [text, reason] of outOfRange) {
    it(`rejects ${text}`, () => {
      const message = rejection(text);
      assert.match(message, /^Invalid event_time: /);
      assert.match(message, reason);
    });
  }

  it('rejects a JSON number (epoch time) as the wrong type', () => {
    const failure = expectFailure(
      validate(booking({ event_time: 1791382200 })),
      'EVENT_TIME_VALIDATION',
    );
    assert.equal(failure.issues[0]?.kind, 'wrong_type');
    assert.match(failure.reason, /^Invalid event_time: must be an RFC 3339 string/);
  });

  it('agrees with toISOString for every millisecond in range (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: MIN_MS, max: MAX_MS }), (ms) => {
        const iso = new Date(ms).toISOString();
        const parsed = instant(iso);
        assert.equal(parsed.epochMs, ms);
        assert.equal(parsed.text, `${iso.slice(0, 23)}000Z`);
        assert.equal(formatEpochMs(ms), parsed.text);
      }),
    );
  });

  it('gives the same instant for every equivalent offset (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: MIN_MS + 86_400_000, max: MAX_MS - 86_400_000 }),
        fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
        (ms, offsetMinutes) => {
          const parsed = instant(withOffset(ms, offsetMinutes));
          assert.equal(parsed.epochMs, ms);
          assert.equal(parsed.text, formatEpochMs(ms));
        },
      ),
    );
  });
});

describe('event_time window', () => {
  const skew = OPTIONS.maxFutureSkewMs;
  const age = OPTIONS.maxEventAgeMs;
  const at = (ms: number, micros = ''): string =>
    `${new Date(ms).toISOString().slice(0, 23)}${micros}Z`;

  it('accepts exactly maxFutureSkewMs ahead, rejects one microsecond more', () => {
    expectSuccess(validate(booking({ event_time: at(RECEIVED_AT_MS + skew) })));
    const reason = rejection(at(RECEIVED_AT_MS + skew, '001'));
    assert.match(reason, /^Invalid event_time: .* is too far in the future/);
    assert.match(rejection(at(RECEIVED_AT_MS + 86_400_000)), /too far in the future/);
  });

  it('accepts exactly maxEventAgeMs old, rejects one millisecond older', () => {
    expectSuccess(validate(booking({ event_time: at(RECEIVED_AT_MS - age) })));
    assert.match(rejection(at(RECEIVED_AT_MS - age - 1)), /^Invalid event_time: .* is too old/);
  });

  it('disables a bound with Infinity', () => {
    const options = { maxFutureSkewMs: Infinity, maxEventAgeMs: Infinity };
    expectSuccess(validate(booking({ event_time: '9999-12-31T23:59:59Z' }), options));
    expectSuccess(validate(booking({ event_time: '0001-01-01T00:00:00Z' }), options));
  });

  it('checks the window at rulesAtMs when given (a replay: the publish time), keeping ingestion_timestamp', () => {
    // An hour ahead of its receipt is rejected; checked at a publish time an hour later, it is inside the skew.
    const ahead = at(RECEIVED_AT_MS + 3_600_000);
    assert.match(rejection(ahead), /too far in the future/);
    const replayed = expectSuccess(
      validate(booking({ event_time: ahead }), { rulesAtMs: RECEIVED_AT_MS + 3_600_000 }),
    );
    assert.equal(replayed.row.ingestion_timestamp, formatEpochMs(RECEIVED_AT_MS));
    // The other way round: valid at receipt, too far ahead of an earlier publish time.
    const now = at(RECEIVED_AT_MS);
    expectSuccess(validate(booking({ event_time: now })));
    const early = validate(booking({ event_time: now }), { rulesAtMs: RECEIVED_AT_MS - 3_600_000 });
    assert.match(expectFailure(early, 'EVENT_TIME_VALIDATION').reason, /too far in the future/);
  });

  it('measures the window on the normalized instant, not the local digits', () => {
    // 14:14:00+00:00 is inside a 5-minute skew; the same digits at -01:00 are an hour later.
    expectSuccess(validate(booking({ event_time: '2026-10-07T14:14:00Z' })));
    assert.match(rejection('2026-10-07T14:14:00-01:00'), /too far in the future/);
  });
});
