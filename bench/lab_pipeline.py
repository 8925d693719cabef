"""The lab's Beam pipeline (offvia-streaming-lab, stream_bookings_pipeline.py) on the DirectRunner, for the benchmark.

ValidateAndEnrichBookingFn and the windowing are the lab's code as written there (only re-indented: the handout lost
the indentation). The I/O is swapped for local files: the messages come from a JSON-lines file instead of
ReadFromPubSub, and the Silver and quarantine outputs are written to JSON-lines files instead of WriteToBigQuery, so
nothing is sent to BigQuery. Batch mode: the DirectRunner reads a bounded input; validation is per element either way.

Usage: python lab_pipeline.py INPUT.jsonl OUT_DIR
  INPUT lines: {"message_id": "...", "data": "<payload text>"}
Prints one JSON line: {"events": N, "silver": S, "quarantine": Q, "seconds": T} (T: pipeline run, wall clock).
"""

import json
import logging
import sys
import time
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.io.gcp.pubsub import PubsubMessage
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.window import FixedWindows


# ---- the lab's DoFn, as written -------------------------------------------------------------------------------------
class ValidateAndEnrichBookingFn(beam.DoFn):
    QUARANTINE = "quarantine"

    def process(self, message):
        raw_payload = message.data.decode("utf-8", errors="replace")
        received_at = datetime.now(timezone.utc).isoformat()
        message_id = message.message_id

        def reject(stage, reason):
            return pvalue.TaggedOutput(
                self.QUARANTINE,
                {
                    "raw_payload": raw_payload,
                    "error_reason": reason,
                    "error_stage": stage,
                    "received_timestamp": received_at,
                    "source_message_id": message_id,
                },
            )

        try:
            payload = json.loads(raw_payload)
        except json.JSONDecodeError as exc:
            yield reject("PARSE_JSON", str(exc))
            return

        required = {
            "booking_id",
            "passenger_id",
            "flight_number",
            "origin",
            "destination",
            "fare",
            "event_time",
        }
        missing = sorted(required - payload.keys())
        if missing:
            yield reject(
                "SCHEMA_VALIDATION",
                f"Missing required fields: {', '.join(missing)}",
            )
            return

        try:
            fare = Decimal(str(payload["fare"]))
            if fare <= Decimal("0"):
                raise ValueError("fare must be greater than zero")
        except (InvalidOperation, ValueError, TypeError) as exc:
            yield reject(
                "BUSINESS_RULE_VALIDATION",
                f"Invalid fare: {exc}",
            )
            return

        try:
            event_time = datetime.fromisoformat(
                str(payload["event_time"]).replace("Z", "+00:00")
            )
            if event_time.tzinfo is None:
                raise ValueError("event_time must include an offset or Z")
        except (ValueError, TypeError) as exc:
            yield reject(
                "EVENT_TIME_VALIDATION",
                f"Invalid event_time: {exc}",
            )
            return

        record = {
            "booking_id": str(payload["booking_id"]),
            "passenger_id": str(payload["passenger_id"]),
            "flight_number": str(payload["flight_number"]),
            "origin_airport": str(payload["origin"]),
            "destination_airport": str(payload["destination"]),
            "fare_amount": str(fare),
            "currency": str(payload.get("currency", "USD")),
            "booking_status": str(payload.get("status", "CONFIRMED")),
            "event_timestamp": event_time.isoformat(),
            "ingestion_timestamp": received_at,
            "source_message_id": message_id,
        }
        yield beam.window.TimestampedValue(
            record,
            event_time.timestamp(),
        )


# ---- local I/O in place of Pub/Sub and BigQuery ---------------------------------------------------------------------
def to_message(line):
    item = json.loads(line)
    return PubsubMessage(
        data=item["data"].encode("utf-8"), attributes={}, message_id=item["message_id"]
    )


def run(input_path, out_dir):
    options = PipelineOptions(["--runner=DirectRunner", "--direct_num_workers=1"])
    with open(input_path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    started = time.monotonic()
    with beam.Pipeline(options=options) as pipeline:
        messages = pipeline | "Read messages" >> beam.Create(lines) | beam.Map(to_message)
        outputs = messages | "Validate booking" >> beam.ParDo(
            ValidateAndEnrichBookingFn()
        ).with_outputs(
            ValidateAndEnrichBookingFn.QUARANTINE,
            main="valid",
        )
        windowed = outputs.valid | "One-minute event-time windows" >> beam.WindowInto(
            FixedWindows(60),
            allowed_lateness=300,
        )
        (
            windowed
            | "Silver as JSON" >> beam.Map(json.dumps)
            | "Write silver" >> beam.io.WriteToText(f"{out_dir}/silver", shard_name_template="")
        )
        (
            outputs.quarantine
            | "Quarantine as JSON" >> beam.Map(json.dumps)
            | "Write quarantine"
            >> beam.io.WriteToText(f"{out_dir}/quarantine", shard_name_template="")
        )
    seconds = time.monotonic() - started
    counts = {}
    for name in ("silver", "quarantine"):
        with open(f"{out_dir}/{name}", encoding="utf-8") as f:
            counts[name] = sum(1 for line in f if line.strip())
    print(json.dumps({"events": len(lines), **counts, "seconds": seconds}))


if __name__ == "__main__":
    logging.getLogger().setLevel(logging.WARNING)
    run(sys.argv[1], sys.argv[2])
