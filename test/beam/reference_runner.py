"""Beam reference runner for the differential test of the windowing core (issue 9).

Runs windowing scenarios through Apache Beam itself: a ``TestStream`` on the Python DirectRunner in streaming
mode, ``WindowInto`` with the scenario's window function, trigger, allowed lateness and accumulation mode, then
``GroupByKey``; every pane the GroupByKey emits is recorded with its key, window, values and ``PaneInfo``.

Input (a JSON file, or ``-`` for stdin) is a list of scenarios, or one scenario object::

    {"id": "fixed-early-count",
     "strategy": {"windowFn": {"kind": "fixed", "sizeMs": 60000, "offsetMs": 0},   # or sliding / sessions
                  "allowedLatenessMs": 300000,
                  "trigger": {"earlyFirings": {"processingTimeDelayMs": 30000, "elementCount": 2},
                              "lateFirings": {"elementCount": 1}},                 # or null / absent
                  "accumulationMode": "ACCUMULATING"},                             # or "DISCARDING"
     "steps": [{"kind": "elements", "elements": [{"key": "a", "value": 1, "timestampMs": 10000}]},
               {"kind": "watermark", "watermarkMs": 60000},
               {"kind": "processingTime", "advanceByMs": 30000}]}

That is the shape of ``WindowingStrategy`` and ``TestStreamEvent`` in shared/windowing. Times are integer ms
relative to the scenario's own epoch (0 <= t < SCENARIO_SPAN_MS / 2); values are integers. Each scenario ends
as a Beam pipeline does: the watermark passes every window of the scenario, then processing time advances by
``FINAL_PROCESSING_TIME_ADVANCE_MS`` so that no processing-time timer is left pending (Python's DirectRunner
never terminates while one is).

Batching: the scenarios of one strategy run in one pipeline (one pipeline per distinct strategy, spread over
``--jobs`` forked worker processes), one after the other, each shifted in event time to its own slot of
``SCENARIO_SPAN_MS`` starting at ``BASE_EPOCH_S`` (a realistic epoch: Python's ``AfterWatermark`` compares
processing-time timer times with window ends, see shared/windowing/README.md divergence 8) and keyed by its
slot, so scenarios cannot see each other's state. Window sizes and periods must divide the slot. If a pipeline
fails (Python's DirectRunner reports a "pipeline stall" on some inputs), its scenarios are split in halves and
rerun until each failing scenario is alone; those get an ``error`` and, as ``panes``, the panes Beam emitted
before it failed. A pipeline stall (Python's DirectRunner mis-raises it as ``TypeError: exceptions must derive
from BaseException``) is reported as ``PipelineStall: Monitor task detected a pipeline stall``.

Output (JSON on stdout, or ``--out FILE``)::

    {"beamVersion": "2.77.0", "pipelineRuns": 1, "seconds": 4.2,
     "results": [{"id": "...", "panes": [{"key": "a", "startMs": 0, "endMs": 60000, "values": [1],
                                          "timing": "EARLY", "index": 0, "onTimeIndex": -1,
                                          "isFirst": true, "isLast": false}, ...]},
                 {"id": "...", "error": "PipelineStall: ...", "panes": [...]}]}

Window bounds are ms relative to the scenario's epoch; ``values`` are sorted; ``onTimeIndex`` is Beam's
``nonspeculative_index``. Panes of one scenario are sorted by (key, start, end, index): Beam does not order
panes of different windows fired by one step.

Usage: ``.local/venv-beam/bin/python test/beam/reference_runner.py scenarios.json [--out panes.json]
[--only ID] [--jobs N]``. Exit status 0 when every scenario ran (possibly with isolated per-scenario errors),
2 on bad input (unreadable file, malformed JSON, a scenario of the wrong shape, ``--only`` naming no scenario),
with a one-line message naming the scenario and field on stderr.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import logging
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms import trigger as tr
from apache_beam.transforms import window as win

# 2026-10-07T00:00:00Z in seconds: whole days, so window grids (sizes and periods dividing the span) line up
# in every slot exactly as they do at the scenario's epoch 0.
BASE_EPOCH_S = 1791331200
# Each scenario gets one day of event time; its own times stay in the first half, so the end-of-scenario
# watermark (at half a day) is past every window, and the next scenario starts half a day later.
SCENARIO_SPAN_MS = 86_400_000
FINAL_PROCESSING_TIME_ADVANCE_MS = 3_600_000
TIMINGS = {0: "EARLY", 1: "ON_TIME", 2: "LATE", 3: "UNKNOWN"}


class ScenarioError(ValueError):
    """A scenario that this runner cannot express in Beam (bad shape, times out of range)."""


class PipelineStall(RuntimeError):
    """Python's DirectRunner found nothing to run while watermarks were incomplete ("pipeline stall")."""


