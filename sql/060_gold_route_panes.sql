-- Gold: one row per pane of the booking pipeline (per route and one-minute event-time window), with Beam's pane info.
-- insert_id = pipeline~window id~route key~pane index is also the streaming insertId, so a retried firing adds nothing
-- (BigQuery's best-effort dedup) or an identical row (the latest-pane view keeps one).
-- The fare columns are NUMERIC(38, 9), as in Silver: the same domain as NUMERIC in BigQuery, and that domain on the
-- local emulator too (where a bare NUMERIC is DECIMAL(18, 3)).
-- The latest-pane view route_panes_latest is in sql/085_gold_restatement.sql, after the ALTER that gives tables
-- made before the source column that column.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_gold.route_panes` (
  pipeline STRING NOT NULL OPTIONS (description = 'Windowed pipeline that fired the pane (OFFVIA_WINDOW_PIPELINE)'),
  window_start TIMESTAMP NOT NULL OPTIONS (description = 'Window start, inclusive (event time)'),
  window_end TIMESTAMP NOT NULL OPTIONS (description = 'Window end, exclusive (event time)'),
  route_key STRING NOT NULL OPTIONS (description = 'ORIGIN-DESTINATION-CURRENCY'),
  origin_airport STRING NOT NULL,
  destination_airport STRING NOT NULL,
  currency STRING NOT NULL,
  booking_count INT64 NOT NULL OPTIONS (description = 'Bookings in the pane: all so far (ACCUMULATING) or new since the last pane (DISCARDING)'),
  fare_total NUMERIC(38, 9) NOT NULL OPTIONS (description = 'Exact sum of fare_amount'),
  fare_min NUMERIC(38, 9) OPTIONS (description = 'NULL for an empty pane'),
  fare_max NUMERIC(38, 9) OPTIONS (description = 'NULL for an empty pane'),
  fare_mean NUMERIC(38, 9) OPTIONS (description = 'fare_total / booking_count rounded half-even to 9 decimals; NULL for an empty pane'),
  pane_timing STRING NOT NULL OPTIONS (description = 'EARLY, ON_TIME or LATE (Beam PaneInfo.Timing)'),
  pane_index INT64 NOT NULL OPTIONS (description = '0, 1, 2... per window (PaneInfo.getIndex)'),
  pane_on_time_index INT64 NOT NULL OPTIONS (description = '-1 for EARLY panes, then 0, 1... (PaneInfo.getNonSpeculativeIndex)'),
  is_first BOOL NOT NULL,
  is_final BOOL NOT NULL OPTIONS (description = 'No further pane follows for this window (PaneInfo.isLast)'),
  accumulation_mode STRING NOT NULL OPTIONS (description = 'ACCUMULATING or DISCARDING'),
  watermark_at_emission TIMESTAMP OPTIONS (description = 'Input watermark at the firing; NULL while at its initial minimum'),
  emitted_at TIMESTAMP NOT NULL OPTIONS (description = 'Processing time of the firing'),
  insert_id STRING NOT NULL OPTIONS (description = 'Streaming insertId: pipeline~window id~route key~pane index'),
  source STRING OPTIONS (description = 'stream (fireWindows; NULL in rows written before the column existed) or restatement (offvia gold restate)')
)
PARTITION BY DATE(window_start)
CLUSTER BY origin_airport, destination_airport
OPTIONS (
  description = 'Panes of the windowed booking aggregates (Gold)'
);
