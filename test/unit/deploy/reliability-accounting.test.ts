// The reliability harness's accounting: lost, misplaced, duplicated and double-counted messages are each detected.
import assert from 'node:assert/strict';
import {
  accountScenario,
  formatReport,
  type Observed,
  type PublishedMessage,
} from '../../../deploy/local/reliability/accounting';
import { planEvent, SCENARIOS } from '../../../deploy/local/reliability/scenarios';

const WINDOW_MS = 60_000;
const T0 = Date.parse('2026-11-29T12:00:10Z');
const W0 = Date.parse('2026-11-29T12:00:00Z');

function valid(messageId: string, eventId: string, routeKey = 'JFK-LHR-RLA'): PublishedMessage {
  return {
    messageId,
    expectation: { kind: 'valid', eventId, eventTimeMs: T0, routeKey, drift: false },
  };
}

/** Observations where every message landed once and every event was counted once. */
function clean(published: readonly PublishedMessage[]): Observed {
  const silverRows: { messageId: string; eventId: string }[] = [];
  const quarantine: string[] = [];
  const ledger = new Map<string, string>();
  const gold = new Map<string, number>();
  const seen = new Set<string>();
  for (const m of published) {
    const e = m.expectation;
    if (e.kind === 'invalid') {
      quarantine.push(m.messageId);
      continue;
    }
    if (seen.has(e.eventId)) continue;
    seen.add(e.eventId);
    silverRows.push({ messageId: m.messageId, eventId: e.eventId });
    ledger.set(e.eventId, 'counted');
    const key = `${e.routeKey}|${W0}`;
    gold.set(key, (gold.get(key) ?? 0) + 1);
  }
  return {
    bronze: new Set(published.map((m) => m.messageId)),
    silverRows,
    dedupViewRowsPerEvent: new Map(silverRows.map((r) => [r.eventId, 1])),
    quarantine,
    retryStore: [],
    badData: [],
    ledger,
    goldCounts: gold,
  };
}

const PUBLISHED: PublishedMessage[] = [
  valid('1', 'e1'),
  valid('2', 'e2'),
  valid('3', 'e1'), // a producer retry of e1 with a new message id
  { messageId: '4', expectation: { kind: 'invalid', stage: 'PARSE_JSON' } },
];
const STAGES = new Map([['4', 'PARSE_JSON']]);

