// The dashboard page's script: polls /api/dashboard (the numbers of `offvia status` plus the charts' series) and
// draws each panel with Chart.js. No build step: plain browser JavaScript, served as is.
/* global Chart, document, window, fetch, setTimeout, console, URL */
'use strict';

const COLORS = {
  Silver: '#2e8b57',
  'bad data': '#7b3fa0',
  'retry store': '#3b7dd8',
  EARLY: '#8fb8e8',
  ON_TIME: '#2e8b57',
  LATE: '#e07b1f',
};
const STAGE_COLORS = ['#e8a33d', '#d9622b', '#c0392b', '#8e2a1e', '#f0c060'];

/** Chart.js instances by canvas id, created on the first refresh and updated in place after. */
const charts = {};
let selectedRoute = null;
/** The pipeline shown: `?pipeline=NAME` in the address, else booking (the page as it was before the registry). */
/** `?pipeline=NAME` of the page's address, else booking. */
function pipelineFromAddress() {
  const search = (window.location && window.location.search) || '';
  const match = /[?&]pipeline=([^&]*)/.exec(search);
  return match ? decodeURIComponent(match[1]) : 'booking';
}
let selectedPipeline = pipelineFromAddress();
/**
 * The refresh chain in charge: choosing a pipeline starts a new chain at once, and the old one stops at its next
 * turn, so the page never polls twice.
 */
let refreshChain = 0;

