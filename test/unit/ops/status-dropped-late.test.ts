// `offvia status` shows the dropped-late counters by window and reason, newest window first, from the counters the
// window store keeps (readDropped), and says nothing extra when nothing was dropped.
import assert from 'node:assert/strict';
import type { OpsContext } from '../../../shared/ops/context';
import { DROPPED_WINDOWS_SHOWN, droppedLate } from '../../../shared/ops/state-reader';
import {
  formatStatus,
  type AggregationStatus,
  type StatusReport,
} from '../../../shared/ops/status';
import type { FirestoreWindowStore } from '../../../shared/state/firestore-window-store';
import type { DroppedCounter } from '../../../shared/state/window-store';
import type { JsonValue } from '../../../shared/windowing';
import { MIN } from '../../support/booking-windows';

const T = Date.UTC(2026, 11, 6, 4, 0, 0);

/** 12 one-minute windows with drops; window i has i + 1 drops, CLOSED_WINDOW for odd i. */
const COUNTERS: DroppedCounter[] = Array.from({ length: 12 }, (_, i) => ({
  windowStartMs: T + i * MIN,
  windowEndMs: T + (i + 1) * MIN,
  count: i + 1,
  expiredWindow: i % 2 === 0 ? i + 1 : 0,
  closedWindow: i % 2 === 0 ? 0 : i + 1,
  lastDroppedAtMs: T + 20 * MIN + i,
  lastEventId: `e-${i}`,
}));

const ctx = { describe: { firestore: 'Firestore', hint: '' } } as unknown as OpsContext;
const storeWith = (counters: DroppedCounter[]) =>
  ({ readDropped: () => Promise.resolve(counters) }) as unknown as FirestoreWindowStore<JsonValue>;

function report(aggregation: Partial<AggregationStatus>): StatusReport {
  return {
    pipeline: 'booking',
    since: new Date(T).toISOString(),
    now: new Date(T + 30 * MIN).toISOString(),
    target: { mode: 'local', project: 'offvia-local' },
    layers: {
      bronze: 0,
      silverRows: 0,
      silverEvents: 0,
      quarantineRows: 0,
      quarantineMessages: 0,
      badDataRows: 0,
      goldPanes: 0,
      resolutions: null,
    },
    quarantineTable: 'q',
    open: { quarantine: null, badData: null },
    quarantineByStage: [],
    topQuarantineReasons: [],
    badDataByCause: [],
    retryStore: [],
    aggregations: [
      {
        name: 'route_panes',
        windowKind: 'fixed',
        goldTable: 'g',
        goldPanes: 0,
        panesByTiming: [],
        watermark: null,
        lagMs: null,
        maxEventTime: null,
        watermarkHolds: { active: 0, stuck: 0, oldestHeldPublishTime: null },
        heartbeat: { publishTime: null, ageMs: null, stale: false },
        openWindows: 0,
        droppedLate: 0,
        droppedExpiredWindow: 0,
        droppedClosedWindow: 0,
        droppedLateWindows: [],
        lastRun: { at: null, detail: '' },
        ...aggregation,
      },
    ],
    schemaSweep: null,
  };
}

describe('ops: dropped-late in status', () => {
  it('sums the counters by reason and lists the newest windows first, with the latest drop', async () => {
    const d = await droppedLate(ctx, storeWith([...COUNTERS].reverse()));
    assert.equal(d.total, 78);
    assert.equal(d.expiredWindow, 1 + 3 + 5 + 7 + 9 + 11);
    assert.equal(d.closedWindow, 2 + 4 + 6 + 8 + 10 + 12);
    assert.equal(d.windows.length, DROPPED_WINDOWS_SHOWN);
    assert.deepEqual(d.windows[0], {
      windowStart: '2026-12-06T04:11:00.000Z',
      windowEnd: '2026-12-06T04:12:00.000Z',
      count: 12,
      expiredWindow: 0,
      closedWindow: 12,
      lastDroppedAt: '2026-12-06T04:20:00.011Z',
      lastEventId: 'e-11',
    });
    assert.equal(d.windows.at(-1)?.windowStart, '2026-12-06T04:02:00.000Z');
  });

  it('prints the windows with their reasons under the aggregation, and no table without drops', async () => {
    const d = await droppedLate(ctx, storeWith(COUNTERS));
    const text = formatStatus(
      report({
        droppedLate: d.total,
        droppedExpiredWindow: d.expiredWindow,
        droppedClosedWindow: d.closedWindow,
        droppedLateWindows: d.windows,
      }),
    );
    assert.match(
      text,
      /dropped late by window \(newest 10; EXPIRED_WINDOW: allowed lateness passed/,
    );
    const row = text.split('\n').find((l) => l.includes('2026-12-06T04:11:00.000Z'));
    assert.ok(row, text);
    assert.match(row, /2026-12-06T04:12:00\.000Z.*12.*0.*12.*2026-12-06T04:20:00\.011Z.*e-11/);
    assert.ok(!text.includes('2026-12-06T04:01:00.000Z'), 'only the newest 10 windows');
    assert.doesNotMatch(formatStatus(report({})), /dropped late by window/);
  });
});
