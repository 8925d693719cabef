// Differential test (issue 9): the same scenarios through Apache Beam (Python DirectRunner, TestStream) and
// through the pure windowing core; any difference in panes fails with both pane lists side by side.
//
// Flags (environment variables):
//   OFFVIA_BEAM_SEED=<int>      seed of the generated scenarios (default DEFAULT_SEED)
//   OFFVIA_BEAM_RUNS=<int>      how many generated scenarios (default DEFAULT_RUNS; 0 for none)
//   OFFVIA_BEAM_SCENARIO=<id>   run only this scenario: hand/<name> or gen/<seed>/<n> (SEED and RUNS then
//                               ignored; the aggregate checks apply only to runs of >= FULL_RUN scenarios)
//   OFFVIA_BEAM_JOBS=<int>      Beam worker processes (default: min(2, CPUs))
import assert from 'node:assert/strict';

import {
  beamInstalled,
  runBeam,
  runCore,
  sideBySide,
  type BeamResult,
  type BeamRun,
  type PaneRecord,
  type Scenario,
} from './differential';
import { generateScenarios } from './generate';
import { runSessionStore } from './session-store-run';
import { EXCEPTION_SCENARIOS, HAND_WRITTEN_SCENARIOS, MATCHING_SCENARIOS } from './hand-written';

const DEFAULT_SEED = 20261007;
const DEFAULT_RUNS = 300;

/** Generated runs at least this large also check aggregates (panes per scenario, every kind of pane). */
const FULL_RUN = 100;

