// `offvia gold restate`'s pure part (range, closed-window rule, which windows change, the restatement row and its
// insertId) and its flags (one-line usage errors, before any backend call).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { main } from '../../../shared/ops/cli';
import type { OpsContext } from '../../../shared/ops/context';
import { EXIT } from '../../../shared/ops/errors';
import {
  canonicalAmount,
  isClosed,
  MAX_RESTATE_WINDOWS,
  parseRouteKeys,
  parseUtcTime,
  planChanges,
  restatementInsertId,
  restatementRow,
  restatementSql,
  windowsOfRange,
  type LatestPane,
  type Recomputed,
} from '../../../shared/ops/restate-plan';
import { fixed, sessions, sliding } from '../../../shared/windowing';
import { loadWindowConfig } from '../../../shared/config/window-config';

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
    assert.deepEqual(parseRouteKeys(['JFK-LHR-USD,CDG-JFK-EUR', 'JFK-LHR-USD']), [
      'CDG-JFK-EUR',
      'JFK-LHR-USD',
    ]);
    assert.deepEqual(parseRouteKeys([]), []);
    assert.throws(
      () => parseRouteKeys(['jfk-LHR-USD']),
      /--key: expected ORIGIN-DESTINATION-CURRENCY/,
    );
    assert.throws(() => parseRouteKeys([' , ']), /--key: no value given/);
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

const pane = (over: Partial<LatestPane> = {}): LatestPane => ({
  routeKey: 'JFK-LHR-USD',
  windowStartMs: T,
  count: 3,
  total: '300',
  min: '50',
  max: '150',
  mean: '100',
  source: 'stream',
  paneIndex: 1,
  paneOnTimeIndex: 0,
  ...over,
});
const fresh = (over: Partial<Recomputed> = {}): Recomputed => ({
  routeKey: 'JFK-LHR-USD',
  windowStartMs: T,
  count: 4,
  total: '307.125',
  min: '7.125',
  max: '150',
  mean: '76.78125',
  ...over,
});

describe('gold restate: which windows change', () => {
  const windows = windowsOfRange(fixed(MIN), T, T + 2 * MIN);
  const closed = () => true;

  it('keeps only the (route, window)s whose latest pane differs, oldest first', () => {
    const same = fresh({ ...pane(), routeKey: 'JFK-LHR-USD' });
    const changes = planChanges(
      windows,
      [
        fresh(),
        { ...same, windowStartMs: T + MIN },
        fresh({ routeKey: 'CDG-JFK-EUR', windowStartMs: T + 2 * MIN }),
      ],
      [pane(), pane({ windowStartMs: T + MIN })],
      closed,
      false,
    );
    assert.deepEqual(
      changes.map((c) => [
        c.window.startMs - T,
        c.routeKey,
        c.current?.count ?? null,
        c.restated.count,
      ]),
      [
        [0, 'JFK-LHR-USD', 3, 4],
        [2 * MIN, 'CDG-JFK-EUR', null, 4],
      ],
    );
  });

  it('restates a pane whose events are all gone as an empty pane', () => {
    const [change] = planChanges(windows, [], [pane()], closed, false);
    assert.deepEqual(change?.restated, { count: 0, total: '0', min: null, max: null, mean: null });
  });

  it('a difference in min, max or mean alone is a change', () => {
    for (const over of [{ min: '49' }, { max: '151' }, { mean: '100.000000001' }]) {
      const r = fresh({ ...pane(), ...over });
      assert.equal(
        planChanges(windows, [r], [pane()], closed, false).length,
        1,
        JSON.stringify(over),
      );
    }
  });

  it('leaves open windows alone unless forced', () => {
    const open = () => false;
    assert.equal(planChanges(windows, [fresh()], [pane()], open, false)[0]?.action, 'open');
    assert.equal(planChanges(windows, [fresh()], [pane()], open, true)[0]?.action, 'restate');
  });

  it('canonical amounts compare whatever the printed scale', () => {
    assert.equal(canonicalAmount('100.100'), '100.1');
    assert.equal(canonicalAmount('3.000000000'), '3');
    assert.equal(canonicalAmount(null), null);
  });
});

