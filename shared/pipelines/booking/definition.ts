// The booking pipeline as a definition, built from the modules that run it today (shared/contract,
// shared/aggregates, shared/config) with every name it has today; not yet what the entry points read.
import { parseBookingAccumulator, bookingAggregatesFn } from '../../aggregates/booking-aggregates';
import { goldPaneRow } from '../../aggregates/gold-row';
import { routeKey } from '../../aggregates/route-key';
import { quarantineRow } from '../../ingest/quarantine-row';
import type { TableRef } from '../../config/env';
import { INGEST_VARS, loadIngestConfig } from '../../config/ingest-config';
import { SCHEMA_DRIFT_VARS } from '../../config/schema-drift-config';
import { readTableVar } from '../../config/spec';
import { loadWindowConfig, WINDOW_VARS } from '../../config/window-config';
import {
  BOOKING_CONTRACT_VERSION,
  ERROR_STAGES,
  type ErrorStage,
  validateBooking,
  type SilverRow,
  type ValidationOptions,
} from '../../contract';
import {
  aggregation,
  type ContractVersion,
  type PipelineDefinition,
} from '../../pipeline/definition';

/** What the booking contract reads from the environment (`OFFVIA_MAX_FUTURE_SKEW_MS`, ...; `loadIngestConfig`). */
export type BookingSettings = Pick<
  ValidationOptions,
  'maxFutureSkewMs' | 'maxEventAgeMs' | 'defaultCurrency'
>;

/** What the booking aggregation folds in: the fare × 10^9 (BigQuery NUMERIC's scale), exact. */
export interface BookingElement {
  readonly fareScaled: bigint;
}

/** The default of a table variable, as the loaders parse it. */
function defaultTable(spec: Parameters<typeof readTableVar>[1]): TableRef {
  return readTableVar({}, spec);
}

/** The windowing every booking instance runs when no variable overrides it (the lab's, see window-config.ts). */
const WINDOW_DEFAULTS = loadWindowConfig({});

/**
 * Version "1": the lab's booking event (JSON, validated by `validateBooking` through the lab's four stages). The
 * only version so far; producers do not send a version attribute, so its absence means "1".
 */
const BOOKING_V1: ContractVersion<BookingSettings, SilverRow, BookingElement> = {
  version: BOOKING_CONTRACT_VERSION,
  status: 'current',
  summary:
    "the lab's booking event: booking_id, passenger_id, flight_number, origin, destination, fare, event_time; " +
    'optional currency (USD), status (CONFIRMED), event_id',
  decode(message, { receivedAtMs, settings }) {
    const result = validateBooking(message.data, {
      messageId: message.messageId,
      receivedAtMs,
      ...settings,
    });
    if (!result.ok) return { ok: false, stage: result.stage, reason: result.reason, context: {} };
    return {
      ok: true,
      eventId: result.eventId,
      eventTimeMs: result.eventTimeMs,
      eventTimeSource: 'PAYLOAD',
      keys: {
        route: routeKey({
          origin: result.row.origin_airport,
          destination: result.row.destination_airport,
          currency: result.row.currency,
        }),
      },
      row: result.row,
      element: { fareScaled: result.fareScaled },
      extraFields: result.extraFields,
    };
  },
};

const BOOKING_AGGREGATION_NAME = WINDOW_VARS.pipeline.default;

/**
 * The booking pipeline: the lab's Bronze / Silver / quarantine with bad data and the schema sweep, counted per route
 * in one-minute event-time windows to `offvia_gold.route_panes`. The names are today's defaults; at run time the
 * `OFFVIA_*` variables still override tables and windowing (docs/configuration.md).
 */
