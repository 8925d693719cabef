// Names no drift field may take: the contract's input fields and the Silver table's own (derived) columns.
import { CONTRACT_FIELDS, type SilverRow } from '../contract';

/**
 * Silver's columns as the ingest path writes them: every `SilverRow` key plus `event_id` and `contract_version`
 * (sql/020, sql/046), and the lineage column `reprocess_run_id` that only `offvia` writes (sql/045): a producer field must not forge it.
 */
const SILVER_COLUMN_SET: Readonly<
  Record<keyof SilverRow | 'event_id' | 'contract_version' | 'reprocess_run_id', true>
> = {
  booking_id: true,
  passenger_id: true,
  flight_number: true,
  origin_airport: true,
  destination_airport: true,
  fare_amount: true,
  currency: true,
  booking_status: true,
  event_timestamp: true,
  ingestion_timestamp: true,
  source_message_id: true,
  event_id: true,
  contract_version: true,
  reprocess_run_id: true,
};

/** Silver's columns (the Record type above makes the compiler check the list against `SilverRow`). */
export const SILVER_COLUMNS: readonly string[] = Object.freeze(Object.keys(SILVER_COLUMN_SET));

/**
 * The protected names of the guard rails (`GuardConfig.protectedNames`): the contract's top-level fields
 * (CONTRACT_FIELDS) and Silver's columns, compared case-insensitively. Such a producer field is never a column.
 */
export const DRIFT_PROTECTED_NAMES: readonly string[] = Object.freeze([
  ...new Set([...CONTRACT_FIELDS, ...SILVER_COLUMNS]),
]);
