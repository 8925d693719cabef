// The generic runtime's fireWindows holds each aggregation's watermark behind the ingest subscription's backlog when
// a backlog reader is wired (OFFVIA_WATERMARK_HOLD_SOURCE=monitoring), and always behind the newest heartbeat.
import assert from 'node:assert/strict';
import { Firestore } from '@google-cloud/firestore';
import { loadWindowConfig } from '../../../shared/config/window-config';
import { Logger } from '../../../shared/logging/logger';
import { TELEMETRY_PIPELINE } from '../../../shared/pipelines/telemetry/definition';
import {
  createAggregationWindows,
  type AnyAggregation,
} from '../../../shared/pipeline/runtime/windows';
import { sharedWindowKnobs } from '../../../shared/pipeline/runtime/compose';
import type { RowWriter } from '../../../shared/sinks/row-writer';

const NOW = Date.UTC(2026, 11, 2, 12, 0, 0);
const MIN = 60_000;

function build(
  backlog?: () => Promise<{ sampledAtMs: number; oldestUnackedAgeMs: number }>,
  newestHeartbeatMs: number | null = null,
) {
  // No delivery holds (lease 0): only the backlog can hold. The client is never called by the hold seam.
  const knobs = sharedWindowKnobs({ OFFVIA_WATERMARK_HOLD_LEASE_MS: '0' });
  const aggregation = TELEMETRY_PIPELINE.aggregations[0] as unknown as AnyAggregation;
  const writer: RowWriter = { insertRows: () => Promise.resolve([]) };
  return createAggregationWindows(TELEMETRY_PIPELINE, aggregation, {
    firestore: new Firestore({ projectId: 'unit' }),
    writer,
    badDataTable: TELEMETRY_PIPELINE.tables.badData,
    projectId: 'unit',
    knobs,
    logger: new Logger('unit', () => undefined),
    now: () => NOW,
    ...(backlog && { backlog }),
    heartbeats: {
      recordHeartbeat: () => Promise.reject(new Error('not in this test')),
      newestHeartbeat: () => Promise.resolve(newestHeartbeatMs),
    },
  });
}

describe('generic runtime: the backlog watermark hold', () => {
  it('holds every aggregation behind the oldest unacknowledged message (minus out-of-orderness)', async () => {
    const windows = build(() => Promise.resolve({ sampledAtMs: NOW, oldestUnackedAgeMs: 5 * MIN }));
    const hold = await windows.fire.watermarkHold?.(NOW);
    const policy = TELEMETRY_PIPELINE.aggregations[0]?.watermarkPolicy;
    assert.ok(hold && policy);
    assert.equal(hold.oldestPublishTimeMs, NOW - 5 * MIN);
    assert.equal(hold.capMs, NOW - 5 * MIN - policy.maxOutOfOrdernessMs);
  });

  it('holds behind the newest processed heartbeat without a reader and with delivery holds off', async () => {
    const policy = TELEMETRY_PIPELINE.aggregations[0]?.watermarkPolicy;
    assert.ok(policy);
    const hold = await build(undefined, NOW - 3 * MIN).fire.watermarkHold?.(NOW);
    assert.equal(hold?.capMs, NOW - 3 * MIN - policy.maxOutOfOrdernessMs);
    assert.equal(hold?.heartbeat?.stale, false);
    // Before the first heartbeat nothing holds.
    assert.equal((await build().fire.watermarkHold?.(NOW))?.capMs, null);
  });

  it('takes the earlier of the backlog and the heartbeat caps', async () => {
    const backlog = () => Promise.resolve({ sampledAtMs: NOW, oldestUnackedAgeMs: 5 * MIN });
    const policy = TELEMETRY_PIPELINE.aggregations[0]?.watermarkPolicy;
    assert.ok(policy);
    const older = await build(backlog, NOW - 8 * MIN).fire.watermarkHold?.(NOW);
    assert.equal(older?.capMs, NOW - 8 * MIN - policy.maxOutOfOrdernessMs);
    const newer = await build(backlog, NOW - 1 * MIN).fire.watermarkHold?.(NOW);
    assert.equal(newer?.capMs, NOW - 5 * MIN - policy.maxOutOfOrdernessMs);
  });

  it('reads the source from OFFVIA_WATERMARK_HOLD_SOURCE, refusing monitoring without a subscription', () => {
    assert.equal(loadWindowConfig({}).holdSource, 'local');
    assert.throws(() => loadWindowConfig({ OFFVIA_WATERMARK_HOLD_SOURCE: 'monitoring' }));
  });
});
