-- What the operator command (offvia) writes when it re-drives telemetry rows, as booking's sql/045 and sql/070 (see
-- them for the columns' meaning): the run id on the Silver and dead-letter rows a run wrote, the resolutions of
-- dead-letter and bad-data rows, and the views of the rows still open (the latest row per key, unresolved).
-- 020 and 030 declare reprocess_run_id at creation (the BigQuery emulator counts an ALTER-added column as a value
-- every insert must supply); these ALTERs add it to tables created before that.
ALTER TABLE `{{project}}.offvia_telemetry_silver.readings` ADD COLUMN IF NOT EXISTS reprocess_run_id STRING;
ALTER TABLE `{{project}}.offvia_telemetry_quarantine.dead_letter` ADD COLUMN IF NOT EXISTS reprocess_run_id STRING;

CREATE TABLE IF NOT EXISTS `{{project}}.offvia_telemetry_quarantine.resolutions` (
  layer STRING NOT NULL, row_key STRING NOT NULL, source_message_id STRING, run_id STRING NOT NULL,
  action STRING NOT NULL, outcome STRING NOT NULL, result_event_id STRING, fix STRING,
  resolved_by STRING NOT NULL, resolved_at TIMESTAMP NOT NULL
)
PARTITION BY DATE(resolved_at)
OPTIONS (description = 'Dead-letter and bad-data rows re-driven by an operator (offvia)');

CREATE OR REPLACE VIEW `{{project}}.offvia_telemetry_quarantine.dead_letter_open` AS
SELECT *, COALESCE(source_message_id, payload) AS message_key
FROM `{{project}}.offvia_telemetry_quarantine.dead_letter`
WHERE COALESCE(source_message_id, payload) NOT IN (
  SELECT row_key FROM `{{project}}.offvia_telemetry_quarantine.resolutions` WHERE layer = 'quarantine')
QUALIFY ROW_NUMBER() OVER (PARTITION BY COALESCE(source_message_id, payload) ORDER BY parse_time DESC) = 1;

CREATE OR REPLACE VIEW `{{project}}.offvia_telemetry_quarantine.bad_data_open` AS
SELECT *, COALESCE(insert_id, source_message_id, bad_data) AS row_key
FROM `{{project}}.offvia_telemetry_quarantine.bad_data`
WHERE COALESCE(insert_id, source_message_id, bad_data) NOT IN (
  SELECT row_key FROM `{{project}}.offvia_telemetry_quarantine.resolutions` WHERE layer = 'bad_data')
QUALIFY ROW_NUMBER() OVER (PARTITION BY COALESCE(insert_id, source_message_id, bad_data) ORDER BY insert_time DESC) = 1;
