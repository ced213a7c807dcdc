"""``--engine nvfuser`` and ``--compare-engines``: the same fusion through real nvFuser.

nvFuser's segmentation is its parsed log (``fusecli.engines.nvfuser_log``); its outputs are
judged exactly as fusecli's are (``fusecli.app.judge``), against eager torch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from fusecli.engines.compare import (
    EngineComparison,
    compare_engines,
    fusecli_segments,
    nvfuser_segments,
)
from fusecli.engines.compare import EngineSegment as _Side
from fusecli.engines.nvfuser import NvfuserRun, Runner, load_nvfuser, run_with_nvfuser
from fusecli.engines.nvfuser_log import NvfuserSegmentation, parse_log
from fusecli.ir.optype import OpKind

ENGINE_NAMES = ("fusecli", "nvfuser")


@dataclass(slots=True)
class NvfuserOutcome:
    """Real nvFuser on one fusion: what it printed and raised, and that log read as data."""

    run: NvfuserRun
    parsed: NvfuserSegmentation


def resolve_runner(runner: Runner | None) -> Runner:
    """The runner to use: the one given (tests inject a recorded log), else real nvFuser, which
    must import here (``MissingEnvironmentError``, exit 4, when it does not)."""
    if runner is not None:
        return runner
    load_nvfuser()
    return run_with_nvfuser


def run_nvfuser(loaded: Any, runner: Runner) -> NvfuserOutcome:
    run = runner(loaded)
    return NvfuserOutcome(run, parse_log(run.log, run.error))


def compare_with_fusecli(segmented: Any, nvfuser: NvfuserOutcome) -> EngineComparison:
    """fusecli's ``SegmentedFusion`` (None when its segmenter crashed) against nvFuser's log."""
    errors = {}
    if segmented is None or not segmented.ok:
        errors["fusecli"] = "no segmentation"
    if not nvfuser.parsed.ok:
        errors["nvfuser"] = nvfuser.parsed.error or "no segmentation"
    ours = fusecli_segments(segmented) if segmented is not None else []
    return compare_engines(ours, nvfuser_segments(nvfuser.parsed), errors)


# -- fusecli run ---------------------------------------------------------------------------------


def run_engines(loaded: Any, options: Any) -> Any:
    """``run`` under ``--engine nvfuser`` (nvFuser's outcome) or ``--compare-engines`` (fusecli's
    outcome, with both engines' in ``engines``); the worst of the two decides the exit code."""
    from fusecli.app.pipeline import run_loaded

    runner = resolve_runner(options.nvfuser_runner)
    theirs = run_loaded_nvfuser(loaded, options, runner)
    if not options.compare_engines:
        return theirs
    ours = run_loaded(loaded, replace(options, engine="fusecli", compare_engines=False))
    comparison = compare_engines(
        [_Side(i, s.scheduler or "", s.exprs) for i, s in enumerate(ours.segments)],
        [_Side(i, s.scheduler or "", s.exprs) for i, s in enumerate(theirs.segments)],
        {engine: outcome.error or "no segmentation"
         for engine, outcome in (("fusecli", ours), ("nvfuser", theirs))
         if not outcome.segments},
    )
    ours.engines = {"fusecli": ours, "nvfuser": theirs, "comparison": comparison}
    ours.exit_code = max(ours.exit_code, theirs.exit_code)
    return ours


def run_loaded_nvfuser(loaded: Any, options: Any, runner: Runner) -> Any:
    """Execute with real nvFuser and judge each output against eager torch."""
    from fusecli.app.judge import diff_outputs, float64_reference, identical_outputs
    from fusecli.app.pipeline import (
        EXIT_MISMATCH,
        FusionOutcome,
        SegmentInfo,
        describe_inputs,
        reference_inputs,
    )
    from fusecli.errors import FusecliError, PipelineError
    from fusecli.reference import run_reference

    outcome = FusionOutcome(
        path=str(loaded.path), name=loaded.name, notices=list(loaded.notices),
        inputs=describe_inputs(loaded.inputs),
    )
    started = time.perf_counter()
    nvfuser = run_nvfuser(loaded, runner)
    outcome.segments = [
        SegmentInfo(s.id, s.scheduler, "nvfuser", s.ops) for s in nvfuser.parsed.segments
    ]
    outcome.seconds = time.perf_counter() - started
    if nvfuser.run.error is not None or nvfuser.run.outputs is None:
        outcome.status, outcome.exit_code = "error", PipelineError.exit_code
        outcome.error = f"nvFuser: {nvfuser.run.error or 'no outputs'}"
        return outcome
    fusion, actual = loaded.fusion, nvfuser.run.outputs
    try:
        expected = run_reference(fusion, reference_inputs(fusion, loaded.inputs),
                                 seed=options.seed).outputs
        identical = identical_outputs(actual, expected)
        precise, bounds = float64_reference(fusion, loaded.inputs, options, identical)
        outcome.outputs = diff_outputs(
            fusion, loaded.inputs, actual, expected, precise, options, bounds, identical
        )
    except FusecliError as error:
        if options.debug:
            raise
        outcome.status, outcome.error, outcome.exit_code = "error", str(error), error.exit_code
        return outcome
    judged = outcome.outputs
    if any(expr.op.kind is OpKind.RANDOM for expr in fusion.exprs):
        # The same Philox stream, but nvFuser seeds unseeded ops from its own generator: values
        # differ (fusecli.ir.rng)
        outcome.notices.append(
            "the fusion has random ops: nvFuser's random numbers are not the reference's, so "
            "its outputs are judged by dtype and shape only (values shown, not judged)"
        )
        judged = [d for d in judged if not (d.dtype_ok and d.shape_ok)]
    if not all(d.ok for d in judged):
        outcome.status, outcome.exit_code = "mismatch", EXIT_MISMATCH
    outcome.seconds = time.perf_counter() - started
    return outcome
