-- Bad data: valid rows BigQuery refused and messages past the retry-age guard, as the booking pipeline's table.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_telemetry_quarantine.bad_data` (
  bad_data STRING NOT NULL OPTIONS (description = 'The original row, as JSON text'),
  target_dest STRING NOT NULL OPTIONS (description = 'The BigQuery table the row was meant for: project.dataset.table'),
  error STRING NOT NULL OPTIONS (description = 'The specific error of the last attempt'),
  insert_time TIMESTAMP NOT NULL OPTIONS (description = 'When the row was written here'),
  processed_timestamp TIMESTAMP OPTIONS (description = 'When the row was first received'),
  retry_count INT64,
  source_message_id STRING OPTIONS (description = 'Pub/Sub message id'),
  insert_id STRING OPTIONS (description = 'The insertId the row would have had in its target table')
)
PARTITION BY DATE(insert_time)
OPTIONS (
  description = 'Telemetry rows that could not be written to their target table (bad data)'
);
