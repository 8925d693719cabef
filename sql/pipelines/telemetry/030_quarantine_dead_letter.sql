-- Dead letter (the study guide: payload, error, deviceId and parse time, to a partitioned table): every message the
-- contract rejected, with its stage, partitioned by day of parse time. insertId = the Pub/Sub message id.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_telemetry_quarantine.dead_letter` (
  payload STRING NOT NULL OPTIONS (description = 'Message data as UTF-8 text (invalid bytes replaced), at most 64 KiB'),
  payload_base64 STRING OPTIONS (description = 'Exact bytes, base64, when they are not valid UTF-8'),
  payload_truncated BOOL NOT NULL OPTIONS (description = 'True when payload holds only a prefix; Bronze has the whole message'),
  error STRING NOT NULL OPTIONS (description = 'Why it was rejected'),
  stage STRING NOT NULL OPTIONS (description = 'PARSE_JSON, SCHEMA_VALIDATION, RANGE_VALIDATION or EVENT_TIME_VALIDATION'),
  device_id STRING OPTIONS (description = 'The deviceId attribute as sent; NULL when absent'),
  parse_time TIMESTAMP NOT NULL OPTIONS (description = 'When the message was parsed and rejected'),
  source_message_id STRING NOT NULL,
  publish_time TIMESTAMP,
  attributes JSON,
  contract_version STRING OPTIONS (description = 'The version decoded as; NULL for an unknown or missing version'),
  reprocess_run_id STRING OPTIONS (description = 'The offvia run whose re-drive was rejected again (080); NULL for live traffic')
)
PARTITION BY DATE(parse_time)
CLUSTER BY stage, device_id
OPTIONS (
  description = 'Telemetry messages rejected by the contract (dead letter)'
);
