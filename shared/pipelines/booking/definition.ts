// The booking pipeline as a definition: the lab's contract, tables, route windows and schema drift, and `configure`.
import {
  bookingAggregatesFn,
  parseBookingAccumulator,
  parseScaledText,
} from '../../aggregates/booking-aggregates';
import { goldPaneRow } from '../../aggregates/gold-row';
import { parseRouteKey, routeKey } from '../../aggregates/route-key';
import { protectPassengerId } from '../../ingest/passenger-id';
import { quarantineRow } from '../../ingest/quarantine-row';
import type { Env, TableRef } from '../../config/env';
import { INGEST_VARS, type IngestConfig, loadIngestConfig } from '../../config/ingest-config';
import { loadPassengerIdConfig, type PassengerIdConfig } from '../../config/passenger-id-config';
import { loadSchemaDriftConfig } from '../../config/schema-drift-config';
import { readTableVar } from '../../config/spec';
import { loadWindowConfig, type WindowConfig } from '../../config/window-config';
import { ConfigError } from '../../errors';
import * as logs from '../../logging/logs';
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
  type AggregationDefinition,
  type ContractVersion,
  type OperatorColumns,
  type PipelineDefinition,
} from '../../pipeline/definition';
import type { JsonValue } from '../../windowing';
import { bookingSamples } from './samples';

/**
 * What the booking contract reads from the environment at cold start: the event-time window and default currency
 * (`OFFVIA_MAX_FUTURE_SKEW_MS`, ...; `loadIngestConfig`) and what happens to `passenger_id` before Silver
 * (`OFFVIA_PASSENGER_ID_MODE`; absent: stored as received).
 */
export type BookingSettings = Pick<
  ValidationOptions,
  'maxFutureSkewMs' | 'maxEventAgeMs' | 'defaultCurrency'
> & { readonly passengerId?: PassengerIdConfig };

/** Booking's Silver row (`offvia_silver.fact_bookings`): the validated columns, the event id and the version. */
export type BookingSilverRow = SilverRow & {
  readonly event_id: string;
  /** The version the row was validated as (sql/046): readers tell a row of a later version from today's. */
  readonly contract_version: string;
};

/** What the booking aggregation folds in: the fare × 10^9 (BigQuery NUMERIC's scale), exact. */
export interface BookingElement {
  readonly fareScaled: bigint;
}

/**
 * Version "1": the lab's booking event, validated by `validateBooking`; producers send no version attribute. With
 * `settings.passengerId` in `hmac-sha256` mode the row carries the pseudonym (protectPassengerId).
 */
const BOOKING_V1: ContractVersion<BookingSettings, BookingSilverRow, BookingElement> = {
  version: BOOKING_CONTRACT_VERSION,
  status: 'current',
  summary:
    "the lab's booking event: booking_id, passenger_id, flight_number, origin, destination, fare, event_time; " +
    'optional currency (USD), status (CONFIRMED), event_id',
  decode(message, { receivedAtMs, settings, rulesAtMs }) {
    const { passengerId, ...rules } = settings;
    const validated = validateBooking(message.data, {
      messageId: message.messageId,
      receivedAtMs,
      ...rules,
      ...(rulesAtMs !== undefined && { rulesAtMs }),
    });
    if (!validated.ok) {
      return { ok: false, stage: validated.stage, reason: validated.reason, context: {} };
    }
    // Once, before anything stores the row: every copy made from it carries the pseudonym.
    const result = passengerId ? protectPassengerId(validated, passengerId) : validated;
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
      row: { ...result.row, event_id: result.eventId, contract_version: BOOKING_CONTRACT_VERSION },
      element: { fareScaled: result.fareScaled },
      extraFields: result.extraFields,
    };
  },
};

/** Booking's route aggregation for a window configuration (shards: `OFFVIA_WINDOW_GROUP_SHARDS`). */
function routeAggregation(
  window: WindowConfig,
): AggregationDefinition<BookingSilverRow, BookingElement, never, JsonValue, unknown> {
  const name = window.pipeline;
  return aggregation({
    name,
    description:
      'count, exact fare total, min, max and mean per route (origin, destination, currency) and window',
    strategy: window.strategy,
    watermarkPolicy: window.watermarkPolicy,
    shards: window.groupShards,
    combineFn: bookingAggregatesFn,
    parseAccumulator: parseBookingAccumulator,
    input: (event: { keys: Readonly<Record<string, string>>; element: BookingElement }) => {
      const key = event.keys.route;
      return key === undefined ? null : { key, value: event.element.fareScaled };
    },
    goldTable: window.goldTable,
    goldRow: (pane, insertId, mode) => ({ ...goldPaneRow(name, mode, pane, insertId) }),
  });
}

