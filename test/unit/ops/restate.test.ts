// `offvia gold restate`'s pure part (range, closed-window rule, which windows change, the restatement row and its
// insertId) and its flags (one-line usage errors, before any backend call).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { main } from '../../../shared/ops/cli';
import type { OpsContext } from '../../../shared/ops/context';
import { EXIT } from '../../../shared/ops/errors';
import {
  canonicalAmount,
  canonicalCell,
  heldSilverRow,
  isClosed,
  latestPaneSql,
  MAX_RESTATE_WINDOWS,
  parseKeys,
  parseUtcTime,
  planChanges,
  recomputedOf,
  recomputePanes,
  restatementInsertId,
  restatementRow,
  silverSql,
  windowsOfRange,
  type LatestPane,
  type Recomputed,
} from '../../../shared/ops/restate-plan';
import { restatableAggregations } from '../../../shared/ops/restate';
import type { AnyPipelineDefinition } from '../../../shared/pipeline/definition';
import { BOOKING_PIPELINE } from '../../../shared/pipelines/booking/definition';
import { TELEMETRY_PIPELINE } from '../../../shared/pipelines/telemetry/definition';
import { PAYMENTS_PIPELINE } from '../../fixtures/pipelines/payments/definition';
import { fixed, sessions, sliding, type IntervalWindow } from '../../../shared/windowing';

const booking = BOOKING_PIPELINE as unknown as AnyPipelineDefinition;
const telemetry = TELEMETRY_PIPELINE as unknown as AnyPipelineDefinition;
const [route] = restatableAggregations(booking);
if (route === undefined) throw new Error('booking has a route aggregation');
/** Telemetry as if its regional top-N did not say how a Silver row becomes its combine's input. */
const withoutValue: AnyPipelineDefinition = {
  ...telemetry,
  operatorColumns: {
    ...telemetry.operatorColumns,
    aggregations: {
      ...telemetry.operatorColumns.aggregations,
      telemetry_region_top_1m: { silverKey: () => null, goldKeyColumn: 'region' },
    },
  },
};
const T = Date.UTC(2026, 9, 7, 14, 10);
const MIN = 60_000;

describe('gold restate: the range and the closed-window rule', () => {
  it('parses window starts in RFC 3339 UTC only', () => {
    assert.equal(parseUtcTime('2026-10-07T14:10:00Z', '--from'), T);
    assert.equal(parseUtcTime('2026-10-07T14:10:00+00:00', '--from'), T);
    assert.equal(parseUtcTime('2026-10-07T14:10Z', '--from'), T);
    for (const bad of ['2026-10-07T16:10:00+02:00', '2026-10-07', '1h', 'yesterday', '']) {
      assert.throws(
        () => parseUtcTime(bad, '--from'),
        /--from: expected a window start in RFC 3339 UTC/,
      );
    }
  });

  it('parses route keys (repeatable, comma-separated, deduplicated) and refuses anything else', () => {
    assert.deepEqual(parseKeys(['JFK-LHR-USD,CDG-JFK-EUR', 'JFK-LHR-USD'], [route]), [
      'CDG-JFK-EUR',
      'JFK-LHR-USD',
    ]);
    assert.deepEqual(parseKeys([], [route]), []);
    assert.throws(
      () => parseKeys(['jfk-LHR-USD'], [route]),
      /--key: expected ORIGIN-DESTINATION-CURRENCY/,
    );
    assert.throws(() => parseKeys([' , '], [route]), /--key: no value given/);
    // Telemetry's keys (a device, a region) are free text.
    assert.deepEqual(parseKeys(['dev-1,eu-west'], restatableAggregations(telemetry)), [
      'dev-1',
      'eu-west',
    ]);
  });

  it('lists the windows of a range on the fixed and sliding grids, both ends inclusive', () => {
    assert.deepEqual(windowsOfRange(fixed(MIN), T, T + 2 * MIN), [
      { startMs: T, endMs: T + MIN },
      { startMs: T + MIN, endMs: T + 2 * MIN },
      { startMs: T + 2 * MIN, endMs: T + 3 * MIN },
    ]);
    assert.deepEqual(windowsOfRange(fixed(MIN), T, T), [{ startMs: T, endMs: T + MIN }]);
    // Sliding: 2-minute windows every 30 s.
    assert.deepEqual(
      windowsOfRange(sliding(2 * MIN, 30_000), T, T + 30_000).map((w) => [
        w.startMs - T,
        w.endMs - T,
      ]),
      [
        [0, 2 * MIN],
        [30_000, 30_000 + 2 * MIN],
      ],
    );
    // A --to inside a window's span still names the windows that start up to it.
    assert.equal(windowsOfRange(fixed(MIN), T, T + 90_000).length, 2);
  });

  it('refuses a start off the grid, a reversed range, too many windows and session windows', () => {
    assert.throws(
      () => windowsOfRange(fixed(MIN), T + 1000, T + MIN),
      /--from: .* is not a window start/,
    );
    assert.throws(() => windowsOfRange(fixed(MIN, 5000), T, T), /from an offset of 5000 ms/);
    assert.throws(() => windowsOfRange(fixed(MIN), T + MIN, T), /--from is after --to/);
    assert.throws(
      () => windowsOfRange(fixed(MIN), T, T + MAX_RESTATE_WINDOWS * MIN),
      /restate at most 50000/,
    );
    assert.throws(() => windowsOfRange(sessions(MIN), T, T), /session windows/);
  });

  it('closes a window when end - 1 ms + allowed lateness is before the watermark (Beam GC time)', () => {
    const w = { startMs: T, endMs: T + MIN };
    const gc = T + MIN - 1 + 300_000;
    assert.equal(isClosed(w, 300_000, gc), false);
    assert.equal(isClosed(w, 300_000, gc + 1), true);
    assert.equal(isClosed(w, 300_000, null), false);
  });
});

