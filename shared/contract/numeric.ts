// Exact decimal arithmetic for BigQuery NUMERIC: parse decimal text into a scaled bigint and format it back.

/** Fraction digits BigQuery NUMERIC keeps (BigQuery limit: NUMERIC is precision 38, scale 9). */
export const NUMERIC_SCALE = 9;

/** Integer digits BigQuery NUMERIC keeps: precision 38 minus scale 9 (BigQuery limit). */
export const NUMERIC_MAX_INTEGER_DIGITS = 29;

/**
 * Decimal text as Python's `Decimal` and JSON write it (lab: the fare is parsed with `Decimal(str(fare))`),
 * minus what the team ruled out: no spaces, no hex, no `NaN`/`Infinity`, no `_` separators (team decision).
 * The two alternatives start with different characters (digit or '.'), so the pattern cannot backtrack.
 */
const DECIMAL_PATTERN = /^([+-]?)(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?$/;

/**
 * Exponent digits beyond which a non-zero value cannot fit NUMERIC, whatever its mantissa; keeps `Number()` exact
 * and `1e999999999` never materialised as digits.
 */
const MAX_EXPONENT_DIGITS = 12;

const CHAR_ZERO = 0x30;

/** {@link parseNumeric}'s reason when the text is not decimal syntax at all (as opposed to out of range). */
export const NOT_A_DECIMAL = 'not a decimal number';

/** The outcome of {@link parseNumeric}: the canonical text and the value × 10^9, or why it does not fit. */
export type NumericParseResult =
  | {
      ok: true;
      /** Canonical decimal text: no exponent, no '+', no leading zeros, no trailing fraction zeros ("749.5"). */
      canonical: string;
      /** The exact value × 10^9 (BigQuery NUMERIC's scale), e.g. 749500000000n for "749.50". */
      scaled: bigint;
    }
  | {
      ok: false;
      /** Human-readable cause, e.g. "more than 9 fraction digits (BigQuery NUMERIC scale 9)". */
      reason: string;
    };

/**
 * Parses decimal text into an exact BigQuery NUMERIC value (BigQuery limit: at most 29 integer and 9 fraction
 * digits once trailing fraction zeros are dropped), with optional sign, fraction and exponent ("7.495e2" is 749.5).
 * Nothing is rounded: "1e-10" is rejected (team decision). Linear in the text. Never throws.
 */
export function parseNumeric(text: string): NumericParseResult {
  const match = DECIMAL_PATTERN.exec(text);
  if (match === null) return { ok: false, reason: NOT_A_DECIMAL };
  const negative = match[1] === '-';
  const integerPart = match[2] ?? '';
  const digits = integerPart + (match[3] ?? match[4] ?? '');
  const first = firstNonZero(digits);
  if (first === -1) return { ok: true, canonical: '0', scaled: 0n };
  const last = lastNonZero(digits);

  const exponent = parseExponent(match[5] ?? '0');
  if (exponent === Infinity) return tooManyIntegerDigits();
  if (exponent === -Infinity) return tooManyFractionDigits();
  // Where the decimal point sits, counted in digits from the start of `digits`.
  const point = integerPart.length + exponent;
  if (point - first > NUMERIC_MAX_INTEGER_DIGITS) return tooManyIntegerDigits();
  const fractionDigits = last + 1 - point;
  if (fractionDigits > NUMERIC_SCALE) return tooManyFractionDigits();

  // At most 38 significant digits remain, so the bigint arithmetic below is small and cannot overflow a scale.
  const magnitude =
    BigInt(digits.slice(first, last + 1)) * 10n ** BigInt(NUMERIC_SCALE - fractionDigits);
  const scaled = negative ? -magnitude : magnitude;
  return { ok: true, canonical: formatScaled(scaled), scaled };
}

/**
 * Formats a value × 10^9 (BigQuery NUMERIC's scale) as canonical decimal text: the inverse of
 * {@link parseNumeric}. 749500000000n → "749.5", -1000000000n → "-1", 0n → "0". Values outside NUMERIC's range
 * are formatted too (the caller decides whether they fit). Never throws.
 */
export function formatScaled(scaled: bigint): string {
  const negative = scaled < 0n;
  const digits = (negative ? -scaled : scaled).toString().padStart(NUMERIC_SCALE + 1, '0');
  const integerPart = digits.slice(0, -NUMERIC_SCALE);
  const fraction = trimTrailingZeros(digits.slice(-NUMERIC_SCALE));
  return (negative ? '-' : '') + integerPart + (fraction === '' ? '' : `.${fraction}`);
}

/** The exponent as a number; ±Infinity when it has so many digits that no non-zero value can fit NUMERIC. */
function parseExponent(text: string): number {
  const negative = text.startsWith('-');
  const unsigned = text.replace(/^[+-]/, '');
  const first = firstNonZero(unsigned);
  if (first === -1) return 0;
  if (unsigned.length - first > MAX_EXPONENT_DIGITS) return negative ? -Infinity : Infinity;
  return Number(text);
}

function firstNonZero(digits: string): number {
  for (let i = 0; i < digits.length; i++) if (digits.charCodeAt(i) !== CHAR_ZERO) return i;
  return -1;
}

function lastNonZero(digits: string): number {
  for (let i = digits.length - 1; i >= 0; i--) if (digits.charCodeAt(i) !== CHAR_ZERO) return i;
  return -1;
}

function trimTrailingZeros(fraction: string): string {
  return fraction.slice(0, lastNonZero(fraction) + 1);
}

function tooManyIntegerDigits(): NumericParseResult {
  return {
    ok: false,
    reason: `more than ${NUMERIC_MAX_INTEGER_DIGITS} integer digits (BigQuery NUMERIC precision 38, scale 9)`,
  };
}

function tooManyFractionDigits(): NumericParseResult {
  return {
    ok: false,
    reason: `more than ${NUMERIC_SCALE} fraction digits (BigQuery NUMERIC scale 9)`,
  };
}
