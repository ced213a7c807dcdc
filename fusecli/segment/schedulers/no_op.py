"""no_op (csrc/scheduler/no_op.cpp): segments that launch no kernel.

Accept a segment with no exprs, or whose every output is empty (Fusion::isNoOp). Reject a
reduction over a non-empty dimension ("reduction of non-zero elements is not supported") and
any output with an iteration dimension ("output has a concrete dimension"); outputs of only
broadcast (or empty) dimensions are metadata and accepted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.segment.candidate import Candidate
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers.common import memory_promotion_reason
from fusecli.segment.schedulers.expr_eval import is_pointer_arithmetic
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "no_op"


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if not candidate.exprs or _all_outputs_empty(candidate, ctx):
        return Verdict.accept(NAME)
    fusion = candidate.graph.fusion
    older = ctx.no_op_aliases(fusion)
    # an input that crosses as half is cast back inside the segment: no pointer arithmetic
    cast_back = candidate.input_uids & ctx.half_edges(fusion)
    if older is not None and not cast_back and is_pointer_arithmetic(candidate, ctx, older):
        return Verdict.accept(NAME)  # allOutputsArePointerArithmetics, #1478 to #3885
    name = candidate.graph.name
    for expr in candidate.reduction_exprs:
        out = expr.tensor_outputs()[0]
        if not any(ctx.runtime.extent(d.extent) == 0 for d in out.logical):
            return Verdict.reject(NAME, Rejection.of(Reason.NONZERO_REDUCTION, tensor=name(out)))
    for out in candidate.outputs:
        concrete = [p for p, d in enumerate(out.domain) if not d.is_broadcast and
                    not d.is_reduction and ctx.runtime.extent(d.extent) != 0]
        if concrete:
            return Verdict.reject(NAME, Rejection.of(Reason.CONCRETE_OUTPUT, output=name(out),
                                                     dimension=concrete[0]))
    reason = memory_promotion_reason(candidate, ctx)
    if reason:
        return Verdict.reject(NAME, reason)
    return Verdict.accept(NAME)


def _all_outputs_empty(candidate: Candidate, ctx: ScheduleContext) -> bool:
    """Fusion::isNoOp (csrc/fusion.cpp): every output has a dimension of size 0 (a constant
    0 after concretization; here, at the inputs' sizes)."""
    return bool(candidate.outputs) and all(
        any(ctx.runtime.extent(d.logical_extent) == 0 for d in out.logical)
        for out in candidate.outputs
    )


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks: nvFuser's NoOp accepts at run time."""
    return Verdict.accept(NAME)


SCHEDULER = Scheduler(NAME, compile_time, run_time, runs_on_aten=True)
