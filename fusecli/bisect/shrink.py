"""Shrinking input sizes while the failure persists (no peer tool shrinks shapes).

Sizes are shrunk one distinct size at a time, largest first, everywhere it appears at once: in
the inputs (their leading part is kept), in static sizes of the definition and in shape
arguments. Each size first tries 1, then halves while the failure persists. A size that cannot
change (a slice bound depends on it, the failure needs it) stays; the oracle decides. With
questions asked ``width`` at a time, each size's candidates (1, 2, 4, ... below it) are asked
in waves, smallest first, and the smallest that fails is taken: a wave or two per size instead
of one question after another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from fusecli.bisect.ddmin import Budget
from fusecli.bisect.selection import Piece, Selection
from fusecli.ir.nodes import TensorView, Vector
from fusecli.ir.optype import OpType

_SHAPE_ARGUMENT_OPS = frozenset(
    {OpType.expand, OpType.reshape, OpType.full, OpType.uniform, OpType.normal}
)


def sizes_of(piece: Piece) -> list[int]:
    """The distinct sizes > 1 a piece's inputs and shape arguments have, largest first."""
    found: set[int] = set()
    for value, example in zip(piece.inputs, piece.loaded.inputs):
        if isinstance(value, TensorView) and hasattr(example, "shape"):
            for domain, size in zip(value.logical, example.shape):
                if not domain.is_broadcast or domain.expanded is not None:
                    found.add(int(size))
    for expr in piece.exprs:
        if expr.op in _SHAPE_ARGUMENT_OPS:
            for vector in (v for v in expr.inputs if isinstance(v, Vector)):
                found.update(int(e.value) for e in vector.elements if e.is_constant)
    return sorted((s for s in found if s > 1), reverse=True)


def with_size(selection: Selection, original: int, new: int) -> Selection:
    extents = dict(selection.extents)
    extents[original] = new
    return replace(selection, extents=tuple(sorted(extents.items())))


def shrink(
    selection: Selection,
    sizes: list[int],
    fails: Callable[[Selection, str], bool],
    *,
    fails_many: Callable[[list[Selection], list[str]], list[bool]] | None = None,
    width: int = 1,
) -> Selection:
    """The selection with every size in ``sizes`` as small as ``fails`` allows.

    ``fails(selection, label)`` asks the oracle; sizes are keyed by their original value.
    ``fails_many(selections, labels)`` asks several at once (``width`` at a time).
    """
    if fails_many is not None and width > 1:
        return _shrink_in_waves(selection, sizes, fails_many, width)
    try:
        for size in sizes:  # ``selection`` changes only once a trial has failed as asked
            current = dict(selection.extents).get(size, size)
            if current > 1:
                trial = with_size(selection, size, 1)
                if fails(trial, f"size {size} -> 1"):
                    selection = trial
                    continue
            new = current // 2
            while new >= 2:
                trial = with_size(selection, size, new)
                if not fails(trial, f"size {size} -> {new}"):
                    break
                selection, new = trial, new // 2
    except Budget:
        pass  # the smallest failing sizes found so far
    return selection


def _shrink_in_waves(
    selection: Selection,
    sizes: list[int],
    fails_many: Callable[[list[Selection], list[str]], list[bool]],
    width: int,
) -> Selection:
    for size in sizes:
        current = dict(selection.extents).get(size, size)
        candidates, new = [], 1
        while new < current:
            candidates.append(new)
            new *= 2
        for start in range(0, len(candidates), width):
            wave = candidates[start : start + width]
            trials = [with_size(selection, size, n) for n in wave]
            try:
                results = fails_many(trials, [f"size {size} -> {n}" for n in wave])
            except Budget:
                return selection  # the smallest failing sizes found so far
            failing = [t for t, failed in zip(trials, results) if failed]
            if failing:
                selection = failing[0]
                break
    return selection
