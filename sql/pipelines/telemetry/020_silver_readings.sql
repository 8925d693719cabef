-- Silver: one row per validated reading, streamed with insertId = event_id (deviceId + eventTs), enriched from the
-- device directory. Temperatures are exact decimals (at most three fraction digits), never binary floats.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_telemetry_silver.readings` (
  event_id STRING NOT NULL OPTIONS (description = 'tm1- + SHA-256 of [device_id, event_timestamp]; the streaming insertId'),
  device_id STRING NOT NULL,
  event_timestamp TIMESTAMP NOT NULL OPTIONS (description = 'Event time: eventTs, or the publish time when eventTs is absent'),
  event_time_source STRING NOT NULL OPTIONS (description = 'ATTRIBUTE (eventTs) or PUBLISH_TIME (the fallback)'),
  temperature_c NUMERIC(38, 9) NOT NULL,
  humidity_pct NUMERIC(38, 9) OPTIONS (description = 'NULL in contract version 1; optional in version 2'),
  region STRING OPTIONS (description = 'From the device directory; NULL for an unknown device'),
  site STRING OPTIONS (description = 'From the device directory; NULL for an unknown device'),
  reference_status STRING NOT NULL OPTIONS (description = 'KNOWN or UNKNOWN_DEVICE (not in the directory when decoded)'),
  contract_version STRING NOT NULL OPTIONS (description = 'The contract version the message was decoded as'),
  extra_fields JSON OPTIONS (description = 'Payload fields the contract version does not know'),
  publish_time TIMESTAMP,
  ingestion_timestamp TIMESTAMP NOT NULL,
  source_message_id STRING NOT NULL,
  reprocess_run_id STRING OPTIONS (description = 'The offvia run that re-drove the row (080); NULL for live traffic')
)
PARTITION BY DATE(event_timestamp)
CLUSTER BY device_id
OPTIONS (
  description = 'Validated telemetry readings (Silver)'
);

-- One row per event_id for readers: insertId dedup is best effort, so a retried insert can leave a duplicate.
CREATE OR REPLACE VIEW `{{project}}.offvia_telemetry_silver.readings_dedup` AS
SELECT * EXCEPT (row_rank)
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY event_id ORDER BY ingestion_timestamp, source_message_id) AS row_rank
  FROM `{{project}}.offvia_telemetry_silver.readings`
)
WHERE row_rank = 1;
