// The page's script (shared/dashboard/public/dashboard.js) in a vm with stub DOM, fetch and Chart.js: what it
// asks Chart.js for on the first refresh and on the ones after.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';

const SCRIPT = path.resolve(
  __dirname,
  '..',
  '..',
  '..',
  'shared',
  'dashboard',
  'public',
  'dashboard.js',
);

/** A `DashboardData` of an empty stack, enough for every panel to draw. */
const EMPTY = {
  status: {
    layers: {
      bronze: 0,
      silverRows: 0,
      silverEvents: 0,
      quarantineRows: 0,
      badDataRows: 0,
      goldPanes: 0,
    },
    quarantineByStage: [],
    topQuarantineReasons: [],
    aggregations: [
      {
        name: 'route_panes',
        watermark: null,
        lagMs: null,
        maxEventTime: null,
        openWindows: 0,
        droppedLate: 0,
        droppedExpiredWindow: 0,
        droppedClosedWindow: 0,
      },
    ],
    retryStore: [],
    badDataByCause: [],
    open: { quarantine: 0, badData: 0 },
    now: '2026-12-01T12:00:00.000Z',
    since: '2026-12-01T11:00:00.000Z',
    target: { mode: 'local', project: 'offvia-local' },
  },
  refreshMs: 1000,
  minuteStartsMs: [],
  perMinute: [],
  routes: [],
  watermarkHistory: [],
  droppedLate: [],
};

function element() {
  return {
    textContent: '',
    hidden: false,
    value: '',
    dataset: {} as Record<string, string>,
    addEventListener: () => undefined,
    replaceChildren: () => undefined,
  };
}

describe('dashboard page script', () => {
  it('keeps its chart defaults (no aspect ratio, no animation) on every refresh, not only the first', async () => {
    const charts: { options: Record<string, unknown>; update: () => void }[] = [];
    class Chart {
      options: Record<string, unknown>;
      data: unknown;
      constructor(_canvas: unknown, config: { options: Record<string, unknown>; data: unknown }) {
        this.options = config.options;
        this.data = config.data;
        charts.push(this);
      }
      update(): void {}
    }
    const timers: (() => Promise<void> | void)[] = [];
    const context = vm.createContext({
      Chart,
      console: { error: () => undefined },
      window: {},
      document: {
        body: element(),
        getElementById: element,
        querySelector: element,
        createElement: element,
      },
      fetch: () =>
        Promise.resolve({
          ok: true,
          status: 200,
          json: () => Promise.resolve(structuredClone(EMPTY)),
        }),
      setTimeout: (fn: () => Promise<void>) => timers.push(fn),
    });
    vm.runInContext(readFileSync(SCRIPT, 'utf8'), context);
    for (let refreshes = 1; refreshes <= 2; refreshes++) {
      while (timers.length < refreshes) await new Promise((resolve) => setImmediate(resolve));
      assert.ok(charts.length > 0);
      for (const chart of charts) {
        assert.equal(chart.options.maintainAspectRatio, false, `refresh ${refreshes}`);
        assert.equal(chart.options.animation, false, `refresh ${refreshes}`);
        assert.equal(chart.options.responsive, true, `refresh ${refreshes}`);
      }
      if (refreshes < 2) await timers[refreshes - 1]?.();
    }
  });
});
