-- Silver: the lab's table and columns, unchanged, plus event_id (the dedup key and streaming insertId).
-- event_id is NULLABLE so that adding it to an existing lab table is an allowed schema change.
-- fare_amount is spelt NUMERIC(38, 9): in BigQuery the same domain as NUMERIC (precision 38, scale 9, the range the
-- contract checks), and on the local BigQuery emulator the only spelling that gets that domain (a bare NUMERIC column
-- there is DuckDB's DECIMAL(18, 3): fares from 10^15 fail every insert with HTTP 500, and digits past the third
-- decimal are silently dropped).
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_silver.fact_bookings` (
  booking_id STRING NOT NULL,
  passenger_id STRING NOT NULL,
  flight_number STRING NOT NULL,
  origin_airport STRING NOT NULL,
  destination_airport STRING NOT NULL,
  fare_amount NUMERIC(38, 9) NOT NULL,
  currency STRING NOT NULL,
  booking_status STRING NOT NULL,
  event_timestamp TIMESTAMP NOT NULL,
  ingestion_timestamp TIMESTAMP NOT NULL,
  source_message_id STRING NOT NULL,
  event_id STRING OPTIONS (description = 'Stable event id: producer id or bk1-<sha256(booking_id, status, event time)>; also the insertId'),
  reprocess_run_id STRING OPTIONS (description = 'The offvia run that re-drove the row (sql/045); NULL for live traffic'),
  contract_version STRING OPTIONS (description = 'The booking contract version the row was validated as (sql/046); NULL in rows written before it existed, meaning "1"')
)
PARTITION BY DATE(event_timestamp)
CLUSTER BY origin_airport, destination_airport
OPTIONS (
  description = 'Validated booking events, streamed in real time (Silver)'
);

-- A project where the lab already ran has fact_bookings without event_id, and CREATE … IF NOT EXISTS leaves it so:
-- add every column beyond the lab's DDL, one per statement (the local BigQuery emulator refuses several in one).
-- Added columns must be NULLABLE; the view in 050 and ingestBooking need event_id.
ALTER TABLE `{{project}}.offvia_silver.fact_bookings` ADD COLUMN IF NOT EXISTS event_id STRING;
