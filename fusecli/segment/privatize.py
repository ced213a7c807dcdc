"""SegmentCandidateFinder::privatizeOps and revertPrivatizedOps (csrc/fusion_segmenter.cpp;
up-casts since #3776, February 2025; squeezes since #4583, August 2025).

Before the segments are searched (after the un-segmented attempt), every use of an up-cast's
output but the first gets a cast of its own (``privatizeUpCastOrSqueezeOp``): a cast to more
bits of a tensor, ``bf16 -> float`` or ``bool -> float`` as nvFuser compares the two types'
sizes. A squeeze whose output has exactly two uses is copied the same way (more uses are left
alone: a regression in nvFuser's RoPE tests). The pass repeats until nothing changes, so the
cast feeding a copied squeeze is copied in turn. Each copy then segments on its own: a cast
of a column-major input feeding two slices becomes two transpose segments, one per slice,
where one cast read by both would be one.

When the segments are final, copies that ended in one segment with their original or with
each other are reverted (``revertPrivatizedOps``, called from ``finalize``): the segment keeps
the original (or the first copy in it), and the other copies' uses read its output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from fusecli.ir import dtype as dt
from fusecli.ir.builder import copy_domain
from fusecli.ir.nodes import Expr, Fusion, TensorView, Val
from fusecli.ir.optype import OpType
from fusecli.ir.order import in_dependency_order

# a squeeze whose output has more uses than this is not copied (privatizeUpCastOrSqueezeOp)
SQUEEZE_MAX_USES = 2


@dataclass(frozen=True, slots=True)
class Privatized:
    """The fusion with its copies, and which original each copy was made from."""

    fusion: Fusion
    original_of: dict[int, int] = field(default_factory=dict)  # copy uid -> original uid


def privatize_ops(fusion: Fusion, live_exprs: Sequence[Expr]) -> Privatized:
    """Give every use of an up-cast (or of a squeeze of two uses) but the first its own copy.

    ``live_exprs``: the tensor exprs some output depends on; nvFuser counts only their uses.
    A rewritten use keeps its uid, so the map from copies to originals stays valid when a copy
    is made of a use that was itself a copy (a squeeze copy whose cast is copied next).
    """
    exprs = list(fusion.exprs)
    live = {e.uid for e in live_exprs}
    uses = _ordered_uses(e for e in exprs if e.uid in live)
    original_of: dict[int, int] = {}
    changed = True
    while changed:
        changed = False
        definition = {out.uid: e for e in exprs for out in e.outputs}
        for expr in [e for e in exprs if e.uid in live]:
            # by position in the expr as rewritten so far, as nvFuser walks expr->input(i):
            # mul(c, c) reads the copy at both positions after the first, and is done
            for position in range(len(expr.inputs)):
                value = expr.inputs[position]
                if not isinstance(value, TensorView):
                    continue
                producer = definition.get(value.uid)
                if producer is None or not _privatizable(producer, len(uses[value.uid])):
                    continue
                if uses[value.uid][0] == expr.uid:
                    continue
                copy = _copy_of(producer)
                rewritten = _reading(expr, {value.uid: copy.output})
                _move_uses(uses, value, copy, rewritten)
                position = next(i for i, e in enumerate(exprs) if e.uid == expr.uid)
                exprs[position:position + 1] = [copy, rewritten]
                live.add(copy.uid)
                original_of[copy.uid] = original_of.get(producer.uid, producer.uid)
                definition[copy.output.uid] = copy
                expr = rewritten
                changed = True
    if not original_of:
        return Privatized(fusion)
    rebuilt = Fusion(inputs=fusion.inputs, outputs=fusion.outputs, exprs=tuple(exprs))
    return Privatized(rebuilt, original_of)


def revert_privatized(
    privatized: Privatized, groups: Sequence[Sequence[Expr]]
) -> tuple[Fusion, list[list[Expr]]]:
    """Each group without the copies that share it with their original or with each other,
    their uses (in the group or in a consumer group) reading the output kept; and the fusion
    so rewritten. ``groups`` are the final segments' exprs."""
    original_of = privatized.original_of
    dropped: set[int] = set()
    replacement: dict[int, Val] = {}
    for exprs in groups:
        kept: dict[int, Expr] = {}
        for expr in exprs:
            family = original_of.get(expr.uid, expr.uid)
            if family not in original_of.values():
                continue
            first = kept.get(family)
            if first is None or expr.uid == family:  # the original is preferred
                kept[family] = expr
        for expr in exprs:
            family = original_of.get(expr.uid, expr.uid)
            keep = kept.get(family)
            if keep is not None and keep is not expr:
                dropped.add(expr.uid)
                replacement[expr.output.uid] = keep.output
    if not dropped:
        return privatized.fusion, [list(exprs) for exprs in groups]
    rewritten = {
        e.uid: _reading(e, replacement) for e in privatized.fusion.exprs
        if e.uid not in dropped and any(v.uid in replacement for v in e.inputs)
    }
    # the copy kept may stand after a use that a dropped copy fed and now reads the kept one
    exprs = in_dependency_order([rewritten.get(e.uid, e) for e in privatized.fusion.exprs
                                 if e.uid not in dropped])
    fusion = Fusion(inputs=privatized.fusion.inputs, outputs=privatized.fusion.outputs,
                    exprs=exprs)
    return fusion, [[rewritten.get(e.uid, e) for e in group if e.uid not in dropped]
                    for group in groups]


