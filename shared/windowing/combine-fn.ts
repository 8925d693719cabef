// The CombineFn contract (Beam's Combine.CombineFn) with JSON-only accumulators.

/**
 * Plain JSON data: what Firestore and `JSON.stringify` store and give back unchanged. Accumulators must be this
 * (no `bigint`, `Map`, `Date`, `undefined` or class instances); write exact decimals as strings. Declare
 * accumulator shapes with `type`, not `interface` (interfaces have no implicit index signature).
 */
export type JsonValue =
  null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/**
 * Beam's `Combine.CombineFn<InputT, AccumT, OutputT>`, kept as an accumulator so one window's state can be split
 * across shards (`key#N`) and merged when a pane fires. Every method must be pure (state snapshots are shared);
 * `mergeAccumulators` must be associative and commutative with `createAccumulator()` as identity, so firing results
 * do not depend on sharding or delivery order.
 */
export interface CombineFn<In, Acc extends JsonValue, Out> {
  /** A fresh, empty accumulator (the identity of `mergeAccumulators`). */
  createAccumulator(): Acc;
  /** The accumulator with one more input folded in. */
  addInput(accumulator: Acc, input: In): Acc;
  /** One accumulator equivalent to all of `accumulators` (an empty list gives `createAccumulator()`). */
  mergeAccumulators(accumulators: readonly Acc[]): Acc;
  /** The pane value for an accumulator. */
  extractOutput(accumulator: Acc): Out;
}

/**
 * The fields of an accumulator read back from storage, which must be a plain object with exactly `keys` (a corrupt
 * or foreign document is refused before its fields are read).
 * @throws the error `fail(message)` builds, naming the value or the keys it has
 */
export function accumulatorFields(
  value: unknown,
  keys: readonly string[],
  fail: (message: string) => Error,
): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw fail(`accumulator is not an object: ${JSON.stringify(value)}`);
  }
  const has = Object.keys(value).sort().join(',');
  const expected = [...keys].sort().join(',');
  if (has !== expected) throw fail(`accumulator has keys ${has}, expected ${expected}`);
  return value as Record<string, unknown>;
}
