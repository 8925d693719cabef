-- Datasets for every layer, one statement each. {{project}} and {{location}} are filled in by deploy/ scripts.
CREATE SCHEMA IF NOT EXISTS `{{project}}.offvia_bronze` OPTIONS (location = '{{location}}', description = 'Raw, immutable copy of every Pub/Sub message (Bronze)');
CREATE SCHEMA IF NOT EXISTS `{{project}}.offvia_silver` OPTIONS (location = '{{location}}', description = 'Validated booking events (Silver)');
CREATE SCHEMA IF NOT EXISTS `{{project}}.offvia_quarantine` OPTIONS (location = '{{location}}', description = 'Rejected events (quarantine) and rows past the schema-retry budget (bad data)');
CREATE SCHEMA IF NOT EXISTS `{{project}}.offvia_gold` OPTIONS (location = '{{location}}', description = 'Windowed aggregates: one row per pane fired by fireWindows / ingestBooking (Gold)');
