// A booking pane as a row of the gold table offvia_gold.route_panes (sql/060_gold_route_panes.sql).
import { formatEpochMs, isTimestampMs } from '../contract/event-time';
import type { AccumulationMode, Pane, PaneTiming } from '../windowing';
import type { BookingAggregate } from './booking-aggregates';
import { parseRouteKey } from './route-key';

/** One row of `offvia_gold.route_panes`, as strings/numbers ready for insertAll (TIMESTAMP RFC 3339 UTC). */
export interface GoldPaneRow {
  /** The windowed pipeline that fired the pane (`OFFVIA_WINDOW_PIPELINE`). */
  pipeline: string;
  /** Window start, inclusive. */
  window_start: string;
  /** Window end, exclusive. */
  window_end: string;
  /** `ORIGIN-DESTINATION-CURRENCY`. */
  route_key: string;
  origin_airport: string;
  destination_airport: string;
  currency: string;
  /** Bookings in the pane (all so far when ACCUMULATING, new ones when DISCARDING). */
  booking_count: number;
  /** NUMERIC text. */
  fare_total: string;
  /** NUMERIC text, null for an empty pane. */
  fare_min: string | null;
  fare_max: string | null;
  /** total / count rounded half-even to 9 fraction digits; null for an empty pane. */
  fare_mean: string | null;
  /** Beam `PaneInfo.Timing`. */
  pane_timing: PaneTiming;
  /** Beam `PaneInfo.getIndex()`: 0, 1, 2… per window. */
  pane_index: number;
  /** Beam `PaneInfo.getNonSpeculativeIndex()`: −1 for EARLY panes. */
  pane_on_time_index: number;
  is_first: boolean;
  /** Beam `PaneInfo.isLast()`: no further pane will follow for this window. */
  is_final: boolean;
  accumulation_mode: AccumulationMode;
  /** Input watermark at the firing; null while the watermark is still at its initial minimum. */
  watermark_at_emission: string | null;
  /** Processing time of the firing. */
  emitted_at: string;
  /** The streaming insertId (`paneInsertId`), also kept as a column so readers can deduplicate. */
  insert_id: string;
}

/**
 * Maps one pane to its gold row.
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
    pipeline,
    window_start: timestamp(pane.window.startMs),
    window_end: timestamp(pane.window.endMs),
    route_key: pane.key,
    origin_airport: route.origin,
    destination_airport: route.destination,
    currency: route.currency,
    booking_count: pane.value.count,
    fare_total: pane.value.total,
    fare_min: pane.value.min,
    fare_max: pane.value.max,
    fare_mean: pane.value.mean,
    pane_timing: pane.timing,
    pane_index: pane.index,
    pane_on_time_index: pane.onTimeIndex,
    is_first: pane.isFirst,
    is_final: pane.isLast,
    accumulation_mode: accumulationMode,
    watermark_at_emission: isTimestampMs(pane.watermarkMs) ? formatEpochMs(pane.watermarkMs) : null,
    emitted_at: timestamp(pane.firedAtProcessingTimeMs),
    insert_id: insertId,
  };
}

function timestamp(ms: number): string {
  if (!isTimestampMs(ms)) throw new RangeError(`${ms} ms is outside BigQuery TIMESTAMP's range`);
  return formatEpochMs(ms);
}
