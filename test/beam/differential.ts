// The differential test's machinery: scenarios, running one through the windowing core, running many through
// Apache Beam (test/beam/reference_runner.py on the Python DirectRunner), and comparing their panes.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import {
  createReduceFnRunner,
  MAX_WATERMARK_MS,
  type CombineFn,
  type Pane,
  type PaneTiming,
  type WindowingStrategy,
} from '../../shared/windowing';
import { runTestStream, type TestStreamEvent } from '../support/test-stream';

/**
 * The scenario's epoch: 2026-10-07T00:00:00Z in ms UTC (whole days, like the Python runner's slots, so window
 * grids line up identically). Scenario times are ms relative to it.
 */
export const SCENARIO_EPOCH_MS = Date.parse('2026-10-07T00:00:00Z');
/** Processing time advanced at the end of every scenario on both sides (reference_runner.py, same value). */
export const FINAL_PROCESSING_TIME_ADVANCE_MS = 3_600_000;
/** Scenario times must stay below this (half of reference_runner.py's one-day slot). */
export const SCENARIO_TIME_LIMIT_MS = 43_200_000;

/** One step, times in ms relative to `SCENARIO_EPOCH_MS`; the shape of `TestStreamEvent<number>`. */
export type ScenarioStep = TestStreamEvent<number>;

/**
 * A pane as both sides report it: window bounds in ms relative to `SCENARIO_EPOCH_MS`, values sorted
 * ascending, `onTimeIndex` = Beam's `nonspeculative_index`.
 */
export interface PaneRecord {
  readonly key: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly values: readonly number[];
  readonly timing: PaneTiming;
  readonly index: number;
  readonly onTimeIndex: number;
  readonly isFirst: boolean;
  readonly isLast: boolean;
}

/**
 * A documented, deliberate difference from Python's DirectRunner (shared/windowing/README.md, "Divergences"):
 * the scenario passes only if Beam emits exactly `beam` (or fails with `beamError`) and the core exactly `ours`.
 */
export interface DeclaredException {
  /** The README's divergence number. */
  readonly divergence: number;
  /** Why we differ, in a sentence. */
  readonly reason: string;
  /**
   * Beam's panes; when Beam fails on the scenario (`beamError`), the panes it emitted before failing. Absent:
   * none.
   */
  readonly beam?: readonly PaneRecord[];
  /** A pattern Beam's error must match when Beam fails on the scenario (e.g. its pipeline stall). */
  readonly beamError?: string;
  /** The core's panes. */
  readonly ours: readonly PaneRecord[];
}

/** A scenario: the JSON that reference_runner.py reads (plus an optional declared exception, ignored there). */
export interface Scenario {
  /** Unique id: `hand/<name>` for hand-written ones, `gen/<seed>/<n>` for generated ones. */
  readonly id: string;
  /** What it covers, for failure messages. */
  readonly description?: string;
  /** The windowing strategy, exactly as `createReduceFnRunner` takes it. */
  readonly strategy: WindowingStrategy;
  /** Steps; every time in [0, `SCENARIO_TIME_LIMIT_MS`), values integers. */
  readonly steps: readonly ScenarioStep[];
  /** Present when the core deliberately differs from Beam on this scenario. */
  readonly exception?: DeclaredException;
}

/**
 * Beam's answer for one scenario: its panes, or the error its pipeline failed with (a stall reads
 * `PipelineStall: ...`) and the panes it emitted before failing.
 */
export type BeamResult =
  | { readonly id: string; readonly panes: readonly PaneRecord[] }
  | { readonly id: string; readonly error: string; readonly panes: readonly PaneRecord[] };

/** What reference_runner.py printed for a batch. */
export interface BeamRun {
  readonly beamVersion: string;
  readonly pipelineRuns: number;
  readonly seconds: number;
  readonly results: readonly BeamResult[];
}

/** Collects every input, sorted: a pane shows exactly which elements it holds (Beam's GroupByKey output). */
export const collectFn: CombineFn<number, number[], number[]> = {
  createAccumulator: () => [],
  addInput: (acc, input) => [...acc, input].sort((a, b) => a - b),
  mergeAccumulators: (accs) => accs.flat().sort((a, b) => a - b),
  extractOutput: (acc) => acc,
};

/** Sort order shared with reference_runner.py: (key, start, end, index). */
export function comparePaneRecords(a: PaneRecord, b: PaneRecord): number {
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  return a.startMs - b.startMs || a.endMs - b.endMs || a.index - b.index;
}

/** A pane of the core (or of a store built on it) as both sides report it: times relative to the scenario epoch. */
export function toPaneRecord(pane: Pane<number[]>): PaneRecord {
  return {
    key: pane.key,
    startMs: pane.window.startMs - SCENARIO_EPOCH_MS,
    endMs: pane.window.endMs - SCENARIO_EPOCH_MS,
    values: pane.value,
    timing: pane.timing,
    index: pane.index,
    onTimeIndex: pane.onTimeIndex,
    isFirst: pane.isFirst,
    isLast: pane.isLast,
  };
}

