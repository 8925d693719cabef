-- Reference data: where each device is. Read whole (ORDER BY device_id) by the telemetry contract's device
-- directory at cold start and every OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS, like a side input; maintained by the
-- fleet's provisioning, never written by the pipeline.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_telemetry_ref.devices` (
  device_id STRING NOT NULL OPTIONS (description = '1-64 of A-Z a-z 0-9 _ . -, starting with a letter or digit'),
  region STRING NOT NULL OPTIONS (description = 'Region code: 1-32 of a-z 0-9 -, starting with a letter or digit'),
  site STRING NOT NULL OPTIONS (description = 'Site name, up to 256 characters'),
  updated_at TIMESTAMP OPTIONS (description = 'When provisioning last changed the row')
)
OPTIONS (
  description = 'Telemetry reference data: device to region and site (side input)'
);