describe('reliability harness accounting', () => {
  it('a clean run: every message placed once, the re-published copy counted in Silver through its event', () => {
    const r = accountScenario('s', PUBLISHED, clean(PUBLISHED), WINDOW_MS, STAGES);
    assert.deepEqual(
      [r.published, r.validEvents, r.silver, r.quarantine, r.lost, r.inSeveralPlaces, r.counted],
      [4, 2, 3, 1, 0, 0, 2],
    );
    assert.deepEqual([r.doubleCounted, r.missingFromAggregates, r.wrongStage], [0, 0, 0]);
  });

  it('a message in no layer, or missing from Bronze, is lost', () => {
    const o = clean(PUBLISHED);
    const noQuarantine = { ...o, quarantine: [] };
    assert.equal(accountScenario('s', PUBLISHED, noQuarantine, WINDOW_MS, STAGES).lost, 1);
    const noBronze = { ...o, bronze: new Set(['1', '2', '3']) };
    assert.equal(accountScenario('s', PUBLISHED, noBronze, WINDOW_MS, STAGES).lost, 1);
  });

  it('a message both in Silver and in bad data is in several places', () => {
    const o = { ...clean(PUBLISHED), badData: ['2'] };
    const r = accountScenario('s', PUBLISHED, o, WINDOW_MS, STAGES);
    assert.equal(r.inSeveralPlaces, 1);
    assert.equal(r.badData, 1);
  });

  it('a waiting retry-store row counts there until its event is in Silver', () => {
    const o = clean(PUBLISHED);
    const waiting = {
      ...o,
      silverRows: o.silverRows.filter((r) => r.eventId !== 'e2'),
      retryStore: ['2'],
    };
    const r = accountScenario('s', PUBLISHED, waiting, WINDOW_MS, STAGES);
    assert.deepEqual([r.retryStore, r.lost, r.inSeveralPlaces], [1, 0, 0]);
    const both = { ...o, retryStore: ['2'] }; // swept into Silver, store row not yet deleted
    assert.equal(accountScenario('s', PUBLISHED, both, WINDOW_MS, STAGES).retryStore, 0);
  });

  it('detects duplicates in the dedup view and counts duplicate Silver rows separately', () => {
    const o = clean(PUBLISHED);
    const dup = {
      ...o,
      silverRows: [...o.silverRows, { messageId: '3', eventId: 'e1' }],
      dedupViewRowsPerEvent: new Map([
        ['e1', 2],
        ['e2', 1],
      ]),
    };
    const r = accountScenario('s', PUBLISHED, dup, WINDOW_MS, STAGES);
    assert.equal(r.duplicatedInDedupView, 1);
    assert.equal(r.silverDuplicateRows, 1);
  });

  it('gold above the distinct counted events is double-counting; below it, or no ledger entry, is missing', () => {
    const o = clean(PUBLISHED);
    const key = `JFK-LHR-RLA|${W0}`;
    const over = { ...o, goldCounts: new Map([[key, 3]]) };
    assert.equal(accountScenario('s', PUBLISHED, over, WINDOW_MS, STAGES).doubleCounted, 1);
    const under = { ...o, goldCounts: new Map([[key, 1]]) };
    assert.equal(
      accountScenario('s', PUBLISHED, under, WINDOW_MS, STAGES).missingFromAggregates,
      1,
    );
    const noLedger = {
      ...o,
      ledger: new Map([['e1', 'counted']]),
      goldCounts: new Map([[key, 1]]),
    };
    const r = accountScenario('s', PUBLISHED, noLedger, WINDOW_MS, STAGES);
    assert.deepEqual([r.missingFromAggregates, r.doubleCounted], [1, 0]);
  });

  it('an event dropped as too late is reported as such, not as missing', () => {
    const o = clean(PUBLISHED);
    const key = `JFK-LHR-RLA|${W0}`;
    const late = {
      ...o,
      ledger: new Map([
        ['e1', 'counted'],
        ['e2', 'dropped'],
      ]),
      goldCounts: new Map([[key, 1]]),
    };
    const r = accountScenario('s', PUBLISHED, late, WINDOW_MS, STAGES);
    assert.deepEqual([r.droppedLate, r.missingFromAggregates, r.doubleCounted], [1, 0, 0]);
  });

  it('a quarantined message at another stage than the contract says is reported', () => {
    const r = accountScenario(
      's',
      PUBLISHED,
      clean(PUBLISHED),
      WINDOW_MS,
      new Map([['4', 'SCHEMA_VALIDATION']]),
    );
    assert.equal(r.wrongStage, 1);
  });

  it('the planned stream: the contract decides each expectation; a seed gives the same stream', () => {
    const scenario = SCENARIOS[0];
    assert.ok(scenario);
    const plans = Array.from({ length: 400 }, (_, i) => planEvent(scenario, 'abc', i, T0, 6));
    const again = Array.from({ length: 400 }, (_, i) => planEvent(scenario, 'abc', i, T0, 6));
    assert.deepEqual(plans, again);
    const invalid = plans.filter((p) => p.expectation.kind === 'invalid');
    const stages = new Set(
      invalid.map((p) => (p.expectation.kind === 'invalid' ? p.expectation.stage : '')),
    );
    assert.ok(invalid.length > 10 && invalid.length < 80, `${invalid.length} invalid of 400`);
    assert.equal(stages.size, 4, [...stages].join());
    for (const p of plans) {
      if (p.expectation.kind === 'valid')
        assert.match(p.expectation.routeKey, /^[A-Z]{3}-[A-Z]{3}-RLA$/);
    }
  });

  it('formats one row per scenario under a header', () => {
    const r = accountScenario('redelivery', PUBLISHED, clean(PUBLISHED), WINDOW_MS, STAGES);
    const lines = formatReport([r]).split('\n');
    assert.equal(lines.length, 3);
    assert.match(lines[0] ?? '', /\| scenario +\| published/);
    assert.match(lines[2] ?? '', /^\| redelivery +\| 4 /);
  });
});