def _privatizable(producer: Expr, use_count: int) -> bool:
    if use_count < 2:
        return False
    if producer.op is OpType.squeeze:
        return use_count <= SQUEEZE_MAX_USES
    return _is_up_cast(producer)


def _is_up_cast(expr: Expr) -> bool:
    """A cast of a tensor to a type of more bits (is_upcast_op)."""
    if expr.op is not OpType.cast or not expr.tensor_inputs():
        return False
    out = expr.output
    if not isinstance(out, TensorView):
        return False
    return dt.info(expr.tensor_inputs()[0].dtype).bits < dt.info(out.dtype).bits


def _copy_of(producer: Expr) -> Expr:
    made = producer.output
    copy_out = TensorView(dtype=made.dtype, domain=copy_domain(made.domain, keep_rfactor=True))
    return Expr(producer.op, producer.inputs, (copy_out,), producer.attrs)


def _reading(expr: Expr, replacement: dict[int, Val]) -> Expr:
    """``expr`` (same uid) with its inputs replaced."""
    inputs = tuple(replacement.get(v.uid, v) for v in expr.inputs)
    return Expr(expr.op, inputs, expr.outputs, expr.attrs, uid=expr.uid)


def _ordered_uses(exprs: Iterable[Expr]) -> dict[int, list[int]]:
    """Each tensor's uses in the order nvFuser registered them: definition order."""
    uses: dict[int, list[int]] = {}
    for expr in exprs:
        for value in expr.tensor_inputs():
            readers = uses.setdefault(value.uid, [])
            if expr.uid not in readers:
                readers.append(expr.uid)
    return uses


def _move_uses(uses: dict[int, list[int]], value: TensorView, copy: Expr,
               rewritten: Expr) -> None:
    """The uses after ``rewritten`` replaced the use of ``value`` by ``copy``'s output: as
    replaceValInExprInputs does, the new expr is the last use of each other input, and the
    copy the last use of what it reads."""
    uses[value.uid].remove(rewritten.uid)
    uses.setdefault(copy.output.uid, []).append(rewritten.uid)
    for other in {v.uid for v in rewritten.tensor_inputs()} - {copy.output.uid}:
        uses[other].remove(rewritten.uid)
        uses[other].append(rewritten.uid)
    for source in {v.uid for v in copy.tensor_inputs()}:
        uses.setdefault(source, []).append(copy.uid)
