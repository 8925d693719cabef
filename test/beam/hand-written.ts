// Hand-written differential scenarios: each trigger, both accumulation modes, sliding windows, session merging,
// late data inside and beyond the allowed lateness, empty panes and empty windows; plus one scenario per
// documented divergence from Python's DirectRunner (shared/windowing/README.md), with both sides' panes declared.
import type { FiringSpec, WindowFnSpec, WindowingStrategy } from '../../shared/windowing';
import type { PaneRecord, Scenario } from './differential';
import { S, add, pt, wm } from './steps';
import { TELEMETRY_SCENARIOS } from './telemetry-scenarios';

function strategy(
  windowFn: WindowFnSpec,
  allowedLatenessMs: number,
  early: FiringSpec | undefined,
  late: FiringSpec | null,
  accumulationMode: WindowingStrategy['accumulationMode'],
): WindowingStrategy {
  return {
    windowFn,
    allowedLatenessMs,
    trigger: { ...(early && { earlyFirings: early }), lateFirings: late },
    accumulationMode,
  };
}

const fixed = (sizeS: number, offsetS = 0): WindowFnSpec => ({
  kind: 'fixed',
  sizeMs: sizeS * S,
  offsetMs: offsetS * S,
});
const sliding = (sizeS: number, periodS: number): WindowFnSpec => ({
  kind: 'sliding',
  sizeMs: sizeS * S,
  periodMs: periodS * S,
  offsetMs: 0,
});
const sessions = (gapS: number): WindowFnSpec => ({ kind: 'sessions', gapMs: gapS * S });

/** A pane record for declared exceptions; window in seconds. */
function pane(
  key: string,
  [startS, endS]: [number, number],
  values: number[],
  timing: PaneRecord['timing'],
  index: number,
  onTimeIndex: number,
  isLast = false,
): PaneRecord {
  return {
    key,
    startMs: startS * S,
    endMs: endS * S,
    values,
    timing,
    index,
    onTimeIndex,
    isFirst: index === 0,
    isLast,
  };
}

/**
 * Python 2.77's DirectRunner's "Monitor task detected a pipeline stall", which it mis-raises as a generic
 * TypeError ("exceptions must derive from BaseException"); reference_runner.py recognises that TypeError by
 * where it is raised (the executor's `await_completion`) and reports it as this.
 */
const STALL = '^PipelineStall: Monitor task detected a pipeline stall$';

const PT30: FiringSpec = { processingTimeDelayMs: 30 * S };
const COUNT1: FiringSpec = { elementCount: 1 };
const LAB = (mode: WindowingStrategy['accumulationMode']): WindowingStrategy =>
  strategy(fixed(60), 300 * S, PT30, COUNT1, mode);

