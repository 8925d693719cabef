// The booking pipeline's CombineFn: count, exact fare total, min, max and mean per route and window.
import { accumulatorFields, type CombineFn } from '../windowing';
import { formatScaled, NUMERIC_SCALE } from '../contract/numeric';

/**
 * The stored accumulator (plain JSON): bookings folded in, and the fares' sum, min and max as canonical decimal text
 * (`formatScaled`, e.g. `"749.5"`), never a binary float; `min`/`max` `null` while `count` is 0.
 */
export type BookingAccumulator = {
  readonly count: number;
  readonly total: string;
  readonly min: string | null;
  readonly max: string | null;
};

/**
 * A pane's value: decimal text ready for BigQuery NUMERIC. `mean` is total / count rounded half-even to 9 fraction
 * digits (NUMERIC's scale); `min`, `max` and `mean` are `null` for an empty pane.
 */
export interface BookingAggregate {
  readonly count: number;
  readonly total: string;
  readonly min: string | null;
  readonly max: string | null;
  readonly mean: string | null;
}

/** Thrown when a stored accumulator is not the shape this combiner writes (a corrupt or foreign document). */
export class AccumulatorFormatError extends Error {
  override readonly name = 'AccumulatorFormatError';
}

const DECIMAL_TEXT = new RegExp(`^(-?)(0|[1-9]\\d*)(?:\\.(\\d{1,${NUMERIC_SCALE}}))?$`);

/**
 * Decimal text as `formatScaled` writes it → the value × 10^9. Unlike `parseNumeric` there is no 29-digit limit:
 * a running total is not a single NUMERIC value yet.
 * @throws AccumulatorFormatError for anything else (exponents, '+', more than 9 fraction digits)
 */
export function parseScaledText(text: string): bigint {
  const match = DECIMAL_TEXT.exec(text);
  if (!match) throw new AccumulatorFormatError(`not a decimal amount: ${JSON.stringify(text)}`);
  const fraction = (match[3] ?? '').padEnd(NUMERIC_SCALE, '0');
  const magnitude = BigInt(match[2] ?? '0') * 10n ** BigInt(NUMERIC_SCALE) + BigInt(fraction);
  return match[1] === '-' ? -magnitude : magnitude;
}

/**
 * `numerator / denominator` rounded to the nearest integer, ties to even (banker's rounding, what BigQuery's
 * `ROUND(x, n, 'ROUND_HALF_EVEN')` does). Exact for any bigints.
 * @throws RangeError when `denominator` is 0
 */
export function divideHalfEven(numerator: bigint, denominator: bigint): bigint {
  if (denominator === 0n) throw new RangeError('division by zero');
  const negative = numerator < 0n !== denominator < 0n;
  const n = numerator < 0n ? -numerator : numerator;
  const d = denominator < 0n ? -denominator : denominator;
  let quotient = n / d;
  const twiceRemainder = (n % d) * 2n;
  if (twiceRemainder > d || (twiceRemainder === d && quotient % 2n === 1n)) quotient += 1n;
  return negative ? -quotient : quotient;
}

const EMPTY: BookingAccumulator = { count: 0, total: '0', min: null, max: null };

/** `a` when `keepA(a, b)` holds (ties keep `a`), else `b`; `null` is no amount. */
function pick(a: string | null, b: string | null, keepA: (x: bigint, y: bigint) => boolean) {
  return a === null || b === null
    ? (a ?? b)
    : keepA(parseScaledText(a), parseScaledText(b))
      ? a
      : b;
}
const minText = (a: string | null, b: string | null) => pick(a, b, (x, y) => x <= y);
const maxText = (a: string | null, b: string | null) => pick(a, b, (x, y) => x >= y);

/**
 * Beam `CombineFn` over fares × 10^9 (`ValidationSuccess.fareScaled`): associative, commutative and canonical (equal
 * inputs give identical JSON whatever the order or sharding), so N shards merge to exactly the unsharded result.
 * @throws AccumulatorFormatError from any method given an accumulator it did not produce
 */
export const bookingAggregatesFn: CombineFn<bigint, BookingAccumulator, BookingAggregate> = {
  createAccumulator: () => EMPTY,
  addInput: (acc, fareScaled) => {
    const fare = formatScaled(fareScaled);
    return {
      count: acc.count + 1,
      total: formatScaled(parseScaledText(acc.total) + fareScaled),
      min: minText(acc.min, fare),
      max: maxText(acc.max, fare),
    };
  },
  mergeAccumulators: (accs) => {
    let count = 0;
    let total = 0n;
    let min: string | null = null;
    let max: string | null = null;
    for (const acc of accs) {
      count += acc.count;
      total += parseScaledText(acc.total);
      min = minText(min, acc.min);
      max = maxText(max, acc.max);
    }
    return { count, total: formatScaled(total), min, max };
  },
  extractOutput: (acc) => {
    const total = parseScaledText(acc.total);
    return {
      count: acc.count,
      total: formatScaled(total),
      min: acc.min,
      max: acc.max,
      mean: acc.count === 0 ? null : formatScaled(divideHalfEven(total, BigInt(acc.count))),
    };
  },
};

/**
 * Checks that a value read back from storage is a `BookingAccumulator` (counts are safe integers ≥ 0, amounts are
 * canonical decimal text, min/max present exactly when count > 0).
 * @throws AccumulatorFormatError describing the first problem
 */
export function parseBookingAccumulator(value: unknown): BookingAccumulator {
  const { count, total, min, max } = accumulatorFields(
    value,
    ['count', 'max', 'min', 'total'],
    (message) => new AccumulatorFormatError(message),
  );
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) {
    throw new AccumulatorFormatError(
      `accumulator count ${JSON.stringify(count)} is not an integer >= 0`,
    );
  }
  if (typeof total !== 'string') throw new AccumulatorFormatError('accumulator total is not text');
  parseScaledText(total);
  for (const [name, v] of [
    ['min', min],
    ['max', max],
  ] as const) {
    if (count === 0 ? v !== null : typeof v !== 'string') {
      throw new AccumulatorFormatError(
        `accumulator ${name} ${JSON.stringify(v)} does not match count ${count}`,
      );
    }
    if (typeof v === 'string') parseScaledText(v);
  }
  return { count, total, min: min as string | null, max: max as string | null };
}
