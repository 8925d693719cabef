// The drift gate and the schema sweep's dependencies as the unit tests build them: one place for the wiring that
// the gate, sweep and bad-data-metric tests share (Silver as the target, the test project, bad data in BAD_DATA).
import type { SchemaDriftConfig } from '../../shared/config/schema-drift-config';
import {
  ProposalMerger,
  RetryStoreDriftGate,
  TableSchemaCache,
  type DriftStore,
  type SweepDeps,
  type TableAdmin,
} from '../../shared/drift';
import type { Logger } from '../../shared/logging/logger';
import type { RowWriter } from '../../shared/sinks/row-writer';
import { BAD_DATA, PROJECT, SILVER } from './drift-fixtures';

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
