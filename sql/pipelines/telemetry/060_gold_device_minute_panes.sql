-- Gold: one row per pane of the per-device aggregation (1-minute windows, early every 30 s, late per element,
-- 10 min allowed lateness, accumulating), with Beam's pane info. insert_id = pipeline~window id~device~pane index.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_telemetry_gold.device_minute_panes` (
  pipeline STRING NOT NULL OPTIONS (description = 'The aggregation that fired the pane (telemetry_device_1m)'),
  window_start TIMESTAMP NOT NULL,
  window_end TIMESTAMP NOT NULL,
  device_id STRING NOT NULL,
  reading_count INT64 NOT NULL OPTIONS (description = 'Readings in the window so far (accumulating panes)'),
  temperature_avg_c NUMERIC(38, 9) OPTIONS (description = 'Exact sum / count rounded half-even to 9 decimals; NULL for an empty pane'),
  temperature_min_c NUMERIC(38, 9) OPTIONS (description = 'Exact; NULL for an empty pane'),
  temperature_max_c NUMERIC(38, 9) OPTIONS (description = 'Exact; NULL for an empty pane'),
  pane_timing STRING NOT NULL OPTIONS (description = 'EARLY, ON_TIME or LATE'),
  pane_index INT64 NOT NULL,
  pane_on_time_index INT64 NOT NULL,
  is_first BOOL NOT NULL,
  is_final BOOL NOT NULL,
  accumulation_mode STRING NOT NULL,
  watermark_at_emission TIMESTAMP OPTIONS (description = 'Input watermark at the firing; the settled view reads behind it'),
  emitted_at TIMESTAMP NOT NULL,
  insert_id STRING NOT NULL
)
PARTITION BY DATE(window_start)
CLUSTER BY device_id
OPTIONS (
  description = 'Telemetry panes per device and minute (Gold)'
);

-- The dashboard's reader (the study guide: read with a lookback behind the watermark): the latest pane of every
-- (device, window) whose window ended at least 2 minutes before the newest watermark BigQuery has seen, so rows
-- still in flight in the streaming buffer are not missed. Two days back only, so the view prunes partitions.
CREATE OR REPLACE VIEW `{{project}}.offvia_telemetry_gold.device_minute_settled` AS
WITH recent AS (
  SELECT *
  FROM `{{project}}.offvia_telemetry_gold.device_minute_panes`
  WHERE window_start >= TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL 2 DAY)
),
watermark AS (
  SELECT MAX(watermark_at_emission) AS watermark_at FROM recent
),
latest AS (
  SELECT * EXCEPT (pane_rank)
  FROM (
    SELECT
      *,
      ROW_NUMBER() OVER (
        PARTITION BY pipeline, device_id, window_start
        ORDER BY pane_index DESC, emitted_at DESC, insert_id
      ) AS pane_rank
    FROM recent
  )
  WHERE pane_rank = 1
)
SELECT latest.*
FROM latest CROSS JOIN watermark
WHERE latest.window_end <= TIMESTAMP_SUB(watermark.watermark_at, INTERVAL 2 MINUTE);