/** Booking's operator columns: the lab's names, with the route aggregation called `aggregationName`. */
function bookingOperatorColumns(aggregationName: string): OperatorColumns {
  return {
    silver: {
      writtenAt: 'ingestion_timestamp',
      eventId: 'event_id',
      messageId: 'source_message_id',
      eventTime: 'event_timestamp',
      dedupView: { datasetId: 'offvia_silver', tableId: 'fact_bookings_dedup' },
      lookupColumns: ['booking_id'],
      pseudonymColumn: 'passenger_id',
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
      [aggregationName]: {
        silverKey: (row) =>
          routeKey({
            origin: String(row.origin_airport),
            destination: String(row.destination_airport),
            currency: String(row.currency),
          }),
        goldKeyColumn: 'route_key',
        // The exact fare as the contract wrote it: NUMERIC text, at most 9 fraction digits.
        silverValue: (row) => parseScaledText(String(row.fare_amount)),
        checkKey: (key) => {
          try {
            parseRouteKey(key);
            return null;
          } catch {
            return 'expected ORIGIN-DESTINATION-CURRENCY in capitals (e.g. JFK-LHR-USD)';
          }
        },
        restatementColumns: { source: 'restatement' },
      },
    },
  };
}

/**
 * Refuses a gold table that is also Silver, quarantine or bad data: panes written there would corrupt that layer.
 * @throws ConfigError naming `OFFVIA_GOLD_TABLE`
 */
export function assertGoldTableIsOwn(
  gold: TableRef,
  ingest: Pick<IngestConfig, 'silverTable' | 'quarantineTable' | 'badDataTable' | 'projectId'>,
): void {
  const name = (t: TableRef) =>
    `${t.projectId ?? ingest.projectId ?? ''}.${t.datasetId}.${t.tableId}`.toLowerCase();
  const layers: [string, TableRef][] = [
    ['Silver (OFFVIA_SILVER_TABLE)', ingest.silverTable],
    ['quarantine (OFFVIA_QUARANTINE_TABLE)', ingest.quarantineTable],
    ['bad data (OFFVIA_BAD_DATA_TABLE)', ingest.badDataTable],
  ];
  for (const [layer, table] of layers) {
    if (name(table) === name(gold)) {
      throw new ConfigError(
        'OFFVIA_GOLD_TABLE',
        `${gold.datasetId}.${gold.tableId} is also the ${layer} table; panes need a table of their own`,
      );
    }
  }
}

/**
 * Booking as this deployment runs it (the definition's `configure`): tables from `OFFVIA_SILVER_TABLE`,
 * `_QUARANTINE_TABLE`, `_BAD_DATA_TABLE`; the route aggregation from the `OFFVIA_WINDOW_*` / `OFFVIA_WATERMARK_*`
 * variables and `OFFVIA_GOLD_TABLE` (none with `OFFVIA_WINDOWS_ENABLED=false`); schema drift from `OFFVIA_SCHEMA_*`.
 * @throws ConfigError naming the first bad variable (a gold table that is another layer's, too)
 */
export function configureBooking(
  env: Env,
): PipelineDefinition<BookingSettings, BookingSilverRow, BookingElement> {
  const ingest = loadIngestConfig(env);
  const window = loadWindowConfig(env);
  const drift = loadSchemaDriftConfig(env, ingest.silverTable, ingest.projectId);
  if (window.enabled) assertGoldTableIsOwn(window.goldTable, ingest);
  return {
    ...BOOKING_BASE,
    tables: {
      ...BOOKING_BASE.tables,
      silver: ingest.silverTable,
      quarantine: ingest.quarantineTable,
      badData: ingest.badDataTable,
    },
    aggregations: window.enabled ? [routeAggregation(window)] : [],
    schemaDrift: drift.enabled
      ? {
          mode: 'sweep',
          targetTables: drift.targetTables,
          windowMinutes: drift.windowMinutes,
          retryMinutes: drift.retryMinutes,
        }
      : {
          mode: 'off',
          extraFields:
            'ignored, as in the lab (OFFVIA_SCHEMA_DRIFT=false); Bronze keeps the message',
        },
    firestore: { windowsRoot: window.firestoreRoot, schemaDriftRoot: drift.firestoreRoot },
    operatorColumns: bookingOperatorColumns(window.pipeline),
  };
}

/** What booking is whatever the environment says; `configureBooking` adds the tables, windows and drift. */
const BOOKING_BASE: Omit<
  PipelineDefinition<BookingSettings, BookingSilverRow, BookingElement>,
  'aggregations' | 'schemaDrift' | 'firestore' | 'operatorColumns'
> = {
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
  createSettings(env, io) {
    const { maxFutureSkewMs, maxEventAgeMs, defaultCurrency } = loadIngestConfig(env);
    const passengerId = loadPassengerIdConfig(env);
    // The key shows in the log only as its length and fingerprint (PassengerIdKey.toJSON).
    logs.configLoaded(io.logger, { passengerId });
    return Promise.resolve({ maxFutureSkewMs, maxEventAgeMs, defaultCurrency, passengerId });
  },
  tables: {
    bronze: { datasetId: 'offvia_bronze', tableId: 'raw_bookings' },
    silver: readTableVar({}, INGEST_VARS.silverTable),
    quarantine: readTableVar({}, INGEST_VARS.quarantineTable),
    badData: readTableVar({}, INGEST_VARS.badDataTable),
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
  quarantineRow: (message, rejection, parseTimeMs, maxPayloadBytes) => ({
    ...quarantineRow(
      message,
      rejection.stage as ErrorStage,
      rejection.reason,
      parseTimeMs,
      maxPayloadBytes,
    ),
  }),
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
  configure: configureBooking,
  samples: bookingSamples,
};

/** The booking pipeline with the deployed defaults (`configureBooking` with no variable set). */
export const BOOKING_PIPELINE = configureBooking({});
