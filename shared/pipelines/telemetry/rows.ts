// The telemetry pipeline's dead-letter and gold rows (sql/pipelines/telemetry/); TIMESTAMPs RFC 3339 UTC.
import {
  bigQueryTimestamp as timestamp,
  paneColumns,
  type PaneColumns,
} from '../../aggregates/gold-row';
import { keptPayload } from '../../ingest/quarantine-row';
import type { ContractMessage, VersionRejected } from '../../pipeline/definition';
import type { AccumulationMode, Pane } from '../../windowing';
import type { DeviceStats, TopDevice } from './combine';
import { TELEMETRY_ATTRIBUTES } from './contract';

/** Longest payload text kept in a dead-letter row, UTF-8 bytes; Bronze keeps the whole message. */
export const DEAD_LETTER_PAYLOAD_MAX_BYTES = 64 * 1024;

/** A row of `offvia_telemetry_quarantine.dead_letter` (sql/pipelines/telemetry/030). */
export interface DeadLetterRow {
  /** The message data as UTF-8 text (invalid bytes replaced), cut to {@link DEAD_LETTER_PAYLOAD_MAX_BYTES}. */
  payload: string;
  /** The exact bytes, base64, when they are not valid UTF-8 (cut likewise); null otherwise. */
  payload_base64: string | null;
  payload_truncated: boolean;
  /** The rejection reason. */
  error: string;
  /** The stage that rejected it (`TELEMETRY_STAGES`). */
  stage: string;
  /** The `deviceId` attribute as sent (up to 128 characters), null when absent. */
  device_id: string | null;
  /** When the message was parsed and rejected (the partitioning column). */
  parse_time: string;
  source_message_id: string;
  publish_time: string | null;
  /** The message attributes as JSON text. */
  attributes: string;
  /** The version the message was decoded as; null when none applied (unknown or missing version). */
  contract_version: string | null;
}

/**
 * The dead-letter row of a rejected message (the study guide: payload, error, deviceId and parse time, to a
 * partitioned table). `parseTimeMs` is epoch ms UTC.
 * @throws RangeError when `parseTimeMs` is outside BigQuery TIMESTAMP's range
 */
export function deadLetterRow(
  message: ContractMessage,
  rejection: Pick<VersionRejected, 'stage' | 'reason'> & { version: string | null },
  parseTimeMs: number,
): DeadLetterRow {
  const kept = keptPayload(message.data, DEAD_LETTER_PAYLOAD_MAX_BYTES);
  const device = message.attributes[TELEMETRY_ATTRIBUTES.deviceId];
  return {
    payload: kept.raw_payload,
    payload_base64: kept.raw_payload_base64,
    payload_truncated: kept.payload_truncated,
    error: rejection.reason,
    stage: rejection.stage,
    device_id: device === undefined ? null : device.slice(0, 128),
    parse_time: timestamp(parseTimeMs),
    source_message_id: message.messageId,
    publish_time: message.publishTimeMs === undefined ? null : timestamp(message.publishTimeMs),
    attributes: JSON.stringify(message.attributes),
    contract_version: rejection.version,
  };
}

/** A row of `offvia_telemetry_gold.device_minute_panes`. */
export interface DevicePaneRow extends PaneColumns {
  device_id: string;
  reading_count: number;
  /** NUMERIC text in °C; null for an empty pane. */
  temperature_avg_c: string | null;
  temperature_min_c: string | null;
  temperature_max_c: string | null;
}

/** A row of `offvia_telemetry_gold.region_top_devices`: one row per pane, the ranking as a repeated record. */
export interface RegionTopPaneRow extends PaneColumns {
  region: string;
  top_devices: { rank: number; device_id: string; max_temperature_c: string }[];
}

/**
 * One per-device pane as its gold row; the pane's key is the device id.
 * @throws RangeError when a time is outside BigQuery TIMESTAMP's range
 */
export function devicePaneRow(
  pipeline: string,
  mode: AccumulationMode,
  pane: Pane<DeviceStats>,
  insertId: string,
): DevicePaneRow {
  return {
    ...paneColumns(pipeline, mode, pane, insertId),
    device_id: pane.key,
    reading_count: pane.value.count,
    temperature_avg_c: pane.value.avgC,
    temperature_min_c: pane.value.minC,
    temperature_max_c: pane.value.maxC,
  };
}

/**
 * One regional top-N pane as its gold row; the pane's key is the region.
 * @throws RangeError when a time is outside BigQuery TIMESTAMP's range
 */
export function regionTopPaneRow(
  pipeline: string,
  mode: AccumulationMode,
  pane: Pane<TopDevice[]>,
  insertId: string,
): RegionTopPaneRow {
  return {
    ...paneColumns(pipeline, mode, pane, insertId),
    region: pane.key,
    top_devices: pane.value.map((d) => ({
      rank: d.rank,
      device_id: d.deviceId,
      max_temperature_c: d.maxTemperatureC,
    })),
  };
}
