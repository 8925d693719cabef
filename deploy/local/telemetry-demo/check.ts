// The telemetry simulator's checker: what the stack wrote (Silver, the dead-letter table, the latest gold panes)
// against the plan and the independent computation. Pure: the rows are read elsewhere (run.ts).
import {
  nanoToText,
  numericToNano,
  paneKey,
  WINDOW_MS,
  windowStartOf,
  type ExpectedOutcome,
} from './expected';
import type { PlannedMessage } from './plan';

/** A Silver row as the checker reads it (`offvia_telemetry_silver.readings`). */
export interface ObservedSilverRow {
  readonly source_message_id: string;
  readonly event_id: string;
  readonly reference_status: string;
  /** `ingestion_timestamp`, epoch ms. */
  readonly ingestion_ms: number;
}

/** A dead-letter row as the checker reads it (`offvia_telemetry_quarantine.dead_letter`). */
export interface ObservedDeadLetterRow {
  readonly source_message_id: string;
  readonly stage: string;
}

/** The latest pane of a (device, window) in `device_minute_panes`; NUMERICs as text. */
export interface ObservedDevicePane {
  readonly device_id: string;
  readonly window_start_ms: number;
  readonly reading_count: number;
  readonly temperature_avg_c: string | null;
  readonly temperature_min_c: string | null;
  readonly temperature_max_c: string | null;
  readonly pane_timing: string;
}

/** The latest pane of a (region, window) in `region_top_devices`. */
export interface ObservedRegionPane {
  readonly region: string;
  readonly window_start_ms: number;
  readonly top_devices: readonly {
    readonly rank: number;
    readonly device_id: string;
    readonly max_temperature_c: string;
  }[];
}

/** Everything the checker reads back for a run. */
export type Observed = Readonly<{
  silver: readonly ObservedSilverRow[];
  deadLetter: readonly ObservedDeadLetterRow[];
  devicePanes: readonly ObservedDevicePane[];
  regionPanes: readonly ObservedRegionPane[];
}>;

/** The counts the summary table prints. */
export type CheckSummary = Readonly<{
  published: number;
  expectedSilver: number;
  inSilver: number;
  expectedDeadLetter: number;
  inDeadLetter: number;
  /** Dead-lettered messages per stage (observed). */
  deadLetterByStage: Readonly<Record<string, number>>;
  /** Silver rows beyond the first per message (a retried insert; readers use readings_dedup). */
  silverDuplicateRows: number;
  unknownDeviceReadings: number;
  devicePanesExpected: number;
  devicePanesMatching: number;
  regionPanesExpected: number;
  regionPanesMatching: number;
  /** Device panes whose latest pane is ON_TIME or LATE (the watermark passed the window). */
  devicePanesClosed: number;
  /** Readings that arrived when the watermark could be past their window's end + allowed lateness (may be dropped). */
  readingsPastLateness: number;
}>;

/** The rules that decide whether a reading can be dropped as late: the strategy's and the watermark policy's. */
export interface LatenessRules {
  readonly allowedLatenessMs: number;
  readonly maxOutOfOrdernessMs: number;
  readonly idleTimeoutMs: number;
}

/** One accepted reading as the pipeline saw it: when it arrived (Silver's ingestion time) and its event time, ms. */
export interface Arrival {
  readonly arrivedMs: number;
  readonly eventTimeMs: number;
}

/**
 * For each arrival (same order), an upper bound of the watermark when it arrived, by shared/windowing/
 * watermark-policy.ts: the largest past event time seen minus the out-of-orderness bound, or the idle rule once that
 * time is `idleTimeoutMs` old. Same-millisecond arrivals count as seen (the bound errs high); a kept stack's earlier
 * watermark is not known here.
 */
export function watermarkBoundsAtArrival(
  arrivals: readonly Arrival[],
  rules: LatenessRules,
): number[] {
  const at = (i: number) => arrivals[i] as Arrival;
  const order = arrivals.map((_, i) => i).sort((a, b) => at(a).arrivedMs - at(b).arrivedMs);
  const bounds = new Array<number>(arrivals.length).fill(-Infinity);
  let max = -Infinity;
  let seenAt = -Infinity;
  let k = 0;
  while (k < order.length) {
    const t = at(order[k] as number).arrivedMs;
    let j = k;
    // Everything that arrived at t is seen by the bound at t.
    while (j < order.length && at(order[j] as number).arrivedMs === t) {
      const a = at(order[j] as number);
      if (a.eventTimeMs <= a.arrivedMs && a.eventTimeMs > max) {
        max = a.eventTimeMs;
        seenAt = a.arrivedMs;
      }
      j++;
    }
    let bound = max - rules.maxOutOfOrdernessMs;
    if (t - seenAt >= rules.idleTimeoutMs) {
      bound = Math.max(
        bound,
        t - rules.idleTimeoutMs - rules.maxOutOfOrdernessMs + Math.min(0, max - seenAt),
      );
    }
    for (let x = k; x < j; x++) bounds[order[x] as number] = bound;
    k = j;
  }
  return bounds;
}

