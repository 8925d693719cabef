// The telemetry pipeline (the study guide's NovaTrack scenario): per-device minute statistics and regional top-N.
import { loadIngestConfig } from '../../config/ingest-config';
import { parseNumeric } from '../../contract/numeric';
import { TELEMETRY_VAR_GROUP, loadTelemetryConfig } from './config';
import { aggregation, type PipelineDefinition } from '../../pipeline/definition';
import type { WatermarkPolicy, WindowingStrategy } from '../../windowing';
import {
  deviceStatsFn,
  parseDeviceStatsAccumulator,
  parseTopAccumulator,
  regionTopNFn,
} from './combine';
import {
  TELEMETRY_CONTRACT,
  type TelemetryElement,
  type TelemetrySettings,
  type TelemetrySilverRow,
} from './contract';
import { BigQueryDeviceDirectory } from './device-directory';
import { deadLetterRow, devicePaneRow, regionTopPaneRow } from './rows';
import { telemetrySamples } from './samples';

/** The scenario's windowing: 1-minute windows, early pane after 30 s, a late pane per late element. */
export const TELEMETRY_STRATEGY: WindowingStrategy = {
  windowFn: { kind: 'fixed', sizeMs: 60_000, offsetMs: 0 },
  allowedLatenessMs: 10 * 60_000,
  trigger: { earlyFirings: { processingTimeDelayMs: 30_000 }, lateFirings: { elementCount: 1 } },
  accumulationMode: 'ACCUMULATING',
};

/** The watermark heuristic, as the booking pipeline's defaults (a clock running ahead never moves it). */
export const TELEMETRY_WATERMARK_POLICY: WatermarkPolicy = {
  maxOutOfOrdernessMs: 10_000,
  idleTimeoutMs: 60_000,
  maxFutureSkewMs: 0,
};

/** Devices per regional ranking. */
export const TOP_N = 10;

const DEVICE_AGGREGATION = 'telemetry_device_1m';
const REGION_AGGREGATION = 'telemetry_region_top_1m';
const topN = regionTopNFn(TOP_N);

/** The telemetry pipeline. */
export const TELEMETRY_PIPELINE: PipelineDefinition<
  TelemetrySettings,
  TelemetrySilverRow,
  TelemetryElement