const hhmm = (ms) => new Date(ms).toISOString().slice(11, 16);
const hhmmss = (ms) => new Date(ms).toISOString().slice(11, 19);
const seconds = (ms) => (ms / 1000).toFixed(1);
/** A duration for people: 4.2 s, 3.5 min, 2.1 h, 55.2 d. */
function duration(ms) {
  const s = ms / 1000;
  if (Math.abs(s) < 120) return `${s.toFixed(1)} s`;
  if (Math.abs(s) < 7200) return `${(s / 60).toFixed(1)} min`;
  if (Math.abs(s) < 172800) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} d`;
}
const fmt = (n) => Number(n).toLocaleString('en-US');

function text(selector, value) {
  const el = document.querySelector(selector);
  if (el) el.textContent = value;
}

/** Every chart's options under its own: the chart fills its box (fixed height in CSS) and is not animated. */
const CHART_DEFAULTS = { responsive: true, maintainAspectRatio: false, animation: false };

/** Creates the chart on first use, else replaces its data and redraws without animation (hover stays put). */
function draw(id, config) {
  const existing = charts[id];
  const options = Object.assign({}, CHART_DEFAULTS, config.options);
  if (existing) {
    existing.data = config.data;
    // The defaults again: options replaced without them would turn the aspect ratio and animations back on.
    existing.options = options;
    existing.update('none');
    return existing;
  }
  const canvas = document.getElementById(id);
  charts[id] = new Chart(canvas, Object.assign({}, config, { options }));
  return charts[id];
}

/** A horizontal bar chart of counts; `afterLabel(item)` adds a tooltip line, `plugins` further plugin options. */
function countBars(labels, datasets, afterLabel, plugins = {}) {
  const tooltip = afterLabel ? { tooltip: { callbacks: { afterLabel } } } : {};
  return {
    type: 'bar',
    data: { labels, datasets },
    options: {
      indexAxis: 'y',
      scales: { x: { beginAtZero: true, ticks: { precision: 0 } } },
      plugins: Object.assign({}, plugins, tooltip),
    },
  };
}

function stageColor(label, index) {
  return COLORS[label] || STAGE_COLORS[index % STAGE_COLORS.length];
}

function drawPerMinute(d) {
  let stage = 0;
  draw('chart-per-minute', {
    type: 'bar',
    data: {
      labels: d.minuteStartsMs.map(hhmm),
      datasets: d.perMinute.map((s) => ({
        label: s.destination,
        data: s.counts,
        backgroundColor: s.destination.startsWith('quarantine')
          ? stageColor(null, stage++)
          : COLORS[s.destination],
        stack: 'all',
      })),
    },
    options: {
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: { stacked: true, ticks: { maxTicksLimit: 12 } },
        y: { stacked: true, beginAtZero: true, title: { display: true, text: 'rows / minute' } },
      },
    },
  });
}

function drawQuarantine(d) {
  const s = d.status;
  const stages = s.quarantineByStage;
  draw(
    'chart-quarantine',
    countBars(
      stages.map((x) => x.stage),
      [
        {
          label: 'rows',
          data: stages.map((x) => x.rows),
          backgroundColor: stages.map((_, i) => stageColor(null, i)),
        },
        { label: 'open', data: stages.map((x) => x.open), backgroundColor: '#bbb' },
      ],
      (item) =>
        item.datasetIndex === 0 && s.layers.bronze > 0
          ? `${((100 * item.raw) / s.layers.bronze).toFixed(1)}% of Bronze messages`
          : '',
    ),
  );
  const rate =
    s.layers.bronze > 0
      ? ` (${((100 * s.layers.quarantineRows) / s.layers.bronze).toFixed(1)}% of Bronze)`
      : '';
  text(
    '[data-caption="quarantine"]',
    stages.length === 0
      ? 'No quarantined rows in the look-back.'
      : `${fmt(s.layers.quarantineRows)} rows${rate}: ` +
          stages.map((x) => `${x.stage} ${fmt(x.rows)}`).join(', '),
  );
  const list = document.getElementById('top-reasons');
  list.replaceChildren(
    ...s.topQuarantineReasons.map((r) => {
      const li = document.createElement('li');
      li.textContent = `${fmt(r.rows)} × ${r.stage}: ${r.reason}`;
      li.title = r.reason;
      return li;
    }),
  );
}

function drawWatermark(d) {
  const h = d.watermarkHistory;
  draw('chart-watermark', {
    type: 'line',
    data: {
      labels: h.map((p) => hhmmss(p.atMs)),
      datasets: [
        {
          label: 'watermark lag (s)',
          data: h.map((p) => Number(seconds(p.atMs - p.watermarkMs))),
          borderColor: '#3b7dd8',
          backgroundColor: '#3b7dd8',
          pointRadius: h.map((p) => (p.source === 'now' ? 4 : 2)),
          stepped: true,
        },
      ],
    },
    options: {
      scales: {
        x: { title: { display: true, text: 'wall clock (UTC)' }, ticks: { maxTicksLimit: 8 } },
        y: { beginAtZero: true, title: { display: true, text: 'lag, seconds' } },
      },
      plugins: {
        tooltip: {
          callbacks: {
            afterLabel: (item) =>
              `watermark ${new Date(h[item.dataIndex].watermarkMs).toISOString()}`,
          },
        },
      },
    },
  });
  // The page's watermark is its pipeline's first aggregation's (booking has one).
  const w = d.status.aggregations[0];
  text(
    '[data-caption="watermark"]',
    w.watermark === null
      ? 'No watermark yet (no event counted in a window).'
      : `Watermark ${w.watermark}, ${duration(w.lagMs)} behind the clock; max event time ${w.maxEventTime}.`,
  );
}

/** Shades the category (window) the watermark falls in, behind the bars. */
const watermarkWindowShade = {
  id: 'watermarkWindowShade',
  beforeDatasetsDraw(chart, _args, opts) {
    if (opts.index === undefined || opts.index < 0) return;
    const x = chart.scales.x;
    const area = chart.chartArea;
    const half = (x.getPixelForValue(1) - x.getPixelForValue(0)) / 2 || area.width / 2;
    const center = x.getPixelForValue(opts.index);
    const ctx = chart.ctx;
    ctx.save();
    ctx.fillStyle = 'rgba(59, 125, 216, 0.12)';
    ctx.fillRect(center - half, area.top, 2 * half, area.bottom - area.top);
    ctx.restore();
  },
};

function drawPanes(d) {
  const select = document.getElementById('route');
  const keys = d.routes.map((r) => r.routeKey);
  if (selectedRoute === null || !keys.includes(selectedRoute)) selectedRoute = keys[0] ?? null;
  select.replaceChildren(
    ...keys.map((k) => {
      const o = document.createElement('option');
      o.value = k;
      o.textContent = k;
      o.selected = k === selectedRoute;
      return o;
    }),
  );
  const route = d.routes.find((r) => r.routeKey === selectedRoute);
  const panes = route ? route.panes : [];
  const wm =
    d.status.aggregations[0].watermark === null
      ? null
      : Date.parse(d.status.aggregations[0].watermark);
  const shadeIndex =
    wm === null ? -1 : panes.findIndex((p) => p.windowStartMs <= wm && wm < p.windowEndMs);
  draw('chart-panes', {
    type: 'bar',
    plugins: [watermarkWindowShade],
    data: {
      labels: panes.map((p) => hhmm(p.windowStartMs)),
      datasets: [
        {
          type: 'bar',
          label: 'bookings',
          data: panes.map((p) => p.bookingCount),
          backgroundColor: panes.map((p) => COLORS[p.timing] || '#999'),
          yAxisID: 'y',
          maxBarThickness: 48,
          order: 1,
        },
        {
          type: 'line',
          label: 'fare total',
          data: panes.map((p) => Number(p.fareTotal)),
          borderColor: '#1d2733',
          backgroundColor: '#1d2733',
          pointRadius: 4,
          // Drawn over the bars.
          order: 0,
          yAxisID: 'fare',
        },
      ],
    },
    options: {
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: { title: { display: true, text: 'window start (event time, UTC)' } },
        y: {
          beginAtZero: true,
          ticks: { precision: 0 },
          title: { display: true, text: 'bookings' },
        },
        fare: { position: 'right', beginAtZero: true, grid: { drawOnChartArea: false } },
      },
      plugins: {
        watermarkWindowShade: { index: shadeIndex },
        legend: {
          labels: {
            // One entry per pane timing (the bars' colours) and the fare line.
            generateLabels: () => [
              ...['EARLY', 'ON_TIME', 'LATE'].map((t) => ({
                text: t,
                fillStyle: COLORS[t],
                strokeStyle: COLORS[t],
                datasetIndex: 0,
              })),
              { text: 'fare total', fillStyle: '#1d2733', strokeStyle: '#1d2733', datasetIndex: 1 },
              ...(shadeIndex >= 0
                ? [
                    {
                      text: 'watermark window',
                      fillStyle: 'rgba(59, 125, 216, 0.12)',
                      strokeStyle: '#fff',
                    },
                  ]
                : []),
            ],
          },
          onClick: () => undefined,
        },
        tooltip: {
          callbacks: {
            afterBody: (items) => {
              const p = panes[items[0].dataIndex];
              return p
                ? `${p.timing} pane #${p.paneIndex}${p.isFinal ? ' (final)' : ''}, fare total ${p.fareTotal}`
                : '';
            },
          },
        },
      },
    },
  });
  const last = panes[panes.length - 1];
  text(
    '[data-caption="panes"]',
    last
      ? `${selectedRoute}: latest window ${hhmm(last.windowStartMs)}–${hhmm(last.windowEndMs)}: ` +
          `${fmt(last.bookingCount)} bookings, fare total ${last.fareTotal}, ${last.timing} pane #${last.paneIndex}.`
      : 'No pane emitted in the look-back.',
  );
}