type Aggregate = {
  count: number;
  total: string;
  min: string | null;
  max: string | null;
  mean: string | null;
};
const WINDOW = { startMs: T, endMs: T + MIN };
const windowAt = (startMs: number): IntervalWindow => ({ startMs, endMs: startMs + MIN });
const recomputed = (key: string, startMs: number, value: Aggregate): Recomputed =>
  recomputedOf(route, key, windowAt(startMs), value);
const pane = (
  over: Partial<Aggregate> & { key?: string; windowStartMs?: number } = {},
): LatestPane => {
  const { key = 'JFK-LHR-USD', windowStartMs = T, ...value } = over;
  const r = recomputed(key, windowStartMs, {
    count: 3,
    total: '300',
    min: '50',
    max: '150',
    mean: '100',
    ...value,
  });
  return {
    key,
    windowStartMs,
    values: r.values,
    restatement: false,
    paneIndex: 1,
    paneOnTimeIndex: 0,
  };
};
const fresh = (
  over: Partial<Aggregate> & { key?: string; windowStartMs?: number } = {},
): Recomputed => {
  const { key = 'JFK-LHR-USD', windowStartMs = T, ...value } = over;
  return recomputed(key, windowStartMs, {
    count: 4,
    total: '307.125',
    min: '7.125',
    max: '150',
    mean: '76.78125',
    ...value,
  });
};
const empty = (key: string, window: IntervalWindow): Recomputed =>
  recomputedOf(
    route,
    key,
    window,
    route.definition.combineFn.extractOutput(route.definition.combineFn.createAccumulator()),
  );
const count = (p: { values: Readonly<Record<string, unknown>> } | null | undefined) =>
  p === null || p === undefined ? null : Number(p.values.booking_count);

