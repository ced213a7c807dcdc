"""A candidate segment: some exprs of a fusion, with its inputs and outputs as nvFuser defines them.

Segment inputs are the fusion inputs its exprs read plus values produced outside it; segment
outputs are the fusion outputs it produces plus values it produces that exprs outside read.
Schedulers see only the candidate, but, as in nvFuser, ``definition()`` still looks into the
complete fusion (the 2024 matmul check relied on that).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

from fusecli.ir.dtype import is_integral
from fusecli.ir.nodes import (
    Expr,
    Fusion,
    Scalar,
    ScalarExtent,
    SymbolicExtent,
    TensorView,
    Val,
    Vector,
    evaluate_extent,
    flatten_inputs,
)
from fusecli.ir.ops_resize import slice_lengths
from fusecli.ir.optype import OpKind, OpType
from fusecli.ir.order import walk_positions
from fusecli.segment.dims import DimGraph

T = TypeVar("T")


class FusionGraph:
    """Indexes over a complete fusion that every candidate shares (built once), and the sizes
    of its inputs when known (nvFuser segments a concretized fusion)."""

    def __init__(
        self, fusion: Fusion, runtime: RuntimeInfo | None = None, infer_allocation: bool = False
    ) -> None:
        self.fusion = fusion
        self.runtime = runtime
        self._infer_allocation = infer_allocation and runtime is not None
        self._allocation: dict[int, tuple[int, ...]] | None = None
        self.position = _walk_positions(fusion)
        self.input_uids = {v.uid for v in fusion.inputs}
        self.output_uids = {o.value.uid for o in fusion.outputs}
        self.producer: dict[int, Expr] = {}
        # dead code reads values too, but no kernel computes it: a value only dead exprs read
        # is no segment's output (nvFuser segments the exprs its outputs depend on)
        self.consumers: dict[int, list[Expr]] = {}
        live = fusion.upstream(fusion.output_values)
        for expr in fusion.exprs:
            for out in expr.outputs:
                self.producer[out.uid] = expr
            if expr.uid not in live:
                continue
            for value in expr.inputs:
                self.consumers.setdefault(value.uid, []).append(expr)
        self._namer = None

    def name(self, tensor: TensorView) -> str:
        """The tensor's name as fusecli's IR printer gives it (T0, T1, ... in order)."""
        if self._namer is None:
            from fusecli.ir.printer import Namer

            self._namer = Namer(self.fusion)
        return self._namer.tensor_name(tensor)

    @property
    def allocation(self) -> dict[int, tuple[int, ...]]:
        """Stride orders of the tensors not laid out in logical order: the inputs'
        ``stride_order``, and with ``infer_allocation`` those nvFuser's pre-segmentation
        passes give aliases and outputs (``allocation.py``)."""
        if self._allocation is None:
            if self._infer_allocation:
                from fusecli.segment.allocation import allocation_orders

                self._allocation = allocation_orders(self.fusion, self.runtime)
            else:
                self._allocation = {v.uid: v.stride_order for v in self.fusion.inputs
                                    if isinstance(v, TensorView) and v.stride_order}
        return self._allocation

    @cached_property
    def output_orders(self) -> dict[int, tuple[int, ...]]:
        """Tensor uid -> the stride order of each fusion output that gets a buffer of its own
        in an order other than its logical one (``allocation``: ``add_output``'s and
        ``stride_order``'s, and AllocationDomainPass's, the order of the input it is computed
        from): nvFuser allocates it so, its kernel writes it so and ``fd.execute`` returns it
        so; tensors between segments keep their logical order."""
        allocation = self.allocation
        return {o.value.uid: allocation[o.value.uid] for o in self.fusion.outputs
                if o.alias_input is None and isinstance(o.value, TensorView)
                and o.value.uid in allocation and o.value.uid not in self.input_uids}

    def size_of(self, extent: object) -> object:
        """An extent's size where the inputs tell it, else the extent itself."""
        if self.runtime is not None:
            size = self.runtime.extent(extent)
            if size is not None:
                return size
        return extent

    def is_tensor_expr(self, expr: Expr) -> bool:
        return any(isinstance(o, TensorView) for o in expr.outputs)

    def live_tensor_exprs(self) -> list[Expr]:
        """The tensor exprs some fusion output depends on, in order; the rest is dead code
        no kernel computes."""
        live = self.fusion.upstream(self.fusion.output_values)
        return [e for e in self.fusion.exprs if self.is_tensor_expr(e) and e.uid in live]


