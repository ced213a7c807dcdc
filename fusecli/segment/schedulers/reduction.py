"""reduction (csrc/scheduler/reduction.cpp): reductions with no persistent buffer.

- no ReductionOp or WelfordOp: "No reduction op to schedule";
- no tensor input: "Scheduling not supported with no input";
- the memory-promotion rule ("<tv>, input of <op> must be fusion input.");
- the first reduction's output must cover every input and output (``coverage.py``):
  "Output contains ID that's not scheduled by reference tv.";
- a broadcast that meets loops of two extents (hasNonUniqueBcast): "Broadcasting dimension
  might be broadcasting to multiple sizes.";
- reductions over different axes: "Un-mapped multi-reduction: <a> and <b>";
- a tensor needed both before and after a reduction belongs to a persistent scheduler:
  "need persistent buffers that reduction scheduler doesn't handle";
- after the reductions, a broadcast of a reduced value meeting a full tensor, or (inner
  reductions) a tensor the reductions do not read: "has unsupported post reduction fusion".
Run time: always accepted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.segment import heuristics
from fusecli.segment.candidate import Candidate
from fusecli.segment.dims import dim_map
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers import common, coverage, reshapes
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "reduction"


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if not candidate.reduction_exprs:
        return Verdict.reject(NAME, Reason.NO_REDUCTION)
    reason = (
        common.reduction_input_reason(candidate, ctx)
        or coverage.reference_coverage_reason(candidate, check_inputs=True)
        or common.non_unique_broadcast_reason(candidate)
    )
    if reason:
        return Verdict.reject(NAME, reason)
    if reshapes.interfering_view(candidate, candidate.reduction_exprs[0]):
        return Verdict.reject(NAME, Reason.REDUCTION_VIEW)
    reason = common.unmapped_reduction_reason(candidate)
    if reason:
        return Verdict.reject(NAME, reason)
    buffers = common.persistent_buffers(candidate)
    if buffers:
        names = ", ".join(candidate.graph.name(b) for b in buffers)
        return Verdict.reject(NAME, Rejection.of(Reason.NEEDS_PERSISTENCE, buffers=names))
    after = post_reduction_reason(candidate)
    if after:
        return Verdict.reject(NAME, after)
    return Verdict.accept(NAME)


def post_reduction_reason(candidate: Candidate) -> Rejection | None:
    """What the reduction kernel cannot do after its reductions (registry_utils.cpp):
    resolve a broadcast of a reduced value against a full tensor (hasPostReductionBCast: that
    is normalization, a persistent kernel's work), or, when the innermost dimension is
    reduced, read a tensor the reductions do not read (supportedPostReductionFusion)."""
    reductions = candidate.reduction_exprs
    downstream: set[int] = {o.uid for e in reductions for o in e.tensor_outputs()}
    for expr in candidate.exprs:
        if expr in reductions or not any(v.uid in downstream for v in expr.inputs):
            continue
        tensors = {t.uid: t for t in (*expr.tensor_inputs(), *expr.tensor_outputs())}
        for (out_uid, out_pos), (in_uid, in_pos) in dim_map(expr):
            if in_uid not in downstream:
                continue
            source, out = tensors[in_uid], tensors[out_uid]
            if source.domain[in_pos].is_broadcast and not out.domain[out_pos].is_broadcast:
                return Rejection.of(Reason.POST_REDUCTION, tensor=candidate.graph.name(source),
                                    expr=expr.op.value)
        downstream.update(o.uid for o in expr.tensor_outputs())
    if not common.is_inner_reduction(reductions[0]):
        return None
    read_by_reductions = set()
    for expr in reductions:
        read_by_reductions |= _uids(common.segment_inputs_of(candidate, expr.tensor_inputs()[0]))
    for expr in candidate.exprs:
        out = expr.tensor_outputs()
        if expr in reductions or not out or out[0].uid not in downstream:
            continue
        extra = _uids(common.segment_inputs_of(candidate, out[0])) - read_by_reductions
        if extra:
            return Rejection.of(Reason.POST_REDUCTION, tensor=candidate.graph.name(out[0]),
                                expr=expr.op.value)
    return None


def _uids(tensors) -> set[int]:
    return {t.uid for t in tensors}


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks: nvFuser's reduction scheduler takes any sizes."""
    return Verdict.accept(NAME)


SCHEDULER = Scheduler(NAME, compile_time, run_time, heuristics.reduction)