function drawDropped(d) {
  const w = d.droppedLate;
  draw('chart-dropped', {
    type: 'bar',
    data: {
      labels: w.map((x) => `${hhmm(x.windowStartMs)}–${hhmm(x.windowEndMs)}`),
      datasets: [
        {
          label: 'expired window',
          data: w.map((x) => x.expiredWindow),
          backgroundColor: '#d9622b',
          stack: 'd',
        },
        {
          label: 'closed window',
          data: w.map((x) => x.closedWindow),
          backgroundColor: '#8e2a1e',
          stack: 'd',
        },
      ],
    },
    options: {
      scales: {
        x: { stacked: true },
        y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } },
      },
    },
  });
  const s = d.status.aggregations[0];
  // The counters come oldest window first: the last one is the newest window with drops.
  const newest = w[w.length - 1];
  text(
    '[data-caption="dropped"]',
    `${fmt(s.droppedLate)} dropped (${fmt(s.droppedExpiredWindow)} expired window, ${fmt(s.droppedClosedWindow)} closed window) over ${w.length} window(s).` +
      (newest
        ? ` Newest: window ${hhmm(newest.windowStartMs)}–${hhmm(newest.windowEndMs)}, ${fmt(newest.count)} dropped ` +
          `(${newest.closedWindow > 0 ? 'CLOSED_WINDOW' : 'EXPIRED_WINDOW'}${newest.closedWindow > 0 && newest.expiredWindow > 0 ? ' and EXPIRED_WINDOW' : ''}), ` +
          `last at ${new Date(newest.lastDroppedAtMs).toISOString()} (event ${newest.lastEventId}).`
        : ''),
  );
}

