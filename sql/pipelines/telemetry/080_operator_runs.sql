-- What the operator command (offvia) writes when it re-drives telemetry rows: the run id on the Silver and
-- dead-letter rows a run wrote, the resolutions of dead-letter and bad-data rows, and the views of rows still open.
ALTER TABLE `{{project}}.offvia_telemetry_silver.readings` ADD COLUMN IF NOT EXISTS reprocess_run_id STRING;
ALTER TABLE `{{project}}.offvia_telemetry_quarantine.dead_letter` ADD COLUMN IF NOT EXISTS reprocess_run_id STRING;

CREATE TABLE IF NOT EXISTS `{{project}}.offvia_telemetry_quarantine.resolutions` (
  layer STRING NOT NULL OPTIONS (description = 'quarantine or bad_data'),
  row_key STRING NOT NULL OPTIONS (description = 'Key of the open view: dead-letter message_key, bad-data row_key'),
  source_message_id STRING OPTIONS (description = 'Pub/Sub message id of the original message'),
  run_id STRING NOT NULL OPTIONS (description = 'The offvia run; also reprocess_run_id of the rows it wrote'),
  action STRING NOT NULL OPTIONS (description = 'reprocess, redrive, replay'),
  outcome STRING NOT NULL OPTIONS (description = 'Where the row went: silver, bad_data, quarantine, or the target table'),
  result_event_id STRING OPTIONS (description = 'event_id of the Silver row it became, if any'),
  fix STRING OPTIONS (description = 'The fix applied, as offvia describes it'),
  resolved_by STRING NOT NULL OPTIONS (description = 'Operator: the OS user name, or the by flag of offvia'),
  resolved_at TIMESTAMP NOT NULL
)
PARTITION BY DATE(resolved_at)
OPTIONS (
  description = 'Dead-letter and bad-data rows re-driven by an operator (offvia)'
);

CREATE OR REPLACE VIEW `{{project}}.offvia_telemetry_quarantine.dead_letter_open` AS
SELECT latest.*
FROM (
  SELECT * EXCEPT (open_rank)
  FROM (
    SELECT
      *,
      COALESCE(source_message_id, payload) AS message_key,
      ROW_NUMBER() OVER (
        PARTITION BY COALESCE(source_message_id, payload)
        ORDER BY parse_time DESC
      ) AS open_rank
    FROM `{{project}}.offvia_telemetry_quarantine.dead_letter`
  )
  WHERE open_rank = 1
) AS latest
LEFT JOIN (
  SELECT DISTINCT row_key
  FROM `{{project}}.offvia_telemetry_quarantine.resolutions`
  WHERE layer = 'quarantine'
) AS resolved
ON resolved.row_key = latest.message_key
WHERE resolved.row_key IS NULL;

CREATE OR REPLACE VIEW `{{project}}.offvia_telemetry_quarantine.bad_data_open` AS
SELECT latest.*
FROM (
  SELECT * EXCEPT (open_rank)
  FROM (
    SELECT
      *,
      COALESCE(insert_id, source_message_id, bad_data) AS row_key,
      ROW_NUMBER() OVER (
        PARTITION BY COALESCE(insert_id, source_message_id, bad_data)
        ORDER BY insert_time DESC
      ) AS open_rank
    FROM `{{project}}.offvia_telemetry_quarantine.bad_data`
  )
  WHERE open_rank = 1
) AS latest
LEFT JOIN (
  SELECT DISTINCT row_key
  FROM `{{project}}.offvia_telemetry_quarantine.resolutions`
  WHERE layer = 'bad_data'
) AS resolved
ON resolved.row_key = latest.row_key
WHERE resolved.row_key IS NULL;
