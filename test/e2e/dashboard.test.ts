// End to end in a real browser: a known mix published to the local stack shows on the dashboard page (headless
// Chromium, Debian's package, driven by playwright-core) with the numbers the tables hold and `collectStatus` gives.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { repositoryRoot, type OpsContext } from '../../shared/ops/context';
import { collectStatus, type StatusReport } from '../../shared/ops/status';
import { BOOKING_PIPELINE } from '../../shared/pipelines/booking/definition';
import { waitForLayers } from '../../deploy/local/layers';
import { bookingStackClients, testRoute } from '../support/booking-stack';
import { fireWindowsOnce } from '../support/fire-windows-http';
import {
  closeDashboard,
  openDashboard,
  REFRESH_MS,
  requireChromium,
  type DashboardInBrowser,
} from '../support/dashboard-browser';

/** Where the test leaves its screenshot (docs/images/dashboard.png is a copy of one). */
const SCREENSHOT = path.join(repositoryRoot(), '.local', 'test-output', 'dashboard.png');

/** What the page shows, read from its DOM and its charts (evaluated in the browser, hence a string). */
interface PageNumbers {
  now: string;
  since: string;
  metrics: Record<string, number>;
  charts: Record<string, { labels: string[]; datasets: { label: string; data: number[] }[] }>;
  routes: string[];
  panesCaption: string;
}
const READ_PAGE = `(() => {
  const metrics = {};
  for (const el of document.querySelectorAll('[data-metric]')) {
    metrics[el.dataset.metric] = el.dataset.value === '' ? null : Number(el.dataset.value);
  }
  const charts = {};
  for (const id of ['chart-per-minute', 'chart-quarantine', 'chart-panes', 'chart-retry', 'chart-dropped', 'chart-bad-data', 'chart-watermark']) {
    const c = Chart.getChart(id);
    charts[id] = { labels: [...c.data.labels], datasets: c.data.datasets.map((d) => ({ label: d.label, data: [...d.data] })) };
  }
  return {
    now: document.body.dataset.statusNow,
    since: document.body.dataset.statusSince,
    metrics,
    charts,
    routes: [...document.querySelectorAll('#route option')].map((o) => o.value),
    panesCaption: document.querySelector('[data-caption="panes"]').textContent,
  };
})()`;

/** The page's numbers that come from the status report, computed from a report the same way the page does. */
function expectedFromStatus(s: StatusReport) {
  return {
    // The per-minute chart's series add up to the layers' counts of the same look-back.
    perMinuteTotals: {
      silverRows: s.layers.silverRows,
      quarantineRows: s.layers.quarantineRows,
      badDataRows: s.layers.badDataRows,
    },
    metrics: {
      bronze: s.layers.bronze,
      silverRows: s.layers.silverRows,
      silverEvents: s.layers.silverEvents,
      quarantineRows: s.layers.quarantineRows,
      badDataRows: s.layers.badDataRows,
      retryStoreRows: s.retryStore.reduce((sum, r) => sum + r.rows, 0),
      goldPanes: s.layers.goldPanes,
      openWindows: s.aggregations.reduce((sum, a) => sum + a.openWindows, 0),
      droppedLate: s.aggregations.reduce((sum, a) => sum + a.droppedLate, 0),
      watermarkLag: s.aggregations[0]?.lagMs ?? null,
    },
    quarantineStages: s.quarantineByStage.map((q) => q.stage),
    quarantineRows: s.quarantineByStage.map((q) => q.rows),
    quarantineOpen: s.quarantineByStage.map((q) => q.open),
    retryRows: s.retryStore.map((r) => r.rows),
  };
}