function drawRetry(d) {
  const r = d.status.retryStore;
  const now = Date.parse(d.status.now);
  draw(
    'chart-retry',
    countBars(
      r.map((x) => x.table.split('.').slice(-2).join('.')),
      [
        {
          label: 'rows waiting',
          data: r.map((x) => x.rows),
          backgroundColor: COLORS['retry store'],
        },
      ],
      (item) => (r[item.dataIndex].oldest ? `oldest ${r[item.dataIndex].oldest}` : 'none waiting'),
    ),
  );
  const oldest = r
    .map((x) => x.oldest)
    .filter((x) => x !== null)
    .map((x) => Date.parse(x))
    .sort((a, b) => a - b)[0];
  const total = r.reduce((sum, x) => sum + x.rows, 0);
  text(
    '[data-caption="retry"]',
    r.length === 0
      ? 'Schema drift is off (no retry store).'
      : `${fmt(total)} rows waiting` +
          (oldest === undefined ? '.' : `; the oldest arrived ${duration(now - oldest)} ago.`),
  );
}

function drawBadData(d) {
  const byTarget = new Map();
  for (const c of d.status.badDataByCause) {
    const t = byTarget.get(c.target) || { rows: 0, open: 0 };
    t.rows += c.rows;
    t.open += c.open;
    byTarget.set(c.target, t);
  }
  const targets = [...byTarget.keys()].sort();
  draw(
    'chart-bad-data',
    countBars(
      targets.map((t) => t.split('.').slice(-2).join('.')),
      [
        {
          label: 'rows',
          data: targets.map((t) => byTarget.get(t).rows),
          backgroundColor: COLORS['bad data'],
        },
        { label: 'open', data: targets.map((t) => byTarget.get(t).open), backgroundColor: '#bbb' },
      ],
    ),
  );
  text(
    '[data-caption="bad-data"]',
    targets.length === 0
      ? 'No bad data in the look-back.'
      : `${fmt(d.status.layers.badDataRows)} rows, ${fmt(d.status.open.badData)} open (all time).`,
  );
}

function drawSummary(d) {
  const s = d.status;
  const metrics = {
    bronze: s.layers.bronze,
    silverRows: s.layers.silverRows,
    silverEvents: s.layers.silverEvents,
    quarantineRows: s.layers.quarantineRows,
    badDataRows: s.layers.badDataRows,
    retryStoreRows: s.retryStore.reduce((sum, x) => sum + x.rows, 0),
    goldPanes: s.layers.goldPanes,
    openWindows: s.aggregations.reduce((sum, a) => sum + a.openWindows, 0),
    droppedLate: s.aggregations.reduce((sum, a) => sum + a.droppedLate, 0),
  };
  for (const [name, value] of Object.entries(metrics)) {
    const el = document.querySelector(`[data-metric="${name}"]`);
    el.textContent = fmt(value);
    el.dataset.value = String(value);
  }
  const lag = document.querySelector('[data-metric="watermarkLag"]');
  const lagMs = s.aggregations[0].lagMs;
  lag.textContent = lagMs === null ? 'none' : duration(lagMs);
  lag.dataset.value = lagMs === null ? '' : String(lagMs);
  text('#target', `${s.target.mode} project ${s.target.project}, since ${s.since}`);
}

/** Text of a table cell. */
function cell(row, value) {
  const td = document.createElement('td');
  td.textContent = value;
  row.appendChild(td);
  return td;
}

/** Replaces the rows of `selector`'s body: one per item, `fill(row, item)` adds its cells. */
function fillRows(selector, items, fill) {
  const body = document.querySelector(selector);
  body.replaceChildren(
    ...items.map((item) => {
      const row = document.createElement('tr');
      fill(row, item);
      return row;
    }),
  );
}

