"""Running a segmented fusion: segment by segment in run order, intermediates passed along.

This is FusionKernelRuntime::runSegmentsWithInputs: bind the inputs once, then run each
segment on its executor (a generated CUDA kernel through CuPy, or ATen), reading the values
earlier segments wrote into one environment. Scalar exprs (sizes, scalar arithmetic) belong
to no segment; each runs as soon as what it reads exists, or inside the segment that computes
what it reads, as nvFuser's resolveScalarsInGroup makes each segment compute them.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fusecli.errors import PipelineError
from fusecli.ir.nodes import Expr, Fusion, TensorView, Vector, flatten_inputs
from fusecli.ir.optype import OpType
from fusecli.runtime.bind import Bindings, bind_inputs
from fusecli.runtime.cache import cached_plan, value_free_scalars
from fusecli.runtime.context import ExecutionContext, expected_shape
from fusecli.runtime.devices import execution_device
from fusecli.runtime.executor import SegmentOutcome, run_segment
from fusecli.runtime.outputs import collect_outputs
from fusecli.runtime.registry import executor_named, fallback_executor
from fusecli.runtime.warm import CAPACITY as WARM_CAPACITY
from fusecli.runtime.warm import Trace, compile_run
from fusecli.runtime.warm_keys import entry_function, key_function, warm_key
from fusecli.segment.output_aliases import output_allocations
from fusecli.segment.result import Segment, SegmentedFusion


@dataclass(frozen=True, slots=True)
class SegmentRun:
    id: int
    scheduler: str
    executor: str
    exprs: tuple[str, ...]
    seconds: float
    fallback: str | None = None  # why the executor asked for did not run it


@dataclass(slots=True)
class SegmentedRun:
    outputs: list[Any]
    segments: list[SegmentRun] = field(default_factory=list)


class SegmentRunner:
    """One execution of a segmented fusion: bound inputs, an environment, segments run so far."""

    def __init__(
        self,
        segmented: SegmentedFusion,
        inputs: Sequence[Any],
        *,
        executor: str = "auto",
        seed: int = 0,
        device: Any = None,
        strict: bool = False,
        bindings: Bindings | None = None,
        trace: Trace | None = None,
    ) -> None:
        """``bindings``: the inputs already bound (a cached plan's), else they are bound here;
        ``trace`` records the run for the warm path (``runtime.warm``)."""
        if segmented.failure is not None:
            failure = segmented.failure
            ops = ", ".join(e.op.value for e in failure.candidate.exprs)
            raise PipelineError(
                f"Can not find a scheduler to schedule fusion segment ({ops}): "
                + "; ".join(f"{v.scheduler}: {v.reason}" for v in failure.verdicts)
            )
        self.fusion = segmented.fusion
        self.allocations = output_allocations(segmented)  # which outputs are views, of what
        self.executor = executor_named(executor)
        self.aten = fallback_executor()
        self.strict = strict
        self.bindings = bindings if bindings is not None else bind_inputs(self.fusion, inputs)
        self.ctx = ExecutionContext.for_fusion(
            self.fusion, device=execution_device(self.bindings, device), seed=seed,
            extents=self.bindings.extents, views=frozenset(self.allocations.evaluated),
        )
        self.env: dict[int, object] = dict(self.bindings.values)
        self.trace = trace
        self.scalars = _ScalarQueue(self.fusion.exprs, self.aten, self.env, self.ctx, trace)

    def run(self, segment: Segment) -> SegmentRun:
        self.scalars.run_ready()
        started = time.perf_counter()
        exprs = self.scalars.with_scalars(segment.exprs)
        if len(exprs) == len(segment.exprs):
            outcome = run_segment(self.executor, segment, self.env, self.ctx,
                                  fallback=self.aten, strict=self.strict)
            executor, fallback = outcome.executor, outcome.fallback
            if self.trace is not None:
                self._record(segment, outcome)
        else:  # scalar exprs join the segment: only ATen runs such a mixed expr list
            self.aten.run_exprs(exprs, self.env, self.ctx)
            if self.trace is not None:
                self.trace.aten(exprs, self.aten)
            executor = self.aten.name
            fallback = (None if self.executor is self.aten
                        else "the segment reads sizes of tensors it computes itself")
        return SegmentRun(
            segment.id, segment.scheduler, executor, tuple(e.op.value for e in segment.exprs),
            time.perf_counter() - started, fallback,
        )

    def _record(self, segment: Segment, outcome: SegmentOutcome) -> None:
        """The trace's steps for ``segment`` (or a part of one) run as ``outcome`` says."""
        assert self.trace is not None
        if outcome.parts:  # a part run as parts of its own
            for part, ran in outcome.parts:
                self._record(part, ran)
            return
        if outcome.executor == self.aten.name:
            self.trace.aten(segment.exprs, self.aten)
        else:
            self.trace.kernel(segment, outcome.launch, self.executor)
            if outcome.kernel is not None:  # the outputs it left as views
                self.trace.aten(outcome.kernel.views, self.aten)

    def outputs(self) -> list[Any]:
        self.scalars.run_ready()
        return collect_outputs(self.fusion, self.env, self.bindings, self.ctx, self.allocations)


def execute_segmented(
    segmented: SegmentedFusion,
    inputs: Sequence[Any],
    *,
    executor: str = "auto",
    seed: int = 0,
    device: Any = None,
    strict: bool = False,
    bindings: Bindings | None = None,
) -> SegmentedRun:
    """Run a ``SegmentedFusion`` (fusecli.segment) on ``inputs``, every segment in order.

    ``strict``: a segment the kernel executor cannot run is an error (exit 3), not ATen.
    """
    runner = SegmentRunner(
        segmented, inputs, executor=executor, seed=seed, device=device, strict=strict,
        bindings=bindings,
    )
    runs = [runner.run(segment) for segment in segmented.segments]
    return SegmentedRun(runner.outputs(), runs)


class _ScalarQueue:
    """Scalar exprs: each runs once everything it reads is in the environment, or inside the
    segment that computes what it reads (a size() of a tensor made in that segment)."""

    def __init__(self, exprs: Sequence[Expr], runner: Any, env: dict, ctx: Any,
                 trace: Trace | None = None) -> None:
        self.position = {e.uid: i for i, e in enumerate(exprs)}
        self.pending = [e for e in exprs if not any(isinstance(o, TensorView) for o in e.outputs)]
        self.producer = {o.uid: e for e in self.pending for o in e.outputs}
        self.runner, self.env, self.ctx, self.trace = runner, env, ctx, trace

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
        for item in _operands(expr):
            if item.uid not in self.env and not getattr(item, "is_constant", False):
                return False
        return True

    def _size_of_absent(self, expr: Expr) -> int | None:
        """A size() of a tensor no segment wrote out (one computed inside a segment): its
        extent, as nvFuser's size is; None where the run alone decides it."""
        if expr.op is not OpType.size or expr.inputs[0].uid in self.env:
            return None
        return expected_shape(expr.inputs[0], self.ctx, self.env)[expr.attr("dim")]

    def run_ready(self) -> None:
        progressed = True
        while progressed and self.pending:
            progressed = False
            for expr in list(self.pending):
                size = self._size_of_absent(expr)
                if size is not None:  # decided by the signature: no step of a warm run
                    self.env[expr.output.uid] = size
                elif self._ready(expr):
                    self.runner.run_exprs([expr], self.env, self.ctx)
                    if self.trace is not None:
                        self.trace.aten([expr], self.runner)
                else:
                    continue
                self.pending.remove(expr)
                progressed = True


def _operands(expr: Expr) -> list[Any]:
    found = []
    for value in expr.inputs:
        found.extend(value.elements if isinstance(value, Vector) else (value,))
    return found


def run_fusion(
    fusion: Fusion,
    inputs: Sequence[Any],
    *,
    rules: str = "nvfuser",
    executor: str = "auto",
    seed: int = 0,
    device: Any = None,
    strict: bool = False,
) -> tuple[SegmentedFusion, SegmentedRun]:
    """Segment ``fusion`` for ``inputs`` (once per input signature: ``fusecli.runtime.cache``)
    and run it: what ``fd.execute`` and ``fusecli run`` do."""
    segmented, bindings = _planned(fusion, inputs, rules)
    return segmented, execute_segmented(
        segmented, inputs, executor=executor, seed=seed, device=device, strict=strict,
        bindings=bindings,
    )


def _planned(fusion: Fusion, inputs: Sequence[Any], rules: str,
             ) -> tuple[SegmentedFusion, Bindings | None]:
    """The segmentation of ``inputs``' signature (``runtime.cache``) and the inputs bound to
    it; no bindings where no scheduler took a segment (the runner reports that)."""
    plan = cached_plan(fusion, inputs, rules)
    segmented = plan.segmented
    return segmented, plan.bind(inputs) if segmented.failure is None else None


_UNSEEN = object()


def execute(fusion: Fusion, inputs: Sequence[Any], rules: str = "nvfuser",
            executor: str = "auto", device: Any = None) -> list[Any]:
    """What ``fd.execute`` does: the compiled run of the inputs' signature
    (``runtime.warm``), or, on its first call, the full run, compiled for the next. A compiled
    run that raises where the full run then succeeds is dropped: that signature runs in full.
    The warm call is one function written per fusion (``warm_keys.entry_function``)."""
    return warm_entry(fusion)(inputs, rules, executor, device)


def warm_entry(fusion: Fusion) -> Any:
    """The fusion's warm call (made once): ``execute`` is it, and so may a caller be that
    holds it (``frontend.execution``)."""
    call = fusion.memo.get("warm_call")
    if call is None:
        free = value_free_scalars(fusion)  # scalars read anew each call (a Philox offset)
        runs = fusion.memo["warm"] = OrderedDict()

        def general(inputs: Sequence[Any], rules: str, executor: str, device: Any,
                    broken: bool = False) -> list[Any]:
            return _general(fusion, free, runs, inputs, rules, executor, device, broken)

        call = fusion.memo["warm_call"] = entry_function(fusion, free, runs, general)
    return call


def _general(fusion: Fusion, free: frozenset[int], runs: OrderedDict, inputs: Sequence[Any],
             rules: str, executor: str, device: Any, broken: bool) -> list[Any]:
    """A call the written entry does not take: its compiled run where it has one (unless
    ``broken``: it raised), else the full run, compiled for the next call of its signature."""
    flat = inputs
    key = key_function(fusion, free)(inputs, rules, executor, device)
    if key is None:  # nested lists and tuples (define_vector inputs' values)
        flat = flatten_inputs(inputs)
        key = warm_key(flat, rules, executor, device, free)
    warm = runs.get(key, _UNSEEN)
    if not broken and warm is not None and warm is not _UNSEEN:
        try:
            return warm(flat)
        except Exception:  # the full run reports it, naming the segment and op
            broken = True
    segmented, bindings = _planned(fusion, inputs, rules)
    trace = Trace() if warm is _UNSEEN else None
    runner = SegmentRunner(segmented, inputs, executor=executor, device=device,
                           bindings=bindings, trace=trace)
    for segment in segmented.segments:
        runner.run(segment)
    outputs = runner.outputs()
    if broken:  # the full run took the inputs the compiled one could not: never again
        runs[key] = None
    if trace is not None:  # a signature whose run cannot be replayed is remembered as None
        # the fusion segmented (rewritten: welford translated, casts privatized) is the one
        # whose scalar exprs the run computed
        runs[key] = compile_run(runner.fusion, trace, runner.env, runner.bindings, runner.ctx,
                                outputs, runner.allocations, free)
        while len(runs) > WARM_CAPACITY:
            runs.popitem(last=False)
    return outputs