class RuntimeInfo:
    """Concrete sizes from the actual inputs (nvFuser's SchedulerRuntimeInfo)."""

    def __init__(self, fusion: Fusion, inputs: Sequence[object] | None) -> None:
        self.bindings: dict[object, int] = {}
        self.known = inputs is not None
        if inputs is None:
            return
        for value, actual in zip(fusion.inputs, flatten_inputs(inputs)):
            if isinstance(value, TensorView) and hasattr(actual, "shape"):
                for domain, size in zip(value.logical, actual.shape):
                    for extent in (domain.extent, domain.expanded):
                        if isinstance(extent, SymbolicExtent):
                            self.bindings.setdefault(extent, int(size))
            elif isinstance(value, Scalar):
                self.bindings[value] = actual
        for expr in fusion.exprs:
            if expr.op is OpType.size:  # scalars read off tensors
                source = expr.inputs[0]
                extent = source.logical[expr.attr("dim")].logical_extent
                size = self.extent(extent)
                if size is not None:
                    self.bindings[expr.output] = size
            elif expr.op in _INTEGER_SCALAR_OPS:
                self._bind_integer_scalar(expr)
            elif expr.op is OpType.slice:
                self._bind_slice_lengths(expr)

    def _bind_integer_scalar(self, expr: Expr) -> None:
        """Integer arithmetic on sizes (``minimum(size(T0, 0), 16)`` bounding a slice): nvFuser
        evaluates these when it concretizes the fusion, so later extents know them."""
        output = expr.outputs[0]
        if not isinstance(output, Scalar) or not is_integral(output.dtype):
            return
        operands = []
        for value in expr.inputs:
            if not isinstance(value, Scalar):
                return
            known = value.value if value.is_constant else self.bindings.get(value)
            if not isinstance(known, int) or isinstance(known, bool):
                return
            operands.append(known)
        try:
            self.bindings[output] = _INTEGER_SCALAR_OPS[expr.op](*operands)
        except ZeroDivisionError:
            return

    def _bind_slice_lengths(self, expr: Expr) -> None:
        """A slice's length from its input's known size (``ir.ops_resize.slice_lengths``)."""
        def scalar_of(scalar: Scalar) -> int | None:
            known = self.bindings.get(scalar)
            return known if isinstance(known, int) and not isinstance(known, bool) else None

        for extent, length in slice_lengths(expr, self.extent, scalar_of):
            self.bindings.setdefault(extent, length)

    def extent(self, extent: object) -> int | None:
        try:
            if isinstance(extent, ScalarExtent) and extent.scalar.is_constant:
                return int(extent.scalar.value)
            return evaluate_extent(extent, self.bindings)
        except (KeyError, TypeError, ValueError):
            return None

    def numel(self, tensor: TensorView, include_reduction: bool = False) -> int | None:
        domains = tensor.domain if include_reduction else tensor.logical
        sizes = [self.extent(d.logical_extent) for d in domains]
        if any(s is None for s in sizes):
            return None
        return math.prod(sizes)


_INTEGER_SCALAR_OPS: dict[OpType, Callable[..., int]] = {
    OpType.minimum: min,
    OpType.maximum: max,
    OpType.add: lambda a, b: a + b,
    OpType.sub: lambda a, b: a - b,
    OpType.mul: lambda a, b: a * b,
    OpType.neg: lambda a: -a,
    # C++'s integer division (toward zero), as nvFuser's concretization evaluates a reshape's
    # ``div(mul(size, 32), size)``; a division by zero leaves the scalar unknown
    OpType.div: lambda a, b: abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1),
}