/** The checker's verdict: failures (empty when the run passed) and the counts. */
export interface CheckResult {
  readonly failures: readonly string[];
  readonly summary: CheckSummary;
}

/** Details listed per kind of failure before the rest is only counted. */
const DETAILS_PER_KIND = 10;

/** Collects failures by kind, keeping the first few of each and counting the rest. */
class Failures {
  private readonly kinds = new Map<string, { shown: string[]; count: number }>();

  add(kind: string, detail: string): void {
    const entry = this.kinds.get(kind) ?? { shown: [], count: 0 };
    this.kinds.set(kind, entry);
    entry.count++;
    if (entry.shown.length < DETAILS_PER_KIND) entry.shown.push(detail);
  }

  list(): string[] {
    const out: string[] = [];
    for (const [kind, { shown, count }] of this.kinds) {
      out.push(...shown.map((d) => `${kind}: ${d}`));
      if (count > shown.length) out.push(`${kind}: … ${count - shown.length} more`);
    }
    return out;
  }
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) {
    const list = map.get(key(item)) ?? [];
    list.push(item);
    map.set(key(item), list);
  }
  return map;
}

function nanoOrNull(text: string | null): bigint | null {
  return text === null ? null : numericToNano(text);
}

/**
 * Checks a run: every message in exactly one of Silver (once per event id, enriched `KNOWN` or `UNKNOWN_DEVICE`) or
 * the dead-letter table at its stage, as planned; every expected device pane and regional top-N, and no other; no
 * reading arrived when the watermark could be past its window's end + `allowedLatenessMs`. `messageIds[i]` is the
 * message id of `messages[i]`; `eventTimeOf(i)` its event time (`eventTs`, else the publish time), ms.
 */
