// Gold rows: the pane columns every gold table shares (sql/060_gold_route_panes.sql), and booking's route pane.
import { formatEpochMs, isTimestampMs } from '../contract/event-time';
import type { AccumulationMode, Pane, PaneTiming } from '../windowing';
import type { BookingAggregate } from './booking-aggregates';
import { parseRouteKey } from './route-key';

/**
 * The pane columns of a gold row, ready for insertAll (TIMESTAMP RFC 3339 UTC): `pipeline` the aggregation, the
 * window [start, end), Beam's `PaneInfo` (timing, index, non-speculative index −1 for EARLY, first, last), the input
 * watermark at the firing (null at its initial minimum), the firing's processing time, and the insertId.
 */
export interface PaneColumns {
  pipeline: string;
  window_start: string;
  window_end: string;
  pane_timing: PaneTiming;
  pane_index: number;
  pane_on_time_index: number;
  is_first: boolean;
  is_final: boolean;
  accumulation_mode: AccumulationMode;
  watermark_at_emission: string | null;
  emitted_at: string;
  insert_id: string;
}

/**
 * The pane columns of one pane's gold row.
 * @throws RangeError when a time is outside BigQuery TIMESTAMP's range
 */
export function paneColumns<T>(
  pipeline: string,
  mode: AccumulationMode,
  pane: Pane<T>,
  insertId: string,
): PaneColumns {
  return {
    pipeline,
    window_start: bigQueryTimestamp(pane.window.startMs),
    window_end: bigQueryTimestamp(pane.window.endMs),
    pane_timing: pane.timing,
    pane_index: pane.index,
    pane_on_time_index: pane.onTimeIndex,
    is_first: pane.isFirst,
    is_final: pane.isLast,
    accumulation_mode: mode,
    watermark_at_emission: isTimestampMs(pane.watermarkMs) ? formatEpochMs(pane.watermarkMs) : null,
    emitted_at: bigQueryTimestamp(pane.firedAtProcessingTimeMs),
    insert_id: insertId,
  };
}

/**
 * Epoch ms UTC as a BigQuery TIMESTAMP (RFC 3339 UTC, six fraction digits).
 * @throws RangeError when `ms` is outside BigQuery TIMESTAMP's range
 */
export function bigQueryTimestamp(ms: number): string {
  if (!isTimestampMs(ms)) throw new RangeError(`${ms} ms is outside BigQuery TIMESTAMP's range`);
  return formatEpochMs(ms);
}

/** One row of `offvia_gold.route_panes`: the route and `BookingAggregate`'s values (NUMERIC as text). */
export interface GoldPaneRow extends PaneColumns {
  route_key: string;
  origin_airport: string;
  destination_airport: string;
  currency: string;
  booking_count: number;
  fare_total: string;
  fare_min: string | null;
  fare_max: string | null;
  fare_mean: string | null;
}

/**
 * Maps one booking pane to its gold row.
 * @throws RangeError when the pane's key is not a route key or a time is outside BigQuery TIMESTAMP's range
 */
export function goldPaneRow(
  pipeline: string,
  accumulationMode: AccumulationMode,
  pane: Pane<BookingAggregate>,
  insertId: string,
): GoldPaneRow {
  const route = parseRouteKey(pane.key);
  return {
    ...paneColumns(pipeline, accumulationMode, pane, insertId),
    route_key: pane.key,
    origin_airport: route.origin,
    destination_airport: route.destination,
    currency: route.currency,
    booking_count: pane.value.count,
    fare_total: pane.value.total,
    fare_min: pane.value.min,
    fare_max: pane.value.max,
    fare_mean: pane.value.mean,
  };
}
