// The simulator's device directory: seeds `offvia_telemetry_ref.devices` with the planned devices and makes sure the
// ingest function's in-memory snapshot (a side input refreshed on an interval) holds them before the run publishes.
import type { BigQuery } from '@google-cloud/bigquery';
import type { PubSub } from '@google-cloud/pubsub';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TableRef } from '../../../shared/config/env';
import { queryRows } from '../layers';
import { SIM_DEVICE_PREFIX, type TelemetryPlan } from './plan';

/** The directory probe's device: outside the simulated prefix and never in the directory. */
export const PROBE_DEVICE_ID = 'probe-directory';

/**
 * Seeds the directory with the plan's devices not in it yet (other rows are left alone) and removes the plan's
 * unknown devices; resolves with the number of rows inserted.
 */
export async function seedDirectory(
  bq: BigQuery,
  table: TableRef,
  plan: TelemetryPlan,
): Promise<number> {
  const name = `\`${table.datasetId}.${table.tableId}\``;
  const existing = new Set(
    (
      await queryRows(bq, `SELECT device_id FROM ${name} WHERE STARTS_WITH(device_id, @prefix)`, {
        prefix: SIM_DEVICE_PREFIX,
      })
    ).map((r) => String(r.device_id)),
  );
  const stale = plan.unknownDevices.filter((id) => existing.has(id));
  if (stale.length > 0) {
    await queryRows(bq, `DELETE FROM ${name} WHERE device_id IN UNNEST(@ids)`, { ids: stale });
  }
  const missing = plan.directory.filter((d) => !existing.has(d.device_id));
  const updatedAt = new Date().toISOString();
  const target = bq.dataset(table.datasetId).table(table.tableId);
  for (let i = 0; i < missing.length; i += 1000) {
    await target.insert(missing.slice(i, i + 1000).map((d) => ({ ...d, updated_at: updatedAt })));
  }
  return missing.length;
}

/**
 * Makes sure the ingest function's directory snapshot was loaded after `seededAtMs` (a function warmed earlier
 * answers from its old snapshot until a lookup `refreshMs` later reloads it): one probe reading published
 * `refreshMs` after the seed, waited for in Silver. `probeEventTimeMs` lies before the simulated windows, so the
 * probe moves no watermark past them.
 * @throws Error when the probe does not reach Silver within `timeoutMs`
 */
export async function primeDirectory(
  bq: BigQuery,
  pubsub: PubSub,
  names: { readonly topic: string; readonly silver: string },
  seededAtMs: number,
  refreshMs: number,
  timeoutMs: number,
  probeEventTimeMs: number,
): Promise<void> {
  const wait = seededAtMs + refreshMs + 500 - Date.now();
  if (wait > 0) await sleep(wait);
  const id = await pubsub.topic(names.topic, { messageOrdering: true }).publishMessage({
    data: Buffer.from('{"temperatureC":20.0}'),
    attributes: {
      deviceId: PROBE_DEVICE_ID,
      eventTs: new Date(probeEventTimeMs).toISOString(),
      contractVersion: '2',
    },
    orderingKey: PROBE_DEVICE_ID,
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [found] = await queryRows(
      bq,
      `SELECT COUNT(*) AS n FROM ${names.silver} WHERE source_message_id = @id`,
      { id },
    );
    if (Number(found?.n) > 0) break;
    if (Date.now() > deadline) {
      throw new Error(
        `the directory probe (message ${id}) did not reach Silver within ${timeoutMs} ms`,
      );
    }
    await sleep(1_000);
  }
  // The reload the probe may have started reads a few thousand rows: a couple of seconds on the emulator.
  await sleep(3_000);
}