describe('gold restate: which windows change', () => {
  const windows = windowsOfRange(fixed(MIN), T, T + 2 * MIN);
  const closed = () => true;

  it('keeps only the (route, window)s whose latest pane differs, oldest first', () => {
    const same = fresh({
      count: 3,
      total: '300',
      min: '50',
      max: '150',
      mean: '100',
      windowStartMs: T + MIN,
    });
    const changes = planChanges(
      windows,
      [fresh(), same, fresh({ key: 'CDG-JFK-EUR', windowStartMs: T + 2 * MIN })],
      [pane(), pane({ windowStartMs: T + MIN })],
      empty,
      closed,
      false,
    );
    assert.deepEqual(
      changes.map((c) => [c.window.startMs - T, c.key, count(c.current), count(c.restated)]),
      [
        [0, 'JFK-LHR-USD', 3, 4],
        [2 * MIN, 'CDG-JFK-EUR', null, 4],
      ],
    );
  });

  it('restates a pane whose events are all gone as an empty pane', () => {
    const [change] = planChanges(windows, [], [pane()], empty, closed, false);
    const v = change?.restated.values ?? {};
    assert.deepEqual(
      [v.booking_count, v.fare_total, v.fare_min, v.fare_max, v.fare_mean],
      ['0', '0', null, null, null],
    );
  });

  it('a difference in min, max or mean alone is a change', () => {
    for (const over of [{ min: '49' }, { max: '151' }, { mean: '100.000000001' }]) {
      const r = fresh({ count: 3, total: '300', min: '50', max: '150', mean: '100', ...over });
      assert.equal(
        planChanges(windows, [r], [pane()], empty, closed, false).length,
        1,
        JSON.stringify(over),
      );
    }
    const same = fresh({ count: 3, total: '300', min: '50', max: '150', mean: '100' });
    assert.equal(planChanges(windows, [same], [pane()], empty, closed, false).length, 0);
  });

  it('leaves open windows alone unless forced', () => {
    const open = () => false;
    assert.equal(planChanges(windows, [fresh()], [pane()], empty, open, false)[0]?.action, 'open');
    assert.equal(
      planChanges(windows, [fresh()], [pane()], empty, open, true)[0]?.action,
      'restate',
    );
  });

  it('canonical amounts compare whatever the printed scale', () => {
    assert.equal(canonicalAmount('100.100'), '100.1');
    assert.equal(canonicalAmount('3.000000000'), '3');
    assert.equal(canonicalAmount(null), null);
    assert.equal(canonicalAmount('-0.000'), '0');
    // A gold cell as the BigQuery client returns it: NUMERIC objects, numbers, rankings as arrays of records.
    const big = { constructor: { name: 'Big' }, toFixed: () => '21.500' };
    Object.setPrototypeOf(big, { constructor: { name: 'Big' } });
    assert.deepEqual(canonicalCell([{ rank: 1, max_temperature_c: '21.500', device_id: 'd-1' }]), [
      { device_id: 'd-1', max_temperature_c: '21.5', rank: '1' },
    ]);
    assert.equal(canonicalCell(4), canonicalCell('4.0'));
  });
});