/** Another registered pipeline's page: its counts, dead letter by stage, windows per aggregation, regions. */
function drawPipeline(d) {
  const s = d.status;
  for (const [name, value] of Object.entries(s.layers)) {
    const el = document.querySelector(`[data-pmetric="${name}"]`);
    if (!el) continue;
    el.textContent = value === null ? 'none' : fmt(value);
    el.dataset.value = value === null ? '' : String(value);
  }
  draw(
    'chart-dead-letter',
    countBars(
      s.quarantineByStage.map((q) => q.stage),
      [
        {
          label: 'rows',
          data: s.quarantineByStage.map((q) => q.rows),
          backgroundColor: s.quarantineByStage.map((q, i) => stageColor(q.stage, i)),
        },
      ],
      undefined,
      { legend: { display: false } },
    ),
  );
  text(
    '[data-caption="dead-letter"]',
    s.topQuarantineReasons.length === 0
      ? 'Nothing rejected in the look-back.'
      : `Top reason: ${s.topQuarantineReasons[0].reason} (${fmt(s.topQuarantineReasons[0].rows)}).`,
  );
  fillRows('#aggregations tbody', s.aggregations, (row, a) => {
    row.dataset.aggregation = a.name;
    cell(row, a.name);
    cell(row, a.lagMs === null ? 'none' : duration(a.lagMs)).dataset.value =
      a.lagMs === null ? '' : String(a.lagMs);
    cell(row, fmt(a.openWindows)).dataset.value = String(a.openWindows);
    cell(row, fmt(a.droppedLate)).dataset.value = String(a.droppedLate);
    cell(row, fmt(a.goldPanes)).dataset.value = String(a.goldPanes);
  });
  fillRows('#regions tbody', d.regions, (row, r) => {
    row.dataset.region = r.region;
    cell(row, r.region);
    cell(row, `${hhmm(r.windowStartMs)}–${hhmm(r.windowEndMs)}`);
    cell(row, r.timing);
    cell(row, r.devices.map((x) => `${x.rank}. ${x.deviceId} ${x.maxTemperatureC}`).join(', '));
  });
  text(
    '[data-caption="regions"]',
    d.regions.length === 0 ? 'No settled ranking in the look-back yet.' : '',
  );
  text('#target', `${s.target.mode} project ${s.target.project}, since ${s.since}`);
}

/** Shows the selected pipeline's view and hides the other. */
function showView() {
  const booking = selectedPipeline === 'booking';
  document.getElementById('booking-view').hidden = !booking;
  document.getElementById('pipeline-view').hidden = booking;
  text('h1', `Offvia ${selectedPipeline} pipeline`);
}

/** Fills the pipeline selector from the registry (`/api/pipelines`); the page works on without it. */
async function loadPipelines() {
  const select = document.getElementById('pipeline');
  try {
    const res = await fetch('/api/pipelines', { cache: 'no-store' });
    const body = await res.json();
    select.replaceChildren();
    for (const p of body.pipelines) {
      const option = document.createElement('option');
      option.value = p.name;
      option.textContent = p.name;
      option.title = p.description;
      select.appendChild(option);
    }
  } catch (err) {
    console.error('loading the pipeline list failed', err);
  }
  select.value = selectedPipeline;
}

/** Fetches the numbers and redraws every panel; a failure is shown and the polling goes on. */
async function refresh(chain = refreshChain) {
  if (chain !== refreshChain) return;
  let refreshMs = 5000;
  const error = document.getElementById('error');
  try {
    const shown = selectedPipeline;
    const url =
      shown === 'booking' ? '/api/dashboard' : `/api/pipeline/${encodeURIComponent(shown)}`;
    const res = await fetch(url, { cache: 'no-store' });
    const body = await res.json();
    refreshMs = body.refreshMs || refreshMs;
    if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
    // The selection changed while this request ran: its numbers belong to the other view.
    if (shown !== selectedPipeline) return;
    if (shown !== 'booking') drawPipeline(body);
    else {
      drawSummary(body);
      drawPerMinute(body);
      drawQuarantine(body);
      drawWatermark(body);
      drawPanes(body);
      drawDropped(body);
      drawRetry(body);
      drawBadData(body);
    }
    error.hidden = true;
    text('#updated', `updated ${body.status.now} · every ${refreshMs / 1000} s`);
    document.body.dataset.pipeline = shown;
    // For tests and scripts: the moment the shown numbers were collected.
    document.body.dataset.statusNow = body.status.now;
    document.body.dataset.statusSince = body.status.since;
    window.offviaDashboard = body;
  } catch (err) {
    console.error('dashboard refresh failed', err);
    error.textContent = `Refresh failed: ${err && err.message ? err.message : String(err)}`;
    error.hidden = false;
  } finally {
    if (chain === refreshChain) setTimeout(() => refresh(chain), refreshMs);
  }
}

document.getElementById('route').addEventListener('change', (e) => {
  selectedRoute = e.target.value;
  if (window.offviaDashboard) drawPanes(window.offviaDashboard);
});
document.getElementById('pipeline').addEventListener('change', (e) => {
  selectedPipeline = e.target.value;
  const url = new URL(window.location.href);
  if (selectedPipeline === 'booking') url.searchParams.delete('pipeline');
  else url.searchParams.set('pipeline', selectedPipeline);
  window.history.replaceState(null, '', url);
  showView();
  refreshChain += 1;
  refresh(refreshChain);
});
showView();
loadPipelines().then(() => refresh());