export const BOOKING_PIPELINE: PipelineDefinition<BookingSettings, SilverRow, BookingElement> = {
  name: 'booking',
  description:
    'booking changes from the booking service: validated to Silver, counted per route and one-minute window',
  pubsub: {
    topic: 'booking-events',
    deadLetterTopic: 'booking-events-dlq',
    bronzeDeadLetterTopic: 'booking-events-bronze-dlq',
    subscriptions: {
      ingest: 'booking-events-ingest',
      bronze: 'booking-events-bronze',
      deadLetterHold: 'booking-events-dlq-hold',
      bronzeDeadLetterHold: 'booking-events-bronze-dlq-hold',
    },
  },
  contract: {
    stages: ERROR_STAGES,
    versionFrom: { kind: 'attribute', name: 'contractVersion', whenAbsent: '1' },
    versions: [BOOKING_V1],
    encoding: { kind: 'json' },
    orderingKeyAttribute: null,
  },
  createSettings(env) {
    const { maxFutureSkewMs, maxEventAgeMs, defaultCurrency } = loadIngestConfig(env);
    return Promise.resolve({ maxFutureSkewMs, maxEventAgeMs, defaultCurrency });
  },
  tables: {
    bronze: { datasetId: 'offvia_bronze', tableId: 'raw_bookings' },
    silver: defaultTable(INGEST_VARS.silverTable),
    quarantine: defaultTable(INGEST_VARS.quarantineTable),
    badData: defaultTable(INGEST_VARS.badDataTable),
    reference: [],
    views: [
      { datasetId: 'offvia_silver', tableId: 'fact_bookings_dedup' },
      { datasetId: 'offvia_gold', tableId: 'route_panes_latest' },
      { datasetId: 'offvia_quarantine', tableId: 'poisoned_events_open' },
      { datasetId: 'offvia_quarantine', tableId: 'bad_data_open' },
    ],
    operational: [{ datasetId: 'offvia_quarantine', tableId: 'resolutions' }],
    ddlFiles: [
      'sql/000_datasets.sql',
      'sql/010_bronze_raw_bookings.sql',
      'sql/020_silver_fact_bookings.sql',
      'sql/030_quarantine_poisoned_events.sql',
      'sql/040_quarantine_bad_data.sql',
      'sql/045_lineage_columns.sql',
      'sql/046_contract_version.sql',
      'sql/050_silver_fact_bookings_dedup_view.sql',
      'sql/060_gold_route_panes.sql',
      'sql/070_resolutions.sql',
      'sql/085_gold_restatement.sql',
    ],
  },
  // ingestBooking builds this row itself today (with OFFVIA_QUARANTINE_PAYLOAD_MAX_BYTES); this is the same row at
  // the variable's default, for runtimes that read the definition.
  quarantineRow: (message, rejection, parseTimeMs) => ({
    ...quarantineRow(
      message,
      rejection.stage as ErrorStage,
      rejection.reason,
      parseTimeMs,
      INGEST_VARS.quarantinePayloadMaxBytes.default,
    ),
  }),
  aggregations: [
    aggregation({
      name: BOOKING_AGGREGATION_NAME,
      description:
        'count, exact fare total, min, max and mean per route (origin, destination, currency) and window',
      strategy: WINDOW_DEFAULTS.strategy,
      watermarkPolicy: WINDOW_DEFAULTS.watermarkPolicy,
      // The key-groups layout booking runs (its default): shard documents per key group and window.
      shards: WINDOW_DEFAULTS.groupShards,
      combineFn: bookingAggregatesFn,
      parseAccumulator: parseBookingAccumulator,
      input: (event: { keys: Readonly<Record<string, string>>; element: BookingElement }) => {
        const key = event.keys.route;
        return key === undefined ? null : { key, value: event.element.fareScaled };
      },
      goldTable: WINDOW_DEFAULTS.goldTable,
      goldRow: (pane, insertId, mode) => ({
        ...goldPaneRow(BOOKING_AGGREGATION_NAME, mode, pane, insertId),
      }),
    }),
  ],
  schemaDrift: {
    mode: 'sweep',
    targetTables: [defaultTable(INGEST_VARS.silverTable)],
    windowMinutes: SCHEMA_DRIFT_VARS.windowMinutes.default,
    retryMinutes: SCHEMA_DRIFT_VARS.retryMinutes.default,
  },
  functions: {
    ingest: { entryPoint: 'ingestBooking', baseName: 'ingest-booking' },
    fireWindows: { entryPoint: 'fireWindows', baseName: 'fire-windows' },
    schemaSweep: { entryPoint: 'schemaSweep', baseName: 'schema-sweep' },
  },
  // The accounts the deploy created before pipelines were registered (deploy/gcloud/functions.ts), kept.
  serviceAccounts: {
    ingest: 'ingest',
    fireWindows: 'windows',
    schemaSweep: 'sweep',
    bronze: 'bronze',
  },
  firestore: {
    windowsRoot: WINDOW_VARS.firestoreRoot.default,
    schemaDriftRoot: SCHEMA_DRIFT_VARS.firestoreRoot.default,
  },
  operatorColumns: {
    silver: {
      writtenAt: 'ingestion_timestamp',
      eventId: 'event_id',
      messageId: 'source_message_id',
      eventTime: 'event_timestamp',
      dedupView: { datasetId: 'offvia_silver', tableId: 'fact_bookings_dedup' },
      lookupColumns: ['booking_id'],
    },
    quarantine: {
      stage: 'error_stage',
      reason: 'error_reason',
      rejectedAt: 'received_timestamp',
      messageId: 'source_message_id',
      payload: 'raw_payload',
      extra: ['reprocess_run_id'],
    },
    openViews: {
      quarantine: { datasetId: 'offvia_quarantine', tableId: 'poisoned_events_open' },
      badData: { datasetId: 'offvia_quarantine', tableId: 'bad_data_open' },
    },
    resolutions: { datasetId: 'offvia_quarantine', tableId: 'resolutions' },
    aggregations: {
      [BOOKING_AGGREGATION_NAME]: {
        // The route key as ingest built it from the same three Silver columns.
        silverKey: (row) =>
          routeKey({
            origin: String(row.origin_airport),
            destination: String(row.destination_airport),
            currency: String(row.currency),
          }),
        goldKeyColumn: 'route_key',
      },
    },
  },
};
