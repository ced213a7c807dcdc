"""Running a segmented fusion: segment by segment in run order, intermediates passed along.

This is FusionKernelRuntime::runSegmentsWithInputs: bind the inputs once, then run each
segment's exprs on its executor, reading the values earlier segments wrote into one
environment. Scalar exprs (sizes, scalar arithmetic) belong to no segment; each runs as soon
as what it reads exists, as nvFuser's resolveScalarsInGroup makes each segment compute them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fusecli.errors import PipelineError
from fusecli.ir.nodes import Expr, TensorView, Vector
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.execute import execution_device, get_executor
from fusecli.runtime.outputs import collect_outputs


@dataclass(frozen=True, slots=True)
class SegmentRun:
    id: int
    scheduler: str
    executor: str
    exprs: tuple[str, ...]
    seconds: float
    fallback: str | None = None  # why the requested executor did not run it


@dataclass(slots=True)
class SegmentedRun:
    outputs: list[Any]
    segments: list[SegmentRun] = field(default_factory=list)


def execute_segmented(
    segmented: Any,
    inputs: Sequence[Any],
    *,
    executor: str = "auto",
    seed: int = 0,
    device: Any = None,
) -> SegmentedRun:
    """Run a ``SegmentedFusion`` (fusecli.segment.segmenter) on ``inputs``."""
    if segmented.failure is not None:
        failure = segmented.failure
        ops = ", ".join(e.op.value for e in failure.candidate.exprs)
        raise PipelineError(
            f"Can not find a scheduler to schedule fusion segment ({ops}): "
            + "; ".join(f"{v.scheduler}: {v.reason}" for v in failure.verdicts)
        )
    fusion = segmented.fusion
    runner = get_executor("aten" if executor == "auto" else executor)
    bindings = bind_inputs(fusion, inputs)
    ctx = ExecutionContext.for_fusion(
        fusion, device=execution_device(bindings, device), seed=seed, extents=bindings.extents
    )
    env: dict[int, object] = dict(bindings.values)
    scalars = _ScalarQueue(fusion.exprs, runner, env, ctx)
    runs = []
    for segment in segmented.segments:
        scalars.run_ready()
        started = time.perf_counter()
        runner.run_exprs(scalars.with_scalars(segment.exprs), env, ctx)
        runs.append(
            SegmentRun(
                segment.id, segment.scheduler, runner.name,
                tuple(e.op.value for e in segment.exprs), time.perf_counter() - started,
            )
        )
    scalars.run_ready()
    return SegmentedRun(collect_outputs(fusion, env, bindings, ctx), runs)


class _ScalarQueue:
    """Scalar exprs: each runs once everything it reads is in the environment, or inside the
    segment that computes what it reads (a size() of a tensor made in that segment)."""

    def __init__(self, exprs: Sequence[Expr], runner: Any, env: dict, ctx: Any) -> None:
        self.position = {e.uid: i for i, e in enumerate(exprs)}
        self.pending = [e for e in exprs if not any(isinstance(o, TensorView) for o in e.outputs)]
        self.producer = {o.uid: e for e in self.pending for o in e.outputs}
        self.runner, self.env, self.ctx = runner, env, ctx

    def with_scalars(self, exprs: Sequence[Expr]) -> list[Expr]:
        """``exprs`` plus the pending scalar exprs they need, in fusion order."""
        needed: dict[int, Expr] = {}
        stack = [v for e in exprs for v in _operands(e)]
        while stack:
            value = stack.pop()
            producer = self.producer.get(value.uid)
            if producer is None or producer.uid in needed or value.uid in self.env:
                continue
            needed[producer.uid] = producer
            stack.extend(_operands(producer))
        if not needed:
            return list(exprs)
        self.pending = [e for e in self.pending if e.uid not in needed]
        merged = [*exprs, *needed.values()]
        return sorted(merged, key=lambda e: self.position[e.uid])

    def _ready(self, expr: Expr) -> bool:
        for value in expr.inputs:
            needed = value.elements if isinstance(value, Vector) else (value,)
            for item in needed:
                if item.uid not in self.env and not getattr(item, "is_constant", False):
                    return False
        return True

    def run_ready(self) -> None:
        progressed = True
        while progressed and self.pending:
            progressed = False
            for expr in list(self.pending):
                if self._ready(expr):
                    self.runner.run_exprs([expr], self.env, self.ctx)
                    self.pending.remove(expr)
                    progressed = True


def _operands(expr: Expr) -> list[Any]:
    found = []
    for value in expr.inputs:
        found.extend(value.elements if isinstance(value, Vector) else (value,))
    return found


def run_fusion(
    fusion: Any,
    inputs: Sequence[Any],
    *,
    rules: str = "nvfuser",
    executor: str = "auto",
    seed: int = 0,
    device: Any = None,
) -> tuple[Any, SegmentedRun]:
    """Segment ``fusion`` for ``inputs`` and run it: what ``fd.execute`` and ``fusecli run`` do."""
    from fusecli.segment.segmenter import segment_fusion

    segmented = segment_fusion(fusion, inputs, profile=rules)
    return segmented, execute_segmented(
        segmented, inputs, executor=executor, seed=seed, device=device
    )
