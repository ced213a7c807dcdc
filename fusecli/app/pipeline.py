"""``fusecli run`` as a library function: load, execute, compare against eager torch.

Each path yields one or more loaded fusions; each fusion is executed on the chosen executor,
run through the reference interpreter (and, for the tie-break, the float64 reference), and
every output compared. The result is plain data that ``fusecli.report`` renders.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusecli.app.judge import (
    diff_outputs,
    float64_reference,
    identical_outputs,
    reference_inputs,
)
from fusecli.engines.base import SegmentInfo
from fusecli.errors import FusecliError, InputError, PipelineError

EXIT_OK, EXIT_MISMATCH = 0, 1


@dataclass(frozen=True, slots=True)
class RunOptions:
    executor: str = "auto"
    device: str = "auto"
    seed: int = 0
    rtol: float | None = None
    atol: float | None = None
    float64_tiebreak: bool = True
    tolerance: str = "analytic"  # analytic: vs float64 by error analysis; loose: vs eager torch
    rules: str = "nvfuser"
    strict: bool = False  # a segment without a generated kernel is an error, not ATen
    timeout: float | None = None  # seconds one file (load and runs) may take; None: no limit
    all_calls: bool = False  # every fd.execute call of a script, not one per input signature
    debug: bool = False  # let errors propagate, with their tracebacks
    engine: str = "fusecli"  # or "nvfuser": real nvFuser (fusecli.engines.base)
    compare_engines: bool = False  # both engines, their segmentations compared
    nvfuser_runner: Callable[[Any], Any] | None = field(default=None, compare=False)

    @property
    def needs_float64(self) -> bool:
        """Whether the float64 reference runs: the analytic bound or the tie-break needs it."""
        return self.float64_tiebreak or self.tolerance == "analytic"


@dataclass(frozen=True, slots=True)
class InputInfo:
    index: int
    kind: str  # "tensor" or "scalar"
    dtype: str
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    value: Any = None  # scalars only


@dataclass(slots=True)
class FusionOutcome:
    path: str
    name: str
    status: str = "pass"  # pass, mismatch, error
    error: str | None = None
    exit_code: int = EXIT_OK
    inputs: list[InputInfo] = field(default_factory=list)
    segments: list[SegmentInfo] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)  # fusecli.compare.OutputDiff
    notices: list[str] = field(default_factory=list)
    seconds: float = 0.0
    detail: str | None = None  # the traceback of an internal error
    engines: dict[str, Any] | None = None  # --compare-engines: each engine's outcome, comparison

    @property
    def ok(self) -> bool:
        return self.status == "pass"

    @property
    def check(self) -> str:
        """What was compared with what, honestly: ATen against the reference is torch twice."""
        kinds = {s.executor for s in self.segments}
        if kinds == {"nvfuser"}:
            return "real nvFuser vs reference"
        if kinds <= {"aten"}:
            return "ATen executor vs reference, both torch"
        return f"generated CUDA kernels{'' if kinds == {'cupy'} else ' and ATen'} vs reference"


@dataclass(slots=True)
class RunReport:
    fusions: list[FusionOutcome] = field(default_factory=list)
    interrupted: str | None = None  # "interrupted" or "terminated": the run stopped early
    notices: list[str] = field(default_factory=list)  # about the run, not one fusion

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.fusions)

    @property
    def exit_code(self) -> int:
        return max((f.exit_code for f in self.fusions), default=EXIT_OK)


def run_paths(
    paths: Sequence[Path],
    options: RunOptions,
    progress: Callable[[str], None] | None = None,
) -> RunReport:
    """Run every fusion found under ``paths``; errors become outcomes, never exceptions."""
    from fusecli.load import discover

    report = RunReport()
    skipped: list[Path] = []
    try:
        files = discover(list(paths), skipped)
    except FusecliError as error:
        if options.debug:
            raise
        report.fusions.append(_error_outcome(str(paths[0]), "", error))
        return report
    report.notices += skipped_notices(skipped)
    if not files:
        found = "no .py, .yaml or .yml fusion files found"
        if skipped:
            found = f"no repros found ({len(skipped)} file(s) do not look like repros)"
        error = InputError(found, where=str(paths[0]))
        if options.debug:
            raise error
        report.fusions.append(_error_outcome(str(paths[0]), "", error))
    try:
        for path in files:
            if progress:
                progress(str(path))
            report.fusions.extend(run_file(path, options))
    except KeyboardInterrupt as stop:
        report.interrupted = str(stop) or "interrupted"
    return report


def skipped_notices(skipped: Sequence[Path]) -> list[str]:
    """What discovery passed over, said once: Python repros run as code, so only files that
    look like repros are run from a folder."""
    if not skipped:
        return []
    names = ", ".join(str(p) for p in skipped[:5]) + (", ..." if len(skipped) > 5 else "")
    return [
        f"skipped {len(skipped)} file(s) that are no repros (setup.py, conftest.py, test "
        "modules, or code that imports neither nvfuser nor fusecli and defines no "
        f"FusionDefinition; name a file to run it anyway): {names}"
    ]


def run_file(
    path: Path, options: RunOptions, on_phase: Callable[[str], None] | None = None
) -> list[FusionOutcome]:
    """Every fusion ``path`` defines, each as its outcome: one fusion's failure, a crash of
    fusecli's included, is that fusion's error record and never ends the run. ``on_phase`` is
    told when each phase that ``--timeout`` limits begins (the load, each fusion's run)."""
    from fusecli.load import load_path

    phase = on_phase or (lambda where: None)
    try:
        phase(str(path))
        with time_limit(options.timeout, str(path)):
            loaded = load_path(
                path, device=options.device, seed=options.seed, all_calls=options.all_calls
            )
    except FusecliError as error:
        if options.debug:
            raise
        return [_error_outcome(str(path), path.stem, error)]
    except Exception as error:
        if options.debug:
            raise
        return [internal_error_outcome(str(path), path.stem, error)]
    if not loaded:
        error = InputError("defines no fusion with inputs to run", where=str(path))
        return [_error_outcome(str(path), path.stem, error)]
    outcomes = []
    for fusion in loaded:
        try:
            phase(f"{fusion.path}: {fusion.name}")
            with time_limit(options.timeout, f"{fusion.path}: {fusion.name}"):
                outcomes.append(run_loaded(fusion, options))
        except FusecliError as error:  # the time limit, or an error outside run_loaded's guard
            if options.debug:
                raise
            outcomes.append(_error_outcome(str(fusion.path), fusion.name, error))
        except Exception as error:
            if options.debug:
                raise
            outcomes.append(internal_error_outcome(str(fusion.path), fusion.name, error))
    return outcomes


class FusionTimeout(PipelineError):
    """One file took longer than ``--timeout`` (exit code 3 for that file)."""


@contextlib.contextmanager
def time_limit(seconds: float | None, where: str) -> Iterator[None]:
    """Raise FusionTimeout inside the block after ``seconds`` (main thread, POSIX only).

    Best effort: the alarm interrupts Python code (a script looping forever), not a long
    call inside one C function, which it interrupts when that call returns."""
    usable = (
        seconds is not None and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise FusionTimeout(f"took longer than --timeout {seconds:g} s", where=where)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def internal_error_outcome(path: str, name: str, error: BaseException) -> FusionOutcome:
    """A crash of fusecli itself on one fusion: an error record with its traceback."""
    lines = str(error).strip().splitlines()
    message = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return FusionOutcome(
        path=path, name=name, status="error", error=f"internal error: {message}",
        exit_code=PipelineError.exit_code,
        detail="".join(traceback.format_exception(error)),
    )


def _error_outcome(path: str, name: str, error: FusecliError) -> FusionOutcome:
    return FusionOutcome(
        path=path, name=name, status="error", error=str(error), exit_code=error.exit_code
    )


def run_loaded(loaded: Any, options: RunOptions) -> FusionOutcome:
    """Execute one loaded fusion on the chosen engine and compare each output with the
    reference; with ``compare_engines``, on both engines, their segmentations compared."""
    from fusecli.engines.base import get_engine

    if options.compare_engines:
        return _compare_engines(loaded, options)
    engine = get_engine(options.engine, options.nvfuser_runner)
    started = time.perf_counter()
    run = engine.execute(loaded, options)
    return judge_run(loaded, run, options, started)


def _compare_engines(loaded: Any, options: RunOptions) -> FusionOutcome:
    """fusecli's outcome, with both engines' in ``engines``; the worse decides the exit code."""
    from dataclasses import replace

    from fusecli.engines.compare import EngineSegment, compare_engines

    single = replace(options, compare_engines=False)
    theirs = run_loaded(loaded, replace(single, engine="nvfuser"))
    ours = run_loaded(loaded, replace(single, engine="fusecli"))
    comparison = compare_engines(
        [EngineSegment(i, s.scheduler or "", s.exprs) for i, s in enumerate(ours.segments)],
        [EngineSegment(i, s.scheduler or "", s.exprs) for i, s in enumerate(theirs.segments)],
        {engine: outcome.error or "no segmentation"
         for engine, outcome in (("fusecli", ours), ("nvfuser", theirs))
         if not outcome.segments},
    )
    ours.engines = {"fusecli": ours, "nvfuser": theirs, "comparison": comparison}
    ours.exit_code = max(ours.exit_code, theirs.exit_code)
    return ours


def judge_run(loaded: Any, run: Any, options: RunOptions, started: float) -> FusionOutcome:
    """An engine's run of ``loaded`` (``fusecli.engines.base.EngineRun``) as an outcome: its
    error, or every output judged against eager torch on the inputs the engine ran on."""
    from fusecli.ir.optype import OpKind
    from fusecli.reference import run_reference

    outcome = FusionOutcome(
        path=str(loaded.path), name=loaded.name, notices=[*loaded.notices, *run.notices],
        inputs=describe_inputs(loaded.inputs),
    )
    outcome.segments = list(run.segmentation.segments)
    foreign = run.engine != "fusecli"
    if run.error is not None or run.outputs is None:
        outcome.status, outcome.exit_code = "error", run.failure_exit
        shown = {"nvfuser": "nvFuser"}.get(run.engine, run.engine)
        outcome.error = (f"{shown}: " if foreign else "") + (run.error or "no outputs")
        outcome.detail = run.error_text if foreign else None
        outcome.seconds = time.perf_counter() - started
        return outcome
    fusion, inputs, actual = loaded.fusion, run.inputs, run.outputs
    failed_kernel = _failed_kernel(outcome.segments, options)
    try:
        eager_inputs = reference_inputs(fusion, inputs)
        expected = run_reference(fusion, eager_inputs, seed=options.seed).outputs
        identical = identical_outputs(actual, expected)
        precise, bounds = float64_reference(fusion, inputs, options, identical)
        outcome.outputs = diff_outputs(
            fusion, inputs, actual, expected, precise, options, bounds, identical
        )
    except FusecliError as error:
        if options.debug:
            raise
        outcome.status, outcome.error, outcome.exit_code = "error", str(error), error.exit_code
        outcome.seconds = time.perf_counter() - started
        return outcome
    judged = outcome.outputs
    if foreign and any(expr.op.kind is OpKind.RANDOM for expr in fusion.exprs):
        # The same Philox stream, but nvFuser seeds unseeded ops from its own generator: values
        # differ (fusecli.ir.rng)
        outcome.notices.append(
            f"the fusion has random ops: {run.engine}'s random numbers are not the "
            "reference's, so its outputs are judged by dtype and shape only (values shown, "
            "not judged)"
        )
        judged = [d for d in judged if not (d.dtype_ok and d.shape_ok)]
    if not all(d.ok for d in judged):
        outcome.status, outcome.exit_code = "mismatch", EXIT_MISMATCH
    if failed_kernel is not None:  # the outputs are still diffed: they came from ATen
        outcome.status, outcome.error, outcome.exit_code = "error", failed_kernel, 3
    outcome.seconds = time.perf_counter() - started
    return outcome


def _failed_kernel(segments: Sequence[SegmentInfo], options: RunOptions) -> str | None:
    """With ``--executor cupy``, a generated kernel that failed to compile or load is the run's
    error (exit 3, DESIGN.md); under ``auto`` it stays a visible fallback to ATen."""
    from fusecli.runtime.cupy_executor import KERNEL_FAILED

    if options.executor != "cupy":
        return None
    for segment in segments:
        if segment.fallback and segment.fallback.startswith(KERNEL_FAILED):
            return f"segment {segment.id} ({segment.scheduler}): {segment.fallback} (ran on ATen)"
    return None


def describe_inputs(inputs: Sequence[Any]) -> list[InputInfo]:
    import torch

    described = []
    for index, value in enumerate(inputs):
        if isinstance(value, torch.Tensor):
            described.append(
                InputInfo(
                    index, "tensor", str(value.dtype).removeprefix("torch."),
                    tuple(value.shape), tuple(value.stride()),
                )
            )
        else:
            described.append(InputInfo(index, "scalar", type(value).__name__, value=value))
    return described
