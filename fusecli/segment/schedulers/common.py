"""Checks and analyses shared by schedulers.

``common_checks`` is nvFuser's ``checkCanSchedule`` (csrc/scheduler/registry.cpp), run before
every scheduler except expr_eval and logged under that scheduler's name. The analyses
(persistent buffers, reduction types, memory promotion) are what several schedulers need.
Reason strings are nvFuser's own where a rule matches one of its conditions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.candidate import Candidate
from fusecli.segment.dims import self_mapped
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers import reshapes
from fusecli.segment.schedulers.persistence import persistent_buffers as persistent_buffers

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

# Ops no kernel scheduler takes: nvFuser runs them through ATen (expr_eval).
ATEN_ONLY_OPS = frozenset(
    {OpType.scatter, OpType.sdpfa_fwd, OpType.embedding_fwd, OpType.argsort, OpType.topk,
     OpType.sdpfa_bwd, OpType.grouped_mm,
     OpType.cumsum, OpType.cumprod, OpType.cummin, OpType.cummax, OpType.index_put_accumulate}
)
MATMUL_OPS = frozenset({OpType.matmul, OpType.linear, OpType.mma})
RESIZE_OPS = frozenset({OpType.slice, OpType.pad, OpType.cat})
INDEX_OPS = frozenset({OpType.gather, OpType.scatter, OpType.index_select, OpType.select,
                       OpType.take_along_axis})


def common_checks(
    candidate: Candidate, ctx: ScheduleContext, scheduler: str
) -> Rejection | None:
    """Why every non-expr_eval scheduler rejects ``candidate``, or None."""
    ops = candidate.ops
    name = candidate.graph.name
    if ops & ATEN_ONLY_OPS:
        return Rejection.of(Reason.UNSUPPORTED_OPS, op=_first_op(candidate, ATEN_ONLY_OPS))
    if OpType.gather in ops:
        return Rejection.of(Reason.NON_EXACT_GATHER, op="gather")
    if ctx.profile.common_matmul_check and scheduler != "matmul" and ops & MATMUL_OPS:
        return Rejection.of(Reason.MATMUL_OPS, op=_first_op(candidate, MATMUL_OPS))
    apart = candidate.memo("disconnected", disconnected_output)
    if apart is not None:
        return Rejection.of(Reason.NOT_CONNECTED, output=name(apart),
                            unconnected_to=name(candidate.outputs[0]))
    self_mapped_tensor = candidate.memo("self_mapped", _self_mapped)
    if self_mapped_tensor is not None:
        return Rejection.of(Reason.SELF_MAPPING, tensor=name(self_mapped_tensor))
    if ops & RESIZE_OPS and ops & INDEX_OPS:
        return Rejection.of(Reason.RESIZE_AND_INDEX, resize=_first_op(candidate, RESIZE_OPS),
                            index=_first_op(candidate, INDEX_OPS))
    cyclic = candidate.memo("cyclic_reshape", reshapes.cyclic_reshape)
    if cyclic is not None:
        return Rejection.of(Reason.CYCLIC_RESHAPES, tensor=name(cyclic))
    twice = candidate.memo("incompatible_reshapes", reshapes.incompatible_reshapes)
    if scheduler != "resize" and twice is not None:
        return Rejection.of(Reason.INCOMPATIBLE_RESHAPES, tensor=name(twice))
    return None


def _first_op(candidate: Candidate, ops: frozenset[OpType]) -> str:
    return next(e.op.value for e in candidate.exprs if e.op in ops)


def disconnected_output(candidate: Candidate) -> TensorView | None:
    """An output that does not reach output 0 through the candidate's exprs (undirected)."""
    if len(candidate.outputs) <= 1:
        return None
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
    return next((o for o in candidate.outputs[1:] if find(o.uid) != root), None)


def _self_mapped(candidate: Candidate) -> TensorView | None:
    """A tensor two of whose dimensions the segment's exact map joins: x[i] compared with
    itself transposed, through two broadcasts of one iota (a causal mask). No scheduler's loop
    nest can give one tensor's two dimensions the same loop."""
    return self_mapped(candidate.exact_dims, candidate.tensors)


