-- The lab's own DDL (offvia-streaming-lab, "Crea le tabelle di destinazione"), verbatim but for the project
-- placeholder: what a project where the lab already ran holds. test/unit/deploy/sql-upgrade.test.ts checks that
-- sql/ adds every column beyond these to such tables.
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_silver.fact_bookings` (
booking_id STRING NOT NULL,
passenger_id STRING NOT NULL,
flight_number STRING NOT NULL,
origin_airport STRING NOT NULL,
destination_airport STRING NOT NULL,
fare_amount NUMERIC NOT NULL,
currency STRING NOT NULL,
booking_status STRING NOT NULL,
event_timestamp TIMESTAMP NOT NULL,
ingestion_timestamp TIMESTAMP NOT NULL,
source_message_id STRING NOT NULL
)
PARTITION BY DATE(event_timestamp)
CLUSTER BY origin_airport, destination_airport
OPTIONS (
description = "Eventi di prenotazione validati in tempo reale"
);
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_quarantine.poisoned_events` (
raw_payload STRING NOT NULL,
error_reason STRING NOT NULL,
error_stage STRING NOT NULL,
received_timestamp TIMESTAMP NOT NULL,
source_message_id STRING
)
PARTITION BY DATE(received_timestamp)
OPTIONS (
description = "Eventi rifiutati dal parsing o dalla validazione"
);
CREATE TABLE IF NOT EXISTS `{{project}}.offvia_bronze.raw_bookings` (
subscription_name STRING,
message_id STRING,
publish_time TIMESTAMP,
data STRING,
attributes JSON
)
OPTIONS (
description = "Tabella di landing immutabile degli eventi grezzi Pub/Sub"
);
