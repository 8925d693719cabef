// Adds column values to a row object as own properties, so a column named `__proto__` stays a column.
import { defineField } from '../contract/json-payload';

/**
 * A new object with `base`'s own properties and then `values`' (a value wins over a base property of the same
 * name; drift columns never share a name with a Silver column, see `DRIFT_PROTECTED_NAMES`). Defines
 * each property (`defineField`), so `__proto__` stays a column.
 */
export function assignColumns(
  base: Readonly<Record<string, unknown>>,
  values: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const source of [base, values]) {
    for (const [key, value] of Object.entries(source)) {
      defineField(out, key, value);
    }
  }
  return out;
}