/** Scenarios where the core and Beam must emit identical panes. */
export const MATCHING_SCENARIOS: readonly Scenario[] = [
  {
    id: 'hand/lab-accumulating',
    description:
      "the lab's strategy: early pane, on-time pane, late pane within lateness, drop beyond it",
    strategy: LAB('ACCUMULATING'),
    steps: [
      add(['k', 1, 10]),
      pt(30),
      add(['k', 2, 20]),
      wm(60.5),
      add(['k', 3, 15]),
      wm(400.5),
      add(['k', 4, 30]),
    ],
  },
  {
    id: 'hand/lab-discarding',
    description: "the lab's strategy in DISCARDING mode",
    strategy: LAB('DISCARDING'),
    steps: [
      add(['k', 1, 10]),
      pt(30),
      add(['k', 2, 20]),
      wm(60.5),
      add(['k', 3, 15]),
      add(['k', 5, 16]),
      wm(400.5),
      add(['k', 4, 30]),
    ],
  },
  {
    id: 'hand/early-count-per-bundle',
    description:
      'early elementCount is evaluated once per bundle; no late firings: ON_TIME is last',
    strategy: strategy(fixed(60), 0, { elementCount: 2 }, null, 'DISCARDING'),
    steps: [
      add(['k', 1, 10]),
      add(['k', 2, 11]),
      add(['k', 3, 12], ['k', 4, 13], ['k', 5, 14]),
      add(['k', 6, 15]),
      wm(60.5),
    ],
  },
  {
    id: 'hand/early-count-accumulating',
    description: 'early elementCount in ACCUMULATING mode: every pane holds everything so far',
    strategy: strategy(fixed(60), 120 * S, { elementCount: 2 }, COUNT1, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), add(['k', 2, 11]), add(['k', 3, 12]), wm(60.5), add(['k', 4, 13])],
  },
  {
    id: 'hand/early-delay-from-first-element',
    description: 'the early processing-time delay counts from the first element of the pane',
    strategy: LAB('DISCARDING'),
    steps: [
      add(['k', 1, 10]),
      pt(20),
      add(['k', 2, 11]),
      pt(10),
      add(['k', 3, 12]),
      pt(20),
      pt(20),
      wm(60.5),
    ],
  },
  {
    id: 'hand/no-late-firings-closes-window',
    description:
      'without late firings the ON_TIME pane is last and later data is dropped (closed window)',
    strategy: strategy(fixed(60), 300 * S, undefined, null, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), wm(60.5), add(['k', 2, 20]), wm(120.5)],
  },
  {
    id: 'hand/only-late-data',
    description:
      'a window whose first element is already late: LATE from index 0, never an ON_TIME pane',
    strategy: LAB('ACCUMULATING'),
    steps: [wm(100.5), add(['k', 1, 10]), add(['k', 2, 11])],
  },
  {
    id: 'hand/empty-on-time-pane-discarding',
    description:
      'DISCARDING after an early pane: the ON_TIME pane fires empty (OnTimeBehavior.FIRE_ALWAYS)',
    strategy: LAB('DISCARDING'),
    steps: [add(['k', 1, 10]), pt(30), wm(60.5)],
  },
  {
    id: 'hand/on-time-pane-accumulating-after-early',
    description: 'ACCUMULATING after an early pane: the ON_TIME pane repeats the data',
    strategy: LAB('ACCUMULATING'),
    steps: [add(['k', 1, 10]), pt(30), wm(60.5)],
  },
  {
    id: 'hand/empty-windows-emit-nothing',
    description: 'windows without data fire nothing, even when the watermark passes them',
    strategy: LAB('DISCARDING'),
    steps: [add(['k', 1, 10]), wm(200.5), add(['k', 2, 250]), wm(400.5), pt(40)],
  },
  {
    id: 'hand/late-bundles-two-keys',
    description: 'one LATE pane per late bundle and key',
    strategy: LAB('DISCARDING'),
    steps: [
      add(['k', 1, 10], ['j', 7, 12]),
      wm(60.5),
      add(['k', 2, 11], ['k', 3, 12]),
      add(['j', 9, 12]),
      add(['k', 4, 13], ['j', 8, 14]),
    ],
  },
  {
    id: 'hand/late-data-inside-and-beyond-lateness',
    description: 'late data within the allowed lateness fires LATE; beyond it, it is dropped',
    strategy: strategy(fixed(10), 30 * S, undefined, COUNT1, 'ACCUMULATING'),
    steps: [
      add(['k', 1, 5]),
      wm(20.5),
      add(['k', 2, 6]),
      wm(50.5),
      add(['k', 3, 7]),
      add(['k', 4, 45]),
      add(['k', 5, 25]),
    ],
  },
  {
    id: 'hand/late-count-two-flushed',
    description:
      'late elementCount 2: a late bundle of two fires; nothing is pending when the window expires',
    strategy: strategy(fixed(60), 300 * S, undefined, { elementCount: 2 }, 'DISCARDING'),
    steps: [add(['k', 1, 10]), wm(60.5), add(['k', 2, 11], ['k', 3, 12]), wm(500.5)],
  },
  {
    id: 'hand/fixed-with-offset',
    description: 'fixed windows shifted by an offset',
    strategy: strategy(fixed(60, 15), 60 * S, { elementCount: 1 }, COUNT1, 'ACCUMULATING'),
    steps: [add(['k', 1, 10], ['k', 2, 20]), add(['k', 3, 74]), wm(75.5), add(['k', 4, 70])],
  },
  {
    id: 'hand/sliding-lab-trigger',
    description:
      'sliding windows: each element in every window containing it, each fires on its own',
    strategy: strategy(sliding(60, 20), 300 * S, PT30, COUNT1, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), add(['k', 2, 50]), pt(30), wm(70.5), add(['k', 3, 45]), wm(130.5)],
  },
  {
    id: 'hand/sliding-discarding-count',
    description: 'sliding windows, early elementCount, DISCARDING',
    strategy: strategy(sliding(30, 10), 60 * S, { elementCount: 2 }, COUNT1, 'DISCARDING'),
    steps: [add(['k', 1, 5]), add(['k', 2, 12]), add(['k', 3, 25]), wm(31.5), add(['k', 4, 28])],
  },
  {
    id: 'hand/sessions-merge-restarts-index',
    description: 'sessions merge; the merged window starts again at pane index 0',
    strategy: strategy(sessions(10), 300 * S, PT30, COUNT1, 'ACCUMULATING'),
    steps: [
      add(['k', 1, 0]),
      add(['k', 2, 20]),
      pt(30),
      add(['k', 3, 8]),
      add(['k', 4, 15]),
      pt(30),
      wm(100.5),
    ],
  },
  {
    id: 'hand/sessions-discarding-count',
    description: 'sessions with early elementCount in DISCARDING mode, two keys',
    strategy: strategy(sessions(15), 60 * S, { elementCount: 2 }, COUNT1, 'DISCARDING'),
    steps: [
      add(['a', 1, 0], ['b', 2, 5]),
      add(['a', 3, 10]),
      add(['a', 4, 40], ['b', 5, 12]),
      wm(30.5),
      add(['a', 6, 14]),
      wm(100.5),
    ],
  },
  {
    id: 'hand/late-session-grows-within-watermark',
    description: 'a late session merging with late data stays LATE',
    strategy: strategy(sessions(10), 300 * S, PT30, COUNT1, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), wm(50.5), add(['k', 2, 15]), add(['k', 3, 22])],
  },
  // The telemetry pipeline's strategy, taken from its definition.
  ...TELEMETRY_SCENARIOS,
];

