// Gold rows: the pane columns every gold table shares (Beam's `PaneInfo`, as in offvia_gold.route_panes,
// sql/060_gold_route_panes.sql), and booking's route pane built on them.
import { formatEpochMs, isTimestampMs } from '../contract/event-time';
import type { AccumulationMode, Pane, PaneTiming } from '../windowing';
import type { BookingAggregate } from './booking-aggregates';
import { parseRouteKey } from './route-key';

/** The pane columns of a gold row, as strings/numbers ready for insertAll (TIMESTAMP RFC 3339 UTC). */
export interface PaneColumns {
  /** The aggregation (windowed pipeline) that fired the pane. */
  pipeline: string;
  /** Window start, inclusive. */
  window_start: string;
  /** Window end, exclusive. */
  window_end: string;
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
  /** Input watermark at the firing; null while at its initial minimum. The settled views read behind it. */
  watermark_at_emission: string | null;
  /** Processing time of the firing. */
  emitted_at: string;
  /** The streaming insertId (`paneInsertId`), also kept as a column so readers can deduplicate. */
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

/** One row of `offvia_gold.route_panes`. */
export interface GoldPaneRow extends PaneColumns {
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
