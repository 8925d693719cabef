// The drift gate and the schema sweep's dependencies as the unit tests build them: one place for the wiring that
// the gate, sweep and bad-data-metric tests share (Silver as the target, the test project, bad data in BAD_DATA),
// and `driftRig`, the whole rig (store, admin, writer, clocks, log lines) they set up over it.
import type { SchemaDriftConfig } from '../../shared/config/schema-drift-config';
import {
  ProposalMerger,
  RetryStoreDriftGate,
  TableSchemaCache,
  type DriftStore,
  type SweepDeps,
  type TableAdmin,
} from '../../shared/drift';
import { Logger, type LogEntry } from '../../shared/logging/logger';
import type { BqField } from '../../shared/schema';
import type { RowWriter } from '../../shared/sinks/row-writer';
import {
  BAD_DATA,
  FakeTableAdmin,
  PROJECT,
  RecordingWriter,
  SILVER,
  SILVER_KEY,
  baseRowOf,
  driftConfig,
  messageOf,
  validEvent,
} from './drift-fixtures';
import { MemoryDriftStore } from './memory-drift-store';

/** What the gate and the sweep are built over. */
export interface DriftParts {
  config: SchemaDriftConfig;
  store: DriftStore;
  admin: TableAdmin;
  writer: RowWriter;
  logger: Logger;
  /** The clock of the gate, its schema cache and its proposal merger (and the sweep's `now`). */
  now: () => number;
}

/**
 * A RetryStoreDriftGate for SILVER over `parts`, its schema cache keeping a table's schema `schemaTtlMs`
 * (the config's TTL unless given; 0: the gate always sees the table as the sweep left it).
 */
export function driftGateOf(parts: DriftParts, schemaTtlMs = parts.config.schemaCacheTtlMs) {
  const { config, store, admin, writer, logger, now } = parts;
  return new RetryStoreDriftGate({
    config,
    store,
    schemas: new TableSchemaCache(admin, schemaTtlMs, now),
    merger: new ProposalMerger(store, config.windowMinutes, config.maxProposedFieldsPerWindow, now),
    writer,
    badDataTable: BAD_DATA,
    target: SILVER,
    projectId: PROJECT,
    logger,
    now,
  });
}

/**
 * The sweep's dependencies over `parts`, with its lease clock `leaseNow`, holder ids `sweep-1`, `sweep-2`, … and,
 * when given, its `sleep`.
 */
export function sweepDepsOf(
  parts: DriftParts,
  leaseNow: () => number,
  sleep?: SweepDeps['sleep'],
): SweepDeps {
  let holder = 0;
  return {
    config: parts.config,
    store: parts.store,
    admin: parts.admin,
    writer: parts.writer,
    badDataTable: BAD_DATA,
    projectId: PROJECT,
    logger: parts.logger,
    now: parts.now,
    leaseNow,
    newHolderId: () => `sweep-${++holder}`,
    ...(sleep === undefined ? {} : { sleep }),
  };
}

/**
 * Passes `payload` through `gate` as ingest would: message `messageId` received at `receivedAtMs` (epoch ms),
 * validated as a booking. Returns the validated event and the gate's decision.
 */
export async function routeThrough(
  gate: RetryStoreDriftGate,
  payload: string,
  messageId: string,
  receivedAtMs: number,
) {
  const event = validEvent(payload, messageId, receivedAtMs);
  const out = await gate.route(
    event,
    messageOf(payload, messageId),
    receivedAtMs,
    baseRowOf(event),
  );
  return { event, out };
}

/** A settable clock in epoch ms (UTC). */
export interface TestClock {
  readonly now: () => number;
  readonly set: (ms: number) => void;
}

function testClock(startMs: number): TestClock {
  let nowMs = startMs;
  return { now: () => nowMs, set: (ms) => void (nowMs = ms) };
}

/** How `driftRig` builds its parts; every field has a default. */
export interface DriftRigOptions<A extends TableAdmin, W extends RowWriter> {
  /** Overrides of the default drift config (`driftConfig`). */
  config?: Partial<SchemaDriftConfig> | undefined;
  /** Silver's columns in the default admin, a FakeTableAdmin (default SILVER_FIELDS). */
  fields?: readonly BqField[] | undefined;
  /** Builds the admin instead, given the sweep's lease clock (e.g. to rate-limit DDL by it). */
  admin?: (lease: TestClock) => A;
  /** The row writer (default a RecordingWriter). */
  writer?: W;
  /** Where the gate's clock starts (epoch ms). */
  startMs: number;
  /** The gate's schema cache TTL in ms (default the config's). */
  schemaTtlMs?: number;
  /** True: the sweep's `sleep` resolves at once, records its ms in `slept` and advances the lease clock by them. */
  recordSleeps?: boolean;
}

/**
 * One drift gate and schema sweep over an in-memory store, the admin and writer of `options`, a settable gate
 * clock starting at `startMs` and a lease clock starting at 1,000,000 ms, logging into `lines` with the gate's
 * clock. `route` passes one payload through the gate as ingest would (it does not move the clock).
 */
export function driftRig<
  A extends TableAdmin = FakeTableAdmin,
  W extends RowWriter = RecordingWriter,
>(options: DriftRigOptions<A, W>) {
  const config = driftConfig(options.config);
  const store = new MemoryDriftStore();
  const clock = testClock(options.startMs);
  const leaseClock = testClock(1_000_000);
  const admin =
    options.admin?.(leaseClock) ?? (new FakeTableAdmin(options.fields) as TableAdmin as A);
  const writer = options.writer ?? (new RecordingWriter() as RowWriter as W);
  const lines: LogEntry[] = [];
  const logger = new Logger('test', (e) => lines.push(e), clock.now);
  const slept: number[] = [];
  const parts: DriftParts = { config, store, admin, writer, logger, now: clock.now };
  const sleep = options.recordSleeps
    ? (ms: number) => {
        slept.push(ms);
        leaseClock.set(leaseClock.now() + ms);
        return Promise.resolve();
      }
    : undefined;
  const deps = sweepDepsOf(parts, leaseClock.now, sleep);
  const gate = driftGateOf(parts, options.schemaTtlMs);
  return {
    config,
    store,
    admin,
    writer,
    lines,
    logger,
    clock,
    leaseClock,
    slept,
    gate,
    deps,
    /** Routes `payload` as message `messageId` received at `receivedAtMs` (default: the clock's now). */
    route: (payload: string, messageId: string, receivedAtMs = clock.now()) =>
      routeThrough(gate, payload, messageId, receivedAtMs),
    /** The rows waiting in the retry store for Silver. */
    waiting: () => [...store.table(SILVER_KEY).rows.values()],
  };
}
