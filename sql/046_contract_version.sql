-- The contract version of each Silver booking (versioned contracts: Silver records the version a message was
-- validated as). The ingest path writes "1" for every row it accepts today; NULL in rows written before the column
-- existed means "1", the only version there was. New tables get the column from its definition in 020 (the local
-- BigQuery emulator refuses streamed rows once a column was added by ALTER); this statement adds it to tables made
-- before it existed. NULLABLE (a column added to an existing table must be), before the views of 050 read the table.
ALTER TABLE `{{project}}.offvia_silver.fact_bookings` ADD COLUMN IF NOT EXISTS contract_version STRING;
