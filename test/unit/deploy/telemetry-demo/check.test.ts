// The telemetry simulator's independent computation and checker: exact averages (half-even), rankings with ties,
// and a checker that passes a faithful outcome and names each kind of discrepancy.
import assert from 'node:assert/strict';
import { checkTelemetryRun, type Observed } from '../../../../deploy/local/telemetry-demo/check';
import {
  divideHalfEven,
  expectedOutcome,
  nanoToText,
  numericToNano,
  paneKey,
  windowStartOf,
} from '../../../../deploy/local/telemetry-demo/expected';
import { watermarkBoundsAtArrival } from '../../../../deploy/local/telemetry-demo/check';
import {
  planTelemetryRun,
  type PlannedMessage,
} from '../../../../deploy/local/telemetry-demo/plan';

const T0 = Date.UTC(2026, 11, 2, 0, 57);

function reading(
  deviceId: string,
  eventTsMs: number | null,
  milli: number,
  region: string | null,
): PlannedMessage {
  return {
    data: '{}',
    attributes: { deviceId },
    orderingKey: deviceId,
    expect: { kind: 'reading', deviceId, eventTsMs, temperatureMilliC: milli, region },
  };
}

describe('telemetry simulator: expected outcome', () => {
  it('rounds the average once, half to even, at 9 fraction digits', () => {
    assert.equal(divideHalfEven(5n, 2n), 2n);
    assert.equal(divideHalfEven(7n, 2n), 4n);
    assert.equal(divideHalfEven(-5n, 2n), -2n);
    assert.equal(divideHalfEven(-7n, 2n), -4n);
    assert.equal(divideHalfEven(2n, 3n), 1n);
    // 20 + 20 + 21 milli-degrees ÷ 3 = 20.333… milli → 0.020333333 °C
    const e = expectedOutcome(
      [reading('a', T0 + 1, 20, 'r'), reading('a', T0 + 2, 20, 'r'), reading('a', T0 + 3, 21, 'r')],
      () => undefined,
      10,
    );
    const pane = e.devicePanes.get(paneKey('a', T0));
    assert.equal(pane?.count, 3);
    assert.equal(nanoToText(pane?.avgNano ?? 0n), '0.020333333');
    assert.equal(nanoToText(pane?.minNano ?? 0n), '0.02');
    assert.equal(numericToNano('21.5'), 21_500_000_000n);
    assert.equal(numericToNano('-0.125000000'), -125_000_000n);
    assert.throws(() => numericToNano('1e3'), /not a NUMERIC value/);
  });

  it('files a reading without eventTs under its publish time, and ranks devices by their highest reading', () => {
    const messages = [
      reading('b', T0 + 5_000, 30_000, 'r'),
      reading('a', T0 + 6_000, 31_000, 'r'),
      reading('c', T0 + 7_000, 31_000, 'r'),
      reading('b', null, 40_000, 'r'),
      reading('u', T0 + 8_000, 90_000, null),
    ];
    const e = expectedOutcome(messages, (i) => (i === 3 ? T0 + 65_000 : undefined), 2);
    assert.equal(e.readings, 5);
    assert.equal(e.devicePanes.get(paneKey('b', T0 + 60_000))?.count, 1);
    // Ties by device id; the unknown device u (no region) ranks nowhere; top 2 only.
    assert.deepEqual(
      e.regionPanes.get(paneKey('r', T0))?.top.map((t) => t.deviceId),
      ['a', 'c'],
    );
    assert.equal(e.devicePanes.get(paneKey('u', T0))?.count, 1);
    assert.throws(
      () => expectedOutcome(messages, () => undefined, 2),
      /no publish time for message 3/,
    );
    assert.equal(windowStartOf(T0 + 59_999), T0);
  });
});