STRATEGY_KEYS = {"windowFn", "allowedLatenessMs", "trigger", "accumulationMode"}
TRIGGER_KEYS = {"earlyFirings", "lateFirings"}
FIRING_KEYS = {"processingTimeDelayMs", "elementCount"}
WINDOW_FN_KEYS = {"fixed": {"kind", "sizeMs", "offsetMs"}, "sliding": {"kind", "sizeMs", "periodMs", "offsetMs"},
                  "sessions": {"kind", "gapMs"}}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _require_int(value: Any, where: str, minimum: int) -> None:
    if not _is_int(value) or value < minimum:
        raise ScenarioError(f"{where} must be an integer >= {minimum}, got {value!r}")


def _require_keys(obj: Any, allowed: set[str], where: str) -> None:
    if not isinstance(obj, dict):
        raise ScenarioError(f"{where} must be an object, got {obj!r}")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")


def _ms_to_s(ms: int) -> float:
    return ms / 1000.0


def _firing(spec: dict[str, Any] | None, where: str = "firing spec") -> Any:
    """FiringSpec -> the Beam sub-trigger (AfterProcessingTime, AfterCount, or AfterAny of both)."""
    if not spec:
        return None
    parts = []
    if spec.get("elementCount") is not None:
        _require_int(spec["elementCount"], f"{where}.elementCount", 1)
    if spec.get("processingTimeDelayMs") is not None:
        _require_int(spec["processingTimeDelayMs"], f"{where}.processingTimeDelayMs", 0)
        delay_ms = spec["processingTimeDelayMs"]
        if delay_ms % 1000 != 0:
            # Beam's Python AfterProcessingTime takes whole seconds (to_runner_api fails on a float delay).
            raise ScenarioError(f"{where}.processingTimeDelayMs {delay_ms} must be whole seconds for Beam's Python SDK")
        parts.append(tr.AfterProcessingTime(delay_ms // 1000))
    if spec.get("elementCount") is not None:
        parts.append(tr.AfterCount(spec["elementCount"]))
    if not parts:
        raise ScenarioError(f"{where} has neither processingTimeDelayMs nor elementCount: {spec!r}")
    return parts[0] if len(parts) == 1 else tr.AfterAny(*parts)


def _window_fn(spec: dict[str, Any]) -> Any:
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind in WINDOW_FN_KEYS:
        _require_keys(spec, WINDOW_FN_KEYS[kind], f"windowFn ({kind})")
        for field in ("sizeMs", "periodMs", "gapMs"):
            if field in WINDOW_FN_KEYS[kind]:
                _require_int(spec.get(field), f"windowFn.{field}", 1)
        _require_int(spec.get("offsetMs", 0), "windowFn.offsetMs", 0)
    if kind == "fixed":
        size, offset = spec["sizeMs"], spec.get("offsetMs", 0)
        _check_grid(size, "sizeMs")
        return win.FixedWindows(_ms_to_s(size), _ms_to_s(offset))
    if kind == "sliding":
        size, period, offset = spec["sizeMs"], spec["periodMs"], spec.get("offsetMs", 0)
        _check_grid(period, "periodMs")
        return win.SlidingWindows(_ms_to_s(size), _ms_to_s(period), _ms_to_s(offset))
    if kind == "sessions":
        return win.Sessions(_ms_to_s(spec["gapMs"]))
    raise ScenarioError(f"unknown window fn kind {kind!r}")


def _check_grid(ms: int, what: str) -> None:
    if SCENARIO_SPAN_MS % ms != 0:
        raise ScenarioError(f"{what} {ms} must divide {SCENARIO_SPAN_MS} ms so batched scenarios keep their grid")


def _strategy_key(strategy: dict[str, Any]) -> str:
    return json.dumps(strategy, sort_keys=True)


def _max_delay_ms(strategy: dict[str, Any]) -> int:
    trigger = strategy.get("trigger") or {}
    delays = [
        (trigger.get(side) or {}).get("processingTimeDelayMs") or 0 for side in ("earlyFirings", "lateFirings")
    ]
    return max(delays)


def _validate(scenario: Any) -> None:
    """Checks the shape and that every time stays in the first half of the scenario's slot.

    Rejects what the windowing core rejects too (shared/windowing/strategy.ts, test/support/test-stream.ts): unknown keys in
    the strategy, trigger and firing specs, zero or negative window sizes, negative allowed lateness,
    elementCount < 1, advanceByMs < 1, and a watermark step that does not move the watermark forward.
    Raises ScenarioError naming the scenario and the field.
    """
    if not isinstance(scenario, dict) or not isinstance(scenario.get("id"), str):
        raise ScenarioError(f"scenario without a string id: {str(scenario)[:200]}")
    try:
        _validate_fields(scenario)
    except ScenarioError as error:
        raise ScenarioError(f"{scenario['id']}: {error}") from None


def _validate_fields(scenario: dict[str, Any]) -> None:
    strategy = scenario.get("strategy")
    if not isinstance(strategy, dict):
        raise ScenarioError("no strategy object")
    _require_keys(strategy, STRATEGY_KEYS, "strategy")
    _require_int(strategy.get("allowedLatenessMs", 0), "strategy.allowedLatenessMs", 0)
    trigger = strategy.get("trigger")
    if trigger is not None:
        _require_keys(trigger, TRIGGER_KEYS, "strategy.trigger")
        for side in ("earlyFirings", "lateFirings"):
            if trigger.get(side) is not None:
                _require_keys(trigger[side], FIRING_KEYS, f"strategy.trigger.{side}")
                _firing(trigger[side], f"strategy.trigger.{side}")
    if "windowFn" not in strategy:
        raise ScenarioError("strategy.windowFn missing")
    _window_fn(strategy["windowFn"])
    if strategy.get("accumulationMode") not in ("ACCUMULATING", "DISCARDING"):
        raise ScenarioError("strategy.accumulationMode must be ACCUMULATING or DISCARDING")
    if _max_delay_ms(strategy) >= FINAL_PROCESSING_TIME_ADVANCE_MS:
        raise ScenarioError(f"processing-time delays must be < {FINAL_PROCESSING_TIME_ADVANCE_MS}")
    wf = strategy["windowFn"]
    reach = wf.get("sizeMs", 0) + wf.get("gapMs", 0) + strategy.get("allowedLatenessMs", 0)
    limit = SCENARIO_SPAN_MS // 2
    steps = scenario.get("steps", [])
    if not isinstance(steps, list):
        raise ScenarioError("steps must be a list")
    watermark = -1
    for number, step in enumerate(steps):
        where = f"steps[{number}]"
        kind = step.get("kind") if isinstance(step, dict) else None
        if kind == "elements":
            if not isinstance(step.get("elements"), list):
                raise ScenarioError(f"{where}.elements must be a list")
            for element in step["elements"]:
                if not isinstance(element, dict) or not isinstance(element.get("key"), str):
                    raise ScenarioError(f"{where}: element without a string key: {element!r}")
                t = element.get("timestampMs")
                if not _is_int(t) or t < 0 or t + reach >= limit:
                    raise ScenarioError(f"{where}: element timestampMs {t!r} outside [0, {limit - reach})")
                if not _is_int(element.get("value")):
                    raise ScenarioError(f"{where}: element value {element.get('value')!r} is not an integer")
        elif kind == "watermark":
            w = step.get("watermarkMs")
            if not _is_int(w) or w < 0 or w >= limit:
                raise ScenarioError(f"{where}: watermarkMs {w!r} outside [0, {limit})")
            if w <= watermark:
                raise ScenarioError(f"{where}: watermarkMs {w} does not advance the watermark (was {watermark})")
            watermark = w
        elif kind == "processingTime":
            _require_int(step.get("advanceByMs"), f"{where}.advanceByMs", 1)
        else:
            raise ScenarioError(f"{where}: unknown step kind {kind!r}")


class _RecordPanes(beam.DoFn):
    """Appends one JSON line per GroupByKey output (a pane) to a file; the DirectRunner runs in this process."""

    def __init__(self, path: str, bases_s: dict[int, int]) -> None:
        self._path = path
        self._bases_s = bases_s

    def process(self, kv, window=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam):
        (slot, key), values = kv
        base_ms = self._bases_s[slot] * 1000
        record = {
            "slot": slot,
            "key": key,
            "startMs": round(float(window.start) * 1000) - base_ms,
            "endMs": round(float(window.end) * 1000) - base_ms,
            "values": sorted(values),
            "timing": TIMINGS[pane.timing],
            "index": pane.index,
            "onTimeIndex": pane.nonspeculative_index,
            "isFirst": pane.is_first,
            "isLast": pane.is_last,
        }
        with open(self._path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")


def _run_pipeline(scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs scenarios of one strategy in one pipeline; returns their panes in input order.

    Raises PipelineFailure (what Beam raised, stalls as PipelineStall, and the panes recorded before it).
    """
    strategy = scenarios[0]["strategy"]
    bases_s = {slot: BASE_EPOCH_S + slot * (SCENARIO_SPAN_MS // 1000) for slot in range(len(scenarios))}
    stream = TestStream()
    for slot, scenario in enumerate(scenarios):
        base_s = bases_s[slot]
        for step in scenario["steps"]:
            kind = step["kind"]
            if kind == "elements":
                stream = stream.add_elements(
                    [
                        win.TimestampedValue(((slot, e["key"]), e["value"]), base_s + _ms_to_s(e["timestampMs"]))
                        for e in step["elements"]
                    ]
                )
            elif kind == "watermark":
                stream = stream.advance_watermark_to(base_s + _ms_to_s(step["watermarkMs"]))
            else:
                stream = stream.advance_processing_time(_ms_to_s(step["advanceByMs"]))
        stream = stream.advance_watermark_to(base_s + _ms_to_s(SCENARIO_SPAN_MS // 2))
        stream = stream.advance_processing_time(_ms_to_s(FINAL_PROCESSING_TIME_ADVANCE_MS))
    stream = stream.advance_watermark_to_infinity()

    trigger = strategy.get("trigger") or {}
    mode = (
        tr.AccumulationMode.ACCUMULATING
        if strategy["accumulationMode"] == "ACCUMULATING"
        else tr.AccumulationMode.DISCARDING
    )
    fd, path = tempfile.mkstemp(prefix="offvia-beam-panes-", suffix=".jsonl")
    os.close(fd)
    try:
        options = PipelineOptions(["--allow_unsafe_triggers"])
        options.view_as(StandardOptions).streaming = True
        try:
            with beam.Pipeline(options=options) as pipeline:
                _ = (
                    pipeline
                    | "TestStream" >> stream
                    | "Window"
                    >> beam.WindowInto(
                        _window_fn(strategy["windowFn"]),
                        trigger=tr.AfterWatermark(
                            early=_firing(trigger.get("earlyFirings")), late=_firing(trigger.get("lateFirings"))
                        ),
                        allowed_lateness=_ms_to_s(strategy.get("allowedLatenessMs", 0)),
                        accumulation_mode=mode,
                    )
                    | "Group" >> beam.GroupByKey()
                    | "Record" >> beam.ParDo(_RecordPanes(path, bases_s))
                )
        except Exception as error:
            raise PipelineFailure(_stall_or(error), _read_panes(path, scenarios)) from error
        return _read_panes(path, scenarios)
    finally:
        os.unlink(path)


class PipelineFailure(Exception):
    """A pipeline that failed, with what Beam raised and the panes each scenario got before the failure."""

    def __init__(self, error: BaseException, panes: list[dict[str, Any]]) -> None:
        super().__init__(repr(error))
        self.error = error
        self.panes = panes


def _stall_or(error: BaseException) -> BaseException:
    """Beam 2.77's DirectRunner raises its stall as a tuple, i.e. a TypeError from ``await_completion``.

    That TypeError, raised in runners/direct/executor.py's ``await_completion``, becomes a PipelineStall; any
    other error is returned unchanged.
    """
    if isinstance(error, TypeError):
        frames = traceback.extract_tb(error.__traceback__)
        if frames and frames[-1].name == "await_completion" and frames[-1].filename.endswith(
            os.path.join("runners", "direct", "executor.py")
        ):
            return PipelineStall("Monitor task detected a pipeline stall")
    return error


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _read_panes(path: str, scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The panes recorded in ``path``, per scenario in input order, each sorted by (key, start, end, index)."""
    panes: dict[int, list[dict[str, Any]]] = {slot: [] for slot in range(len(scenarios))}
    with open(path, encoding="utf-8") as recorded:
        for line in recorded:
            record = json.loads(line)
            panes[record.pop("slot")].append(record)
    order = lambda p: (p["key"], p["startMs"], p["endMs"], p["index"])  # noqa: E731
    return [{"id": s["id"], "panes": sorted(panes[slot], key=order)} for slot, s in enumerate(scenarios)]


def _run_isolating(scenarios: list[dict[str, Any]], stats: dict[str, int]) -> list[dict[str, Any]]:
    """One pipeline for the batch; on failure splits it in halves until each failing scenario is alone."""
    stats["pipelineRuns"] += 1
    try:
        return _run_pipeline(scenarios)
    except PipelineFailure as failure:  # Beam raises assorted types for a stalled pipeline; all are isolated below
        if len(scenarios) == 1:
            logging.warning("scenario %s failed on Beam: %s", scenarios[0]["id"], _describe(failure.error))
            return [{"id": scenarios[0]["id"], "error": _describe(failure.error), "panes": failure.panes[0]["panes"]}]
        logging.warning(
            "batch of %d scenarios failed on Beam (%s); splitting it", len(scenarios), _describe(failure.error)
        )
        half = len(scenarios) // 2
        return _run_isolating(scenarios[:half], stats) + _run_isolating(scenarios[half:], stats)


def _run_group(scenarios: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """One strategy group (in a worker process): its results and the number of pipelines it took."""
    stats = {"pipelineRuns": 0}
    return _run_isolating(scenarios, stats), stats["pipelineRuns"]


def run_scenarios(scenarios: list[dict[str, Any]], stats: dict[str, int], jobs: int = 1) -> list[dict[str, Any]]:
    """Runs scenarios with one pipeline per distinct strategy (all of its scenarios in sequence); input order kept.

    One strategy per pipeline: the DirectRunner's cost per TestStream event grows with the number of
    GroupByKeys in the pipeline, so a branch per strategy in one pipeline is many times slower. With
    ``jobs`` > 1 the strategy groups are spread over that many forked worker processes (the DirectRunner runs
    a pipeline on one thread).
    """
    groups: dict[str, list[int]] = {}
    for position, scenario in enumerate(scenarios):
        groups.setdefault(_strategy_key(scenario["strategy"]), []).append(position)
    # Largest groups first, so that the workers finish at about the same time.
    ordered = sorted(groups.values(), key=len, reverse=True)
    batches = [[scenarios[p] for p in positions] for positions in ordered]
    if jobs > 1 and len(batches) > 1:
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(jobs, len(batches)), mp_context=multiprocessing.get_context("fork")
        ) as pool:
            outcomes = list(pool.map(_run_group, batches))
    else:
        outcomes = [_run_group(batch) for batch in batches]
    results: list[dict[str, Any]] = [{}] * len(scenarios)
    for positions, (group_results, runs) in zip(ordered, outcomes):
        stats["pipelineRuns"] += runs
        for position, result in zip(positions, group_results):
            results[position] = result
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("scenarios", help="JSON file with a scenario or a list of scenarios ('-' for stdin)")
    parser.add_argument("--out", help="write the result JSON here instead of stdout")
    parser.add_argument("--only", help="run only the scenario with this id")
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="worker processes, one strategy group at a time each (default: min(2, CPUs))",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")

    try:
        text = sys.stdin.read() if args.scenarios == "-" else open(args.scenarios, encoding="utf-8").read()
    except OSError as error:
        print(f"reference_runner: cannot read {args.scenarios}: {error.strerror or error}", file=sys.stderr)
        return 2
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as error:
        print(f"reference_runner: {args.scenarios} is not JSON: {error}", file=sys.stderr)
        return 2
    scenarios = loaded if isinstance(loaded, list) else [loaded]
    try:
        for scenario in scenarios:
            _validate(scenario)
    except ScenarioError as error:
        print(f"reference_runner: bad scenario: {error}", file=sys.stderr)
        return 2
    if args.only:
        scenarios = [s for s in scenarios if s["id"] == args.only]
        if not scenarios:
            print(f"reference_runner: no scenario {args.only}", file=sys.stderr)
            return 2

    started = time.monotonic()
    stats = {"pipelineRuns": 0}
    results = run_scenarios(scenarios, stats, max(1, args.jobs)) if scenarios else []
    output = {
        "beamVersion": beam.__version__,
        "pipelineRuns": stats["pipelineRuns"],
        "seconds": round(time.monotonic() - started, 3),
        "results": results,
    }
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump(output, out)
    else:
        json.dump(output, sys.stdout)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
