// The EVENT_TIME_VALIDATION stage: strict RFC 3339 to microsecond UTC, and the receive-time window (clock injected).
import { LosslessNumber } from 'lossless-json';

import {
  failWith,
  quoteForReason,
  type ContractIssueKind,
  type Ok,
  type ValidationFailure,
} from './stages';

/**
 * RFC 3339 date-time (§5.6) with the team's limits: 'T', 't' or ' ' between date and time (RFC 3339 §5.6 note),
 * 'Z'/'z' or ±HH:MM. The offset is optional here only so its absence gets the lab's own message. Fixed-width
 * fields and one optional group each: no backtracking.
 */
const RFC3339_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))?$/;

/** Fraction digits accepted in `event_time` (team decision: nanoseconds); beyond microseconds they are dropped. */
const MAX_FRACTION_DIGITS = 9;
/** Fraction digits BigQuery TIMESTAMP keeps (BigQuery limit: microsecond precision). */
const TIMESTAMP_FRACTION_DIGITS = 6;

const MS_PER_DAY = 86_400_000;
/** Exactly 146097 days: adding 400 years moves a date by whole Gregorian cycles, so the calendar is unchanged. */
const MS_PER_400_YEARS = 146_097 * MS_PER_DAY;
/** 0001-01-01T00:00:00Z, the earliest BigQuery TIMESTAMP (BigQuery limit). */
const MIN_TIMESTAMP_MS = utcMs(1, 1, 1, 0, 0, 0);
/** 9999-12-31T23:59:59Z, the last whole second of BigQuery TIMESTAMP's range (BigQuery limit). */
const MAX_TIMESTAMP_SECOND_MS = utcMs(9999, 12, 31, 23, 59, 59);

const FORMAT_HINT = 'YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)';

/** An instant as BigQuery TIMESTAMP holds it: UTC, microsecond precision. */
export interface EventInstant {
  /** Epoch milliseconds, UTC, rounded down (towards the past) from the microsecond value. */
  epochMs: number;
  /** Microseconds past `epochMs`, 0–999. */
  microsPastMs: number;
  /** RFC 3339 UTC with exactly six fraction digits and 'Z', e.g. "2026-10-07T14:10:00.000000Z". */
  text: string;
}

/**
 * Parses `event_time` strictly as RFC 3339 (lab: `datetime.fromisoformat` plus a required offset; not `Date.parse`,
 * which accepts far more). Rejections are EVENT_TIME_VALIDATION, reasons starting "Invalid event_time:" (lab): not
 * a string or not `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` with at most 9 fraction digits; no offset (the lab's
 * "event_time must include an offset or Z"); a field out of range (no leap seconds in BigQuery TIMESTAMP); outside
 * TIMESTAMP's range 0001-01-01 to 9999-12-31 UTC before or after the offset (BigQuery limit). Fraction digits
 * beyond microseconds are truncated (BigQuery limit: TIMESTAMP precision).
 */
export function parseEventTime(
  value: string | LosslessNumber,
): Ok<EventInstant> | ValidationFailure {
  if (value instanceof LosslessNumber) {
    return reject(
      'wrong_type',
      `must be an RFC 3339 string (${FORMAT_HINT}), got the number ${value.value}`,
    );
  }
  const match = RFC3339_DATE_TIME.exec(value);
  if (match === null) {
    return reject(
      'invalid_format',
      `${quoteForReason(value)} is not an RFC 3339 date-time (${FORMAT_HINT})`,
    );
  }
  const fraction = match[7] ?? '';
  if (fraction.length > MAX_FRACTION_DIGITS) {
    return reject(
      'invalid_format',
      `more than ${MAX_FRACTION_DIGITS} fraction digits in ${quoteForReason(value)}`,
    );
  }
  // Groups 1-6 always take part in a match, and Number() of two or four digits is exact.
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  const hour = Number(match[4]);
  const minute = Number(match[5]);
  const second = Number(match[6]);
  const date = `${match[1]}-${match[2]}-${match[3]}`;
  if (year < 1) {
    return reject('out_of_range', `year 0000 is before BigQuery TIMESTAMP's range (0001-9999)`);
  }
  if (month < 1 || month > 12) return reject('out_of_range', `${date}: month must be 01-12`);
  if (day < 1 || day > daysInMonth(year, month)) {
    return reject('out_of_range', `${date} is not a calendar date`);
  }
  if (hour > 23) return reject('out_of_range', `hour ${match[4]} is out of range (00-23)`);
  if (minute > 59) return reject('out_of_range', `minute ${match[5]} is out of range (00-59)`);
  if (second > 59) {
    return reject(
      'out_of_range',
      `second ${match[6]} is out of range (00-59; BigQuery TIMESTAMP has no leap seconds)`,
    );
  }

  let offsetMinutes = 0;
  if (match[8] === undefined) {
    const sign = match[9];
    if (sign === undefined) {
      return reject('missing_offset', 'event_time must include an offset or Z');
    }
    const offsetHours = Number(match[10]);
    const offsetMinutesPart = Number(match[11]);
    if (offsetHours > 23) {
      return reject('out_of_range', `offset hour ${match[10]} is out of range (00-23)`);
    }
    if (offsetMinutesPart > 59) {
      return reject('out_of_range', `offset minute ${match[11]} is out of range (00-59)`);
    }
    offsetMinutes = (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutesPart);
  }

  const secondMs = utcMs(year, month, day, hour, minute, second) - offsetMinutes * 60_000;
  if (secondMs < MIN_TIMESTAMP_MS || secondMs > MAX_TIMESTAMP_SECOND_MS) {
    return reject(
      'out_of_range',
      `${quoteForReason(value)} is outside BigQuery TIMESTAMP's range 0001-01-01 to 9999-12-31 UTC`,
    );
  }
  const microsText = fraction
    .padEnd(TIMESTAMP_FRACTION_DIGITS, '0')
    .slice(0, TIMESTAMP_FRACTION_DIGITS);
  if (offsetMinutes !== 0) return { ok: true, value: instantOf(secondMs, Number(microsText)) };
  // Already UTC (the common case): the normalized text is the matched digits, no calendar arithmetic needed.
  const text = `${match[1]}-${match[2]}-${match[3]}T${match[4]}:${match[5]}:${match[6]}.${microsText}Z`;
  return { ok: true, value: instantAt(secondMs, Number(microsText), text) };
}

