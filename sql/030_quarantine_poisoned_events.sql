-- Quarantine: the lab's table and columns, unchanged, plus what an operator needs to replay a message.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_quarantine.poisoned_events` (
  raw_payload STRING NOT NULL,
  error_reason STRING NOT NULL,
  error_stage STRING NOT NULL,
  received_timestamp TIMESTAMP NOT NULL,
  source_message_id STRING,
  publish_time TIMESTAMP OPTIONS (description = 'Pub/Sub publish time of the message'),
  attributes JSON OPTIONS (description = 'Pub/Sub message attributes'),
  payload_bytes INT64 OPTIONS (description = 'Size of the original message data in bytes'),
  payload_truncated BOOL OPTIONS (description = 'True when raw_payload holds only a prefix; Bronze has the full message'),
  raw_payload_base64 STRING OPTIONS (description = 'Exact original bytes (base64) when they are not valid UTF-8, possibly truncated'),
  reprocess_run_id STRING OPTIONS (description = 'The offvia run whose re-drive was quarantined again (sql/045); NULL for live traffic')
)
PARTITION BY DATE(received_timestamp)
OPTIONS (
  description = 'Events rejected by parsing or validation (quarantine)'
);

-- A project where the lab already ran has poisoned_events with the lab's five columns only, and CREATE … IF NOT
-- EXISTS leaves it so: add every column beyond the lab's DDL, one per statement (the local BigQuery emulator refuses
-- several in one), or ingestBooking's quarantine rows name unknown columns.
ALTER TABLE `{{project}}.offvia_quarantine.poisoned_events` ADD COLUMN IF NOT EXISTS publish_time TIMESTAMP;
ALTER TABLE `{{project}}.offvia_quarantine.poisoned_events` ADD COLUMN IF NOT EXISTS attributes JSON;
ALTER TABLE `{{project}}.offvia_quarantine.poisoned_events` ADD COLUMN IF NOT EXISTS payload_bytes INT64;
ALTER TABLE `{{project}}.offvia_quarantine.poisoned_events` ADD COLUMN IF NOT EXISTS payload_truncated BOOL;
ALTER TABLE `{{project}}.offvia_quarantine.poisoned_events` ADD COLUMN IF NOT EXISTS raw_payload_base64 STRING;