function shift(step: ScenarioStep): ScenarioStep {
  switch (step.kind) {
    case 'elements':
      return {
        kind: 'elements',
        elements: step.elements.map((e) => ({
          ...e,
          timestampMs: e.timestampMs + SCENARIO_EPOCH_MS,
        })),
      };
    case 'watermark':
      return { kind: 'watermark', watermarkMs: step.watermarkMs + SCENARIO_EPOCH_MS };
    case 'processingTime':
      return step;
  }
}

/**
 * Runs a scenario through the pure windowing core with its explicit watermark and processing-time steps, ending
 * it as reference_runner.py does (watermark to the end of time, then `FINAL_PROCESSING_TIME_ADVANCE_MS` of
 * processing time). Processing time starts at 0, as Beam's TestStream clock does.
 * @returns the panes, sorted by (key, start, end, index)
 * @throws WindowingConfigError for an invalid strategy, WindowingInputError for non-integer times or a step
 *   that does not move its clock forward (a watermark at or behind the last one, advanceByMs < 1)
 */
export function runCore(scenario: Scenario): PaneRecord[] {
  const events: ScenarioStep[] = [
    ...scenario.steps.map(shift),
    { kind: 'watermark', watermarkMs: MAX_WATERMARK_MS },
    { kind: 'processingTime', advanceByMs: FINAL_PROCESSING_TIME_ADVANCE_MS },
  ];
  const result = runTestStream(createReduceFnRunner(scenario.strategy, collectFn), events, {
    processingTimeMs: 0,
  });
  return result.panes.map(toPaneRecord).sort(comparePaneRecords);
}

const REPO_ROOT = path.resolve(__dirname, '..', '..');
/** The Beam venv made by test/beam/install.sh. */
export const BEAM_PYTHON = path.join(REPO_ROOT, '.local', 'venv-beam', 'bin', 'python');
const RUNNER = path.join(__dirname, 'reference_runner.py');

/** True when test/beam/install.sh has created the Beam venv. */
export function beamInstalled(): boolean {
  return existsSync(BEAM_PYTHON);
}

/**
 * Runs scenarios through Beam in one reference_runner.py process: one pipeline per distinct strategy, spread
 * over `jobs` worker processes (default: the runner's, min(2, CPUs)); a pipeline is split only if Beam fails.
 * The `exception` and `description` fields are not sent.
 * @throws Error with the runner's stderr when it exits non-zero or prints no result
 */
export function runBeam(scenarios: readonly Scenario[], jobs?: number): BeamRun {
  const dir = mkdtempSync(path.join(tmpdir(), 'offvia-beam-'));
  try {
    const input = path.join(dir, 'scenarios.json');
    const output = path.join(dir, 'panes.json');
    writeFileSync(
      input,
      JSON.stringify(scenarios.map(({ id, strategy, steps }) => ({ id, strategy, steps }))),
    );
    const args = [RUNNER, input, '--out', output, ...(jobs ? ['--jobs', String(jobs)] : [])];
    const child = spawnSync(BEAM_PYTHON, args, {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    if (child.status !== 0 || !existsSync(output)) {
      throw new Error(
        `reference_runner.py exited with ${String(child.status ?? child.signal)}: ${child.stderr.slice(-4000)}`,
      );
    }
    return JSON.parse(readFileSync(output, 'utf8')) as BeamRun;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function line(p: PaneRecord | undefined): string {
  if (!p) return '—';
  const flags = `${p.isFirst ? 'first' : ''}${p.isFirst && p.isLast ? ',' : ''}${p.isLast ? 'last' : ''}`;
  return `${p.key} [${p.startMs},${p.endMs}) #${p.index}/${p.onTimeIndex} ${p.timing} [${p.values.join(',')}] ${flags}`;
}

/**
 * Both pane lists side by side, one row per position, differing rows marked `!`; empty string when equal.
 */
export function sideBySide(
  left: readonly PaneRecord[],
  right: readonly PaneRecord[],
  names: [string, string] = ['Beam', 'core'],
): string {
  const rows = Math.max(left.length, right.length);
  const leftLines = Array.from({ length: rows }, (_, i) => line(left[i]));
  const rightLines = Array.from({ length: rows }, (_, i) => line(right[i]));
  const width = Math.max(names[0].length, ...leftLines.map((l) => l.length));
  const out = [`  ${names[0].padEnd(width)} | ${names[1]}`];
  let differs = false;
  for (let i = 0; i < rows; i++) {
    const same = leftLines[i] === rightLines[i];
    differs ||= !same;
    out.push(`${same ? ' ' : '!'} ${(leftLines[i] ?? '').padEnd(width)} | ${rightLines[i] ?? ''}`);
  }
  return differs || left.length !== right.length ? out.join('\n') : '';
}