/** A flag's value: plain decimal digits only (`1e3`, `0x10`, `12.0` are refused). @throws Error otherwise */
function envInt(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value)) {
    throw new Error(
      `${name} must be a plain non-negative integer (digits only), got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

interface Selection {
  readonly hand: readonly Scenario[];
  readonly generated: readonly Scenario[];
  readonly seed: number;
  /** Set when OFFVIA_BEAM_SCENARIO chose one scenario: the flags it overrides, for the log line. */
  readonly note?: string;
}

/** The scenarios this run covers, from the flags. */
function select(): Selection {
  const runs = envInt('OFFVIA_BEAM_RUNS', DEFAULT_RUNS);
  const seedFlag = envInt('OFFVIA_BEAM_SEED', DEFAULT_SEED);
  const only = process.env.OFFVIA_BEAM_SCENARIO;
  if (only === undefined || only === '') {
    return {
      hand: HAND_WRITTEN_SCENARIOS,
      generated: generateScenarios(seedFlag, runs),
      seed: seedFlag,
    };
  }
  const ignored = ['OFFVIA_BEAM_SEED', 'OFFVIA_BEAM_RUNS'].filter((name) => process.env[name]);
  const note = `OFFVIA_BEAM_SCENARIO=${only}${ignored.length > 0 ? `; ${ignored.join(' and ')} ignored` : ''}`;
  const gen = /^gen\/(\d+)\/(\d+)$/.exec(only);
  if (gen) {
    const seed = Number(gen[1]);
    const n = Number(gen[2]);
    // fast-check's samples are a stream: the n-th does not depend on how many are drawn.
    const scenario = generateScenarios(seed, n + 1)[n];
    if (!scenario) throw new Error(`no generated scenario ${only}`);
    return { hand: [], generated: [scenario], seed, note };
  }
  const hand = HAND_WRITTEN_SCENARIOS.filter((s) => s.id === only);
  if (hand.length === 0) {
    throw new Error(
      `OFFVIA_BEAM_SCENARIO=${only}: no such scenario (hand-written: ${HAND_WRITTEN_SCENARIOS.map((s) => s.id).join(', ')}; generated: gen/<seed>/<n>, seed and n plain non-negative integers, e.g. gen/${DEFAULT_SEED}/0)`,
    );
  }
  return { hand, generated: [], seed: DEFAULT_SEED, note };
}

function describeScenario(scenario: Scenario): string {
  const { id, strategy, steps } = scenario;
  return `${id}${scenario.description ? ` (${scenario.description})` : ''}\n${JSON.stringify({ strategy, steps })}`;
}

/** Why Beam's and the core's answers for a scenario that must match differ; '' when they match. */
function mismatch(
  scenario: Scenario,
  beam: BeamResult | undefined,
  ours: readonly PaneRecord[],
): string {
  if (!beam) return `${scenario.id}: no result from Beam`;
  if ('error' in beam) return `${describeScenario(scenario)}\nBeam failed: ${beam.error}`;
  const table = sideBySide(beam.panes, ours);
  return table === '' ? '' : `${describeScenario(scenario)}\n${table}`;
}

describe('differential: the windowing core against Apache Beam (TestStream, Python DirectRunner)', function () {
  const selection = select();
  let beamRun: BeamRun;
  const beamById = new Map<string, BeamResult>();

  before(function () {
    if (!beamInstalled()) {
      if (process.env.CI)
        throw new Error('Beam venv missing: .ci/run must run test/beam/install.sh first');
      console.warn('    skipped: run `bash test/beam/install.sh` once to install Apache Beam');
      this.skip();
    }
    const started = Date.now();
    const jobs = envInt('OFFVIA_BEAM_JOBS', 0);
    beamRun = runBeam([...selection.hand, ...selection.generated], jobs || undefined);
    for (const result of beamRun.results) beamById.set(result.id, result);
    console.log(
      `    Beam ${beamRun.beamVersion}: ${beamRun.results.length} scenarios (${selection.hand.length} hand-written, ${selection.generated.length} generated, seed ${selection.seed}) in ${beamRun.pipelineRuns} pipeline runs, ${beamRun.seconds} s in Beam, ${((Date.now() - started) / 1000).toFixed(1)} s in all${selection.note ? ` (${selection.note})` : ''}`,
    );
  });

  describe('hand-written scenarios: identical panes', function () {
    for (const scenario of MATCHING_SCENARIOS.filter((s) => selection.hand.includes(s))) {
      it(`${scenario.id}: ${scenario.description ?? ''}`, function () {
        const ours = runCore(scenario);
        const beam = beamById.get(scenario.id);
        assert.ok(
          beam && !('error' in beam) && beam.panes.length > 0,
          `${scenario.id}: Beam emitted no pane`,
        );
        const why = mismatch(scenario, beam, ours);
        assert.equal(why, '', `panes differ (Beam | core):\n${why}`);
      });
    }
  });

  describe('documented exceptions: Beam and the core each give exactly the declared answer', function () {
    for (const scenario of EXCEPTION_SCENARIOS.filter((s) => selection.hand.includes(s))) {
      const exception = scenario.exception;
      if (!exception) throw new Error(`${scenario.id} is listed as an exception but declares none`);
      it(`${scenario.id}: divergence ${exception.divergence}: ${exception.reason}`, function () {
        const beam = beamById.get(scenario.id);
        assert.ok(beam, `${scenario.id}: no result from Beam`);
        const ours = runCore(scenario);
        assert.equal(
          sideBySide(ours, exception.ours, ['core', 'declared']),
          '',
          `${scenario.id}: the core no longer gives the declared panes`,
        );
        if (exception.beamError !== undefined) {
          assert.ok(
            'error' in beam,
            `${scenario.id}: Beam no longer fails: ${JSON.stringify(beam)}`,
          );
          assert.match(beam.error, new RegExp(exception.beamError));
          assert.equal(
            sideBySide(beam.panes, exception.beam ?? [], ['Beam', 'declared']),
            '',
            `${scenario.id}: Beam no longer emits the declared panes before failing`,
          );
        } else {
          assert.ok(
            !('error' in beam),
            `${scenario.id}: Beam failed: ${'error' in beam ? beam.error : ''}`,
          );
          const declared = exception.beam ?? [];
          assert.equal(
            sideBySide(beam.panes, declared, ['Beam', 'declared']),
            '',
            `${scenario.id}: Beam no longer gives the declared panes`,
          );
          assert.notEqual(
            sideBySide(beam.panes, ours),
            '',
            `${scenario.id}: Beam and the core now agree`,
          );
        }
      });
    }
  });

  describe('session scenarios through the keyed store (SessionWindows over the in-memory store): Beam’s panes', function () {
    const sessionScenarios = [...selection.hand, ...selection.generated].filter(
      (s) => s.strategy.windowFn.kind === 'sessions',
    );
    if (sessionScenarios.length === 0) return;
    it(`${sessionScenarios.length} session scenarios, each element also redelivered`, async function () {
      const failures: string[] = [];
      for (const scenario of sessionScenarios) {
        const { panes } = await runSessionStore(scenario, { redeliver: () => true });
        // A documented divergence: the store must give the core's declared answer; otherwise Beam's.
        const why =
          scenario.exception === undefined
            ? mismatch(scenario, beamById.get(scenario.id), panes)
            : sideBySide(panes, scenario.exception.ours, ['store', 'declared']);
        if (why !== '') failures.push(`${scenario.id}\n${why}`);
      }
      assert.equal(
        failures.length,
        0,
        `${failures.length} of ${sessionScenarios.length} session scenarios differ through the store:\n\n${failures.slice(0, 5).join('\n\n')}`,
      );
    });
  });

  describe('generated scenarios (fast-check): identical panes', function () {
    if (selection.generated.length === 0) return;
    it(`${selection.generated.length} scenarios from seed ${selection.seed}`, function () {
      const failures: string[] = [];
      let panes = 0;
      for (const scenario of selection.generated) {
        const ours = runCore(scenario);
        panes += ours.length;
        const why = mismatch(scenario, beamById.get(scenario.id), ours);
        if (why !== '') failures.push(why);
      }
      const rerun = 'rerun one with OFFVIA_BEAM_SCENARIO=<id>';
      assert.equal(
        failures.length,
        0,
        `${failures.length} of ${selection.generated.length} generated scenarios differ (${rerun}):\n\n${failures.slice(0, 10).join('\n\n')}`,
      );
      if (selection.generated.length >= FULL_RUN) {
        // A full run must produce panes and exercise every kind of pane, or it proves less than it claims. A
        // single scenario (OFFVIA_BEAM_SCENARIO) or a short run may rightly have none: every element can be
        // past the allowed lateness.
        assert.ok(
          panes > selection.generated.length,
          `only ${panes} panes in ${selection.generated.length} scenarios`,
        );
        const seen = new Set(
          selection.generated.flatMap((s) => {
            const beam = beamById.get(s.id);
            return beam && !('error' in beam)
              ? beam.panes.map((p) => `${p.timing}${p.isLast ? ' last' : ''}`)
              : [];
          }),
        );
        for (const kind of ['EARLY', 'ON_TIME', 'ON_TIME last', 'LATE']) {
          assert.ok(
            seen.has(kind),
            `no ${kind} pane in ${selection.generated.length} generated scenarios`,
          );
        }
      }
    });
  });
});

describe('differential: the pane comparison itself', function () {
  const pane: PaneRecord = {
    key: 'k',
    startMs: 0,
    endMs: 60_000,
    values: [1],
    timing: 'ON_TIME',
    index: 0,
    onTimeIndex: 0,
    isFirst: true,
    isLast: false,
  };

  it('finds a pane that differs in one field, and a missing pane, and shows both lists', function () {
    assert.equal(sideBySide([pane], [pane]), '');
    const table = sideBySide([pane], [{ ...pane, isLast: true }]);
    assert.match(table, /^! .*ON_TIME \[1\] first +\| .*ON_TIME \[1\] first,last$/m);
    assert.match(
      sideBySide([pane, { ...pane, index: 1, isFirst: false }], [pane]),
      /^! .*#1\/0.*\| —$/m,
    );
  });

  it('draws the same generated scenario for an id however many are drawn (OFFVIA_BEAM_SCENARIO=gen/...)', function () {
    const few = generateScenarios(7, 4);
    const many = generateScenarios(7, 50);
    assert.deepEqual(few, many.slice(0, 4));
    assert.equal(few[3]?.id, 'gen/7/3');
    assert.notDeepEqual(generateScenarios(8, 4), few);
    const [fromFew, fromMany] = [few[3], many[3]];
    assert.ok(fromFew && fromMany);
    assert.deepEqual(runCore(fromMany), runCore(fromFew));
  });
});
