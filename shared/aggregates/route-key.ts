// The booking pipeline's grouping key: one route = (origin airport, destination airport, currency).

/** The parts of a route key, as Silver spells them. */
export interface RouteParts {
  /** IATA code, three capitals (Silver `origin_airport`). */
  readonly origin: string;
  /** IATA code, three capitals (Silver `destination_airport`). */
  readonly destination: string;
  /** ISO 4217 code, three capitals (Silver `currency`). */
  readonly currency: string;
}

const PART = /^[A-Z]{3}$/;
const KEY = /^([A-Z]{3})-([A-Z]{3})-([A-Z]{3})$/;

/**
 * `ORIGIN-DESTINATION-CURRENCY`, e.g. `JFK-LHR-USD`: safe as a Firestore document id part and readable in logs.
 * @throws RangeError when a part is not three capitals (a caller bug: the contract validated them)
 */
export function routeKey(parts: RouteParts): string {
  for (const [name, value] of Object.entries(parts) as [string, string][]) {
    if (!PART.test(value))
      throw new RangeError(`route ${name} ${JSON.stringify(value)} is not three capitals`);
  }
  return `${parts.origin}-${parts.destination}-${parts.currency}`;
}

/**
 * Inverse of `routeKey`.
 * @throws RangeError for text that is not a route key
 */
export function parseRouteKey(key: string): RouteParts {
  const match = KEY.exec(key);
  if (!match) throw new RangeError(`not a route key: ${JSON.stringify(key)}`);
  return { origin: match[1] ?? '', destination: match[2] ?? '', currency: match[3] ?? '' };
}
