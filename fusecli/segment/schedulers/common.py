"""Checks and analyses shared by schedulers.

``common_checks`` is nvFuser's ``checkCanSchedule`` (csrc/scheduler/registry.cpp), run before
every scheduler except expr_eval and logged under that scheduler's name. The analyses
(persistent buffers, reduction types, memory promotion) are what several schedulers need.
Reason strings are nvFuser's own where a rule matches one of its conditions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.candidate import Candidate

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

# Ops no kernel scheduler takes: nvFuser runs them through ATen (expr_eval).
ATEN_ONLY_OPS = frozenset(
    {OpType.scatter, OpType.sdpfa_fwd, OpType.embedding_fwd, OpType.argsort, OpType.topk,
     OpType.cumsum, OpType.cumprod, OpType.cummin, OpType.cummax}
)
MATMUL_OPS = frozenset({OpType.matmul, OpType.linear, OpType.mma})
RESIZE_OPS = frozenset({OpType.slice, OpType.pad, OpType.cat})
INDEX_OPS = frozenset({OpType.gather, OpType.scatter, OpType.index_select, OpType.select,
                       OpType.take_along_axis})


def common_checks(candidate: Candidate, ctx: ScheduleContext, scheduler: str) -> str | None:
    """The reason every non-expr_eval scheduler rejects ``candidate``, or None."""
    ops = candidate.ops
    if ops & ATEN_ONLY_OPS:
        return "Has unsupported ops"
    if OpType.gather in ops:
        return "Non-exact gather ops"
    if ctx.profile.common_matmul_check and scheduler != "matmul" and ops & MATMUL_OPS:
        return "Matmul ops are not supported."
    if not candidate.memo("connected", connected):
        return "Connected fusion graph check failed!"
    if ops & RESIZE_OPS and ops & INDEX_OPS:
        return "has resize-based ops and index ops"
    if scheduler != "resize" and candidate.memo("incompatible_reshapes", incompatible_reshapes):
        return "Fusion has incompatible reshapes."
    return None


def connected(candidate: Candidate) -> bool:
    """Every output reaches output 0 through the candidate's exprs (undirected)."""
    if len(candidate.outputs) <= 1:
        return True
    parent: dict[int, int] = {}

    def find(uid: int) -> int:
        while parent.setdefault(uid, uid) != uid:
            parent[uid] = parent[parent[uid]]
            uid = parent[uid]
        return uid

    for expr in candidate.exprs:
        tensors = [v.uid for v in (*expr.inputs, *expr.outputs) if isinstance(v, TensorView)]
        for uid in tensors[1:]:
            parent[find(uid)] = find(tensors[0])
    root = find(candidate.outputs[0].uid)
    return all(find(o.uid) == root for o in candidate.outputs[1:])


def incompatible_reshapes(candidate: Candidate) -> bool:
    """Two reshapes of one tensor to different shapes cannot share a loop nest."""
    shapes: dict[int, tuple] = {}
    for expr in candidate.exprs:
        if expr.op is not OpType.reshape:
            continue
        source, out = expr.inputs[0], expr.output
        key = tuple(str(e) for e in out.shape)
        if shapes.setdefault(source.uid, key) != key:
            return True
    return False


def memory_promotion_reason(candidate: Candidate) -> str | None:
    """Index lookups and resize ops read straight from global memory: their input must be
    a segment input (nvFuser's rejectScheduleForMemoryPromotion)."""
    for expr in candidate.exprs:
        if expr.op in (OpType.select, OpType.index_select, OpType.gather,
                       OpType.take_along_axis) or expr.op in RESIZE_OPS:
            lookup = expr.inputs[0]
            sources = expr.tensor_inputs() if expr.op is OpType.cat else [lookup]
            for source in sources:
                if not candidate.is_input(source):
                    name = candidate.graph.name(source)
                    return f"{name}, input of {expr.op.value} must be fusion input."
    return None


def has_mma(candidate: Candidate) -> bool:
    return any(e.op is OpType.mma for e in candidate.exprs)


def elementwise_reason(candidate: Candidate, mma_reason: str) -> str | None:
    """What the schedulers of reduction-free kernels (pointwise, transpose) reject first, in
    nvFuser's order: an MmaOp (``mma_reason``), the memory-promotion rule, a reduction."""
    if has_mma(candidate):
        return mma_reason
    reason = memory_promotion_reason(candidate)
    if reason:
        return reason
    if candidate.reduction_exprs:
        return "no support for reduction ops"
    return None


def reduction_input_reason(candidate: Candidate) -> str | None:
    """What the reduction and persistent schedulers reject after finding a reduction: no
    tensor input, then the memory-promotion rule."""
    if not candidate.inputs:
        return "Scheduling not supported with no input"
    return memory_promotion_reason(candidate)


