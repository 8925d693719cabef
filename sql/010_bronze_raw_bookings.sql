-- Bronze: the lab's table, written by the Pub/Sub BigQuery subscription with --write-metadata.
-- Columns are exactly the subscription's metadata columns; do not add NOT NULL here (Pub/Sub writes NULL attributes).
-- Partitioned by DAY of publish_time (a column the subscription writes), so `offvia replay` of a range reads only
-- the days it touches instead of all of Bronze (docs/backfill.md). A table made before this stays unpartitioned:
-- CREATE ... IF NOT EXISTS leaves it as it is, and everything still works on it (at the cost of full scans).
-- No partition expiration: Bronze is the copy every replay starts from.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_bronze.raw_bookings` (
  subscription_name STRING,
  message_id STRING,
  publish_time TIMESTAMP,
  data STRING,
  attributes JSON
)
PARTITION BY DATE(publish_time)
OPTIONS (
  description = 'Immutable landing table of raw Pub/Sub events (Bronze)'
);