describe('gold restate: the restatement pane', () => {
  const window = WINDOW;
  const change = {
    key: 'JFK-LHR-USD',
    window,
    current: pane(),
    restated: fresh(),
    action: 'restate' as const,
  };

  it('is a final, accumulating LATE pane after the latest one, marked restatement', () => {
    const row = restatementRow(route, change, T + 10 * MIN, T + 20 * MIN);
    assert.deepEqual(
      {
        ...row,
        insert_id: undefined,
      },
      // Times as the stream's gold rows write them (six fraction digits: the same instants).
      {
        pipeline: 'booking_routes_1m',
        window_start: '2026-10-07T14:10:00.000000Z',
        window_end: '2026-10-07T14:11:00.000000Z',
        route_key: 'JFK-LHR-USD',
        origin_airport: 'JFK',
        destination_airport: 'LHR',
        currency: 'USD',
        booking_count: 4,
        fare_total: '307.125',
        fare_min: '7.125',
        fare_max: '150',
        fare_mean: '76.78125',
        pane_timing: 'LATE',
        pane_index: 2,
        pane_on_time_index: 1,
        is_first: false,
        is_final: true,
        accumulation_mode: 'ACCUMULATING',
        watermark_at_emission: '2026-10-07T14:20:00.000000Z',
        emitted_at: '2026-10-07T14:30:00.000000Z',
        insert_id: undefined,
        source: 'restatement',
      },
    );
    const first = restatementRow(route, { ...change, current: null }, null, T);
    assert.deepEqual(
      [first.pane_index, first.is_first, first.watermark_at_emission],
      [0, true, null],
    );
  });

  it('insertId: the same data gives the same id, any other data another; always within 128 characters', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 10_000 }),
        fc.nat({ max: 10_000 }),
        fc.stringMatching(/^[a-z][a-z0-9_]{0,39}$/),
        (a, b, pipeline) => {
          const v = (n: number) => ({
            count: n,
            total: `${n}.5`,
            min: '0.5',
            max: `${n}`,
            mean: '1',
          });
          const idA = restatementInsertId(pipeline, 'JFK-LHR-USD', window, v(a));
          assert.equal(idA, restatementInsertId(pipeline, 'JFK-LHR-USD', window, v(a)));
          assert.equal(idA === restatementInsertId(pipeline, 'JFK-LHR-USD', window, v(b)), a === b);
          assert.ok(idA.length <= 128 && idA.startsWith('restate~'));
        },
      ),
    );
  });

  it('the queries filter Silver on its event-time partition column and gold on the keys only when asked', () => {
    const sql = silverSql('p.s.f_dedup', 'event_timestamp');
    assert.match(sql, /FROM `p\.s\.f_dedup`/);
    assert.match(
      sql,
      /WHERE event_timestamp >= TIMESTAMP_MILLIS\(@loMs\) AND event_timestamp < TIMESTAMP_MILLIS\(@hiMs\)/,
    );
    const latest = latestPaneSql('p.g.route_panes', 'route_key', false);
    assert.doesNotMatch(latest, /@keys/);
    assert.match(
      latestPaneSql('p.g.route_panes', 'route_key', true),
      /route_key IN UNNEST\(@keys\)/,
    );
    // A restatement wins over every stream pane, then the newest restatement, then the highest pane index.
    assert.match(latest, /PARTITION BY route_key, window_start/);
    assert.match(
      latest,
      /ORDER BY IF\(insert_id LIKE 'restate~%', 1, 0\) DESC, .*pane_index DESC/s,
    );
    assert.match(latest, /window_start >= TIMESTAMP_MILLIS\(@fromMs\)/);
  });
});

/** A booking's Silver row as the dedup view returns it (plain cells), at `atMs`. */
const bookingRow = (fare: string, atMs: number, o = 'JFK', d = 'LHR') => ({
  eventMs: atMs,
  row: { origin_airport: o, destination_airport: d, currency: 'USD', fare_amount: fare },
});

