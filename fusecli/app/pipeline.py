"""``fusecli run`` as a library function: load, execute, compare against eager torch.

Each path yields one or more loaded fusions; each fusion is executed on the chosen executor,
run through the reference interpreter (and, for the tie-break, the float64 reference), and
every output compared. The result is plain data that ``fusecli.report`` renders.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusecli.errors import FusecliError, InputError

EXIT_OK, EXIT_MISMATCH = 0, 1


@dataclass(frozen=True, slots=True)
class RunOptions:
    executor: str = "auto"
    device: str = "auto"
    seed: int = 0
    rtol: float | None = None
    atol: float | None = None
    float64_tiebreak: bool = True
    rules: str = "nvfuser"
    strict: bool = False  # a segment without a generated kernel is an error, not ATen
    debug: bool = False  # let errors propagate, with their tracebacks


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

    @property
    def ok(self) -> bool:
        return self.status == "pass"


@dataclass(slots=True)
class RunReport:
    fusions: list[FusionOutcome] = field(default_factory=list)

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
    from fusecli.load import discover, load_path

    report = RunReport()
    try:
        files = discover(list(paths))
    except FusecliError as error:
        if options.debug:
            raise
        report.fusions.append(_error_outcome(str(paths[0]), "", error))
        return report
    if not files:
        error = InputError("no .py, .yaml or .yml fusion files found", where=str(paths[0]))
        if options.debug:
            raise error
        report.fusions.append(_error_outcome(str(paths[0]), "", error))
    for path in files:
        if progress:
            progress(str(path))
        try:
            loaded = load_path(path, device=options.device, seed=options.seed)
        except FusecliError as error:
            if options.debug:
                raise
            report.fusions.append(_error_outcome(str(path), path.stem, error))
            continue
        if not loaded:
            report.fusions.append(
                _error_outcome(
                    str(path), path.stem,
                    InputError("defines no fusion with inputs to run", where=str(path)),
                )
            )
        for fusion in loaded:
            report.fusions.append(run_loaded(fusion, options))
    return report


def _error_outcome(path: str, name: str, error: FusecliError) -> FusionOutcome:
    return FusionOutcome(
        path=path, name=name, status="error", error=str(error), exit_code=error.exit_code
    )


def run_loaded(loaded: Any, options: RunOptions) -> FusionOutcome:
    """Execute one loaded fusion and compare each output with the reference."""
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
            fusion, _clone(loaded.inputs), rules=options.rules, executor=options.executor,
            seed=options.seed, strict=options.strict,
        )
        outcome.segments = [
            SegmentInfo(s.id, s.scheduler, s.executor, s.exprs, s.fallback)
            for s in run.segments
        ]
        actual = run.outputs
        expected = run_reference(fusion, _clone(loaded.inputs), seed=options.seed).outputs
        precise = None
        if options.float64_tiebreak:
            precise = run_reference(
                fusion, _clone(loaded.inputs), float64=True, seed=options.seed
            ).outputs
    except FusecliError as error:
        if options.debug:
            raise
        outcome.status, outcome.error, outcome.exit_code = "error", str(error), error.exit_code
        outcome.seconds = time.perf_counter() - started
        return outcome
    outcome.outputs = diff_outputs(fusion, loaded.inputs, actual, expected, precise, options)
    if not all(d.ok for d in outcome.outputs):
        outcome.status, outcome.exit_code = "mismatch", EXIT_MISMATCH
    outcome.seconds = time.perf_counter() - started
    return outcome


def diff_outputs(
    fusion: Any,
    inputs: Sequence[Any],
    actual: Sequence[Any],
    expected: Sequence[Any],
    precise: Sequence[Any] | None,
    options: RunOptions,
) -> list[Any]:
    """Each output against the reference: tolerances by dtype and reduction size, and the
    float64 reference (``precise``) as tie-break. One ``OutputDiff`` per output."""
    from fusecli.compare import compare_tensors, tolerance_for

    reductions = reduction_sizes(fusion, inputs)
    diffs = []
    for index, (got, want) in enumerate(zip(actual, expected)):
        tolerance = tolerance_for(
            want.dtype, reductions.get(index, 1), rtol=options.rtol, atol=options.atol
        )
        diffs.append(compare_tensors(
            got, want, tolerance=tolerance,
            float64_reference=precise[index] if precise is not None else None,
        ))
    return diffs


def _clone(inputs: Sequence[Any]) -> list[Any]:
    """Fresh copies with the same strides: executors may write aliased outputs into inputs."""
    from fusecli.load.inputs import clone_exact

    return list(clone_exact(list(inputs)))


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


def reduction_sizes(fusion: Any, inputs: Sequence[Any]) -> dict[int, int]:
    """Per visible output, the largest number of elements any reduction feeding it combines.

    Tolerances grow with it: a sum of 4096 float32 values is not exact to 1 ulp. Computed
    from the input shapes by walking producers; unknown extents count as the largest input.
    """
    import math

    from fusecli.ir.nodes import SymbolicExtent, TensorView
    from fusecli.ir.optype import OpKind

    bindings: dict[object, int] = {}
    for value, tensor in zip(fusion.inputs, inputs):
        if isinstance(value, TensorView) and hasattr(tensor, "shape"):
            for domain, size in zip(value.logical, tensor.shape):
                for extent in (domain.extent, domain.expanded):
                    if isinstance(extent, SymbolicExtent):
                        bindings[extent] = int(size)
    largest_input = max(
        (math.prod(t.shape) for t in inputs if hasattr(t, "shape")), default=1
    )

    def size_of(extent: object) -> int:
        from fusecli.ir.nodes import evaluate_extent

        try:
            return evaluate_extent(extent, bindings)
        except (KeyError, TypeError):
            return largest_input

    reduced: dict[int, int] = {}
    for expr in fusion.exprs:
        incoming = max(
            (reduced.get(v.uid, 1) for v in expr.inputs if isinstance(v, TensorView)), default=1
        )
        local = 1
        if expr.op.kind in (OpKind.REDUCTION, OpKind.NORMALIZATION, OpKind.SCAN,
                            OpKind.MATMUL, OpKind.ATTENTION):
            for out in expr.tensor_outputs():
                local = max(local, math.prod(size_of(d.extent) for d in out.domain
                                             if d.is_reduction) or 1)
            if expr.op.kind in (OpKind.SCAN, OpKind.ATTENTION):
                local = max(local, largest_input)
        for out in expr.outputs:
            reduced[out.uid] = max(incoming, local)
    visible = [o for o in fusion.outputs if o.alias_input is None]
    return {index: reduced.get(o.value.uid, 1) for index, o in enumerate(visible)}