def non_unique_broadcast(candidate: Candidate) -> TensorView | None:
    """A tensor with a broadcast dimension that meets iteration dimensions of two different
    loops (nvFuser's ConcretizedBroadcastDomains::maybeNonUniquelyConcretized), or None.
    Asked by the resize and the transpose scheduler: computed once per candidate.

    In the exact map broadcast dimensions form classes of their own; a class is concretized
    where one of its dimensions is aligned with an iteration dimension by some expr.
    """
    return candidate.memo("non_unique_broadcast", _non_unique_broadcast)


def _non_unique_broadcast(candidate: Candidate) -> TensorView | None:
    exact = candidate.exact_dims
    loose = candidate.dims  # pairs broadcasts with what they meet
    concretized: dict[object, set[object]] = {}
    owner: dict[object, TensorView] = {}
    for tensor in candidate.tensors:
        for position, domain in enumerate(tensor.domain):
            if domain.is_broadcast:
                owner.setdefault(exact.class_of(tensor, position), tensor)
    iteration_by_loose: dict[object, set[object]] = {}
    for tensor in candidate.tensors:
        for position, domain in enumerate(tensor.domain):
            if not domain.is_broadcast and not domain.is_reduction:
                iteration_by_loose.setdefault(loose.class_of(tensor, position), set()).add(
                    exact.class_of(tensor, position)
                )
    for tensor in candidate.tensors:
        for position, domain in enumerate(tensor.domain):
            if not domain.is_broadcast:
                continue
            met = iteration_by_loose.get(loose.class_of(tensor, position), set())
            concretized.setdefault(exact.class_of(tensor, position), set()).update(met)
    for broadcast_class, loops in concretized.items():
        if len(loops) > 1:
            return owner[broadcast_class]
    return None


def non_unique_broadcast_reason(candidate: Candidate) -> Rejection | None:
    """registry_utils::hasNonUniqueBcast, which pointwise, reduction and the persistent
    schedulers (normalization_utils.cpp, checkOpsAndInputs) ask as transpose and resize do:
    one broadcast meeting two loops of different extents cannot share their loop nest."""
    multiple = non_unique_broadcast(candidate)
    if multiple is None:
        return None
    return Rejection.of(Reason.NON_UNIQUE_BROADCAST, tensor=candidate.graph.name(multiple))


# nvFuser's getOpString of the ops rejectScheduleForMemoryPromotion checks, as of 2023 (a cat
# is checked through the PadOps nvFuser builds it from)
_OP_STRINGS_2023 = {
    OpType.select: "SelectOp", OpType.index_select: "IndexSelectOp",
    OpType.gather: "TorchGatherOp", OpType.take_along_axis: "TorchGatherOp",
    OpType.slice: "SliceOp", OpType.pad: "PadOp", OpType.cat: "PadOp",
}


def memory_promotion_reason(candidate: Candidate, ctx: ScheduleContext) -> Rejection | None:
    """Index lookups and resize ops read straight from global memory: their input must be
    a segment input (nvFuser's rejectScheduleForMemoryPromotion).

    Under io_to_lower_precision (nvfuser-2023, lower_precision.py) a slice or pad of a
    half-precision edge reads the cast back to float instead, which is no segment input.
    """
    read_through_cast = candidate.input_uids & ctx.half_edges(candidate.graph.fusion)
    for expr in candidate.exprs:
        if expr.op in (OpType.select, OpType.index_select, OpType.gather,
                       OpType.take_along_axis) or expr.op in RESIZE_OPS:
            lookup = expr.inputs[0]
            sources = expr.tensor_inputs() if expr.op is OpType.cat else [lookup]
            for source in sources:
                cast = expr.op in RESIZE_OPS and source.uid in read_through_cast
                if candidate.is_input(source) and not cast:
                    continue
                name = candidate.graph.name(source)
                producer = candidate.definition(source)
                made_by = producer.op.value if producer is not None else "input"
                if ctx.profile.first_input_wording:
                    return Rejection.of(
                        Reason.FIRST_INPUT_MUST_BE_FUSION_INPUT,
                        op_string=_OP_STRINGS_2023[expr.op], tensor=name, op=expr.op.value,
                        producer=made_by,
                    )
                return Rejection.of(Reason.MUST_BE_FUSION_INPUT, tensor=name, op=expr.op.value,
                                    producer=made_by)
    return None