export function checkTelemetryRun(
  messages: readonly PlannedMessage[],
  messageIds: readonly string[],
  expected: ExpectedOutcome,
  observed: Observed,
  lateness: LatenessRules,
  eventTimeOf: (index: number) => number | undefined,
): CheckResult {
  const { allowedLatenessMs } = lateness;
  const failures = new Failures();
  if (messageIds.length !== messages.length) {
    failures.add('publish', `${messageIds.length} message ids for ${messages.length} messages`);
  }
  const silverById = countBy(observed.silver, (r) => r.source_message_id);
  const deadById = countBy(observed.deadLetter, (r) => r.source_message_id);
  const published = new Set(messageIds);
  let expectedSilver = 0;
  let inSilver = 0;
  let silverDuplicateRows = 0;
  let unknownDeviceReadings = 0;
  const arrivals: Arrival[] = [];

  messages.forEach((m, i) => {
    const id = messageIds[i] as string;
    const silver = silverById.get(id) ?? [];
    const dead = deadById.get(id) ?? [];
    const eventIds = new Set(silver.map((r) => r.event_id));
    if (silver.length > 0) inSilver++;
    silverDuplicateRows += silver.length - eventIds.size;
    const where = `message ${id} (device ${m.expect.deviceId}, ${m.expect.kind === 'reading' ? 'reading' : m.expect.fault})`;
    if (m.expect.kind === 'reading') expectedSilver++;
    if (eventIds.size > 1)
      failures.add('routing', `${where} has ${eventIds.size} event ids in Silver`);
    if (silver.length > 0 && dead.length > 0) {
      failures.add('routing', `${where} is in both Silver and the dead-letter table`);
      return;
    }
    if (silver.length === 0 && dead.length === 0) {
      failures.add('routing', `${where} is in neither Silver nor the dead-letter table`);
      return;
    }
    if (m.expect.kind === 'reading') {
      if (silver.length === 0) {
        failures.add('routing', `${where} was dead-lettered at ${dead[0]?.stage}, expected Silver`);
        return;
      }
      const status = silver[0]?.reference_status;
      const wanted = m.expect.region === null ? 'UNKNOWN_DEVICE' : 'KNOWN';
      if (status !== wanted)
        failures.add('enrichment', `${where}: reference_status ${status}, expected ${wanted}`);
      if (m.expect.region === null) unknownDeviceReadings++;
      const eventTimeMs = eventTimeOf(i);
      if (eventTimeMs !== undefined) {
        arrivals.push({ arrivedMs: Math.min(...silver.map((r) => r.ingestion_ms)), eventTimeMs });
      }
    } else {
      if (dead.length === 0) {
        failures.add(
          'routing',
          `${where} reached Silver, expected dead letter at ${m.expect.stage}`,
        );
        return;
      }
      const stages = [...new Set(dead.map((r) => r.stage))];
      if (stages.length !== 1 || stages[0] !== m.expect.stage) {
        failures.add(
          'routing',
          `${where} dead-lettered at ${stages.join(', ')}, expected ${m.expect.stage}`,
        );
      }
    }
  });
  const strays = [...silverById.keys(), ...deadById.keys()].filter((id) => !published.has(id));
  if (strays.length > 0) {
    failures.add(
      'routing',
      `${strays.length} rows of messages this run did not publish (another run on this stack?)`,
    );
  }
  const bounds = watermarkBoundsAtArrival(arrivals, lateness);
  const readingsPastLateness = arrivals.filter(
    (a, i) => (bounds[i] as number) >= windowStartOf(a.eventTimeMs) + WINDOW_MS + allowedLatenessMs,
  ).length;
  if (readingsPastLateness > 0) {
    failures.add(
      'lateness',
      `${readingsPastLateness} readings arrived when the watermark could already be past their window's end + ` +
        `${allowedLatenessMs / 60_000} min of allowed lateness, so the pipeline may have dropped them as late ` +
        '(the stream is planned so none is: a stall of the stack let the idle rule move the watermark on)',
    );
  }

  // Device panes: the latest pane of each expected (device, window).
  const deviceObserved = new Map(
    observed.devicePanes.map((p) => [paneKey(p.device_id, p.window_start_ms), p]),
  );
  let devicePanesMatching = 0;
  let devicePanesClosed = 0;
  for (const [key, e] of expected.devicePanes) {
    const o = deviceObserved.get(key);
    const where = `device ${e.deviceId} window ${new Date(e.windowStartMs).toISOString()}`;
    if (o === undefined) {
      failures.add('device panes', `${where}: no pane, expected count ${e.count}`);
      continue;
    }
    if (o.pane_timing !== 'EARLY') devicePanesClosed++;
    const got = {
      count: o.reading_count,
      avg: nanoOrNull(o.temperature_avg_c),
      min: nanoOrNull(o.temperature_min_c),
      max: nanoOrNull(o.temperature_max_c),
    };
    if (
      got.count !== e.count ||
      got.avg !== e.avgNano ||
      got.min !== e.minNano ||
      got.max !== e.maxNano
    ) {
      failures.add(
        'device panes',
        `${where}: latest pane (${o.pane_timing}) count ${got.count} avg ${o.temperature_avg_c} min ` +
          `${o.temperature_min_c} max ${o.temperature_max_c}, expected count ${e.count} avg ` +
          `${nanoToText(e.avgNano)} min ${nanoToText(e.minNano)} max ${nanoToText(e.maxNano)}`,
      );
    } else {
      devicePanesMatching++;
    }
  }
  for (const [key, o] of deviceObserved) {
    if (!expected.devicePanes.has(key)) {
      failures.add(
        'device panes',
        `device ${o.device_id} window ${new Date(o.window_start_ms).toISOString()}: unexpected pane (count ${o.reading_count})`,
      );
    }
  }

  // Regional rankings.
  const regionObserved = new Map(
    observed.regionPanes.map((p) => [paneKey(p.region, p.window_start_ms), p]),
  );
  let regionPanesMatching = 0;
  const show = (top: readonly { deviceId: string; max: string }[]) =>
    top.map((t) => `${t.deviceId}=${t.max}`).join(' ');
  for (const [key, e] of expected.regionPanes) {
    const o = regionObserved.get(key);
    const where = `region ${e.region} window ${new Date(e.windowStartMs).toISOString()}`;
    if (o === undefined) {
      failures.add('region top-N', `${where}: no ranking`);
      continue;
    }
    const got = [...o.top_devices].sort((a, b) => a.rank - b.rank);
    const same =
      got.length === e.top.length &&
      got.every(
        (g, i) =>
          g.rank === e.top[i]?.rank &&
          g.device_id === e.top[i]?.deviceId &&
          numericToNano(g.max_temperature_c) === e.top[i]?.maxNano,
      );
    if (same) regionPanesMatching++;
    else {
      failures.add(
        'region top-N',
        `${where}: got ${show(got.map((g) => ({ deviceId: g.device_id, max: g.max_temperature_c })))}; expected ` +
          show(e.top.map((t) => ({ deviceId: t.deviceId, max: nanoToText(t.maxNano) }))),
      );
    }
  }
  for (const [key, o] of regionObserved) {
    if (!expected.regionPanes.has(key)) {
      failures.add(
        'region top-N',
        `region ${o.region} window ${new Date(o.window_start_ms).toISOString()}: unexpected ranking`,
      );
    }
  }

  const deadLetterByStage: Record<string, number> = {};
  for (const [, rows] of deadById) {
    const stage = rows[0]?.stage ?? '?';
    deadLetterByStage[stage] = (deadLetterByStage[stage] ?? 0) + 1;
  }
  const expectedDeadLetter = messages.length - expectedSilver;
  return {
    failures: failures.list(),
    summary: {
      published: messageIds.length,
      expectedSilver,
      inSilver,
      expectedDeadLetter,
      inDeadLetter: deadById.size,
      deadLetterByStage,
      silverDuplicateRows,
      unknownDeviceReadings,
      devicePanesExpected: expected.devicePanes.size,
      devicePanesMatching,
      regionPanesExpected: expected.regionPanes.size,
      regionPanesMatching,
      devicePanesClosed,
      readingsPastLateness,
    },
  };
}
