"""expr_eval: the ATen fallback (csrc/scheduler/expr_eval_sched.cpp).

Rules, in nvFuser's order (common checks do not apply):
1. Accept when every output is pointer arithmetic on a segment input: an alias of it in
   nvFuser's alias analysis (``fusecli.segment.aliases``: permutes, sets, broadcasts,
   expands, squeezes, slices, and reshapes that merge only dimensions adjacent in memory),
   so ATen can return a view. An output that is a fusion input counts as one, so a fusion
   of no exprs (inputs handed back) is expr_eval's, not no_op's.
2. Otherwise the segment must be a single expression: "Fusion must contain only a single
   expression."
3. Accept a single op nvFuser evaluates with ATen: gather and take_along_axis (both GatherOp,
   #5907), scatter, sdpfa_fwd, sdpfa_bwd, grouped_mm, embedding_fwd, argsort, topk, cumsum.
4. Accept a single matmul or linear unless NVFUSER_DISABLE=matmul_expr_eval.
5. Otherwise "Fusion must contain only a single expression of type
   MatmulOp/LinearOp/SdpaFwdOp/SdpaBwdOp".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.optype import OpType
from fusecli.segment.aliases import AliasAnalysis, find_aliases
from fusecli.segment.candidate import Candidate
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers.common import ATEN_ONLY_OPS
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "expr_eval"

def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if is_pointer_arithmetic(candidate, ctx):
        return Verdict.accept(NAME)
    if len(candidate.exprs) != 1:
        many = Rejection.of(Reason.NOT_SINGLE_EXPR, exprs=len(candidate.exprs))
        return Verdict.reject(NAME, many)
    op = candidate.exprs[0].op
    # take_along_axis is a GatherOp in nvFuser: alone in a segment, ATen takes it (#5907)
    if op in ATEN_ONLY_OPS or op in (OpType.gather, OpType.take_along_axis):
        return Verdict.accept(NAME)
    if op in (OpType.matmul, OpType.linear):
        if not ctx.switches.matmul_expr_eval:
            return Verdict.reject(NAME, Reason.MATMUL_EXPR_EVAL_DISABLED)
        return Verdict.accept(NAME)
    return Verdict.reject(NAME, Rejection.of(Reason.NOT_ATEN_EXPR, op=op.value))


def is_pointer_arithmetic(
    candidate: Candidate, ctx: ScheduleContext, aliases: AliasAnalysis | None = None
) -> bool:
    """allOutputsArePointerArithmetics: each output is an alias (aliases.py) of a segment
    input through the segment's own exprs, and no output is an in-place update.

    MarkAliasesPrepare gives every alias its alias-enabling allocation, so the analysis of the
    whole fusion holds inside the segment too: what a segment input aliases is its layout.
    """
    aliases = aliases or ctx.aliases or find_aliases(candidate.graph.fusion, ctx.runtime)
    in_place = {o.value.uid for o in candidate.graph.fusion.outputs if o.alias_input is not None}
    for out in candidate.outputs:
        if out.uid in in_place:
            return False
        value = out
        while not candidate.is_input(value):
            source = aliases.source.get(value.uid)
            definition = candidate.definition(value)
            if source is None or definition is None or not candidate.contains(definition):
                return False
            value = source
    # A fusion output that is a fusion input counts as an alias, so a fusion of no exprs
    # (inputs handed back as outputs) is pointer arithmetic.
    return True


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks: ATen takes any sizes."""
    return Verdict.accept(NAME)


SCHEDULER = Scheduler(NAME, compile_time, run_time, runs_on_aten=True)
