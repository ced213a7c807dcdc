"""Segment outputs a kernel does not write: views the runtime evaluates from another tensor.

nvFuser's pointwise, reduction, resize and no_op schedulers call ``markAliases``
(``csrc/scheduler/mark_aliases.cpp``): a segment output whose chain of aliasing ops inside the
segment (``csrc/alias_analysis.cpp``: set, permute, broadcast, squeeze, expand, slice, and a
reshape that merges dimensions adjacent in memory) starts at a segment input or at another
segment output gets ``AllocationType::Evaluate``. Its kernel does not compute it; after the
kernel the runtime evaluates the chain with ATen on the root's buffer (``ExprEvalExecutor``),
so the output comes back as a view and costs no memory traffic. A reshape that needs a copy
(of a transposed input, say) is no alias, and the kernel writes it.

``fusecli.segment.output_aliases`` decides which tensors are evaluated (the runtime hands their
uids to the executor in ``ExecutionContext.views``); ``split_outputs`` finds, for the kernel,
each one's chain back to a tensor the kernel has: an input, or an output it writes.
"""

from __future__ import annotations

from collections.abc import Set

from fusecli.ir.nodes import Expr, TensorView
from fusecli.segment.result import Segment


def split_outputs(segment: Segment, views: Set[int],
                  ) -> tuple[tuple[TensorView, ...], tuple[Expr, ...]]:
    """The outputs of ``segment`` its kernel writes, and the exprs the runtime evaluates after
    the kernel, in fusion order, for the outputs in ``views`` (tensor uids). A view whose chain
    does not reach an input or a written output through one-tensor ops is written instead."""
    viewed = [out for out in segment.outputs if out.uid in views]
    if not viewed:
        return tuple(segment.outputs), ()
    viewed_uids = {out.uid for out in viewed}
    written_uids = {out.uid for out in segment.outputs if out.uid not in viewed_uids}
    evaluated: dict[int, Expr] = {}
    for out in viewed:
        chain = _chain(segment, out, written_uids)
        if chain is None:
            written_uids.add(out.uid)
        else:
            evaluated.update((expr.uid, expr) for expr in chain)
    written = tuple(out for out in segment.outputs if out.uid in written_uids)
    order = {expr.uid: position for position, expr in enumerate(segment.exprs)}
    return written, tuple(sorted(evaluated.values(), key=lambda expr: order[expr.uid]))


def _chain(segment: Segment, out: TensorView, written: set[int]) -> list[Expr] | None:
    """The exprs from a tensor the kernel has to ``out``, or None where there is no such
    chain of one-tensor ops inside the segment."""
    candidate = segment.candidate
    chain: list[Expr] = []
    value = out
    while value is out or not (candidate.is_input(value) or value.uid in written):
        expr = candidate.definition(value)
        if expr is None or not candidate.contains(expr) or len(expr.tensor_inputs()) != 1:
            return None
        chain.append(expr)
        value = expr.tensor_inputs()[0]
    return chain
