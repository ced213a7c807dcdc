"""Folding views of inputs into inputs: ``permute(reshape(x))`` becomes an input of its own.

An op that only re-views an input of the fusion (``permute``, ``broadcast``, ``expand``,
``squeeze``, and a ``reshape`` whose result is a view of the input's storage, as torch's
``Tensor.view`` decides), or a chain of such ops, can go while its readers read a new input of
the view's shape, dtype and strides, fed with that view of what the input is fed with: every
value stays the same and the fusion has one op less per link. The new input is declared from
its strides (``fusecli.bisect.declare``): a permuted view gets a stride order, an expanded
dimension nvFuser's expanded broadcast (shape -1, contiguity None, stride 0), a view of a
gapped buffer non-contiguous dimensions.

What this adds to ddmin's removal of the same ops: a chain goes in one step, where removing
one link alone leaves a view of a new input (the first) or a new output (the last); and the
input keeps the strides of the storage it views, where a removed op's result is fed laid out
dense. Folded inputs are named in ``Selection.folded``; ``Slicer.build`` feeds them with
``view_of_input``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from fusecli.ir.nodes import Expr, Val
from fusecli.ir.optype import OpType

if TYPE_CHECKING:
    from fusecli.bisect.selection import Selection, Slicer

ViewRule = Callable[[torch.Tensor, Expr, tuple[int, ...]], torch.Tensor]


def _permute(tensor: torch.Tensor, expr: Expr, shape: tuple[int, ...]) -> torch.Tensor:
    return tensor.permute(list(expr.attr("dims")))


def _broadcast(tensor: torch.Tensor, expr: Expr, shape: tuple[int, ...]) -> torch.Tensor:
    return tensor[tuple(None if new else slice(None) for new in expr.attr("is_broadcast_dim"))]


def _expand(tensor: torch.Tensor, expr: Expr, shape: tuple[int, ...]) -> torch.Tensor:
    return tensor.expand(shape)


def _squeeze(tensor: torch.Tensor, expr: Expr, shape: tuple[int, ...]) -> torch.Tensor:
    for dim in sorted((d % tensor.dim() for d in expr.attr("dims")), reverse=True):
        tensor = tensor.select(dim, 0)
    return tensor


def _reshape(tensor: torch.Tensor, expr: Expr, shape: tuple[int, ...]) -> torch.Tensor:
    return tensor.view(shape)  # a RuntimeError where no strides of the storage give ``shape``


# The view each op makes of its operand; ``shape`` is the result's, as the reference computed it
VIEWS: dict[OpType, ViewRule] = {
    OpType.permute: _permute,
    OpType.broadcast: _broadcast,
    OpType.expand: _expand,
    OpType.squeeze: _squeeze,
    OpType.reshape: _reshape,
}


def view_of_input(slicer: Slicer, value: Val, selection: Selection) -> torch.Tensor | None:
    """``value`` as a view of the tensor an input of ``selection``'s fusion is fed with: the
    view ops between them (kept, or folded before) applied to it. None where an op between them
    computes rather than views, a reshape has no view of the storage, or the input is no
    tensor."""
    aliases = slicer.aliases(selection)
    chain: list[tuple[Expr, Val]] = []
    while True:
        producer = slicer.producer(value)
        if producer is None or not (
            producer.uid in selection.exprs or value.uid in selection.folded
        ):
            break  # an input: the fusion's own, or a removed op's result fed as recorded
        if producer.op not in VIEWS or len(producer.outputs) != 1:
            return None
        chain.append((producer, value))
        source = producer.inputs[0]
        value = aliases.get(source.uid, source)
    tensor = slicer.example(value, {})
    if not isinstance(tensor, torch.Tensor):
        return None
    for expr, result in reversed(chain):
        recorded = slicer.values.get(result.uid)
        if not isinstance(recorded, torch.Tensor):
            return None
        try:
            tensor = VIEWS[expr.op](tensor, expr, tuple(recorded.shape))
        except RuntimeError:
            return None
        if tensor.shape != recorded.shape or tensor.dtype != recorded.dtype:
            return None
    return tensor


def foldable(slicer: Slicer, selection: Selection) -> list[int]:
    """The kept view exprs whose result is a view of an input (through other view exprs or
    none), in the fusion's order: the candidates of ``fold``."""
    found = []
    for expr in slicer.units:
        if expr.uid not in selection.exprs or expr.op not in VIEWS or len(expr.outputs) != 1:
            continue
        if view_of_input(slicer, expr.outputs[0], selection) is not None:
            found.append(expr.uid)
    return found


def fold(slicer: Slicer, selection: Selection, exprs: list[int]) -> Selection:
    """``selection`` with each view expr of ``exprs`` removed and its result fed as a folded
    input; a view expr upstream in its chain that nothing kept reads any more goes too (a
    chain folds whole, rather than leaving its first links' result as a new output)."""
    if not exprs:
        return selection
    by_uid = {e.uid: e for e in slicer.units}
    aliases = slicer.aliases(selection)
    kept = set(selection.exprs) - set(exprs)
    reads = Counter(
        aliases.get(v.uid, v).uid for uid in kept for v in by_uid[uid].inputs
    )
    outputs = _output_uids(slicer, selection)
    gone = list(exprs)
    while gone:
        expr = by_uid[gone.pop()]
        source = aliases.get(expr.inputs[0].uid, expr.inputs[0])
        producer = slicer.producer(source)
        if (producer is not None and producer.uid in kept and producer.op in VIEWS
                and reads[source.uid] == 0 and source.uid not in outputs):
            kept.discard(producer.uid)
            gone.append(producer.uid)
    results = {by_uid[uid].outputs[0].uid for uid in set(selection.exprs) - kept}
    return replace(selection, exprs=frozenset(kept),
                   folded=tuple(sorted({*selection.folded, *results})))


def _output_uids(slicer: Slicer, selection: Selection) -> set[int]:
    """Values that stay outputs whatever is removed: the explicit outputs, else the fusion's."""
    if selection.outputs is not None:
        return set(selection.outputs)
    return {output.value.uid for output in slicer.fusion.outputs}