describe("gold restate: panes recomputed from Silver with the aggregation's combine", () => {
  it('booking: exact count, total, extremes and the half-even mean, per route and window', () => {
    const windows = windowsOfRange(fixed(MIN), T, T + MIN);
    const panes = recomputePanes(
      route,
      [
        bookingRow('100.10', T + 10_000),
        bookingRow('0.255', T + 20_000),
        bookingRow('7.125', T + 30_000),
        bookingRow('5', T + MIN, 'CDG', 'JFK'),
        bookingRow('9', T + 2 * MIN), // outside the range
      ],
      windows,
      [],
    );
    assert.deepEqual(
      panes.map((p) => [p.windowStartMs - T, p.key, p.output]),
      [
        [
          0,
          'JFK-LHR-USD',
          { count: 3, total: '107.48', min: '0.255', max: '100.1', mean: '35.826666667' },
        ],
        [MIN, 'CDG-JFK-USD', { count: 1, total: '5', min: '5', max: '5', mean: '5' }],
      ],
    );
    // --key keeps only the keys named.
    assert.deepEqual(
      recomputePanes(route, [bookingRow('1', T), bookingRow('2', T, 'CDG', 'JFK')], windows, [
        'CDG-JFK-USD',
      ]).map((p) => p.key),
      ['CDG-JFK-USD'],
    );
  });

  it('sliding windows: an event counts in every window of the range that holds it (size / period of them)', () => {
    const slidingRoute = {
      ...route,
      definition: {
        ...route.definition,
        strategy: { ...route.definition.strategy, windowFn: sliding(2 * MIN, 30_000) },
      },
    };
    const windows = windowsOfRange(sliding(2 * MIN, 30_000), T - 2 * MIN, T + MIN);
    const panes = recomputePanes(slidingRoute, [bookingRow('1', T + 45_000)], windows, []);
    assert.deepEqual(
      panes.map((p) => (p.windowStartMs - T) / 1000),
      [-60, -30, 0, 30],
    );
  });

  it("telemetry: the device statistics and the regional top-N from the readings' Silver rows, as the stream computes them", () => {
    const [devices, regions] = restatableAggregations(telemetry);
    if (devices === undefined || regions === undefined) throw new Error('two aggregations');
    const reading = (device: string, region: string | null, c: string, atMs: number) => ({
      eventMs: atMs,
      row: { device_id: device, region, temperature_c: c },
    });
    const events = [
      reading('d-1', 'eu', '21.5', T + 1000),
      reading('d-1', 'eu', '23.125', T + 2000),
      reading('d-2', 'eu', '22', T + 3000),
      reading('d-3', null, '30', T + 4000), // an unknown device: per device only
    ];
    const windows = windowsOfRange(fixed(MIN), T, T);
    const device = recomputePanes(devices, events, windows, []);
    assert.deepEqual(
      device.map((p) => [p.key, p.output]),
      [
        [
          'd-1',
          devices.definition.combineFn.extractOutput(
            [21_500, 23_125].reduce(
              (acc, v) => devices.definition.combineFn.addInput(acc, v as never),
              devices.definition.combineFn.createAccumulator(),
            ),
          ),
        ],
        [
          'd-2',
          devices.definition.combineFn.extractOutput(
            devices.definition.combineFn.addInput(
              devices.definition.combineFn.createAccumulator(),
              22_000 as never,
            ),
          ),
        ],
        [
          'd-3',
          devices.definition.combineFn.extractOutput(
            devices.definition.combineFn.addInput(
              devices.definition.combineFn.createAccumulator(),
              30_000 as never,
            ),
          ),
        ],
      ],
    );
    assert.equal(device[0]?.values.reading_count, '2');
    assert.equal(device[0]?.values.temperature_max_c, '23.125');
    const region = recomputePanes(regions, events, windows, []);
    assert.deepEqual(
      region.map((p) => [p.key, p.values.top_devices]),
      [
        [
          'eu',
          [
            { device_id: 'd-1', max_temperature_c: '23.125', rank: '1' },
            { device_id: 'd-2', max_temperature_c: '22', rank: '2' },
          ],
        ],
      ],
    );
    // A restatement of a region pane is the aggregation's own gold row, marked by its insertId.
    const row = restatementRow(
      regions,
      {
        key: 'eu',
        window: WINDOW,
        current: null,
        restated: region[0] as Recomputed,
        action: 'restate',
      },
      T + 20 * MIN,
      T + 30 * MIN,
    );
    assert.equal(row.pipeline, 'telemetry_region_top_1m');
    assert.equal(row.region, 'eu');
    assert.deepEqual([row.pane_timing, row.pane_index, row.is_final], ['LATE', 0, true]);
    assert.match(String(row.insert_id), /^restate~telemetry_region_top_1m~/);
    assert.equal('source' in row, false);
  });

  it('payments (the fixture pipeline): count and exact sum per currency from Silver amounts', () => {
    const [currency] = restatableAggregations(PAYMENTS_PIPELINE);
    if (currency === undefined) throw new Error('payments has an aggregation');
    const payment = (amount: string, atMs: number) => ({
      eventMs: atMs,
      row: { currency: 'EUR', amount },
    });
    const [pane, ...others] = recomputePanes(
      currency,
      [payment('12.3', T + 1000), payment('0.70', T + 2000), payment('1', T + 5 * MIN)],
      windowsOfRange(fixed(5 * MIN), T, T),
      [],
    );
    assert.deepEqual(others, []);
    assert.deepEqual(pane?.output, { count: 2, sumCents: 1300 });
    assert.deepEqual(pane?.values, { amount_sum: '13', currency: 'EUR', payment_count: '2' });
    assert.throws(() => currency.columns.silverValue({ amount: '1.234' }), /not cents/);
  });

  it("a held row (bad data, retry store) is the Silver row, inside the drift gate's wrapper or bare", () => {
    assert.deepEqual(heldSilverRow('{"row":{"a":1},"extra_fields":{"x":2}}'), { a: 1 });
    assert.deepEqual(heldSilverRow('{"a":1}'), { a: 1 });
    assert.throws(() => heldSilverRow('[1]'), /not a JSON object/);
    assert.throws(() => heldSilverRow('{'), SyntaxError);
  });

  it('refuses, in one line naming it, an aggregation it cannot restate from Silver', () => {
    assert.throws(
      () => restatableAggregations(withoutValue),
      /gold restate: aggregation telemetry_region_top_1m of pipeline telemetry cannot be restated from Silver: its combine's input cannot be read back from a Silver row/,
    );
    assert.equal(restatableAggregations(withoutValue, ['telemetry_device_1m']).length, 1);
    const sessionAggregation = booking.aggregations.map((a) => ({
      ...a,
      strategy: { ...a.strategy, windowFn: sessions(MIN) },
    }));
    assert.throws(
      () => restatableAggregations({ ...booking, aggregations: sessionAggregation }),
      /aggregation booking_routes_1m of pipeline booking cannot be restated from Silver: session windows/,
    );
    assert.throws(
      () => restatableAggregations(telemetry, ['nope']),
      /--aggregation "nope": pipeline telemetry has telemetry_device_1m, telemetry_region_top_1m/,
    );
  });
});