describe('telemetry simulator: checker', () => {
  const plan = planTelemetryRun({
    devices: 40,
    minutes: 2,
    readingsPerMinute: 1,
    seed: 3,
    nowMs: T0 + 200_000,
  });
  const ids = plan.messages.map((_, i) => `id-${i}`);
  const publishTime = (i: number) =>
    plan.messages[i]?.expect.kind === 'reading' ? T0 + 200_000 + i : undefined;
  const expected = expectedOutcome(plan.messages, publishTime, 10);
  const eventTimeOf = (i: number) => {
    const e = plan.messages[i]?.expect;
    return e?.kind === 'reading' ? (e.eventTsMs ?? publishTime(i)) : undefined;
  };
  const rules = { allowedLatenessMs: 600_000, maxOutOfOrdernessMs: 10_000, idleTimeoutMs: 60_000 };

  /** What a faithful pipeline writes for the plan. */
  function faithful(): Observed {
    return {
      silver: plan.messages.flatMap((m, i) =>
        m.expect.kind === 'reading'
          ? [
              {
                source_message_id: ids[i] as string,
                event_id: `e-${i}`,
                reference_status: m.expect.region === null ? 'UNKNOWN_DEVICE' : 'KNOWN',
                // In publish order, a few ms apart: the watermark follows the event times.
                ingestion_ms: T0 + 210_000 + i,
              },
            ]
          : [],
      ),
      deadLetter: plan.messages.flatMap((m, i) =>
        m.expect.kind === 'rejected'
          ? [{ source_message_id: ids[i] as string, stage: m.expect.stage }]
          : [],
      ),
      devicePanes: [...expected.devicePanes.values()].map((p) => ({
        device_id: p.deviceId,
        window_start_ms: p.windowStartMs,
        reading_count: p.count,
        temperature_avg_c: nanoToText(p.avgNano),
        temperature_min_c: nanoToText(p.minNano),
        temperature_max_c: `${nanoToText(p.maxNano)}${p.maxNano % 1_000_000_000n === 0n ? '.000000000' : ''}`,
        pane_timing: 'ON_TIME',
      })),
      regionPanes: [...expected.regionPanes.values()].map((p) => ({
        region: p.region,
        window_start_ms: p.windowStartMs,
        top_devices: p.top.map((t) => ({
          rank: t.rank,
          device_id: t.deviceId,
          max_temperature_c: nanoToText(t.maxNano),
        })),
      })),
    };
  }
  const check = (observed: Observed) =>
    checkTelemetryRun(plan.messages, ids, expected, observed, rules, eventTimeOf);

  it('passes a faithful outcome and counts it', () => {
    const result = check(faithful());
    assert.deepEqual(result.failures, []);
    assert.equal(result.summary.published, plan.messages.length);
    assert.equal(result.summary.inSilver + result.summary.inDeadLetter, plan.messages.length);
    assert.equal(result.summary.devicePanesMatching, expected.devicePanes.size);
    assert.equal(result.summary.regionPanesMatching, expected.regionPanes.size);
    assert.ok(result.summary.unknownDeviceReadings > 0);
  });

  it('names a lost message, a message in both tables, a wrong stage and duplicate rows', () => {
    const o = faithful();
    const silver = [...o.silver];
    const lost = silver.shift();
    const dup = silver[0];
    assert.ok(lost && dup);
    silver.push({ ...dup });
    const deadLetter = o.deadLetter.map((r, i) => (i === 0 ? { ...r, stage: 'PARSE_JSON_X' } : r));
    deadLetter.push({ source_message_id: dup.source_message_id, stage: 'PARSE_JSON' });
    const result = check({ ...o, silver, deadLetter });
    const text = result.failures.join('\n');
    assert.match(text, new RegExp(`message ${lost.source_message_id} .* is in neither`));
    assert.match(text, new RegExp(`message ${dup.source_message_id} .* is in both`));
    assert.match(text, /dead-lettered at PARSE_JSON_X, expected/);
    assert.equal(result.summary.silverDuplicateRows, 1);
  });

  it('names a pane with a wrong count, a missing pane, a wrong ranking and readings past the lateness', () => {
    const o = faithful();
    const [first, second, ...rest] = o.devicePanes;
    assert.ok(first && second);
    const region = o.regionPanes[0];
    assert.ok(region && region.top_devices.length >= 2);
    const swapped = [...region.top_devices].reverse().map((t, i) => ({ ...t, rank: i + 1 }));
    const result = check({
      ...o,
      silver: o.silver.map((r, i) => (i === 0 ? { ...r, ingestion_ms: T0 + 3_600_000 } : r)),
      devicePanes: [{ ...first, reading_count: first.reading_count + 1 }, ...rest],
      regionPanes: [{ ...region, top_devices: swapped }, ...o.regionPanes.slice(1)],
    });
    const text = result.failures.join('\n');
    assert.match(
      text,
      new RegExp(`device panes: device ${first.device_id} .*count ${first.reading_count + 1}`),
    );
    assert.match(text, new RegExp(`device panes: device ${second.device_id} .*no pane`));
    assert.match(text, new RegExp(`region top-N: region ${region.region} `));
    assert.match(
      text,
      /1 readings arrived when the watermark could already be past their window's end \+ 10 min/,
    );
    assert.equal(result.summary.devicePanesMatching, expected.devicePanes.size - 2);
  });
});

describe('telemetry simulator: watermark bound at arrival', () => {
  const rules = { allowedLatenessMs: 600_000, maxOutOfOrdernessMs: 10_000, idleTimeoutMs: 60_000 };

  it('follows the largest event time seen, ignores future-dated events, and glides on after the idle timeout', () => {
    const bounds = watermarkBoundsAtArrival(
      [
        { arrivedMs: 1_000_000, eventTimeMs: 500_000 },
        { arrivedMs: 1_000_100, eventTimeMs: 400_000 },
        // stamped ahead of its arrival: never moves the watermark
        { arrivedMs: 1_000_200, eventTimeMs: 2_000_000 },
        // 100 s later, no larger event time since 1_000_000: idle rule, 500_000 + 100 s - 60 s - 10 s
        { arrivedMs: 1_100_000, eventTimeMs: 450_000 },
      ],
      rules,
    );
    assert.deepEqual(bounds, [490_000, 490_000, 490_000, 530_000]);
  });
});
