"""resize (csrc/scheduler/resize.cpp): slice, pad and cat with pointwise ops around them.

Compile time, in nvFuser's order (ResizeScheduler::canScheduleCompileTime):
- no slice, pad or cat: "No resize op to schedule";
- reductions: "No support for reduction ops";
- a broadcast dimension that meets iteration dimensions of different loops:
  "Broadcasting dimension might be broadcasting to multiple sizes." (hasNonUniqueBcast);
- a slice or pad of a broadcast dimension: "Resize of a broadcast ID is not allowed.";
- no output covers every loop of the segment (the pointwise scheduler's reference search):
  "No reference found"; two outputs of different sizes, such as the rotated q and k of a
  rotary embedding, have none, so nvFuser cuts them into one resize segment each;
- an output that a resize separates from the reference (one output taken before a slice, the
  reference after it): "Resize between reference and output not allowed. ...";
- inputs and outputs whose innermost dimensions are different loops (the transpose
  scheduler's grouping): "Transpose-like patterns not supported.".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpType
from fusecli.segment import heuristics
from fusecli.segment.candidate import Candidate
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers import common
from fusecli.segment.schedulers.pointwise import find_reference
from fusecli.segment.schedulers.transpose import inner_dim_groups
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "resize"


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    resizes = [e for e in candidate.exprs if e.op in common.RESIZE_OPS]
    if not resizes:
        return Verdict.reject(NAME, Reason.NO_RESIZE)
    name = candidate.graph.name
    if candidate.reduction_exprs:
        reduction = candidate.reduction_exprs[0].tensor_outputs()[0]
        return Verdict.reject(NAME, Rejection.of(Reason.RESIZE_WITH_REDUCTION,
                                                 tensor=name(reduction)))
    multiple = common.non_unique_broadcast(candidate)
    if multiple is not None:
        return Verdict.reject(NAME, Rejection.of(Reason.NON_UNIQUE_BROADCAST,
                                                 tensor=name(multiple)))
    for expr in resizes:
        broadcast = _resized_broadcast(candidate, expr)
        if broadcast is not None:
            return Verdict.reject(NAME, Rejection.of(
                Reason.RESIZE_OF_BROADCAST, tensor=name(broadcast), op=expr.op.value
            ))
    reference = find_reference(candidate, ctx)
    if reference is None:
        return Verdict.reject(NAME, Reason.NO_RESIZE_REFERENCE)
    separated = _resize_between(candidate, reference)
    if separated is not None:
        return Verdict.reject(NAME, Rejection.of(
            Reason.RESIZE_BETWEEN, reference=name(reference), output=name(separated),
            resize=resizes[0].op.value,
        ))
    if len(inner_dim_groups(candidate)) >= 2:
        return Verdict.reject(NAME, Reason.TRANSPOSE_LIKE)
    return Verdict.accept(NAME)


def _resized_broadcast(candidate: Candidate, expr: Expr) -> TensorView | None:
    """The input of a slice, pad or cat that resizes a dimension which is, or meets in this
    segment, a broadcast: nvFuser checks the resized IterDomain's whole group in its broadcast
    graph (``t2 = t0 + t1[b]; slice(t2)`` would propagate the resize to the broadcast, issue
    #3571). The group ends at resizes: each makes a new IterDomain."""
    graph = candidate.resize_split_dims
    broadcasts = candidate.memo("broadcast_loops", lambda c: {
        graph.class_of(t, p) for t in c.tensors
        for p, d in enumerate(t.domain) if d.is_broadcast})
    if expr.op is OpType.cat:
        sources = expr.tensor_inputs()
    else:
        sources = expr.tensor_inputs()[:1]
    out = expr.tensor_outputs()[0]
    for source in sources:
        positions = [p for p, d in enumerate(source.domain) if not d.is_reduction]
        for position, out_domain in zip(positions, out.logical):
            if out_domain.rfactor and graph.class_of(source, position) in broadcasts:
                return source
    return None


def _resize_between(candidate: Candidate, reference: TensorView) -> TensorView | None:
    """An output that only a resize connects with the reference: one of its dimensions is a
    loop of the reference's only through a slice, pad or cat (nvFuser's path between the two
    logical domains in its broadcast graph has a Resize)."""
    loose = candidate.dims
    split = candidate.resize_split_dims
    positions = [p for p, d in enumerate(reference.domain) if not d.is_reduction]
    direct = {split.class_of(reference, p) for p in positions}
    through_any = {loose.class_of(reference, p) for p in positions}
    for output in candidate.outputs:
        if output.uid == reference.uid:
            continue
        for position, domain in enumerate(output.domain):
            if domain.is_broadcast or domain.is_reduction:
                continue
            if split.class_of(output, position) in direct:
                continue
            if loose.class_of(output, position) in through_any:
                return output
    return None


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks."""
    return Verdict.accept(NAME)


SCHEDULER = Scheduler(NAME, compile_time, run_time, heuristics.pointwise,
                      loop_follows_outputs=True)
