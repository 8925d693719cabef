// Pure accounting of the reliability harness: where each published message ended, what was lost or duplicated, and
// whether the aggregates counted each valid event once. Takes what the harness read from the layers; no I/O.
import type { Expectation } from './scenarios';

/** A published message and what it must become. */
export interface PublishedMessage {
  messageId: string;
  expectation: Expectation;
}

/** What the harness read back for one scenario, keyed by message id or event id. */
export interface Observed {
  /** Message ids in Bronze. */
  bronze: ReadonlySet<string>;
  /** Silver (the table, not the view): source message id → event id of each row (one entry per row). */
  silverRows: readonly { messageId: string; eventId: string }[];
  /** Rows per event id in the dedup view `fact_bookings_dedup`, for this scenario's event ids. */
  dedupViewRowsPerEvent: ReadonlyMap<string, number>;
  /** Quarantine rows' source message ids (one entry per row). */
  quarantine: readonly string[];
  /** Schema-retry store: source message ids of waiting rows. */
  retryStore: readonly string[];
  /** bad_data rows' source message ids. */
  badData: readonly string[];
  /** Dedup ledger: event id → `counted` | `dropped` (too late), for the scenario's valid events. */
  ledger: ReadonlyMap<string, string>;
  /** Gold: booking_count of the latest pane per `routeKey|windowStartMs`, for the scenario's route keys. */
  goldCounts: ReadonlyMap<string, number>;
}

/** One line of the report. */
export interface ScenarioReport {
  scenario: string;
  /** Messages published (re-published copies included). */
  published: number;
  /** Distinct valid events among them. */
  validEvents: number;
  bronze: number;
  /** Messages whose event is in Silver (by their own row or, for a re-published copy, by their event's row). */
  silver: number;
  quarantine: number;
  retryStore: number;
  badData: number;
  /** Messages in none of Silver, quarantine, the retry store or bad data, or missing from Bronze. */
  lost: number;
  /** Messages in more than one of those places. */
  inSeveralPlaces: number;
  /** Event ids with more than one row in the dedup view. */
  duplicatedInDedupView: number;
  /** Silver table rows beyond one per event (the emulator keeps insertId duplicates; the view hides them). */
  silverDuplicateRows: number;
  /** Valid events counted in the aggregates, per the ledger. */
  counted: number;
  /** Valid events left out of the aggregates as too late (ledger `dropped`; still in Silver). */
  droppedLate: number;
  /** Σ over (route, window) of gold's latest count above the distinct counted events. */
  doubleCounted: number;
  /** Valid events neither counted nor dropped, plus Σ of gold below the distinct counted events. */
  missingFromAggregates: number;
  /** Quarantined messages whose stage differs from the contract's. */
  wrongStage: number;
}

/** Window start of an event time for fixed windows of `windowSizeMs` (offset 0), epoch ms. */
function windowStart(eventTimeMs: number, windowSizeMs: number): number {
  return eventTimeMs - (((eventTimeMs % windowSizeMs) + windowSizeMs) % windowSizeMs);
}

/**
 * Accounts one scenario. Every published message must be in Bronze and in exactly one of Silver, quarantine, the
 * schema-retry store or bad data (a re-published copy of an event counts as in Silver when its event is); the
 * dedup view must hold one row per event; each valid event must be counted once or dropped as too late, and gold's
 * latest pane per (route, window) must equal the events counted there. `windowSizeMs`: the pipeline's fixed window.
 */
