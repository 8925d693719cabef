// Differential scenarios with the telemetry pipeline's own strategy (the study guide's NovaTrack scenario: fixed
// 1-minute windows, early every 30 s, a late pane per late element, 10 minutes of allowed lateness, accumulating),
// taken from its definition so the test follows the pipeline. Times in seconds from the scenario epoch (steps.ts);
// an element is [device, reading in tenths of °C, event time in seconds].
import { TELEMETRY_STRATEGY } from '../../shared/pipelines/telemetry/definition';
import type { Scenario } from './differential';
import { add, pt, wm } from './steps';

/** Scenarios where the core and Beam must emit identical panes under the telemetry strategy. */
export const TELEMETRY_SCENARIOS: readonly Scenario[] = [
  {
    id: 'hand/telemetry-one-device',
    description:
      'early pane 30 s after the first reading, on-time pane, one LATE pane per late reading within 10 min, ' +
      'dropped past it',
    strategy: TELEMETRY_STRATEGY,
    steps: [
      add(['dev-1', 215, 5]),
      pt(10),
      add(['dev-1', 220, 20]),
      pt(20),
      add(['dev-1', 218, 40]),
      wm(60.5),
      add(['dev-1', 230, 50]),
      add(['dev-1', 199, 55]),
      wm(400.5),
      add(['dev-1', 210, 30]),
      wm(700.5),
      add(['dev-1', 250, 10]),
    ],
  },
  {
    id: 'hand/telemetry-early-every-30s',
    description:
      'early panes repeat 30 s after the first reading of each pane while the window is open',
    strategy: TELEMETRY_STRATEGY,
    steps: [
      add(['dev-1', 200, 5]),
      pt(30),
      add(['dev-1', 201, 10]),
      pt(15),
      add(['dev-1', 202, 15]),
      pt(15),
      pt(30),
      add(['dev-1', 203, 20]),
      pt(30),
      wm(60.5),
    ],
  },
  {
    id: 'hand/telemetry-devices-out-of-order',
    description:
      'two devices, readings out of order across two windows, a device whose only reading for a window is late',
    strategy: TELEMETRY_STRATEGY,
    steps: [
      add(['dev-a', 1, 70], ['dev-b', 2, 65]),
      add(['dev-a', 3, 10]),
      pt(30),
      add(['dev-b', 5, 61], ['dev-a', 6, 59]),
      wm(61),
      add(['dev-b', 4, 30]),
      pt(30),
      wm(121),
      add(['dev-a', 7, 119], ['dev-b', 8, 2]),
      pt(30),
    ],
  },
  {
    id: 'hand/telemetry-late-per-element',
    description: 'each late bundle fires its own LATE pane, accumulating everything seen',
    strategy: TELEMETRY_STRATEGY,
    steps: [
      add(['dev-1', 1, 10]),
      wm(60.5),
      add(['dev-1', 2, 11]),
      add(['dev-1', 3, 12]),
      add(['dev-1', 4, 13], ['dev-1', 5, 14]),
      pt(30),
      add(['dev-1', 6, 15]),
    ],
  },
  {
    id: 'hand/telemetry-ten-minute-lateness',
    description:
      'a reading 9 min 59 s behind the window end is LATE; once the watermark passes end + 10 min the window is gone',
    strategy: TELEMETRY_STRATEGY,
    steps: [
      add(['dev-1', 1, 30]),
      wm(90),
      add(['dev-1', 2, 45]),
      wm(659.5),
      add(['dev-1', 3, 50]),
      wm(660.5),
      add(['dev-1', 4, 55]),
      add(['dev-1', 5, 700]),
      wm(800.5),
    ],
  },
];
