// Proposed field sets (field name → type) from events, and their order-independent merge per schema window.
import * as v from 'valibot';
import { inferType, type InferenceErrorCode } from './infer';
import { maximalTypes, NUMERIC_WIDENING_CHAIN } from './type-lattice';
import { BQ_TYPES, type BqType } from './types';

/**
 * What is known about one proposed field: one type (`ok: true`), or a conflict (`ok: false`) holding the
 * incompatible widest types seen, e.g. `['INT64', 'STRING']` (an error of that field only).
 */
export type FieldProposal =
  | {
      readonly ok: true;
      /** The widest type seen for the field. */
      readonly type: BqType;
    }
  | {
      readonly ok: false;
      /** The incompatible types seen (an antichain of `widensTo`), in `BQ_TYPES` order; at least two. */
      readonly types: readonly BqType[];
      /** Human-readable conflict, for the row's error column. */
      readonly message: string;
    };

/** A proposed field set: field name (exactly as in the event) → proposal, keys in code-unit order. */
export type ProposedFields = ReadonlyMap<string, FieldProposal>;

/** The widest types a proposal stands for: `[type]`, or the conflicting types. */
export function proposalTypes(p: FieldProposal): readonly BqType[] {
  return p.ok ? [p.type] : p.types;
}

/**
 * The proposal for a set of observed types: their single widest type when the set widens to one, else a
 * conflict. Allowed widenings are `INT64 → NUMERIC → BIGNUMERIC → FLOAT64` (see `NUMERIC_WIDENING_CHAIN`).
 * @throws RangeError for an empty set (a programming error).
 */
export function proposalOf(types: Iterable<BqType>): FieldProposal {
  const widest = maximalTypes(types);
  const [only] = widest;
  if (only === undefined) throw new RangeError('a field proposal needs at least one type');
  if (widest.length === 1) return { ok: true, type: only };
  return {
    ok: false,
    types: widest,
    message:
      `conflicting types ${widest.join(' vs ')}: no common BigQuery type ` +
      `(allowed widenings: ${NUMERIC_WIDENING_CHAIN.join(' → ')})`,
  };
}

/** Merges two proposals for the same field. Commutative, associative and idempotent. */
export function mergeProposals(a: FieldProposal, b: FieldProposal): FieldProposal {
  return proposalOf([...proposalTypes(a), ...proposalTypes(b)]);
}

function sortedMap(entries: Iterable<[string, FieldProposal]>): Map<string, FieldProposal> {
  return new Map([...entries].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
}

/**
 * Merges two proposed field sets: the union of their fields, a field present in both merged by
 * `mergeProposals` (`INT64` + `FLOAT64` → `FLOAT64`; `STRING` + `INT64` → a conflict on that field only).
 * Commutative, associative and idempotent, so concurrent proposals give the same change in any order and under
 * redelivery (design.md, "Schema-change window and retry minutes").
 * @returns a new set, keys in code-unit order.
 */
export function mergeFieldSets(a: ProposedFields, b: ProposedFields): ProposedFields {
  const out = new Map(a);
  for (const [name, proposal] of b) {
    const seen = out.get(name);
    out.set(name, seen === undefined ? proposal : mergeProposals(seen, proposal));
  }
  return sortedMap(out);
}

/**
 * `mergeFieldSets(held, proposed)` holding at most `maxFields` distinct names (`maxProposedFieldsPerWindow`):
 * names already in `held` always merge; new names of `proposed` are admitted in its order until the cap.
 * @returns a new set, keys in code-unit order.
 */
export function mergeFieldSetsCapped(
  held: ProposedFields,
  proposed: ProposedFields,
  maxFields: number,
): ProposedFields {
  const admitted = new Map<string, FieldProposal>();
  let room = Math.max(0, maxFields - held.size);
  for (const [name, proposal] of proposed) {
    if (held.has(name)) admitted.set(name, proposal);
    else if (room > 0) {
      admitted.set(name, proposal);
      room--;
    }
  }
  return mergeFieldSets(held, admitted);
}

/** `mergeFieldSets` over any number of sets; the empty set for none. */
export function mergeAllFieldSets(sets: Iterable<ProposedFields>): ProposedFields {
  let out: ProposedFields = new Map();
  for (const set of sets) out = mergeFieldSets(out, set);
  return out;
}

/** An extra field whose value has no BigQuery type; it is reported, never dropped. */
export interface UninferableField {
  readonly field: string;
  readonly code: InferenceErrorCode;
  readonly reason: string;
}

/** What one event's extra fields propose. */
export interface EventProposal {
  /** Field name → proposal, for every field with a typed value. */
  readonly proposed: ProposedFields;
  /** Fields whose value has no type (see `inferType`). */
  readonly uninferable: readonly UninferableField[];
}

/**
 * Proposes fields from one event's extra top-level fields (those its contract does not know) with `inferType`.
 * A `null` value proposes nothing (no type information). Names are not checked here; `planSchemaChange` does.
 * @param extraFields the event's extra top-level fields, name → JSON value (own enumerable keys are read, so a
 *   `__proto__` key from `JSON.parse` is an ordinary field).
 */
export function proposeFields(extraFields: Readonly<Record<string, unknown>>): EventProposal {
  const proposed: [string, FieldProposal][] = [];
  const uninferable: UninferableField[] = [];
  for (const [field, value] of Object.entries(extraFields)) {
    const inferred = inferType(value);
    if (!inferred.ok) uninferable.push({ field, code: inferred.code, reason: inferred.message });
    else if (inferred.type !== null) proposed.push([field, { ok: true, type: inferred.type }]);
  }
  return { proposed: sortedMap(proposed), uninferable };
}

/** The storage form of a proposed field set: a list (payload names such as `__proto__` are unsafe as keys). */
export type StoredProposedFields = { readonly name: string; readonly types: readonly BqType[] }[];

/** Converts a proposed field set to its storage form (sorted by name). */
export function storeProposedFields(p: ProposedFields): StoredProposedFields {
  return [...sortedMap(p)].map(([name, proposal]) => ({
    name,
    types: [...proposalTypes(proposal)],
  }));
}

const StoredSchema = v.array(
  v.object({
    name: v.string(),
    types: v.pipe(v.array(v.picklist(BQ_TYPES)), v.minLength(1)),
  }),
);

/**
 * Reads a stored proposed field set back (the inverse of `storeProposedFields`), validating its shape.
 * Duplicate names are merged.
 * @returns the set, or `{ ok: false, message }` when `stored` is not a valid storage form.
 */
export function loadProposedFields(
  stored: unknown,
):
  | { readonly ok: true; readonly value: ProposedFields }
  | { readonly ok: false; readonly message: string } {
  const parsed = v.safeParse(StoredSchema, stored);
  if (!parsed.success) return { ok: false, message: v.summarize(parsed.issues) };
  return {
    ok: true,
    value: mergeAllFieldSets(
      parsed.output.map(({ name, types }) => new Map([[name, proposalOf(types)]])),
    ),
  };
}