/** Scenarios where the core deliberately differs from Python's DirectRunner, each with both answers declared. */
export const EXCEPTION_SCENARIOS: readonly Scenario[] = [
  {
    id: 'hand/x1-drop-boundary',
    description: 'an element arriving when the watermark is exactly end + allowed lateness',
    strategy: strategy(fixed(60), 30 * S, undefined, COUNT1, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), wm(90), add(['k', 2, 20])],
    exception: {
      divergence: 1,
      reason:
        "Java's LateDataUtils drops at watermark == end + allowed lateness (design.md); Python keeps the element",
      beam: [pane('k', [0, 60], [1], 'ON_TIME', 0, 0), pane('k', [0, 60], [1, 2], 'LATE', 1, 1)],
      ours: [pane('k', [0, 60], [1], 'ON_TIME', 0, 0)],
    },
  },
  {
    id: 'hand/x2-pending-late-data-at-gc',
    description: 'late elementCount 2 with one late element pending when the window expires',
    strategy: strategy(fixed(60), 300 * S, undefined, { elementCount: 2 }, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), wm(60.5), add(['k', 2, 11]), wm(400.5)],
    exception: {
      divergence: 2,
      reason:
        'Java emits pending late data at garbage collection as the last pane; Python has no GC and stalls',
      beamError: STALL,
      beam: [pane('k', [0, 60], [1], 'ON_TIME', 0, 0)],
      ours: [
        pane('k', [0, 60], [1], 'ON_TIME', 0, 0),
        pane('k', [0, 60], [1, 2], 'LATE', 1, 1, true),
      ],
    },
  },
  {
    id: 'hand/x3-zero-lateness-with-late-firings',
    description: 'allowed lateness 0 with late firings, and an element at watermark == end',
    strategy: strategy(fixed(60), 0, undefined, COUNT1, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), wm(60), add(['k', 2, 20])],
    exception: {
      divergence: 3,
      reason:
        'with allowed lateness 0 the end-of-window timer is the GC timer in Java: ON_TIME is last, later data dropped',
      beam: [pane('k', [0, 60], [1], 'ON_TIME', 0, 0), pane('k', [0, 60], [1, 2], 'LATE', 1, 1)],
      ours: [pane('k', [0, 60], [1], 'ON_TIME', 0, 0, true)],
    },
  },
  {
    id: 'hand/x4-late-processing-time-firings',
    description: 'late firings after a processing-time delay',
    strategy: strategy(
      fixed(60),
      300 * S,
      { elementCount: 100 },
      { processingTimeDelayMs: 10 * S },
      'ACCUMULATING',
    ),
    steps: [add(['k', 1, 10]), wm(60.5), add(['k', 2, 11]), pt(10), add(['k', 3, 12]), pt(10)],
    exception: {
      divergence: 4,
      reason:
        'late processing-time firings are LATE panes in Java; Python 2.77 labels them EARLY, then stalls',
      beamError: STALL,
      beam: [
        pane('k', [0, 60], [1], 'ON_TIME', 0, 0),
        pane('k', [0, 60], [1, 2], 'EARLY', 1, 1),
        pane('k', [0, 60], [1, 2, 3], 'EARLY', 2, 2),
      ],
      ours: [
        pane('k', [0, 60], [1], 'ON_TIME', 0, 0),
        pane('k', [0, 60], [1, 2], 'LATE', 1, 1),
        pane('k', [0, 60], [1, 2, 3], 'LATE', 2, 2),
      ],
    },
  },
  {
    id: 'hand/x5-early-after-first',
    description:
      'early AfterFirst(processing time 30 s, count 3): which firings reset which sub-trigger',
    strategy: strategy(
      fixed(60),
      300 * S,
      { processingTimeDelayMs: 30 * S, elementCount: 3 },
      COUNT1,
      'DISCARDING',
    ),
    steps: [
      add(['k', 1, 10]),
      pt(30),
      add(['k', 2, 11]),
      pt(30),
      add(['k', 3, 12]),
      add(['k', 4, 13]),
      pt(30),
      wm(60.5),
    ],
    exception: {
      divergence: 5,
      reason:
        "Java's AfterFirst resets both sub-triggers on any firing; Python's only on a watermark-domain one",
      beam: [
        pane('k', [0, 60], [1], 'EARLY', 0, -1),
        pane('k', [0, 60], [2, 3], 'EARLY', 1, -1),
        pane('k', [0, 60], [4], 'EARLY', 2, -1),
        pane('k', [0, 60], [], 'ON_TIME', 3, 0),
      ],
      ours: [
        pane('k', [0, 60], [1], 'EARLY', 0, -1),
        pane('k', [0, 60], [2], 'EARLY', 1, -1),
        pane('k', [0, 60], [3, 4], 'EARLY', 2, -1),
        pane('k', [0, 60], [], 'ON_TIME', 3, 0),
      ],
    },
  },
  {
    id: 'hand/x6-late-session-grows-past-watermark',
    description: 'a late session merged with an element whose gap reaches past the watermark',
    strategy: strategy(sessions(10), 300 * S, PT30, COUNT1, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), wm(30.5), add(['k', 2, 15]), add(['k', 3, 22])],
    exception: {
      divergence: 6,
      reason:
        'Java puts a merged session reaching past the watermark back in the early phase; Python keeps it late and stalls',
      beamError: STALL,
      beam: [
        pane('k', [10, 20], [1], 'ON_TIME', 0, 0),
        pane('k', [10, 25], [1, 2], 'LATE', 0, 0),
        pane('k', [10, 32], [1, 2, 3], 'EARLY', 0, -1),
      ],
      ours: [
        pane('k', [10, 20], [1], 'ON_TIME', 0, 0),
        pane('k', [10, 25], [1, 2], 'LATE', 0, 0),
        pane('k', [10, 32], [1, 2, 3], 'ON_TIME', 0, 0),
      ],
    },
  },
  {
    id: 'hand/x7-closed-session',
    description: 'no late firings: late data overlapping a session whose trigger has finished',
    strategy: strategy(sessions(10), 300 * S, undefined, null, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), wm(30.5), add(['k', 2, 15])],
    exception: {
      divergence: 7,
      reason:
        'Java keeps a finished session out of merging, so late data opens a new session; Python merges into the tombstone and drops it',
      beam: [pane('k', [10, 20], [1], 'ON_TIME', 0, 0, true)],
      ours: [
        pane('k', [10, 20], [1], 'ON_TIME', 0, 0, true),
        pane('k', [15, 25], [2], 'LATE', 0, 0, true),
      ],
    },
  },
  {
    id: 'hand/x9-garbage-collected-session',
    description: 'a late element overlapping a session that Java has already garbage-collected',
    strategy: strategy(sessions(10), 30 * S, PT30, COUNT1, 'ACCUMULATING'),
    steps: [add(['k', 1, 10]), wm(50.5), add(['k', 2, 15])],
    exception: {
      divergence: 9,
      reason:
        'Java has garbage-collected the old session, so the late element starts a new one; Python never collects and merges',
      beam: [pane('k', [10, 20], [1], 'ON_TIME', 0, 0), pane('k', [10, 25], [1, 2], 'LATE', 0, 0)],
      ours: [pane('k', [10, 20], [1], 'ON_TIME', 0, 0), pane('k', [15, 25], [2], 'LATE', 0, 0)],
    },
  },
  {
    id: 'hand/x11-merged-session-processing-time-timers',
    description:
      'two sessions, each with an early processing-time timer, bridged by a later element (DISCARDING)',
    strategy: strategy(
      sessions(10),
      300 * S,
      { processingTimeDelayMs: 5 * S },
      COUNT1,
      'DISCARDING',
    ),
    steps: [add(['k', 1, 0], ['k', 2, 15]), add(['k', 3, 8]), pt(5), wm(100.5)],
    exception: {
      divergence: 11,
      reason:
        "Python keeps each proto-window's processing-time timer through the merge and emits a pane on every firing, even empty; Java merges the deadlines and never emits an empty EARLY pane",
      beam: [
        pane('k', [0, 25], [1, 2, 3], 'EARLY', 0, -1),
        pane('k', [0, 25], [], 'EARLY', 1, -1),
        pane('k', [0, 25], [], 'ON_TIME', 2, 0),
      ],
      ours: [
        pane('k', [0, 25], [1, 2, 3], 'EARLY', 0, -1),
        pane('k', [0, 25], [], 'ON_TIME', 1, 0),
      ],
    },
  },
];

/** Every hand-written scenario. */
export const HAND_WRITTEN_SCENARIOS: readonly Scenario[] = [
  ...MATCHING_SCENARIOS,
  ...EXCEPTION_SCENARIOS,
];
