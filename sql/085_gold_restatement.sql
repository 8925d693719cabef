-- Restatement panes in gold: `offvia gold restate` recomputes a closed window from what gold counts (Silver, the
-- schema-retry store, bad data for Silver) and writes a pane with source = 'restatement'; stream panes (fireWindows)
-- have source 'stream', or NULL in rows written before the column existed. Tables made before the column get it
-- here (060 has it for new tables: the local BigQuery emulator refuses streamed rows once a column was added by
-- ALTER); NULLABLE, one column per statement.
ALTER TABLE `{{project}}.offvia_gold.route_panes` ADD COLUMN IF NOT EXISTS source STRING;

-- The latest pane of every (pipeline, route, window): with accumulating panes, the current best answer per window.
-- A restatement wins over every stream pane of its window, whatever their order: it is computed from the whole
-- window's data after the window closed, while a stream pane emitted later can only be a re-emission from the pane
-- outbox or a firing of a window restated with --force while still open (docs/windows.md, "Restatement panes").
-- Between restatements the newest wins; between stream panes the highest pane index, as before.
CREATE OR REPLACE VIEW `{{project}}.offvia_gold.route_panes_latest` AS
SELECT * EXCEPT (pane_rank, source), COALESCE(source, 'stream') AS source
FROM (
  SELECT
    *,
    ROW_NUMBER() OVER (
      PARTITION BY pipeline, route_key, window_start
      ORDER BY
        IF(source = 'restatement', 1, 0) DESC,
        IF(source = 'restatement', emitted_at, NULL) DESC,
        pane_index DESC,
        emitted_at DESC,
        insert_id
    ) AS pane_rank
  FROM `{{project}}.offvia_gold.route_panes`
)
WHERE pane_rank = 1;