> = {
  name: 'telemetry',
  description:
    'temperature readings from IoT devices: per-device minute statistics and the hottest devices per region',
  pubsub: {
    topic: 'telemetry-events',
    deadLetterTopic: 'telemetry-events-dlq',
    bronzeDeadLetterTopic: 'telemetry-events-bronze-dlq',
    subscriptions: {
      ingest: 'telemetry-events-ingest',
      bronze: 'telemetry-events-bronze',
      deadLetterHold: 'telemetry-events-dlq-hold',
      bronzeDeadLetterHold: 'telemetry-events-bronze-dlq-hold',
    },
  },
  contract: TELEMETRY_CONTRACT,
  async createSettings(env, io) {
    const config = loadTelemetryConfig(env);
    const devices = new BigQueryDeviceDirectory(io.bigquery, {
      table: config.referenceTable,
      projectId: loadIngestConfig(env).projectId,
      refreshIntervalMs: config.referenceRefreshMs,
      maxDevices: config.referenceMaxDevices,
      logger: io.logger,
      now: io.now,
    });
    await devices.load();
    return { limits: config, devices };
  },
  tables: {
    bronze: { datasetId: 'offvia_telemetry_bronze', tableId: 'raw_readings' },
    silver: { datasetId: 'offvia_telemetry_silver', tableId: 'readings' },
    quarantine: { datasetId: 'offvia_telemetry_quarantine', tableId: 'dead_letter' },
    badData: { datasetId: 'offvia_telemetry_quarantine', tableId: 'bad_data' },
    reference: [{ datasetId: 'offvia_telemetry_ref', tableId: 'devices' }],
    views: [
      { datasetId: 'offvia_telemetry_silver', tableId: 'readings_dedup' },
      { datasetId: 'offvia_telemetry_gold', tableId: 'device_minute_settled' },
      { datasetId: 'offvia_telemetry_gold', tableId: 'region_top_settled' },
      { datasetId: 'offvia_telemetry_quarantine', tableId: 'dead_letter_open' },
      { datasetId: 'offvia_telemetry_quarantine', tableId: 'bad_data_open' },
    ],
    operational: [{ datasetId: 'offvia_telemetry_quarantine', tableId: 'resolutions' }],
    ddlFiles: [
      'sql/pipelines/telemetry/000_datasets.sql',
      'sql/pipelines/telemetry/010_bronze_raw_readings.sql',
      'sql/pipelines/telemetry/020_silver_readings.sql',
      'sql/pipelines/telemetry/030_quarantine_dead_letter.sql',
      'sql/pipelines/telemetry/040_quarantine_bad_data.sql',
      'sql/pipelines/telemetry/050_reference_devices.sql',
      'sql/pipelines/telemetry/060_gold_device_minute_panes.sql',
      'sql/pipelines/telemetry/070_gold_region_top_devices.sql',
      'sql/pipelines/telemetry/080_operator_runs.sql',
    ],
  },
  quarantineRow: (message, rejection, parseTimeMs) => ({
    ...deadLetterRow(message, rejection, parseTimeMs),
  }),
  aggregations: [
    aggregation({
      name: DEVICE_AGGREGATION,
      description: 'count, average, minimum and maximum temperature per device and minute',
      strategy: TELEMETRY_STRATEGY,
      watermarkPolicy: TELEMETRY_WATERMARK_POLICY,
      // One shard: about one reading per device a minute, so key groups, not shards, spread the writes; one shard
      // keeps the contributions and dedup ids in one document (one read and one write per key group and bundle).
      shards: 1,
      combineFn: deviceStatsFn,
      parseAccumulator: parseDeviceStatsAccumulator,
      input: (event: { element: TelemetryElement }) => ({
        key: event.element.deviceId,
        value: event.element.temperatureMilliC,
      }),
      goldTable: { datasetId: 'offvia_telemetry_gold', tableId: 'device_minute_panes' },
      goldRow: (pane, insertId, mode) => ({
        ...devicePaneRow(DEVICE_AGGREGATION, mode, pane, insertId),
      }),
    }),
    aggregation({
      name: REGION_AGGREGATION,
      description: `the ${TOP_N} hottest devices (highest reading) per region and minute`,
      strategy: TELEMETRY_STRATEGY,
      watermarkPolicy: TELEMETRY_WATERMARK_POLICY,
      // The hot key: a region's writes spread over 16 shard documents (`region#N`), merged when the pane fires.
      shards: 16,
      combineFn: topN,
      parseAccumulator: (value) => parseTopAccumulator(value, TOP_N),
      // An unknown device has no region: it is counted per device but ranks nowhere.
      input: (event: { keys: Readonly<Record<string, string>>; element: TelemetryElement }) => {
        const region = event.keys.region;
        return region === undefined ? null : { key: region, value: event.element };
      },
      goldTable: { datasetId: 'offvia_telemetry_gold', tableId: 'region_top_devices' },
      goldRow: (pane, insertId, mode) => ({
        ...regionTopPaneRow(REGION_AGGREGATION, mode, pane, insertId),
      }),
    }),
  ],
  schemaDrift: {
    mode: 'off',
    extraFields:
      'kept as JSON text in Silver `extra_fields`: firmware rolls fields out device by device, and 50,000 devices ' +
      'on mixed firmware would churn the table schema; a field worth a column becomes a new contract version',
  },
  functions: {
    ingest: { entryPoint: 'ingestTelemetry', baseName: 'ingest-telemetry' },
    fireWindows: { entryPoint: 'fireTelemetryWindows', baseName: 'fire-telemetry-windows' },
    schemaSweep: null,
  },
  serviceAccounts: {
    ingest: 'telemetry-ingest',
    fireWindows: 'telemetry-windows',
    schemaSweep: null,
    bronze: 'telemetry-bronze',
  },
  firestore: { windowsRoot: 'offviaTelemetryWindows', schemaDriftRoot: null },
  samples: telemetrySamples,
  config: { vars: TELEMETRY_VAR_GROUP, load: loadTelemetryConfig },
  operatorColumns: {
    silver: {
      writtenAt: 'ingestion_timestamp',
      eventId: 'event_id',
      messageId: 'source_message_id',
      eventTime: 'event_timestamp',
      dedupView: { datasetId: 'offvia_telemetry_silver', tableId: 'readings_dedup' },
      lookupColumns: [],
    },
    quarantine: {
      stage: 'stage',
      reason: 'error',
      rejectedAt: 'parse_time',
      messageId: 'source_message_id',
      payload: 'payload',
      extra: ['device_id', 'contract_version'],
    },
    openViews: {
      quarantine: { datasetId: 'offvia_telemetry_quarantine', tableId: 'dead_letter_open' },
      badData: { datasetId: 'offvia_telemetry_quarantine', tableId: 'bad_data_open' },
    },
    resolutions: { datasetId: 'offvia_telemetry_quarantine', tableId: 'resolutions' },
    aggregations: {
      [DEVICE_AGGREGATION]: {
        silverKey: (row) => textOrNull(row.device_id),
        goldKeyColumn: 'device_id',
        silverValue: (row) => silverMilliC(row),
      },
      // The region kept in Silver at ingest, so a restatement ranks the device where the stream did.
      [REGION_AGGREGATION]: {
        silverKey: (row) => textOrNull(row.region),
        goldKeyColumn: 'region',
        silverValue: (row): TelemetryElement => ({
          deviceId: String(row.device_id),
          temperatureMilliC: silverMilliC(row),
        }),
      },
    },
  },
};

/** A Silver cell as a key: its text, or `null` when it is NULL or empty. */
function textOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/**
 * A Silver row's `temperature_c` (NUMERIC text, at most 3 fraction digits as the contract checks) in milli-degrees.
 * @throws RangeError for anything else
 */
function silverMilliC(row: Readonly<Record<string, unknown>>): number {
  const parsed = parseNumeric(String(row.temperature_c));
  if (!parsed.ok || parsed.scaled % 1_000_000n !== 0n) {
    throw new RangeError(`temperature_c ${JSON.stringify(row.temperature_c)} is not milli-degrees`);
  }
  return Number(parsed.scaled / 1_000_000n);
}
