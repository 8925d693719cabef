// The booking pipeline on the Firestore emulator, isolated per test under its own root collection.
import { randomUUID } from 'node:crypto';
import { Firestore } from '@google-cloud/firestore';
import { readFirestoreDatabase } from '../../shared/config/ingest-config';
import { firestoreClient } from '../../shared/drift/runtime';
import type { BookingAccumulator } from '../../shared/aggregates/booking-aggregates';
import { BookingWindowSink } from './booking-window-assembly';
import { createBookingWindows, type BookingWindows } from './booking-window-assembly';
import type { FirestoreWindowStore, StoreMetrics } from '../../shared/state/firestore-window-store';
import { Logger, type LogEntry } from '../../shared/logging/logger';
import type { RowWriter } from '../../shared/sinks/row-writer';
import { Clock, RecordingWriter, S, T } from './booking-windows';
import { assembleBookingWindows } from './booking-window-assembly';
import { loadWindowConfig } from '../../shared/config/window-config';
import { parseBookingAccumulator } from '../../shared/aggregates/booking-aggregates';
import { GroupedFirestoreWindowStore } from '../../shared/state/grouped-window-store';

/** A Firestore client on the emulator of the running stack. @throws when FIRESTORE_EMULATOR_HOST is not set */
export function emulatorFirestore(): Firestore {
  if (!process.env.FIRESTORE_EMULATOR_HOST) {
    throw new Error('FIRESTORE_EMULATOR_HOST is not set: run through `npm test` (the local stack)');
  }
  return firestoreClient(
    process.env.OFFVIA_PROJECT_ID ?? 'offvia-local',
    readFirestoreDatabase(process.env),
  );
}

/**
 * The emulator's Firestore for one mocha suite: opened before its tests, closed after them. Call at the top of a
 * `describe` block; the returned function answers the open client (it throws when called outside the suite's tests).
 */
export function suiteFirestore(): () => Firestore {
  let db: Firestore | undefined;
  before(() => {
    db = emulatorFirestore();
  });
  after(() => db?.terminate());
  return () => {
    if (!db) throw new Error("suiteFirestore: the client opens in the suite's before hook");
    return db;
  };
}

/** A root collection no other test uses. */
export function uniqueRoot(prefix = 'itWindows'): string {
  return `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

/** The pipeline on the emulator, with a manual clock and (by default) a recording writer. */
export function firestoreBookingWindows(
  db: Firestore,
  env: Record<string, string> = {},
  options: {
    clock?: Clock;
    /** `bigquery`: the runtime's own BigQuery writer (the emulator); default a RecordingWriter. */
    writer?: RowWriter | 'bigquery';
    metrics?: StoreMetrics;
    logs?: LogEntry[];
  } = {},
): {
  windows: BookingWindows;
  store: FirestoreWindowStore<BookingAccumulator>;
  writer: RecordingWriter;
  clock: Clock;
  sink: BookingWindowSink;
} {
  const clock = options.clock ?? new Clock(T);
  const recording = new RecordingWriter();
  const fullEnv = {
    ...process.env,
    OFFVIA_WINDOW_FIRESTORE_ROOT: uniqueRoot(),
    ...env,
  };
  const logger = new Logger('test', (e) => options.logs?.push(e), clock.now);
  const windows = createBookingWindows(fullEnv, logger, {
    firestore: db,
    ...(options.writer !== 'bigquery' && { writer: options.writer ?? recording }),
    now: clock.now,
    ...(options.metrics && { metrics: options.metrics }),
  });
  return {
    windows,
    store: windows.store as FirestoreWindowStore<BookingAccumulator>,
    writer: recording,
    clock,
    sink: new BookingWindowSink(windows.pipeline, logger),
  };
}

/**
 * The booking pipeline on a key-groups store of its own root with one key group, `shards` shards and at most
 * `maxSeenPerDocument` dedup ids per document, so a few events spill to `dedupSpills`.
 */
export function spillingBookingWindows(
  db: Firestore,
  maxSeenPerDocument: number,
  shards = 1,
): { store: GroupedFirestoreWindowStore<BookingAccumulator>; sink: BookingWindowSink } {
  const root = uniqueRoot('itSpill');
  const config = loadWindowConfig({ OFFVIA_WINDOW_FIRESTORE_ROOT: root });
  const clock = new Clock(T);
  const store = new GroupedFirestoreWindowStore<BookingAccumulator>(db, {
    root,
    pipeline: config.pipeline,
    parseAccumulator: parseBookingAccumulator,
    keyGroups: 1,
    shards,
    earlyDelayMs: 30 * S,
    lateDelayMs: null,
    dedupTtlMs: config.ledgerTtlMs,
    maxSeenPerDocument,
    now: clock.now,
  });
  const windows = assembleBookingWindows(config, {
    store,
    writer: new RecordingWriter(),
    badDataTable: { datasetId: 'offvia_quarantine', tableId: 'bad_data' },
    projectId: 'offvia-test',
    logger: new Logger('test', () => undefined, clock.now),
    now: clock.now,
  });
  return { store, sink: new BookingWindowSink(windows.pipeline, windows.logger) };
}
