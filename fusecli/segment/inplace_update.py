"""SegmentInplaceUpdatePass: an in-place update that could race with its readers gets a
segment of its own.

nvFuser's pre-segmentation pass (csrc/preseg_passes/segment_inplace_update.cpp, PR #2999,
October 2024, for issue #2664). An ``add_output(out, alias_input)`` writes ``out`` into
``alias_input``'s buffer. Where a kernel also reads that input through a broadcast, some
threads could read it after others wrote it. So an aliased output is cut off when

- it, or the input it is written into, feeds a broadcast (a producer of a broadcast's input),
  or depends on one (a consumer of a broadcast's output); or
- the input has a broadcast dimension that the fusion concretizes (meets an iteration
  dimension: nvFuser's permissive IdModel graph; fusecli's ``DimGraph`` over the fusion).

The cut is ``segment_set`` then ``set``, and the ``set`` becomes the aliased output:

    T4 = add(T2, 1.0)   (add_output(T4, T2))      T4 = add(T2, 1.0)
                                       becomes    T9 = segment_set(T4)
                                                  T10 = set(T9)       (add_output(T10, T2))

A ``segment_set`` alone would not do: its output would have no use, and the segmenter would
merge it back. With the hint the whole-fusion try is skipped, and the copy writes the input
after every reader has run. For the 0-dim tensors of optimizer states (a step counter), the
copy has no concrete dimension: the no_op scheduler takes it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from fusecli.ir.builder import copy_domain
from fusecli.ir.nodes import Expr, Fusion, TensorView
from fusecli.ir.optype import OpType
from fusecli.segment.dims import DimGraph


def segment_inplace_updates(fusion: Fusion) -> Fusion:
    """``fusion`` with every racing in-place update behind a segment_set and a set."""
    aliased = [o for o in fusion.outputs if o.alias_input is not None]
    if not aliased:
        return fusion
    near_broadcast = _broadcast_neighbourhood(fusion)
    dims = DimGraph(fusion.exprs)
    tensors = _tensors_of(fusion.exprs)
    exprs = list(fusion.exprs)
    outputs = list(fusion.outputs)
    for index, output in enumerate(outputs):
        updated, written = output.value, output.alias_input
        if written is None or not isinstance(updated, TensorView):
            continue
        if not (updated.uid in near_broadcast or written.uid in near_broadcast
                or _has_concretized_broadcast(written, dims, tensors)):
            continue
        cut = TensorView(dtype=updated.dtype, domain=copy_domain(updated.logical))
        copy = TensorView(dtype=updated.dtype, domain=copy_domain(updated.logical))
        exprs.append(Expr(OpType.segment_set, (updated,), (cut,)))
        exprs.append(Expr(OpType.set, (cut,), (copy,)))
        outputs[index] = replace(output, value=copy)
    if len(exprs) == len(fusion.exprs):
        return fusion
    return Fusion(inputs=fusion.inputs, outputs=tuple(outputs), exprs=tuple(exprs))


def _broadcast_neighbourhood(fusion: Fusion) -> set[int]:
    """Uids of the tensors that depend on a broadcast's output or feed a broadcast's input
    (the broadcast's own input and output included)."""
    broadcasts = [e for e in fusion.exprs if e.op is OpType.broadcast]
    visited: set[int] = set()
    downstream = deque(e.output for e in broadcasts)
    while downstream:
        tensor = downstream.popleft()
        if tensor.uid in visited:
            continue
        visited.add(tensor.uid)
        for use in fusion.uses(tensor):
            downstream.extend(use.tensor_outputs())
    upstream = deque(e.tensor_inputs()[0] for e in broadcasts)
    while upstream:
        tensor = upstream.popleft()
        if tensor.uid in visited:
            continue
        visited.add(tensor.uid)
        definition = fusion.definition(tensor)
        if definition is not None:
            upstream.extend(definition.tensor_inputs())
    return visited


def _has_concretized_broadcast(
    tensor: TensorView, dims: DimGraph, tensors: list[TensorView]
) -> bool:
    """A broadcast dimension of ``tensor`` is the same loop as some iteration dimension."""
    broadcast = [p for p, d in enumerate(tensor.domain) if d.is_broadcast]
    if not broadcast:
        return False
    classes = {dims.class_of(tensor, p) for p in broadcast}
    return any(
        not domain.is_broadcast and dims.class_of(other, position) in classes
        for other in tensors
        for position, domain in enumerate(other.domain)
    )


def _tensors_of(exprs: tuple[Expr, ...]) -> list[TensorView]:
    seen: dict[int, TensorView] = {}
    for expr in exprs:
        for tensor in (*expr.tensor_inputs(), *expr.tensor_outputs()):
            seen.setdefault(tensor.uid, tensor)
    return list(seen.values())
