// The telemetry side input: device → region and site, from a BigQuery reference table, reloaded on an interval.
import type { BigQuery } from '@google-cloud/bigquery';

import { type TableRef, tableName } from '../../config/env';
import { errorText, TransientError } from '../../errors';
import type { Logger } from '../../logging/logger';
import * as logs from '../../logging/logs';
import { DEVICE_ID_PATTERN } from './contract';

/** Where a device is. */
export interface DeviceReference {
  /** Region code, 1-32 of `a-z 0-9 -` (a grouping key of the regional top-N). */
  readonly region: string;
  /** Site name, free text up to 256 characters. */
  readonly site: string;
}

/** What the contract asks of the side input: a synchronous lookup in memory. */
export interface DeviceDirectory {
  /** The device's reference, or `undefined` when the directory does not know it. */
  lookup(deviceId: string): DeviceReference | undefined;
}

/** A directory held in a map (tests, and the snapshot behind the BigQuery directory). */
export class StaticDeviceDirectory implements DeviceDirectory {
  constructor(private readonly devices: ReadonlyMap<string, DeviceReference>) {}
  lookup(deviceId: string): DeviceReference | undefined {
    return this.devices.get(deviceId);
  }
  /** Devices held. */
  get size(): number {
    return this.devices.size;
  }
}

/** Region codes: short lowercase slugs, so they stay plain in Firestore ids and insertIds. */
export const REGION_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/;
const MAX_SITE_LENGTH = 256;

/** What one load read: the devices, and the rows it skipped (logged, never silently). */
export interface DeviceSnapshot {
  readonly devices: ReadonlyMap<string, DeviceReference>;
  /** Rows with a malformed device id, region or site. */
  readonly invalidRows: number;
  /** Rows repeating a device id already read (the first in `device_id, region, site` order wins). */
  readonly duplicateRows: number;
  /** Processing time of the load, epoch ms UTC. */
  readonly loadedAtMs: number;
}

/** Options of {@link BigQueryDeviceDirectory}. */
export interface BigQueryDeviceDirectoryOptions {
  /** The reference table: `device_id STRING, region STRING, site STRING` (sql/pipelines/telemetry/050). */
  readonly table: TableRef;
  /** Project of a table without one, for the query's fully-qualified name. */
  readonly projectId: string | undefined;
  /** Age at which a lookup starts a background reload, ms. */
  readonly refreshIntervalMs: number;
  /** Most devices held; a table with more fails the load (memory stays bounded). */
  readonly maxDevices: number;
  readonly logger: Logger;
  /** Processing time, epoch ms UTC. */
  readonly now: () => number;
}

/** Thrown when the reference table holds more devices than `maxDevices`: a configuration problem, not transient. */
export class DeviceDirectoryTooLargeError extends Error {
  override readonly name = 'DeviceDirectoryTooLargeError';
}

/**
 * The device directory over a BigQuery reference table: `load()` at cold start, then `lookup` from memory, starting
 * one background reload once the snapshot is `refreshIntervalMs` old. A failed reload is logged and the last
 * snapshot kept (a BigQuery outage never stops the readings).
 */
export class BigQueryDeviceDirectory implements DeviceDirectory {
  private snapshot: DeviceSnapshot | undefined;
  private reloading: Promise<void> | undefined;
  private lastAttemptMs = -Infinity;

  constructor(
    private readonly bigquery: BigQuery,
    private readonly options: BigQueryDeviceDirectoryOptions,
  ) {}

  /** The fully-qualified table name the query reads. */
  get tableName(): string {
    return tableName(this.options.table, this.options.projectId);
  }

  /** The current snapshot; `undefined` before the first load. */
  get current(): DeviceSnapshot | undefined {
    return this.snapshot;
  }

