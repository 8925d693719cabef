// Shared fixtures for the schema-core tests: Silver's schema and protected names, arbitraries for proposals.
import fc from 'fast-check';
import { CONTRACT_FIELDS } from '../../../shared/contract';
import { SILVER_FIELDS } from '../../support/drift-fixtures';
import {
  BQ_TYPES,
  mergeAllFieldSets,
  proposalOf,
  type BqField,
  type BqType,
  type FieldProposal,
  type GuardConfig,
  type ProposedFields,
  type TableSchema,
} from '../../../shared/schema';

/** Silver's columns (sql/020_silver_fact_bookings.sql). */
export const SILVER: TableSchema = { fields: [...SILVER_FIELDS] };

/** The contract's input fields and Silver's derived columns (mission.md, "The event contract"). */
export const PROTECTED: readonly string[] = [
  ...CONTRACT_FIELDS,
  ...SILVER.fields.map((f) => f.name),
];

export const GUARD: GuardConfig = {
  protectedNames: PROTECTED,
  maxNewColumnsPerWindow: 10,
  maxColumnsPerTable: 200,
};

export const TARGET = {
  projectId: 'offvia-local',
  datasetId: 'offvia_silver',
  tableId: 'fact_bookings',
} as const;

/** Silver plus extra columns. */
export function silverWith(...extra: BqField[]): TableSchema {
  return { fields: [...SILVER.fields, ...extra] };
}

/** A proposed field set from `name: type` pairs (a repeated name merges). */
export function fields(...pairs: [string, BqType][]): ProposedFields {
  return mergeAllFieldSets(pairs.map(([n, t]) => new Map([[n, proposalOf([t])]])));
}

const NUMERIC_TYPES: BqType[] = ['INT64', 'NUMERIC', 'BIGNUMERIC', 'FLOAT64'];

/** Any canonical proposal, weighted towards the numeric chain so widenings and conflicts both occur. */
export const proposalArb: fc.Arbitrary<FieldProposal> = fc
  .uniqueArray(fc.oneof(fc.constantFrom(...NUMERIC_TYPES), fc.constantFrom(...BQ_TYPES)), {
    minLength: 1,
    maxLength: 4,
  })
  .map((types) => proposalOf(types));

/** Field names with case variants, a keyword and a prototype name, so collisions are common. */
export const nameArb = fc.constantFrom(
  'promo',
  'Promo',
  'PROMO',
  'seat',
  'meal_pref',
  'select',
  '__proto__',
  'x1',
);

/** Any proposed field set (not necessarily key-sorted). */
export const proposedArb: fc.Arbitrary<ProposedFields> = fc
  .array(fc.tuple(nameArb, proposalArb), { maxLength: 8 })
  .map((entries) => new Map(entries));

/** A map's entries in order, to compare key order as well as content. */
export function entriesOf(m: ProposedFields): [string, FieldProposal][] {
  return [...m];
}
