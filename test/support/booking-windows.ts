// Fixtures for the windowed booking pipeline: real ValidationSuccess events, a recording RowWriter, a pipeline over
// the in-memory store, and the lab's scripted window scenario (run on the memory store and on the emulator).
import type { TableRef } from '../../shared/config/env';
import { loadWindowConfig } from '../../shared/config/window-config';
import { validateBooking, type ValidationSuccess } from '../../shared/contract';
import type { BookingAccumulator } from '../../shared/aggregates/booking-aggregates';
import { BookingWindowSink } from './booking-window-assembly';
import {
  assembleBookingWindows,
  fireWindowsDepsOf,
  type BookingWindows,
} from './booking-window-assembly';
import { fireWindows, type FireWindowsSummary } from '../../shared/state/fire-windows';
import type { ElementOutcome } from '../../shared/state/keyed-windows';
import { Logger, type LogEntry } from '../../shared/logging/logger';
import type { InsertRow, RowResult, RowWriter } from '../../shared/sinks/row-writer';
import { MemoryWindowStore } from './memory-window-store';
import { TransientError } from '../../shared/errors';

/** 2026-10-07T14:10:00Z: the lab's window start. */
export const T = Date.parse('2026-10-07T14:10:00Z');
export const S = 1000;
export const MIN = 60 * S;

/**
 * Routes as [origin, destination, currency] from their route keys, space-separated (`'JFK-LHR-USD SFO-HND-USD'`).
 * @throws Error for a key without three parts
 */
export function routesOf(keys: string): [string, string, string][] {
  return keys.split(' ').map((key) => {
    const [origin, destination, currency, ...rest] = key.split('-');
    if (
      origin === undefined ||
      destination === undefined ||
      currency === undefined ||
      rest.length > 0
    )
      throw new Error(`not a route key: ${key}`);
    return [origin, destination, currency];
  });
}

/** The fields of a booking event that matter to the aggregates. */
export interface BookingSpec {
  id: string;
  route?: [string, string, string];
  fare: string;
  /** Event time, epoch ms. */
  at: number;
  status?: string;
}

/** A real `ValidationSuccess` for the spec (through the contract), or an error if the spec is invalid. */
export function bookingEvent(spec: BookingSpec): ValidationSuccess {
  const [origin, destination, currency] = spec.route ?? ['JFK', 'LHR', 'USD'];
  const payload = JSON.stringify({
    booking_id: spec.id,
    passenger_id: 'PAX-1',
    flight_number: 'OF-1',
    origin,
    destination,
    fare: spec.fare,
    currency,
    status: spec.status ?? 'CONFIRMED',
    event_time: new Date(spec.at).toISOString(),
  });
  const result = validateBooking(payload, {
    messageId: `m-${spec.id}`,
    receivedAtMs: spec.at,
    maxFutureSkewMs: Infinity,
    maxEventAgeMs: Infinity,
  });
  if (!result.ok) throw new Error(`invalid fixture ${spec.id}: ${result.reason}`);
  return result;
}

/**
 * Records insertAll rows per `dataset.table`; `refuse` makes a table refuse every row as data, `failing` makes its
 * calls throw a TransientError whose detail is `failure` (as an unreachable BigQuery would).
 */
export class RecordingWriter implements RowWriter {
  readonly rows = new Map<string, InsertRow[]>();
  readonly refuse = new Set<string>();
  readonly failing = new Set<string>();
  constructor(readonly failure = 'unavailable') {}
  insertRows(table: TableRef, rows: readonly InsertRow[]): Promise<RowResult[]> {
    const name = `${table.datasetId}.${table.tableId}`;
    if (this.failing.has(name)) {
      return Promise.reject(new TransientError(`insertAll ${name}`, this.failure));
    }
    if (this.refuse.has(name)) {
      return Promise.resolve(
        rows.map(() => ({
          ok: false as const,
          kind: 'rejected' as const,
          error: 'invalid: test',
          missingFields: [],
        })),
      );
    }
    this.rows.set(name, [...(this.rows.get(name) ?? []), ...rows]);
    return Promise.resolve(rows.map(() => ({ ok: true as const })));
  }
  /**
   * Gold rows as written. Each pane must be written once: a repeated insertId throws (retries after a crash could
   * legitimately repeat one, but no test here crashes an emitter).
   */
  gold(table = 'offvia_gold.route_panes'): Record<string, unknown>[] {
    const rows = this.rows.get(table) ?? [];
    const ids = rows.map((r) => r.insertId);
    const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
    if (repeated.length > 0) throw new Error(`panes written twice: ${repeated.join(', ')}`);
    return rows.map((r) => r.json);
  }
}

/** A settable processing-time clock. */
export class Clock {
  constructor(public nowMs: number) {}
  readonly now = (): number => this.nowMs;
}

/** The booking pipeline on the in-memory store with a recording writer and a manual clock. */
export function memoryBookingWindows(
  env: Record<string, string> = {},
  options: {
    clock?: Clock;
    logs?: LogEntry[];
    /** Shards per key group and window (default `OFFVIA_WINDOW_GROUP_SHARDS`, 1). */
    shards?: number;
  } = {},
): {
  windows: BookingWindows;
  store: MemoryWindowStore<BookingAccumulator>;
  writer: RecordingWriter;
  clock: Clock;
  sink: BookingWindowSink;
} {
  const config = loadWindowConfig(env);
  const { earlyFirings, lateFirings } = config.strategy.trigger;
  const store = new MemoryWindowStore<BookingAccumulator>({
    keyGroups: config.keyGroups,
    earlyDelayMs: earlyFirings?.processingTimeDelayMs ?? null,
    lateDelayMs: lateFirings?.processingTimeDelayMs ?? null,
  });
  const writer = new RecordingWriter();
  const clock = options.clock ?? new Clock(T);
  const windows = assembleBookingWindows(config, {
    store,
    writer,
    badDataTable: { datasetId: 'offvia_quarantine', tableId: 'bad_data' },
    projectId: 'offvia-test',
    logger: new Logger('test', (e) => options.logs?.push(e), clock.now),
    now: clock.now,
    ...(options.shards !== undefined && { shards: options.shards }),
  });
  return {
    windows,
    store,
    writer,
    clock,
    sink: new BookingWindowSink(windows.pipeline, windows.logger),
  };
}

