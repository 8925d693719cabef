-- Datasets of the telemetry pipeline, one per layer and its own, so its grants, retention and teardown never touch
-- the booking pipeline's; applied first of the definition's DDL files (tables.ddlFiles). One statement a dataset.
CREATE SCHEMA IF NOT EXISTS `{{project}}.offvia_telemetry_bronze` OPTIONS (location = '{{location}}', description = 'Telemetry: raw copy of every Pub/Sub message (Bronze)');
CREATE SCHEMA IF NOT EXISTS `{{project}}.offvia_telemetry_silver` OPTIONS (location = '{{location}}', description = 'Telemetry: validated, enriched readings (Silver)');
CREATE SCHEMA IF NOT EXISTS `{{project}}.offvia_telemetry_quarantine` OPTIONS (location = '{{location}}', description = 'Telemetry: dead-letter table and bad data');
CREATE SCHEMA IF NOT EXISTS `{{project}}.offvia_telemetry_gold` OPTIONS (location = '{{location}}', description = 'Telemetry: panes per device and minute, regional top-N (Gold)');
CREATE SCHEMA IF NOT EXISTS `{{project}}.offvia_telemetry_ref` OPTIONS (location = '{{location}}', description = 'Telemetry: reference data read as a side input (device to region and site)');
