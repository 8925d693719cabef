-- Bronze: the lab's table, written by the Pub/Sub BigQuery subscription with --write-metadata.
-- Columns are exactly the subscription's metadata columns; do not add NOT NULL here (Pub/Sub writes NULL attributes).
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_bronze.raw_bookings` (
  subscription_name STRING,
  message_id STRING,
  publish_time TIMESTAMP,
  data STRING,
  attributes JSON
)
OPTIONS (
  description = 'Immutable landing table of raw Pub/Sub events (Bronze)'
);