function pageAsStatus(p: PageNumbers) {
  const q = p.charts['chart-quarantine'];
  const perMinute = p.charts['chart-per-minute']?.datasets ?? [];
  const sum = (pick: (label: string) => boolean): number =>
    perMinute
      .filter((d) => pick(d.label))
      .reduce((s, d) => s + d.data.reduce((a, b) => a + Number(b), 0), 0);
  return {
    perMinuteTotals: {
      silverRows: sum((l) => l === 'Silver'),
      quarantineRows: sum((l) => l.startsWith('quarantine: ')),
      badDataRows: sum((l) => l === 'bad data'),
    },
    metrics: p.metrics,
    quarantineStages: q?.labels,
    quarantineRows: q?.datasets[0]?.data,
    quarantineOpen: q?.datasets[1]?.data,
    retryRows: p.charts['chart-retry']?.datasets[0]?.data,
  };
}

const hhmm = (ms: number): string => new Date(ms).toISOString().slice(11, 16);

describe('e2e: the dashboard in headless Chromium', function () {
  this.timeout(300_000);
  const { env, topic, bq } = bookingStackClients();
  let ctx: OpsContext;
  let opened: DashboardInBrowser | undefined;
  let page: Page;

  const readPage = async (): Promise<PageNumbers> => page.evaluate<PageNumbers>(READ_PAGE);
  /** Waits for the page's next refresh (a new `statusNow`), then reads it. */
  const nextRefresh = async (): Promise<PageNumbers> => {
    const before = (await readPage()).now;
    await page.waitForFunction(
      (b) =>
        (globalThis as { document?: { body: { dataset: Record<string, string> } } }).document?.body
          .dataset.statusNow !== b,
      before,
      { timeout: 30_000 },
    );
    return readPage();
  };

  before(async function () {
    if (!process.env.OFFVIA_FIRE_WINDOWS_URL || !process.env.BIGQUERY_EMULATOR_HOST) {
      throw new Error('the local stack is not running: run through `npm test`');
    }
    requireChromium(this);
    opened = await openDashboard(1400);
    ({ ctx, page } = opened);
  });

  after(() => closeDashboard(opened));

  it('shows a published mix: quarantine by stage and the latest pane as the tables hold them, and equals collectStatus', async () => {
    const { origin, destination } = testRoute('Y');
    const windowStartMs = Math.floor((Date.now() - 180_000) / 60_000) * 60_000;
    const booking = (n: number, fare: string, fields: Record<string, unknown> = {}) =>
      JSON.stringify({
        booking_id: `${origin}-${n}`,
        passenger_id: 'PAX-1',
        flight_number: 'OF-7',
        origin,
        destination,
        fare,
        currency: 'EUR',
        event_time: new Date(windowStartMs + 5_000 * n).toISOString(),
        ...fields,
      });
    // The mix: three valid bookings in one window, and six rejections at known stages.
    const valid = [booking(1, '10.50'), booking(2, '20.25'), booking(3, '30')];
    const rejected: Record<string, string[]> = {
      PARSE_JSON: [`{"booking_id":"${origin}-4", "unclosed`, `not json ${origin}`],
      SCHEMA_VALIDATION: [JSON.stringify({ booking_id: `${origin}-5`, origin })],
      BUSINESS_RULE_VALIDATION: [booking(6, '-1'), booking(7, '0')],
      EVENT_TIME_VALIDATION: [booking(8, '5', { event_time: '2026-10-07T14:10:00' })],
    };

    const before = await nextRefresh();
    const stageRows = (p: PageNumbers, stage: string): number => {
      const q = p.charts['chart-quarantine'];
      const i = q?.labels.indexOf(stage) ?? -1;
      return i < 0 ? 0 : Number(q?.datasets[0]?.data[i]);
    };

    // Publish to page: from just before the publish call until the page's DOM shows every message.
    const publishedAtMs = Date.now();
    const ids = await Promise.all(
      [...valid, ...Object.values(rejected).flat()].map((m) =>
        topic.publishMessage({ data: Buffer.from(m) }),
      ),
    );
    // Meanwhile, the moment the tables hold them (every message in Bronze and routed), for comparison.
    const landed = waitForLayers(bq, env.projectId, ids, 120_000).then((r) => ({
      ...r,
      atMs: Date.now(),
    }));
    const target = {
      silverRows: (before.metrics.silverRows ?? 0) + valid.length,
      stages: Object.fromEntries(
        Object.entries(rejected).map(([stage, list]) => [
          stage,
          stageRows(before, stage) + list.length,
        ]),
      ),
    };
    for (;;) {
      const now = await nextRefresh();
      const shown =
        (now.metrics.silverRows ?? 0) >= target.silverRows &&
        Object.entries(target.stages).every(([stage, n]) => stageRows(now, stage) >= n);
      if (shown) break;
      assert.ok(
        Date.now() - publishedAtMs < 120_000,
        `the page never showed the mix: ${JSON.stringify(now.metrics)}`,
      );
    }
    const publishToPageMs = Date.now() - publishedAtMs;

    // The tables hold them: every message in Bronze and routed, our rejections at their stages.
    const { layers, complete, atMs: landedAtMs } = await landed;
    assert.ok(complete, 'every message landed');
    console.log(
      `      publish to tables: ${landedAtMs - publishedAtMs} ms; publish to page: ${publishToPageMs} ms ` +
        `(${ids.length} messages, page refresh every ${REFRESH_MS} ms)`,
    );
    const ourStages: Record<string, number> = {};
    for (const r of layers.quarantine)
      ourStages[String(r.error_stage)] = (ourStages[String(r.error_stage)] ?? 0) + 1;
    assert.deepEqual(
      ourStages,
      Object.fromEntries(Object.entries(rejected).map(([s, l]) => [s, l.length])),
    );
    assert.equal(layers.silver.length, valid.length);

    // The quarantine panel shows the table's count per stage for the page's own look-back.
    const shown = await nextRefresh();
    const [byStage] = await bq.query({
      query: `SELECT error_stage AS stage, COUNT(*) AS n FROM \`${ctx.tables.quarantine}\`
              WHERE received_timestamp >= TIMESTAMP_MILLIS(@since) GROUP BY error_stage ORDER BY error_stage`,
      params: { since: Date.parse(shown.since) },
      types: { since: 'INT64' },
    });
    const tableStages = (byStage as { stage: string; n: unknown }[]).map((r) => [
      r.stage,
      Number(r.n),
    ]);
    const pageStages = (shown.charts['chart-quarantine']?.labels ?? []).map((s) => [
      s,
      stageRows(shown, s),
    ]);
    assert.deepEqual(pageStages, tableStages);

    // Fire the window: a booking of now moves the watermark past it, then fireWindows (ask again while busy).
    const clock = await topic.publishMessage({
      data: Buffer.from(booking(9, '1', { event_time: new Date().toISOString() })),
    });
    assert.ok((await waitForLayers(bq, env.projectId, [clock], 60_000)).complete);
    // And one booking 10 minutes behind it: its window is past the allowed lateness (5 min), so it is dropped late
    // (still in Silver).
    const droppedBefore = (await readPage()).metrics.droppedLate ?? 0;
    const lateWindowMs = Math.floor((Date.now() - 600_000) / 60_000) * 60_000;
    const late = await topic.publishMessage({
      data: Buffer.from(
        booking(10, '2', { event_time: new Date(lateWindowMs + 1000).toISOString() }),
      ),
    });
    assert.ok((await waitForLayers(bq, env.projectId, [late], 60_000)).complete);
    await fireWindowsOnce(String(process.env.OFFVIA_FIRE_WINDOWS_URL));
    const routeKey = `${origin}-${destination}-EUR`;
    let tableCount: number | undefined;
    for (const deadline = Date.now() + 30_000; ;) {
      const [rows] = await bq.query({
        query: `SELECT booking_count FROM \`${ctx.tables.gold}_latest\`
                WHERE route_key = @routeKey AND UNIX_MILLIS(window_start) = @windowStartMs`,
        params: { routeKey, windowStartMs },
      });
      tableCount = (rows as { booking_count?: unknown }[])[0]?.booking_count as number | undefined;
      if (tableCount === valid.length || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(
      tableCount,
      valid.length,
      "the gold table's latest pane counts the three bookings",
    );

    // The panes panel: pick the route, find its window, and hover the bar to see the number.
    await page.waitForFunction(
      (key) =>
        [
          ...((
            globalThis as {
              document?: { querySelectorAll(s: string): Iterable<{ value: string }> };
            }
          ).document?.querySelectorAll('#route option') ?? []),
        ].some((o) => o.value === key),
      routeKey,
      { timeout: 30_000 },
    );
    await page.selectOption('#route', routeKey);
    const panes = (await readPage()).charts['chart-panes'];
    const index = panes?.labels.indexOf(hhmm(windowStartMs)) ?? -1;
    assert.ok(index >= 0, `window ${hhmm(windowStartMs)} in ${JSON.stringify(panes?.labels)}`);
    assert.equal(panes?.datasets[0]?.data[index], tableCount);
    await page.locator('#chart-panes').scrollIntoViewIfNeeded();
    const point = await page.evaluate<{ x: number; y: number }>(`(() => {
      const c = Chart.getChart('chart-panes');
      const bar = c.getDatasetMeta(0).data[${index}];
      const box = c.canvas.getBoundingClientRect();
      return { x: box.left + bar.x, y: box.top + (bar.y + bar.base) / 2 };
    })()`);
    await page.mouse.move(point.x, point.y);
    await page.waitForFunction(`Chart.getChart('chart-panes').tooltip.opacity > 0`, undefined, {
      timeout: 10_000,
    });
    const tooltip = await page.evaluate<string[]>(
      `Chart.getChart('chart-panes').tooltip.body.flatMap((b) => b.lines)`,
    );
    assert.ok(tooltip.includes(`bookings: ${valid.length}`), JSON.stringify(tooltip));

    // The dropped-late panel counts it in its window.
    const afterLate = await nextRefresh();
    assert.ok(
      (afterLate.metrics.droppedLate ?? 0) >= droppedBefore + 1,
      JSON.stringify(afterLate.metrics),
    );
    const dropped = afterLate.charts['chart-dropped'];
    const lateIndex =
      dropped?.labels.indexOf(`${hhmm(lateWindowMs)}–${hhmm(lateWindowMs + 60_000)}`) ?? -1;
    assert.ok(lateIndex >= 0, JSON.stringify(dropped?.labels));
    assert.ok(Number(dropped?.datasets[0]?.data[lateIndex]) >= 1, JSON.stringify(dropped));
    // Its caption names the newest window with drops, the reason and the latest dropped event.
    const caption = await page.evaluate<string>(
      `document.querySelector('[data-caption="dropped"]').textContent`,
    );
    assert.match(
      caption,
      /Newest: window \d\d:\d\d–\d\d:\d\d, \d+ dropped \((EXPIRED|CLOSED)_WINDOW.*\), last at \S+Z \(event \S+\)\./,
    );

    // The page's numbers equal collectStatus for the same moment (its `now` and look-back). The scheduler may
    // fire between the page's read and ours: then compare at the next refresh.
    let last: { page: unknown; status: unknown } | undefined;
    for (let attempt = 0; attempt < 5; attempt++) {
      const p = await nextRefresh();
      const status = await collectStatus(
        ctx,
        BOOKING_PIPELINE,
        Date.parse(p.since),
        Date.parse(p.now),
      );
      last = { page: pageAsStatus(p), status: expectedFromStatus(status) };
      try {
        assert.deepEqual(last.page, last.status);
        break;
      } catch (err) {
        if (attempt === 4) throw err;
      }
    }

    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    assert.ok(existsSync(SCREENSHOT));
  });
});
