-- Resolution bookkeeping: one row per quarantine or bad-data row an operator re-drove (or discarded), appended by
-- `offvia`. Streaming rows cannot be updated for their first 30 minutes (BigQuery refuses DML on the streaming
-- buffer), so a row is never marked in place: the open views below subtract these rows instead.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_quarantine.resolutions` (
  layer STRING NOT NULL OPTIONS (description = 'quarantine or bad_data'),
  row_key STRING NOT NULL OPTIONS (description = 'Key of the open view: quarantine message_key, bad-data row_key'),
  source_message_id STRING OPTIONS (description = 'Pub/Sub message id of the original message'),
  run_id STRING NOT NULL OPTIONS (description = 'The offvia run; also reprocess_run_id of the rows it wrote'),
  action STRING NOT NULL OPTIONS (description = 'reprocess, redrive'),
  outcome STRING NOT NULL OPTIONS (description = 'Where the row went: silver, schema_retry, bad_data, or the target table'),
  result_event_id STRING OPTIONS (description = 'event_id of the Silver row it became, if any'),
  fix STRING OPTIONS (description = 'The fix applied, as offvia describes it'),
  resolved_by STRING NOT NULL OPTIONS (description = 'Operator: the OS user name, or the by flag of offvia'),
  resolved_at TIMESTAMP NOT NULL
)
PARTITION BY DATE(resolved_at)
OPTIONS (
  description = 'Quarantine and bad-data rows re-driven by an operator (offvia)'
);

-- Quarantine still to handle: one row per message (the latest, so a redelivered bad message counts once), minus
-- the messages resolved. Alerts and the reconciliation query read this view, not the table.
CREATE OR REPLACE VIEW `{{project}}.offvia_quarantine.poisoned_events_open` AS
SELECT latest.*
FROM (
  SELECT * EXCEPT (open_rank)
  FROM (
    SELECT
      *,
      COALESCE(source_message_id, raw_payload) AS message_key,
      ROW_NUMBER() OVER (
        PARTITION BY COALESCE(source_message_id, raw_payload)
        ORDER BY received_timestamp DESC
      ) AS open_rank
    FROM `{{project}}.offvia_quarantine.poisoned_events`
  )
  WHERE open_rank = 1
) AS latest
LEFT JOIN (
  SELECT DISTINCT row_key
  FROM `{{project}}.offvia_quarantine.resolutions`
  WHERE layer = 'quarantine'
) AS resolved
ON resolved.row_key = latest.message_key
WHERE resolved.row_key IS NULL;

-- Bad data still to handle: one row per target row (its insertId in the target table; the message id for rows
-- without one), the latest, minus the rows resolved.
CREATE OR REPLACE VIEW `{{project}}.offvia_quarantine.bad_data_open` AS
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
    FROM `{{project}}.offvia_quarantine.bad_data`
  )
  WHERE open_rank = 1
) AS latest
LEFT JOIN (
  SELECT DISTINCT row_key
  FROM `{{project}}.offvia_quarantine.resolutions`
  WHERE layer = 'bad_data'
) AS resolved
ON resolved.row_key = latest.row_key
WHERE resolved.row_key IS NULL;
