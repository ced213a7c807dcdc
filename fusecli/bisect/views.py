"""Collapsing chains of views: ``reshape(permute(reshape(x)))`` written as one reshape of ``x``.

A reshape keeps the order of the elements, and so does a permute that moves only size-1
dimensions (``[1, 1, 8, 128]`` -> ``[1, 8, 1, 128]``): such a permute can be written as a
reshape to its result's shape (``Selection.as_reshape``), and a reshape or such a permute whose
only readers are reshapes can go, its readers reshaping its operand instead (a bypass whose
operand has another shape, which only a reshape can read). Each is asked like any other step:
a failure that needs the permute's or the inner reshape's transforms keeps them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from fusecli.bisect.joined import readers_of
from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpType

if TYPE_CHECKING:
    from fusecli.bisect.selection import Selection, Slicer


def moves_only_size_1(slicer: Slicer, expr: Expr, selection: Selection | None = None) -> bool:
    """Whether a permute moves only size-1 dimensions of its operand: of the shape the
    reference recorded (the fusion's inputs included), at the sizes ``selection`` shrank them
    to (a sequence of 2048 shrunk to 1 makes a permute of it a reshape)."""
    operand = slicer.values.get(expr.inputs[0].uid)
    if not isinstance(operand, torch.Tensor):
        return False
    sizes = dict(selection.extents) if selection is not None else {}
    moved = [axis for axis in expr.attr("dims") if sizes.get(operand.shape[axis],
                                                             operand.shape[axis]) != 1]
    return moved == sorted(moved)


def reshapeable(slicer: Slicer, selection: Selection) -> list[int]:
    """The kept permutes that move only size-1 dimensions and are not written as a reshape."""
    return [e.uid for e in slicer.units if e.uid in selection.exprs and e.op is OpType.permute
            and e.uid not in selection.as_reshape and moves_only_size_1(slicer, e, selection)]


def as_reshape(selection: Selection, uids: list[int]) -> Selection:
    return replace(selection, as_reshape=tuple(sorted({*selection.as_reshape, *uids})))


def collapsible(slicer: Slicer, selection: Selection) -> list[tuple[int, int]]:
    """(expr uid, operand uid): each kept reshape, or permute written as one, whose result no
    output is and only reshapes (or permutes written as one) read: bypassed, they reshape its
    operand."""
    kept = [e for e in slicer.units if e.uid in selection.exprs]
    aliases = slicer.aliases(selection)
    outputs = set(slicer.output_uids(selection))
    readers = readers_of(kept, aliases)
    found = []
    for expr in kept:
        if expr.op is OpType.permute and expr.uid not in selection.as_reshape:
            continue
        if expr.op not in (OpType.reshape, OpType.permute) or expr.outputs[0].uid in outputs:
            continue
        read = readers.get(expr.outputs[0].uid, [])
        if read and all(r.op is OpType.reshape or r.uid in selection.as_reshape for r in read):
            operand = aliases.get(expr.inputs[0].uid, expr.inputs[0])
            if isinstance(operand, TensorView):
                found.append((expr.uid, operand.uid))
    return found