describe('gold restate: the restatement pane', () => {
  const window = { startMs: T, endMs: T + MIN };
  const change = {
    routeKey: 'JFK-LHR-USD',
    window,
    current: pane(),
    restated: { count: 4, total: '307.125', min: '7.125', max: '150', mean: '76.78125' },
    action: 'restate' as const,
  };

  it('is a final, accumulating LATE pane after the latest one, marked restatement', () => {
    const row = restatementRow('booking_routes_1m', change, T + 10 * MIN, T + 20 * MIN);
    assert.deepEqual(
      {
        ...row,
        insert_id: undefined,
      },
      {
        pipeline: 'booking_routes_1m',
        window_start: '2026-10-07T14:10:00.000Z',
        window_end: '2026-10-07T14:11:00.000Z',
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
        watermark_at_emission: '2026-10-07T14:20:00.000Z',
        emitted_at: '2026-10-07T14:30:00.000Z',
        insert_id: undefined,
        source: 'restatement',
      },
    );
    const first = restatementRow('p', { ...change, current: null }, null, T);
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

  it('the query filters Silver on its partition column and the routes only when asked', () => {
    const base = {
      silverTable: 'p.s.f',
      badDataTable: 'p.q.b',
      grid: { sizeMs: MIN, stepMs: MIN, offsetMs: 0 },
      keys: [],
    };
    const sql = restatementSql(base);
    assert.match(
      sql,
      /WHERE event_timestamp >= TIMESTAMP_MILLIS\(@loMs\) AND event_timestamp < TIMESTAMP_MILLIS\(@hiMs\)/,
    );
    assert.doesNotMatch(sql, /@keys/);
    assert.match(
      restatementSql({ ...base, keys: ['JFK-LHR-USD'] }),
      /route_key IN UNNEST\(@keys\)/,
    );
    // The emulator evaluates `2 * MOD(…)` wrongly: the half-even step must be written MOD(…) * 2.
    assert.doesNotMatch(sql, /2 \* MOD/);
    // Windows by arithmetic and an equality join: one window per event for fixed windows, size / period for sliding.
    assert.match(sql, /GENERATE_ARRAY\(0, 0\)/);
    assert.match(sql, /ON window_start_ms = event_ms - MOD\(event_ms - 0, 60000\) - k \* 60000/);
    const slidingSql = restatementSql({
      ...base,
      grid: { sizeMs: 2 * MIN, stepMs: 30_000, offsetMs: 5000 },
    });
    assert.match(slidingSql, /GENERATE_ARRAY\(0, 3\)/);
    assert.match(slidingSql, /MOD\(event_ms - 5000, 30000\) - k \* 30000/);
    assert.match(slidingSql, /WHERE event_ms < window_start_ms \+ 120000/);
  });
});

describe('offvia gold restate: flags', () => {
  const ctx = {
    windows: loadWindowConfig({}),
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

  const cases: [string[], RegExp][] = [
    [['gold', 'restate'], /--from and --to are required/],
    [['gold', 'restate', '--from', '2026-10-07T14:10:00Z'], /--from and --to are required/],
    [
      ['gold', 'restate', '--from', 'noon', '--to', '2026-10-07T14:10:00Z'],
      /--from: expected a window start/,
    ],
    [
      [
        'gold',
        'restate',
        '--from',
        '2026-10-07T14:10:00Z',
        '--to',
        '2026-10-07T14:10:00Z',
        '--key',
        'JFK',
      ],
      /--key: expected ORIGIN-DESTINATION-CURRENCY/,
    ],
    [
      ['gold', 'restate', '--from', '2026-10-07T14:10:30Z', '--to', '2026-10-07T14:11:00Z'],
      /is not a window start/,
    ],
    [['gold', 'restate', '--bogus'], /unknown option '--bogus'/],
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
});