/** Records one booking as ingestBooking would, received at `receivedAtMs`. */
export function record(
  sink: BookingWindowSink,
  spec: BookingSpec,
  receivedAtMs: number,
  messageId = `m-${spec.id}-${receivedAtMs}`,
): Promise<ElementOutcome> {
  return sink.recordBooking(bookingEvent(spec), { messageId }, receivedAtMs);
}

/** Runs fireWindows at processing time `atMs` (the clock is set to it). */
export function fire(
  windows: BookingWindows,
  clock: Clock,
  atMs: number,
): Promise<FireWindowsSummary> {
  clock.nowMs = atMs;
  return fireWindows(fireWindowsDepsOf(windows));
}

/** What the lab scenario observed, for the assertions of both test suites. */
export interface LabScenarioRun {
  outcomes: Record<string, ElementOutcome['kind']>;
  fires: FireWindowsSummary[];
}

/**
 * The lab's windowing (defaults: 1-minute windows, 5 min allowed lateness, early firings 30 s after the pane's first
 * element, a late firing per late element, accumulating; watermark 10 s behind the largest event time) driven by
 * events and fireWindows calls at scripted processing times, all on window [14:10, 14:11) of JFK-LHR-USD; events on
 * SFO-HND-USD move the watermark. Expected: EARLY (e1, e2), ON_TIME (e1–e3), LATE (+e4), LATE (+e5), the window
 * garbage-collected, e6 dropped as too late and counted once although delivered twice.
 */
export async function runLabWindowScenario(
  sink: BookingWindowSink,
  windows: BookingWindows,
  clock: Clock,
): Promise<LabScenarioRun> {
  const outcomes: Record<string, ElementOutcome['kind']> = {};
  const fires: FireWindowsSummary[] = [];
  const send = async (spec: BookingSpec, ptMs: number, label = spec.id): Promise<void> => {
    clock.nowMs = ptMs;
    outcomes[label] = (await record(sink, spec, ptMs)).kind;
  };
  const clockRoute: [string, string, string] = ['SFO', 'HND', 'USD'];
  await send({ id: 'e1', fare: '100.00', at: T + 1 * S }, T + 5 * S);
  await send({ id: 'e2', fare: '200.10', at: T + 15 * S }, T + 20 * S);
  await send({ id: 'e3', fare: '50.255', at: T + 30 * S }, T + 40 * S); // 35 s after e1 arrived: EARLY pane first
  await send({ id: 'e2', fare: '200.10', at: T + 15 * S }, T + 50 * S, 'e2-redelivered');
  await send({ id: 'c1', route: clockRoute, fare: '1', at: T + 72 * S }, T + 75 * S); // watermark 14:11:02
  fires.push(await fire(windows, clock, T + 80 * S)); // ON_TIME
  await send({ id: 'e4', fare: '99.999999999', at: T + 45 * S }, T + 90 * S); // LATE
  await send({ id: 'e5', fare: '10', at: T + 50 * S }, T + 100 * S); // LATE
  await send({ id: 'c2', route: clockRoute, fare: '1', at: T + 375 * S }, T + 380 * S); // watermark 14:16:05
  fires.push(await fire(windows, clock, T + 385 * S)); // end + 5 min passed: garbage-collected
  await send({ id: 'e6', fare: '1', at: T + 55 * S }, T + 390 * S); // too late: dropped, counted
  await send({ id: 'e6', fare: '1', at: T + 55 * S }, T + 395 * S, 'e6-redelivered');
  return { outcomes, fires };
}

/** Gold rows of one route, ordered by window and pane index, reduced to what the scenario checks. */
export function paneSummary(
  rows: readonly Record<string, unknown>[],
  routeKey: string,
): (string | number | boolean | null)[][] {
  return rows
    .filter((r) => r.route_key === routeKey)
    .sort(
      (a, b) =>
        String(a.window_start).localeCompare(String(b.window_start)) ||
        Number(a.pane_index) - Number(b.pane_index),
    )
    .map((r) => [
      String(r.window_start).slice(11, 19),
      r.pane_timing as string,
      Number(r.pane_index),
      Number(r.pane_on_time_index),
      Number(r.booking_count),
      r.fare_total as string,
      r.fare_min as string | null,
      r.fare_max as string | null,
      r.fare_mean as string | null,
      Boolean(r.is_final),
    ]);
}

/** The panes the lab scenario must produce for JFK-LHR-USD (see `runLabWindowScenario`). */
export const LAB_SCENARIO_PANES = [
  ['14:10:00', 'EARLY', 0, -1, 2, '300.1', '100', '200.1', '150.05', false],
  ['14:10:00', 'ON_TIME', 1, 0, 3, '350.355', '50.255', '200.1', '116.785', false],
  ['14:10:00', 'LATE', 2, 1, 4, '450.354999999', '50.255', '200.1', '112.58875', false],
  ['14:10:00', 'LATE', 3, 2, 5, '460.354999999', '10', '200.1', '92.071', false],
];
