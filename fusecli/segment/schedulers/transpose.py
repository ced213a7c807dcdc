"""transpose (csrc/scheduler/transpose.cpp): pointwise fusions whose inputs and outputs
disagree on which dimension is innermost in memory.

Compile time, in nvFuser's order: an MmaOp (nvfuser-2024: "no support for mma ops."), the
memory-promotion rule, a select, index_select or gather of the innermost dimension ("...on
inner dim is not supported by transpose scheduler yet..."), reductions ("no support for
reduction ops"), a broadcast concretized to two sizes, and "cannot find two mismatching inner
most dimensions" unless inputs and outputs fall into two valid groups by innermost loop
(hasAtLeastTwoValidGroups: groups that differ only by a broadcast are no transpose). Run
time: fewer elements than SMs x 32 x 32 tiles is "Transpose scheduler does not perform well
on small problem sizes.".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.nodes import TensorView
from fusecli.ir.optype import OpType
from fusecli.segment import hardware, heuristics
from fusecli.segment.candidate import Candidate
from fusecli.segment.dims import DimGraph, innermost_position
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers import common
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "transpose"
TILE = 32


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if common.has_mma(candidate):
        return Verdict.reject(NAME, Reason.MMA_IN_TRANSPOSE)
    reason = common.memory_promotion_reason(candidate, ctx) or _lookup_on_inner_dim(candidate)
    if reason:
        return Verdict.reject(NAME, reason)
    if candidate.reduction_exprs:
        reduction = candidate.reduction_exprs[0]
        return Verdict.reject(NAME, Rejection.of(
            Reason.REDUCTION_IN_ELEMENTWISE, op=reduction.op.value,
            tensor=candidate.graph.name(reduction.tensor_outputs()[0]),
        ))
    multiple = common.non_unique_broadcast(candidate)
    if multiple is not None:
        return Verdict.reject(NAME, Rejection.of(Reason.NON_UNIQUE_BROADCAST,
                                                 tensor=candidate.graph.name(multiple)))
    if not two_valid_groups(candidate):
        return Verdict.reject(NAME, Reason.NO_TRANSPOSE)
    return Verdict.accept(NAME)


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    sizes = [ctx.runtime.numel(t) for t in candidate.tensors]
    if None in sizes:
        return Verdict.accept(NAME)
    threshold = ctx.device.sm_count * TILE * TILE
    largest = max(sizes, default=0)
    gpu = hardware.note(NAME, threshold, largest, "elements needed to fill the SMs",
                        ctx.device.name)
    if largest < threshold:
        rejection = Rejection.of(Reason.SMALL_TRANSPOSE, elements=largest,
                                 threshold=threshold)
        return Verdict.reject(NAME, rejection, "run time").depending_on_gpu(gpu)
    return Verdict.accept(NAME).depending_on_gpu(gpu)


# nvFuser's names of the lookups whose indexed dimension must not be innermost
_LOOKUPS = {OpType.select: "SelectOp", OpType.index_select: "IndexSelectOp",
            OpType.gather: "GatherOp", OpType.take_along_axis: "GatherOp"}


def _lookup_on_inner_dim(candidate: Candidate) -> Rejection | None:
    """A select, index_select or gather indexing its input's innermost dimension in memory:
    the transpose scheduler would make a tile of it."""
    for expr in candidate.exprs:
        if expr.op not in _LOOKUPS:
            continue
        source = expr.tensor_inputs()[0]
        dim = expr.attr("dim")
        if dim is None:
            continue
        if innermost_position(source, _stride_order(candidate, source)) == dim:
            return Rejection.of(Reason.LOOKUP_ON_INNER_DIM, op_string=_LOOKUPS[expr.op],
                                tensor=candidate.graph.name(source), op=expr.op.value)
    return None


def inner_dim_groups(candidate: Candidate) -> set[object]:
    """The distinct loops that are innermost in memory for some segment input or output."""
    return set(_groups(candidate))


def _groups(candidate: Candidate) -> dict[object, list[TensorView]]:
    """Segment outputs, then inputs, grouped by the loop innermost in memory for them
    (groupInputsOutputsByInnerDim), largest group first. Computed once per candidate: the
    resize scheduler asks too."""
    return candidate.memo("inner_dim_groups", _grouped_by_innermost)


def _grouped_by_innermost(candidate: Candidate) -> dict[object, list[TensorView]]:
    dims = DimGraph(candidate.exprs, reshape_inner=True, sizes=candidate.graph.size_of)
    groups: dict[object, list[TensorView]] = {}
    for tensor in (*candidate.outputs, *candidate.inputs):
        position = innermost_position(tensor, _stride_order(candidate, tensor))
        if position is not None:
            groups.setdefault(dims.class_of(tensor, position), []).append(tensor)
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))  # stable
    return dict(ordered)


def _stride_order(candidate: Candidate, tensor: TensorView) -> tuple[int, ...]:
    return tensor.stride_order if tensor.uid in candidate.graph.input_uids else ()


def two_valid_groups(candidate: Candidate) -> bool:
    """nvFuser's hasAtLeastTwoValidGroups: two groups by innermost loop, whose references
    (the tensor of most dimensions in each) both have the second group's innermost loop, and
    are not the same loops with broadcasts left out (t0[i0, i1] and t1[i2, b3]: two groups
    only because of the broadcast, which the pointwise scheduler handles well)."""
    groups = list(_groups(candidate).values())
    if len(groups) < 2:
        return False
    dims = candidate.dims
    first, second = (max(group, key=lambda t: len(t.logical)) for group in groups[:2])
    first_loops = _loops_in_memory(candidate, first)
    second_loops = _loops_in_memory(candidate, second)
    innermost = innermost_position(second, _stride_order(candidate, second))
    if dims.class_of(second, innermost) not in first_loops:
        return False
    shorter, longer = sorted((first_loops, second_loops), key=len)
    remaining = iter(longer)
    return not all(loop in remaining for loop in shorter)  # in order: a subsequence


def _loops_in_memory(candidate: Candidate, tensor: TensorView) -> list[object]:
    """The loops of ``tensor``'s iteration dimensions, outermost in memory first."""
    positions = [p for p, d in enumerate(tensor.domain) if not d.is_reduction]
    order = _stride_order(candidate, tensor)
    if order and len(order) == len(positions):
        positions = [positions[i] for i in sorted(range(len(order)), key=lambda i: -order[i])]
    return [candidate.dims.class_of(tensor, p) for p in positions
            if not tensor.domain[p].is_broadcast]


SCHEDULER = Scheduler(NAME, compile_time, run_time, heuristics.transpose)