def has_mma(candidate: Candidate) -> bool:
    return any(e.op is OpType.mma for e in candidate.exprs)


def elementwise_reason(
    candidate: Candidate, ctx: ScheduleContext, mma_reason: Reason
) -> Rejection | None:
    """What the schedulers of reduction-free kernels (pointwise, transpose) reject first, in
    nvFuser's order: an MmaOp (``mma_reason``), the memory-promotion rule, a reduction."""
    if has_mma(candidate):
        return Rejection.of(mma_reason)
    reason = memory_promotion_reason(candidate, ctx)
    if reason:
        return reason
    if candidate.reduction_exprs:
        reduction = candidate.reduction_exprs[0]
        return Rejection.of(Reason.REDUCTION_IN_ELEMENTWISE, op=reduction.op.value,
                            tensor=candidate.graph.name(reduction.tensor_outputs()[0]))
    return None


def reduction_input_reason(candidate: Candidate, ctx: ScheduleContext) -> Rejection | None:
    """What the reduction and persistent schedulers reject after finding a reduction: no
    tensor input, then the memory-promotion rule."""
    if not candidate.inputs:
        return Rejection.of(Reason.NO_INPUT)
    return memory_promotion_reason(candidate, ctx)


def unmapped_reduction_reason(candidate: Candidate) -> Rejection | None:
    """Reductions over different axes cannot share one kernel."""
    mismatch = reduction_signatures_agree(candidate)
    if not mismatch:
        return None
    first, second = (candidate.graph.name(e.tensor_outputs()[0]) for e in mismatch)
    return Rejection.of(Reason.UNMAPPED_REDUCTIONS, first=first, second=second)


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


def reduction_row(candidate: Candidate, ctx: ScheduleContext) -> int | None:
    """Elements of the longest reduction row (concrete sizes), or None when unknown."""
    row = 1
    for expr in candidate.reduction_exprs:
        size = reduced_elements(expr, ctx)
        if size is None:
            return None
        row = max(row, size)
    return row


def reduced_elements(expr: Expr, ctx: ScheduleContext) -> int | None:
    """Elements one reduction combines into each output value, or None when unknown."""
    size = 1
    for domain in expr.tensor_outputs()[0].domain:
        if domain.is_reduction:
            extent = ctx.runtime.extent(domain.extent)
            if extent is None:
                return None
            size *= extent
    return size


def segment_inputs_of(
    candidate: Candidate, tensor: TensorView, through_reductions: bool = True
) -> list[TensorView] | None:
    """The segment inputs ``tensor`` is computed from; None when, without
    ``through_reductions``, a reduction is on the way."""
    found, stack, seen = [], [tensor], set()
    while stack:
        value = stack.pop()
        if value.uid in seen:
            continue
        seen.add(value.uid)
        if candidate.is_input(value):
            found.append(value)
            continue
        producer = candidate.definition(value)
        if producer is None or not candidate.contains(producer):
            continue
        if not through_reductions and producer.op.kind in (OpKind.REDUCTION,
                                                           OpKind.NORMALIZATION):
            return None
        stack.extend(producer.tensor_inputs())
    return found


def recomputes_exp(candidate: Candidate) -> bool:
    """Whether recomputing the buffers from the inputs may run an exp again (nvFuser's
    projection_with_exp_op), taken as: the segment has an exp."""
    return any(e.op is OpType.exp for e in candidate.exprs)


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
