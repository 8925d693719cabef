// How many waiting rows back each proposed (field, type), and since when: the evidence a plan picks winners by.
import { proposeFields } from './proposals';
import type { BqType } from './types';

/** The rows behind one proposed (field, type). */
export interface FieldSupport {
  /** Waiting rows carrying the field with a value of that type; an integer ≥ 1. */
  readonly rows: number;
  /** The earliest `processed_timestamp` among them, ms since the epoch (UTC). */
  readonly firstSeenMs: number;
}

/** Field name → inferred type → support, counted over the retry store's rows (one per insertId). */
export type ProposalSupport = ReadonlyMap<string, ReadonlyMap<BqType, FieldSupport>>;

/** One waiting row as the tally reads it. */
export interface SupportingRow {
  /** The row's extra top-level fields (values as the lossless parser read them). */
  readonly extraFields: Readonly<Record<string, unknown>>;
  /** When the row was first received, ms since the epoch (UTC). */
  readonly processedTimestampMs: number;
}

/**
 * Tallies, per field and inferred type, the rows carrying it and the earliest receipt among them (`proposeFields`
 * decides the type; `null` values and values with no type count for nothing). Pure; order-independent.
 */
export function supportOf(rows: Iterable<SupportingRow>): ProposalSupport {
  const out = new Map<string, Map<BqType, FieldSupport>>();
  for (const row of rows) {
    for (const [name, proposal] of proposeFields(row.extraFields).proposed) {
      if (!proposal.ok) continue; // one value has one type; cannot happen for a single row
      const byType = out.get(name) ?? new Map<BqType, FieldSupport>();
      const seen = byType.get(proposal.type);
      byType.set(proposal.type, {
        rows: (seen?.rows ?? 0) + 1,
        firstSeenMs: Math.min(seen?.firstSeenMs ?? Infinity, row.processedTimestampMs),
      });
      out.set(name, byType);
    }
  }
  return out;
}

/** Support summed over the entries that `include` selects; rows 0 and first seen `Infinity` when none. */
export function totalSupport(
  byType: ReadonlyMap<BqType, FieldSupport> | undefined,
  include: (type: BqType) => boolean = () => true,
): FieldSupport {
  let rows = 0;
  let firstSeenMs = Infinity;
  for (const [type, s] of byType ?? []) {
    if (!include(type)) continue;
    rows += s.rows;
    firstSeenMs = Math.min(firstSeenMs, s.firstSeenMs);
  }
  return { rows, firstSeenMs };
}

/**
 * Orders contenders (case variants of a name, or conflicting types of a field): most rows first, then the
 * earliest first seen, then `tieBreak`.
 * @returns a negative number when `a` wins over `b`.
 */
export function compareSupport(a: FieldSupport, b: FieldSupport, tieBreak: number): number {
  if (a.rows !== b.rows) return b.rows - a.rows;
  if (a.firstSeenMs !== b.firstSeenMs) return a.firstSeenMs < b.firstSeenMs ? -1 : 1;
  return tieBreak;
}
