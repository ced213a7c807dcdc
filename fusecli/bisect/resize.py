"""Resize chains written as one pad: ``cat([slice(x), slice(x)])`` or ``pad(slice(x))`` becomes
``pad(x, widths)``, one op where there were two or three.

A failure of a resize scheduler or of the resize propagation often needs a resize op between a
value and its readers, not the particular cuts: a rotate-half (two slices of one tensor and a
cat) or a pad of a slice is then one pad of the tensor to the same shape. The pad's widths are
the slice's and the pad's composed where they resize at all (``pad(x[a:b], [l, r])`` becomes
``pad(x, [l - a, r - (n - b)])``), else a cut of half the dimension on the left padded back on
the right (``pad(x, [-n/2, n/2])``: a resize nvFuser cannot drop as a no-op). The result has
the resize's shape and dtype, not its values (where the slice cut, the pad reads ``x``); the
slices go (bypassed, their reader reads ``x``) and the resize is replayed as a pad
(``Selection.as_pad``). Asked like any step: a failure that needs the cuts keeps them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from fusecli.bisect.joined import readers_of
from fusecli.ir.attrs import pad_widths, slice_bounds
from fusecli.ir.nodes import Expr, Scalar, TensorView
from fusecli.ir.optype import OpType

if TYPE_CHECKING:
    from fusecli.bisect.selection import Selection, Slicer

# (resize uid, pad widths, (slice uid, slice result uid, source uid) per slice)
Candidate = tuple[int, tuple[int, ...], tuple[tuple[int, int, int], ...]]


def collapsible(slicer: Slicer, selection: Selection) -> list[Candidate]:
    """A ``Candidate`` for each kept cat or pad whose tensor operands are all results of kept
    slices of one value that nothing else reads and no output is: written as one pad of that
    value (widths innermost dimension first, as ``fd.ops.pad`` takes them), the slices
    bypassed to it."""
    kept = [e for e in slicer.units if e.uid in selection.exprs]
    aliases = slicer.aliases(selection)
    readers = readers_of(kept, aliases)
    outputs = set(slicer.output_uids(selection))
    producers = {o.uid: e for e in kept for o in e.outputs}
    padded = {uid for uid, _ in selection.as_pad}
    found = []
    for expr in kept:
        if expr.op not in (OpType.cat, OpType.pad) or expr.uid in padded:
            continue
        tensors = expr.inputs if expr.op is OpType.cat else expr.inputs[:1]
        slices = [producers.get(aliases.get(v.uid, v).uid) for v in tensors]
        if not slices or any(s is None or s.op is not OpType.slice for s in slices):
            continue
        if any(s.outputs[0].uid in outputs
               or any(r is not expr for r in readers.get(s.outputs[0].uid, [])) for s in slices):
            continue
        sources = {aliases.get(s.inputs[0].uid, s.inputs[0]).uid for s in slices}
        if len(sources) != 1:
            continue
        source = aliases.get(slices[0].inputs[0].uid, slices[0].inputs[0])
        widths = _widths(slicer, expr, slices[0], source)
        if widths is not None:
            cut = tuple(sorted({(s.uid, s.outputs[0].uid, source.uid) for s in slices}))
            found.append((expr.uid, widths, cut))
    return found


def as_pad(selection: Selection, candidates: list[Candidate]) -> Selection:
    """``selection`` with each candidate's resize written as a pad and its slices bypassed."""
    if not candidates:
        return selection
    return replace(
        selection,
        as_pad=tuple(sorted({*selection.as_pad, *((uid, w) for uid, w, _ in candidates)})),
        bypass=tuple(sorted({*selection.bypass,
                             *((result, source) for _, _, cut in candidates
                               for _, result, source in cut)})),
        exprs=selection.exprs - {uid for _, _, cut in candidates for uid, _, _ in cut},
    )


def _widths(slicer: Slicer, expr: Expr, first: Expr, source: TensorView) -> tuple[int, ...] | None:
    """The pad of ``source`` to the resize's shape, innermost dimension first; None where the
    shapes are not static or nothing would be resized."""
    given = slicer.value_of(source)
    result = slicer.values.get(expr.outputs[0].uid)
    if not isinstance(given, torch.Tensor) or not isinstance(result, torch.Tensor):
        return None
    sizes, out = list(given.shape), list(result.shape)
    if len(sizes) != len(out):
        return None
    starts = _starts(first, sizes)
    if starts is None:
        return None
    per_dim = []
    resized = []
    for axis, (size, wanted) in enumerate(zip(sizes, out)):
        left = -starts[axis]
        if expr.op is OpType.pad:
            given_left = _pad_left(expr, axis)
            if given_left is None:
                return None
            left += given_left
        per_dim.append((left, wanted - size - left))
        if left or wanted != size or (expr.op is OpType.cat and axis == _cat_axis(expr)):
            resized.append(axis)
    if not resized:
        return None
    if all(left == 0 and right == 0 for left, right in per_dim):
        half = [axis for axis in resized if sizes[axis] > 1]
        if not half:
            return None
        cut = sizes[half[0]] // 2  # the same shape by a resize nvFuser keeps
        per_dim[half[0]] = (-cut, cut)
    return tuple(w for left, right in reversed(per_dim) for w in (left, right))


def _starts(slice_expr: Expr, sizes: list[int]) -> list[int] | None:
    starts, _ = slice_bounds(slice_expr, slice_expr.inputs)
    found = []
    for scalar, size in zip(starts, sizes):
        if not isinstance(scalar, Scalar) or not scalar.is_constant:
            return None
        start = int(scalar.value)
        start = start + size if start < 0 else start
        found.append(min(max(start, 0), size))
    return found


def _pad_left(expr: Expr, axis: int) -> int | None:
    widths = pad_widths(expr.inputs)
    rank = expr.inputs[0].ndim
    pair = rank - 1 - axis
    if 2 * pair >= len(widths):
        return 0
    scalar = widths[2 * pair]
    if not isinstance(scalar, Scalar) or not scalar.is_constant:
        return None
    return int(scalar.value)


def _cat_axis(expr: Expr) -> int:
    dim = int(expr.attr("dim"))
    return dim + expr.outputs[0].ndim if dim < 0 else dim