  /**
   * Reads the reference table and replaces the snapshot.
   * @throws TransientError when BigQuery fails or the table does not exist (the readings are held back, not
   *   dead-lettered); DeviceDirectoryTooLargeError when the table holds more than `maxDevices` devices
   */
  async load(): Promise<DeviceSnapshot> {
    const startedMs = this.options.now();
    this.lastAttemptMs = startedMs;
    const { maxDevices } = this.options;
    let rows: Record<string, unknown>[];
    try {
      // tables.get first: the local emulator answers a query on a missing table with no rows, not 404.
      const { datasetId, tableId } = this.options.table;
      const [exists] = await this.bigquery.dataset(datasetId).table(tableId).exists();
      if (!exists) throw new Error(`table ${this.tableName} not found`);
      // One extra row tells "over the cap"; ORDER BY resolves duplicates the same way everywhere.
      [rows] = (await this.bigquery.query({
        query:
          `SELECT device_id, region, site FROM \`${this.tableName}\` ` +
          `ORDER BY device_id, region, site LIMIT ${maxDevices + 1}`,
      })) as [Record<string, unknown>[], ...unknown[]];
    } catch (err) {
      throw new TransientError(`read ${this.tableName}`, errorText(err), { cause: err });
    }
    if (rows.length > maxDevices) {
      throw new DeviceDirectoryTooLargeError(
        `${this.tableName} holds more than ${maxDevices} rows (OFFVIA_TELEMETRY_REFERENCE_MAX_DEVICES)`,
      );
    }
    const snapshot = toSnapshot(rows, startedMs);
    this.snapshot = snapshot;
    logs.deviceDirectoryLoaded(this.options.logger, {
      table: this.tableName,
      devices: snapshot.devices.size,
      invalid_rows: snapshot.invalidRows,
      duplicate_rows: snapshot.duplicateRows,
      load_ms: this.options.now() - startedMs,
    });
    return snapshot;
  }

  /**
   * The device's reference from the current snapshot; starts a background reload when it is due.
   * @throws Error when called before `load()` resolved (a wiring bug: the side input must be loaded at cold start)
   */
  lookup(deviceId: string): DeviceReference | undefined {
    if (this.snapshot === undefined) throw new Error('device directory used before load()');
    // Never rejects: a failed reload is logged inside and the last snapshot keeps serving.
    void this.reloadIfDue();
    return this.snapshot.devices.get(deviceId);
  }

  /** Starts a background reload when one is due and none is running; returns the one in progress, or `undefined`. */
  reloadIfDue(): Promise<void> | undefined {
    if (this.reloading) return this.reloading;
    if (this.options.now() - this.lastAttemptMs < this.options.refreshIntervalMs) return undefined;
    this.reloading = this.load()
      .then(
        () => undefined,
        (err: unknown) => {
          logs.deviceDirectoryReloadFailed(this.options.logger, {
            table: this.tableName,
            error: errorText(err),
            snapshot_age_ms: this.options.now() - (this.snapshot?.loadedAtMs ?? 0),
          });
        },
      )
      .finally(() => {
        this.reloading = undefined;
      });
    return this.reloading;
  }
}

/** Rows → snapshot: malformed rows and repeated device ids are counted, not kept. */
export function toSnapshot(
  rows: readonly Record<string, unknown>[],
  loadedAtMs: number,
): DeviceSnapshot {
  const devices = new Map<string, DeviceReference>();
  let invalidRows = 0;
  let duplicateRows = 0;
  for (const row of rows) {
    const { device_id: id, region, site } = row;
    if (
      typeof id !== 'string' ||
      !DEVICE_ID_PATTERN.test(id) ||
      typeof region !== 'string' ||
      !REGION_PATTERN.test(region) ||
      typeof site !== 'string' ||
      site.length > MAX_SITE_LENGTH
    ) {
      invalidRows++;
      continue;
    }
    if (devices.has(id)) {
      duplicateRows++;
      continue;
    }
    devices.set(id, { region, site });
  }
  return { devices, invalidRows, duplicateRows, loadedAtMs };
}
