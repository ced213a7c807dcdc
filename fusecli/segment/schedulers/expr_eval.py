"""expr_eval: the ATen fallback (csrc/scheduler/expr_eval_sched.cpp).

Rules, in nvFuser's order (common checks do not apply):
1. Accept when every output is pointer arithmetic on a segment input: the segment only
   permutes, broadcasts, expands, squeezes, slices or reshapes (a reshape only of a tensor
   still in row-major order) a segment input, so ATen can return a view.
2. Otherwise the segment must be a single expression: "Fusion must contain only a single
   expression."
3. Accept a single op nvFuser evaluates with ATen: gather, scatter, sdpfa_fwd, embedding_fwd,
   argsort, topk, cumsum.
4. Accept a single matmul or linear unless NVFUSER_DISABLE=matmul_expr_eval.
5. Otherwise "Fusion must contain only a single expression of type
   MatmulOp/LinearOp/SdpaFwdOp/SdpaBwdOp".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.optype import OpType
from fusecli.segment.candidate import Candidate
from fusecli.segment.schedulers.common import ATEN_ONLY_OPS
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "expr_eval"

_VIEW_OPS = frozenset(
    {OpType.permute, OpType.broadcast, OpType.expand, OpType.squeeze, OpType.slice,
     OpType.reshape, OpType.set, OpType.segment_set}
)


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if is_pointer_arithmetic(candidate):
        return Verdict.accept(NAME)
    if len(candidate.exprs) != 1:
        return Verdict.reject(NAME, "Fusion must contain only a single expression.")
    op = candidate.exprs[0].op
    if op in ATEN_ONLY_OPS or op is OpType.gather:
        return Verdict.accept(NAME)
    if op in (OpType.matmul, OpType.linear):
        if not ctx.switches.matmul_expr_eval:
            return Verdict.reject(
                NAME, "Matmul ATen evaluation was disabled by NVFUSER_DISABLE=matmul_expr_eval"
            )
        return Verdict.accept(NAME)
    return Verdict.reject(
        NAME,
        "Fusion must contain only a single expression of type "
        "MatmulOp/LinearOp/SdpaFwdOp/SdpaBwdOp",
    )


def is_pointer_arithmetic(candidate: Candidate) -> bool:
    """Every expr is a view op, and every reshape reads a tensor still in row-major order.

    Segment inputs are row-major (fusion inputs declared so, or intermediates fusecli
    allocates contiguously); a permute that moves a non-broadcast dimension breaks it.
    """
    row_major: dict[int, bool] = {}
    for value in candidate.inputs:
        row_major[value.uid] = _declared_row_major(value)
    for expr in candidate.exprs:
        if expr.op not in _VIEW_OPS:
            return False
        source = expr.tensor_inputs()[0]
        source_row_major = row_major.get(source.uid, False)
        if expr.op is OpType.reshape and not source_row_major:
            return False
        keeps = source_row_major
        if expr.op is OpType.permute:
            keeps = source_row_major and _permute_keeps_order(source, expr.attr("dims"))
        elif expr.op is OpType.slice:
            keeps = False
        for out in expr.tensor_outputs():
            row_major[out.uid] = keeps
    return bool(candidate.exprs)


def _declared_row_major(value) -> bool:
    order = value.stride_order
    if order and list(order) != list(reversed(range(len(order)))):
        return False
    return all(c is not False for c in value.contiguity)


def _permute_keeps_order(source, dims) -> bool:
    moved = [d for d in dims if not source.logical[d].is_broadcast]
    return moved == sorted(moved)


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks: ATen takes any sizes."""
    return Verdict.accept(NAME)


SCHEDULER = Scheduler(NAME, compile_time, run_time, runs_on_aten=True)