export function accountScenario(
  scenario: string,
  published: readonly PublishedMessage[],
  observed: Observed,
  windowSizeMs: number,
  quarantineStages: ReadonlyMap<string, string> = new Map(),
): ScenarioReport {
  const silverByMessage = new Set(observed.silverRows.map((r) => r.messageId));
  const silverEvents = new Set(observed.silverRows.map((r) => r.eventId));
  const quarantine = new Set(observed.quarantine);
  const retry = new Set(observed.retryStore);
  const bad = new Set(observed.badData);
  const report: ScenarioReport = {
    scenario,
    published: published.length,
    validEvents: 0,
    bronze: 0,
    silver: 0,
    quarantine: 0,
    retryStore: 0,
    badData: 0,
    lost: 0,
    inSeveralPlaces: 0,
    duplicatedInDedupView: 0,
    silverDuplicateRows: 0,
    counted: 0,
    droppedLate: 0,
    doubleCounted: 0,
    missingFromAggregates: 0,
    wrongStage: 0,
  };
  const validEvents = new Map<string, Expectation & { kind: 'valid' }>();
  for (const m of published) {
    const e = m.expectation;
    if (observed.bronze.has(m.messageId)) report.bronze++;
    const inSilver =
      silverByMessage.has(m.messageId) || (e.kind === 'valid' && silverEvents.has(e.eventId));
    const places = [
      inSilver,
      quarantine.has(m.messageId),
      retry.has(m.messageId) && !inSilver,
      bad.has(m.messageId),
    ];
    if (places[0]) report.silver++;
    if (places[1]) report.quarantine++;
    if (places[2]) report.retryStore++;
    if (places[3]) report.badData++;
    const where = places.filter(Boolean).length;
    if (where === 0 || !observed.bronze.has(m.messageId)) report.lost++;
    if (where > 1) report.inSeveralPlaces++;
    if (e.kind === 'valid') validEvents.set(e.eventId, e);
    else if (places[1] && quarantineStages.get(m.messageId) !== e.stage) report.wrongStage++;
  }
  report.validEvents = validEvents.size;
  for (const n of observed.dedupViewRowsPerEvent.values())
    if (n > 1) report.duplicatedInDedupView++;
  report.silverDuplicateRows = observed.silverRows.length - silverEvents.size;

  const countedPerWindow = new Map<string, number>();
  for (const [eventId, e] of validEvents) {
    const outcome = observed.ledger.get(eventId);
    if (outcome === 'counted') {
      report.counted++;
      const key = `${e.routeKey}|${windowStart(e.eventTimeMs, windowSizeMs)}`;
      countedPerWindow.set(key, (countedPerWindow.get(key) ?? 0) + 1);
    } else if (outcome === 'dropped') report.droppedLate++;
    else report.missingFromAggregates++;
  }
  const keys = new Set([...countedPerWindow.keys(), ...observed.goldCounts.keys()]);
  for (const key of keys) {
    const gold = observed.goldCounts.get(key) ?? 0;
    const expected = countedPerWindow.get(key) ?? 0;
    if (gold > expected) report.doubleCounted += gold - expected;
    else report.missingFromAggregates += expected - gold;
  }
  return report;
}

/** The report as an aligned text table, one row per scenario. */
export function formatReport(reports: readonly ScenarioReport[]): string {
  const columns: [keyof ScenarioReport, string][] = [
    ['scenario', 'scenario'],
    ['published', 'published'],
    ['validEvents', 'valid events'],
    ['bronze', 'Bronze'],
    ['silver', 'Silver'],
    ['quarantine', 'quarantine'],
    ['retryStore', 'retry store'],
    ['badData', 'bad data'],
    ['lost', 'LOST'],
    ['inSeveralPlaces', 'in >1 place'],
    ['duplicatedInDedupView', 'dup in dedup view'],
    ['silverDuplicateRows', 'Silver dup rows (hidden by view)'],
    ['counted', 'agg counted'],
    ['droppedLate', 'agg dropped late'],
    ['doubleCounted', 'DOUBLE-COUNTED'],
    ['missingFromAggregates', 'agg missing'],
    ['wrongStage', 'wrong stage'],
  ];
  const cells = reports.map((r) => columns.map(([key]) => String(r[key])));
  const widths = columns.map(([, title], i) =>
    Math.max(title.length, ...cells.map((c) => (c[i] ?? '').length)),
  );
  const line = (values: readonly string[]): string =>
    '| ' + values.map((v, i) => v.padEnd(widths[i] ?? 0)).join(' | ') + ' |';
  return [
    line(columns.map(([, title]) => title)),
    '|-' + widths.map((w) => '-'.repeat(w)).join('-|-') + '-|',
    ...cells.map(line),
  ].join('\n');
}
