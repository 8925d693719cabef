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
  raw_payload_base64 STRING OPTIONS (description = 'Exact original bytes (base64) when they are not valid UTF-8, possibly truncated')
)
PARTITION BY DATE(received_timestamp)
OPTIONS (
  description = 'Events rejected by parsing or validation (quarantine)'
);
