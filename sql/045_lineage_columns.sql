-- Lineage of re-driven rows: the operator run (`offvia quarantine reprocess`, `offvia bad-data redrive`) that wrote
-- a Silver or quarantine row; NULL for live traffic. The original Pub/Sub message id stays in source_message_id.
-- New tables get the column from its definition in 020/030 (the local BigQuery emulator refuses streamed rows once a
-- column was added by ALTER); these statements add it to tables made before it existed. NULLABLE, one column per
-- statement (the emulator refuses several in one).
ALTER TABLE `{{project}}.offvia_silver.fact_bookings` ADD COLUMN IF NOT EXISTS reprocess_run_id STRING;
ALTER TABLE `{{project}}.offvia_quarantine.poisoned_events` ADD COLUMN IF NOT EXISTS reprocess_run_id STRING;
