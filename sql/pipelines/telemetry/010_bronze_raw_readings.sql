-- Bronze: written by the Pub/Sub BigQuery subscription with --write-metadata, the same columns as the booking
-- pipeline's raw_bookings; no NOT NULL (Pub/Sub writes NULL attributes).
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_telemetry_bronze.raw_readings` (
  subscription_name STRING,
  message_id STRING,
  publish_time TIMESTAMP,
  data STRING,
  attributes JSON
)
PARTITION BY DATE(publish_time)
OPTIONS (
  description = 'Immutable landing table of raw telemetry messages (Bronze)'
);
