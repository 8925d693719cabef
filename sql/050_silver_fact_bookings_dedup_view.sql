-- Silver for readers: one row per event_id. Streaming insertId dedup is best effort, so duplicates can reach the
-- table; this view keeps the first ingested copy of each event. Rows written before event_id existed fall back to
-- the Pub/Sub message id.
CREATE OR REPLACE VIEW `{{project}}.offvia_silver.fact_bookings_dedup` AS
SELECT * EXCEPT (dedup_rank)
FROM (
  SELECT
    *,
    ROW_NUMBER() OVER (
      PARTITION BY COALESCE(event_id, source_message_id)
      ORDER BY ingestion_timestamp, source_message_id
    ) AS dedup_rank
  FROM `{{project}}.offvia_silver.fact_bookings`
)
WHERE dedup_rank = 1;