/**
 * Checks an event time against the receive time (design.md; team decision: a bounded age). Rejects, as
 * EVENT_TIME_VALIDATION, an instant more than `maxFutureSkewMs` after `receivedAtMs` ("too far in the future") or
 * more than `maxEventAgeMs` before it ("too old"); bounds inclusive, exact to the microsecond; all values in ms.
 */
export function checkEventTimeWindow(
  instant: EventInstant,
  window: { receivedAtMs: number; maxFutureSkewMs: number; maxEventAgeMs: number },
): ValidationFailure | undefined {
  const latestMs = window.receivedAtMs + window.maxFutureSkewMs;
  if (instant.epochMs > latestMs || (instant.epochMs === latestMs && instant.microsPastMs > 0)) {
    return reject(
      'too_far_in_future',
      `${instant.text} is too far in the future: more than ${window.maxFutureSkewMs} ms after it was received at ${formatEpochMs(window.receivedAtMs)}`,
    );
  }
  if (instant.epochMs < window.receivedAtMs - window.maxEventAgeMs) {
    return reject(
      'too_old',
      `${instant.text} is too old: more than ${window.maxEventAgeMs} ms before it was received at ${formatEpochMs(window.receivedAtMs)}`,
    );
  }
  return undefined;
}

/**
 * Formats epoch milliseconds (UTC, an integer within BigQuery TIMESTAMP's range) like Silver's timestamps:
 * RFC 3339 UTC with six fraction digits, e.g. 1791382200000 → "2026-10-07T14:10:00.000000Z".
 */
export function formatEpochMs(epochMs: number): string {
  const secondMs = Math.floor(epochMs / 1000) * 1000;
  return instantOf(secondMs, (epochMs - secondMs) * 1000).text;
}

/** Whether epoch milliseconds are an integer within BigQuery TIMESTAMP's range (BigQuery limit). */
export function isTimestampMs(epochMs: number): boolean {
  return (
    Number.isSafeInteger(epochMs) &&
    epochMs >= MIN_TIMESTAMP_MS &&
    epochMs < MAX_TIMESTAMP_SECOND_MS + 1000
  );
}

function instantOf(secondMs: number, micros: number): EventInstant {
  return instantAt(secondMs, micros, `${formatUtcSecond(secondMs)}.${pad(micros, 6)}Z`);
}

function instantAt(secondMs: number, micros: number, text: string): EventInstant {
  const millis = Math.floor(micros / 1000);
  return { epochMs: secondMs + millis, microsPastMs: micros - millis * 1000, text };
}

/**
 * "YYYY-MM-DDTHH:MM:SS" of a whole UTC second within 0001-9999, by Howard Hinnant's public-domain civil-from-days
 * algorithm (Date#toISOString cost more than JSON.parse of a whole booking).
 */
function formatUtcSecond(secondMs: number): string {
  const days = Math.floor(secondMs / MS_PER_DAY);
  const secondOfDay = (secondMs - days * MS_PER_DAY) / 1000;
  const shifted = days + 719_468; // days since 0000-03-01, so leap days fall at the end of each year
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1460) +
      Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) /
      365,
  );
  const dayOfYear =
    dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1;
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
  const year = era * 400 + yearOfEra + (month <= 2 ? 1 : 0);
  const hour = Math.floor(secondOfDay / 3600);
  const minute = Math.floor((secondOfDay % 3600) / 60);
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(hour, 2)}:${pad(minute, 2)}:${pad(secondOfDay % 60, 2)}`;
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

/** Date.UTC, minus its quirk of reading years 0-99 as 1900-1999 (shifted by whole 400-year cycles). */
function utcMs(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number {
  return Date.UTC(year + 400, month - 1, day, hour, minute, second) - MS_PER_400_YEARS;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

function reject(kind: ContractIssueKind, detail: string): ValidationFailure {
  return failWith('EVENT_TIME_VALIDATION', [
    { field: 'event_time', kind, message: `Invalid event_time: ${detail}` },
  ]);
}
