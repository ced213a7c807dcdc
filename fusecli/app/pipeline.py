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
    clone_inputs,
    diff_outputs,
    float64_reference,
    identical_outputs,
    reference_inputs,
)
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
    engine: str = "fusecli"  # or "nvfuser": real nvFuser (fusecli.app.engines)
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


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    id: int
    scheduler: str | None
    executor: str
    exprs: tuple[str, ...]
    fallback: str | None = None  # why the generated kernel did not run it


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
        f"skipped {len(skipped)} file(s) that import neither nvfuser nor fusecli and define no "
        f"FusionDefinition (name a file to run it anyway): {names}"
    ]


def run_file(path: Path, options: RunOptions) -> list[FusionOutcome]:
    """Every fusion ``path`` defines, each as its outcome: one fusion's failure, a crash of
    fusecli's included, is that fusion's error record and never ends the run."""
    from fusecli.load import load_path

    try:
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
    """Execute one loaded fusion and compare each output with the reference."""
    if options.engine != "fusecli" or options.compare_engines:
        from fusecli.app.engines import run_engines

        return run_engines(loaded, options)
    from fusecli.reference import run_reference
    from fusecli.runtime.segmented import run_fusion

    outcome = FusionOutcome(
        path=str(loaded.path), name=loaded.name, notices=list(loaded.notices),
        inputs=describe_inputs(loaded.inputs),
    )
    fusion = loaded.fusion
    started = time.perf_counter()
    try:
        segmented, run = run_fusion(
            fusion, clone_inputs(loaded.inputs), rules=options.rules, executor=options.executor,
            seed=options.seed, strict=options.strict,
        )
        outcome.segments = [
            SegmentInfo(s.id, s.scheduler, s.executor, s.exprs, s.fallback)
            for s in run.segments
        ]
        failed_kernel = _failed_kernel(outcome.segments, options)
        actual = run.outputs
        eager_inputs = reference_inputs(fusion, loaded.inputs)
        expected = run_reference(fusion, eager_inputs, seed=options.seed).outputs
        identical = identical_outputs(actual, expected)
        precise, bounds = float64_reference(fusion, loaded.inputs, options, identical)
    except FusecliError as error:
        if options.debug:
            raise
        if isinstance(error, InputError) and error.where is None and loaded.line is not None:
            error.where = f"{loaded.path}:{loaded.line}"  # inputs that do not fit: the call
        outcome.status, outcome.error, outcome.exit_code = "error", str(error), error.exit_code
        outcome.seconds = time.perf_counter() - started
        return outcome
    outcome.outputs = diff_outputs(
        fusion, loaded.inputs, actual, expected, precise, options, bounds, identical
    )
    if not all(d.ok for d in outcome.outputs):
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