@dataclass(eq=False)  # not slots: cached_property needs __dict__
class Candidate:
    """Exprs considered as one kernel, in nvFuser's walk order of the fusion (topological)."""

    graph: FusionGraph
    exprs: tuple[Expr, ...]
    # values this candidate computes for itself only: a forwarded full that each consumer
    # segment recomputes is never a segment output (nvFuser's createInputGroup per consumer)
    private: frozenset[int] = frozenset()
    _expr_uids: frozenset[int] = field(init=False)
    _memo: dict[str, object] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._expr_uids = frozenset(e.uid for e in self.exprs)

    @staticmethod
    def of(
        graph: FusionGraph, exprs: Sequence[Expr], private: frozenset[int] = frozenset()
    ) -> Candidate:
        ordered = sorted(exprs, key=lambda e: graph.position[e.uid])
        return Candidate(graph, tuple(ordered), private)

    def contains(self, expr: Expr) -> bool:
        return expr.uid in self._expr_uids

    @cached_property
    def produced(self) -> dict[int, Val]:
        return {out.uid: out for e in self.exprs for out in e.outputs}

    @cached_property
    def inputs(self) -> tuple[TensorView, ...]:
        """Tensor inputs: fusion inputs read first, then values from other segments."""
        own, edges, seen = [], [], set()
        for expr in self.exprs:
            for value in expr.inputs:
                if not isinstance(value, TensorView) or value.uid in seen:
                    continue
                if value.uid in self.produced:
                    continue
                seen.add(value.uid)
                (own if value.uid in self.graph.input_uids else edges).append(value)
        return tuple(own + edges)

    @cached_property
    def outputs(self) -> tuple[TensorView, ...]:
        own, edges = [], []
        for expr in self.exprs:
            for out in expr.outputs:
                if not isinstance(out, TensorView):
                    continue
                if out.uid in self.graph.output_uids:
                    own.append(out)
                elif out.uid in self.private:
                    continue
                elif any(not self.contains(c) and not self._reads_known_size(c)
                         for c in self.graph.consumers.get(out.uid, [])):
                    edges.append(out)
        return tuple(own + edges)

    def _reads_known_size(self, consumer: Expr) -> bool:
        """A size() of a tensor whose extent the inputs decide reads no data: nvFuser's size
        is the extent itself, so the tensor crosses no segment boundary for it."""
        runtime = self.graph.runtime
        if consumer.op is not OpType.size or runtime is None or not runtime.known:
            return False
        domain = consumer.inputs[0].logical[consumer.attr("dim")]
        return runtime.extent(domain.logical_extent) is not None

    @cached_property
    def input_uids(self) -> frozenset[int]:
        return frozenset(v.uid for v in self.inputs)

    @cached_property
    def output_uids(self) -> frozenset[int]:
        return frozenset(v.uid for v in self.outputs)

    def is_input(self, value: Val) -> bool:
        return value.uid in self.input_uids

    def definition(self, value: Val) -> Expr | None:
        """The expr producing ``value`` in the complete fusion."""
        return self.graph.producer.get(value.uid)

    def segment_set_violation(self) -> str | None:
        """tryingToMergeSegmenterSet: a segment_set output must end its segment."""
        for expr in self.exprs:
            if expr.op is OpType.segment_set:
                out = expr.output
                if out.uid not in self.output_uids or self.uses_inside(out):
                    return "segment_set output must be a segment output with no use inside it"
        return None

    def uses_inside(self, value: Val) -> list[Expr]:
        return [c for c in self.graph.consumers.get(value.uid, []) if self.contains(c)]

    def memo(self, name: str, analysis: Callable[[Candidate], T]) -> T:
        """``analysis(self)``, computed once per candidate (schedulers share analyses)."""
        if name not in self._memo:
            self._memo[name] = analysis(self)
        return self._memo[name]

    @cached_property
    def ops(self) -> frozenset[OpType]:
        return frozenset(e.op for e in self.exprs)

    @cached_property
    def kinds(self) -> frozenset[OpKind]:
        return frozenset(e.op.kind for e in self.exprs)

    def has(self, *kinds: OpKind) -> bool:
        return any(kind in self.kinds for kind in kinds)

    def exprs_of(self, *kinds: OpKind) -> list[Expr]:
        return [e for e in self.exprs if e.op.kind in kinds]

    @cached_property
    def reduction_exprs(self) -> list[Expr]:
        return self.exprs_of(OpKind.REDUCTION, OpKind.NORMALIZATION)

    @cached_property
    def dims(self) -> DimGraph:
        return DimGraph(self.exprs, sizes=self.graph.size_of)

    @cached_property
    def exact_dims(self) -> DimGraph:
        """nvFuser's exact map: broadcasts apart from the iteration dimensions they meet."""
        return DimGraph(self.exprs, exact=True, sizes=self.graph.size_of)

    @cached_property
    def resize_split_dims(self) -> DimGraph:
        """Loops that end at each slice, pad and cat: nvFuser's Resize makes a new IterDomain."""
        return DimGraph(self.exprs, resize_splits=True, sizes=self.graph.size_of)

    @cached_property
    def tensors(self) -> list[TensorView]:
        seen: dict[int, TensorView] = {}
        for value in self.inputs:
            seen.setdefault(value.uid, value)
        for expr in self.exprs:
            for out in expr.tensor_outputs():
                seen.setdefault(out.uid, out)
        return list(seen.values())

    def describe(self) -> str:
        return ", ".join(e.op.value for e in self.exprs)


def _walk_positions(fusion: Fusion) -> dict[int, int]:
    """Each expr's place in nvFuser's ``Fusion::exprs()`` walk (``ir.order``), not in the
    order the definition wrote them: nvFuser's analyses of a segment (its tensors, persistent
    buffers and reductions, in ``allTvs`` order) walk the fusion from its outputs, so a
    definition printed back in that order, as ``repr(fd)`` does, is the same fusion to them.
    Exprs the walk does not reach (dead code) follow, in definition order."""
    walk = walk_positions(fusion)
    return {expr.uid: walk.get(expr.uid, len(walk) + index)
            for index, expr in enumerate(fusion.exprs)}


def vector_values(vector: Vector) -> list[Scalar]:
    return list(vector.elements)
