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
from fusecli.ir.optype import OpKind, OpType
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
    """Fewer elements in the first group's reference than one wave of tiles: too small."""
    reference = _first_reference(candidate)
    largest = None if reference is None else ctx.runtime.numel(reference)
    if largest is None:
        return Verdict.accept(NAME)
    threshold = ctx.device.sm_count * TILE * TILE
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
    """No groups at all when a segment output or input has no innermost dimension (a 0-d
    tensor, or only broadcasts): nvFuser's grouping gives up on it ("we just return a null
    result which will tell the scheduler to reject the fusion"), so transpose refuses the
    segment and resize sees no transpose-like pattern."""
    dims = DimGraph(candidate.exprs, reshape_inner=True, sizes=candidate.graph.size_of)
    groups: dict[object, list[TensorView]] = {}
    for tensor in (*candidate.outputs, *candidate.inputs):
        position = innermost_position(tensor, _stride_order(candidate, tensor))
        if position is None:
            return {}
        groups.setdefault(dims.class_of(tensor, position), []).append(tensor)
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))  # stable
    return dict(ordered)


def _stride_order(candidate: Candidate, tensor: TensorView) -> tuple[int, ...]:
    """The tensor's allocation order (allocation.py); empty for the logical order."""
    return candidate.graph.allocation.get(tensor.uid, ())


def _first_reference(candidate: Candidate) -> TensorView | None:
    """reference1: the valid reference of the largest group."""
    groups = list(_groups(candidate).values())
    return _reference_for(candidate, groups[0]) if groups else None


def _reference_for(candidate: Candidate, group: list[TensorView]) -> TensorView | None:
    """findReferenceFor: the first tensor of most dimensions in ``group`` that is a valid
    reference (every loop of every segment input is among its loops or theirs before a
    slice, pad, cat or reshape); None when none is. Dimensions are counted as
    ``scheduler_utils::nLogicalDims`` counts them: broadcasts and reductions left out."""
    best, most = None, -1
    for tensor in group:
        dims = sum(1 for d in tensor.logical if not (d.is_broadcast or d.is_reduction))
        if dims > most and _reaches_all_inputs(candidate, tensor):
            best, most = tensor, dims
    return best


def _reaches_all_inputs(candidate: Candidate, tensor: TensorView) -> bool:
    """areAllInputIdsMappedTo for every segment input: the loops of ``tensor``, followed back
    through the resizes and reshapes that made them (nvFuser's exact map has a new
    IterDomain after each), cover every input dimension that is, or meets, an iteration one."""
    graph = candidate.resize_split_dims
    covered = {graph.class_of(tensor, p) for p in range(len(tensor.domain))}
    remade = [e for e in candidate.exprs
              if e.op.kind is OpKind.RESIZE or e.op is OpType.reshape]
    grown = True
    while grown:
        grown = False
        for expr in remade:
            out = expr.tensor_outputs()[0]
            made = [p for p in range(len(out.domain)) if graph.class_of(out, p) in covered]
            for source in expr.tensor_inputs():
                # a resize remakes a dimension from the same one of its input; a reshape's
                # dimensions come from any of its input's
                sources = (range(len(source.domain)) if expr.op is OpType.reshape and made
                           else [p for p in made if p < len(source.domain)])
                for position in sources:
                    loop = graph.class_of(source, position)
                    if loop not in covered:
                        covered.add(loop)
                        grown = True
    iterated = {graph.class_of(t, p) for t in candidate.tensors
                for p, d in enumerate(t.domain) if not d.is_broadcast}
    return all(graph.class_of(source, p) in covered
               for source in candidate.inputs
               for p, d in enumerate(source.domain)
               if not d.is_reduction and graph.class_of(source, p) in iterated)


def two_valid_groups(candidate: Candidate) -> bool:
    """nvFuser's hasAtLeastTwoValidGroups: two groups by innermost loop, whose references
    (the valid tensor of most dimensions in each) both have the second group's innermost
    loop, and are not the same loops with broadcasts left out (t0[i0, i1] and t1[i2, b3]: two
    groups only because of the broadcast, which the pointwise scheduler handles well)."""
    groups = list(_groups(candidate).values())
    if len(groups) < 2:
        return False
    dims = candidate.dims
    first, second = (_reference_for(candidate, group) for group in groups[:2])
    if first is None or second is None:
        return False
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
