-- Gold: one row per pane of the regional top-N (the hottest devices by highest reading per region and minute),
-- computed over 16 shards per region and merged at firing. insert_id = pipeline~window id~region~pane index.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_telemetry_gold.region_top_devices` (
  pipeline STRING NOT NULL OPTIONS (description = 'The aggregation that fired the pane (telemetry_region_top_1m)'),
  window_start TIMESTAMP NOT NULL,
  window_end TIMESTAMP NOT NULL,
  region STRING NOT NULL,
  top_devices ARRAY<STRUCT<rank INT64, device_id STRING, max_temperature_c NUMERIC(38, 9)>> OPTIONS (description = 'Hottest first; ties by device_id'),
  pane_timing STRING NOT NULL,
  pane_index INT64 NOT NULL,
  pane_on_time_index INT64 NOT NULL,
  is_first BOOL NOT NULL,
  is_final BOOL NOT NULL,
  accumulation_mode STRING NOT NULL,
  watermark_at_emission TIMESTAMP,
  emitted_at TIMESTAMP NOT NULL,
  insert_id STRING NOT NULL
)
PARTITION BY DATE(window_start)
CLUSTER BY region
OPTIONS (
  description = 'Telemetry: hottest devices per region and minute (Gold)'
);

-- The dashboard's reader: the latest ranking of every (region, window) at least 2 minutes behind the watermark.
CREATE OR REPLACE VIEW `{{project}}.offvia_telemetry_gold.region_top_settled` AS
WITH recent AS (
  SELECT *
  FROM `{{project}}.offvia_telemetry_gold.region_top_devices`
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
        PARTITION BY pipeline, region, window_start
        ORDER BY pane_index DESC, emitted_at DESC, insert_id
      ) AS pane_rank
    FROM recent
  )
  WHERE pane_rank = 1
)
SELECT latest.*
FROM latest CROSS JOIN watermark
WHERE latest.window_end <= TIMESTAMP_SUB(watermark.watermark_at, INTERVAL 2 MINUTE);