def unmapped_reduction_reason(candidate: Candidate) -> str | None:
    """Reductions over different axes cannot share one kernel."""
    mismatch = reduction_signatures_agree(candidate)
    if not mismatch:
        return None
    first, second = (candidate.graph.name(e.tensor_outputs()[0]) for e in mismatch)
    return f"Un-mapped multi-reduction: {first} and {second}"


# -- reductions and persistence --------------------------------------------------------------


def reduced_positions(expr: Expr) -> tuple[int, ...]:
    return tuple(i for i, d in enumerate(expr.tensor_outputs()[0].domain) if d.is_reduction)


def is_inner_reduction(expr: Expr) -> bool:
    """Whether a reduction reduces the innermost (non-broadcast) dimension of its input."""
    source = expr.tensor_inputs()[0]
    logical = [i for i, d in enumerate(source.logical) if not d.is_broadcast]
    if not logical:
        return True
    return logical[-1] in reduced_positions(expr)


def reduction_type(candidate: Candidate) -> str | None:
    """The persistent scheduler the reduction axes call for (inner, outer or both)."""
    reductions = candidate.reduction_exprs
    if not reductions:
        return None
    inner = [is_inner_reduction(e) for e in reductions]
    if all(inner):
        return "inner_persistent"
    if not any(inner):
        return "outer_persistent"
    return "inner_outer_persistent"


def persistent_buffers(candidate: Candidate) -> list[TensorView]:
    """Tensors a kernel must keep on chip across a reduction: read before it and after it.

    A tensor X is persistent when one of its uses leads to a reduction R and another use
    depends on R (x in x * rsqrt(mean(x * x))). Reduction reachability is a bitmask per
    expr, computed in one backward and one forward pass: linear in the segment's size.
    """
    return candidate.memo("persistent_buffers", _persistent_buffers)


def _persistent_buffers(candidate: Candidate) -> list[TensorView]:
    exprs = candidate.exprs
    bit = {e.uid: 1 << i for i, e in enumerate(candidate.reduction_exprs)}
    if not bit:
        return []
    leads_to: dict[int, int] = {}  # expr uid -> reductions reachable from it (itself included)
    for expr in reversed(exprs):
        mask = bit.get(expr.uid, 0)
        for out in expr.outputs:
            for consumer in candidate.uses_inside(out):
                mask |= leads_to.get(consumer.uid, 0)
        leads_to[expr.uid] = mask
    after: dict[int, int] = {}  # expr uid -> reductions it depends on (itself excluded)
    produced_after: dict[int, int] = {}  # value uid -> reductions it depends on (incl. producer)
    for expr in exprs:
        mask = 0
        for value in expr.inputs:
            mask |= produced_after.get(value.uid, 0)
        after[expr.uid] = mask
        for out in expr.outputs:
            produced_after[out.uid] = mask | bit.get(expr.uid, 0)
    buffers: list[TensorView] = []
    for value in candidate.tensors:
        uses = candidate.uses_inside(value)
        if len(uses) < 2 or all(d.is_broadcast for d in value.logical):
            continue
        reaching = 0
        for use in uses:
            reaching |= leads_to[use.uid]
        if any(after[use.uid] & reaching for use in uses):
            buffers.append(value)
    return buffers


def persistent_bytes(candidate: Candidate, ctx: ScheduleContext) -> int | None:
    """Bytes of persistent buffers one reduction row needs (concrete sizes), or None."""
    reductions = candidate.reduction_exprs
    if not reductions:
        return 0
    row = 1
    for expr in reductions:
        out = expr.tensor_outputs()[0]
        size = 1
        for domain in out.domain:
            if domain.is_reduction:
                extent = ctx.runtime.extent(domain.extent)
                if extent is None:
                    return None
                size *= extent
        row = max(row, size)
    total = 0
    for buffer in persistent_buffers(candidate):
        total += row * max(dt.info(buffer.dtype).bits // 8, 1)
    return total


def reduction_signatures_agree(candidate: Candidate) -> tuple[Expr, Expr] | None:
    """Two reductions over different axes cannot share one kernel: return such a pair."""
    reductions = candidate.reduction_exprs
    for expr in reductions[1:]:
        first = reductions[0]
        if (len(expr.tensor_outputs()[0].domain), reduced_positions(expr)) != (
            len(first.tensor_outputs()[0].domain), reduced_positions(first)
        ):
            return first, expr
    return None


def tv_inputs(candidate: Candidate) -> list[TensorView]:
    return list(candidate.inputs)


def has_kind(candidate: Candidate, *kinds: OpKind) -> bool:
    return candidate.has(*kinds)