describe('offvia gold restate: flags', () => {
  let pipeline: AnyPipelineDefinition = booking;
  const ctx = {
    get pipeline() {
      return pipeline;
    },
    close: () => Promise.resolve(),
  } as unknown as OpsContext;

  async function run(argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    let connected = false;
    const code = await main(argv, {
      io: { out: (t) => out.push(t), err: (t) => err.push(t) },
      now: () => T,
      connect: () => {
        connected = true;
        return ctx;
      },
    });
    return { code, out: out.join(''), err: err.join(''), connected };
  }

  /** `gold restate` of one closed minute, then `extra` flags. */
  const oneMinute = (...extra: string[]) => [
    'gold',
    'restate',
    '--from',
    '2026-10-07T14:10:00Z',
    '--to',
    '2026-10-07T14:10:00Z',
    ...extra,
  ];
  const cases: [string[], RegExp][] = [
    [['gold', 'restate'], /--from and --to are required/],
    [['gold', 'restate', '--from', '2026-10-07T14:10:00Z'], /--from and --to are required/],
    [
      ['gold', 'restate', '--from', 'noon', '--to', '2026-10-07T14:10:00Z'],
      /--from: expected a window start/,
    ],
    [oneMinute('--key', 'JFK'), /--key: expected ORIGIN-DESTINATION-CURRENCY/],
    [
      ['gold', 'restate', '--from', '2026-10-07T14:10:30Z', '--to', '2026-10-07T14:11:00Z'],
      /is not a window start/,
    ],
    [['gold', 'restate', '--bogus'], /unknown option '--bogus'/],
    [oneMinute('--aggregation', 'x'), /--aggregation "x": pipeline booking has booking_routes_1m/],
  ];
  for (const [argv, message] of cases) {
    it(`${argv.slice(2).join(' ') || '(no flags)'}: one line, exit 2, no backend call`, async () => {
      const r = await run(argv);
      assert.equal(r.code, EXIT.usage, r.err);
      assert.match(r.err, message);
      assert.match(r.err, /^offvia: /);
      assert.equal(r.err.trim().split('\n').length, 1, r.err);
      assert.equal(r.out, '');
    });
  }

  it('--help describes the command', async () => {
    const r = await run(['gold', 'restate', '--help']);
    assert.equal(r.code, EXIT.ok);
    assert.match(r.out, /--dry-run/);
    assert.match(r.out, /--force/);
    assert.equal(r.connected, false);
  });

  it('--pipeline telemetry with an aggregation it cannot restate: one line naming it, exit 2, nothing written', async () => {
    pipeline = withoutValue;
    try {
      const r = await run(['--pipeline', 'telemetry', ...oneMinute()]);
      assert.equal(r.code, EXIT.usage, r.err);
      assert.match(
        r.err,
        /^offvia: gold restate: aggregation telemetry_region_top_1m of pipeline telemetry cannot be restated from Silver/,
      );
      assert.equal(r.err.trim().split('\n').length, 1, r.err);
      assert.equal(r.out, '');
    } finally {
      pipeline = booking;
    }
  });
});
