"""Inputs read in place of computed values: the merge that joins two parts of a fusion.

ddmin cuts a fusion's chains into inputs, and a merge reads an earlier value alike in place of
a later one. What neither does: read a value the fusion computes in place of an input, where a
failure needs two parts that share little (a ``slice`` and ``cat`` of one input, a
``broadcast`` of another into the same shape, joined by a ``mul``). Read from the broadcast,
the slice's input goes; the ``mul`` that joined them may then go too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.nodes import Expr, TensorView, Val

if TYPE_CHECKING:
    from fusecli.bisect.selection import Slicer


def computed_for_inputs(slicer: Slicer, exprs: list[Expr], inputs: list[Val], present: list[Val],
                        aliases: dict[int, Val], taken: set[int]) -> list[tuple[int, int]]:
    """(input uid, value uid): an input (an original one or a cut point) read in place of a
    value the selection computes, of its dtype and shape, where an expanded broadcast may
    stand for one of its dimensions; the value's producer comes before the input's first
    reader and does not read it. The input goes, its readers joined to the rest (a
    ``slice`` of a new input next to a ``broadcast`` of another of that shape: the slice
    of the broadcast)."""
    from fusecli.bisect.selection import _reads, _same_form

    computed = {o.uid for e in exprs for o in e.outputs}
    readers: dict[int, list[Expr]] = {}
    for expr in exprs:
        for value in _reads(expr, aliases):
            readers.setdefault(value.uid, []).append(expr)
    found = []
    for value in inputs:
        if value.uid in taken or not isinstance(value, TensorView) or not readers.get(
                value.uid):
            continue
        first = min(slicer._position[e.uid] for e in readers[value.uid])
        for candidate in present:
            producer = slicer._producer.get(candidate.uid)
            if (candidate.uid not in computed or candidate.uid == value.uid
                    or slicer._position[producer.uid] >= first
                    or candidate.dtype is not value.dtype
                    or not _same_form(value, slicer.value_of(value), candidate,
                                      slicer.value_of(candidate), expanded=True)
                    or _depends_on(candidate, value, exprs, aliases)):
                continue
            found.append((value.uid, candidate.uid))
            break
    return found


def _depends_on(value: Val, on: Val, exprs: list[Expr], aliases: dict[int, Val]) -> bool:
    """Whether ``exprs`` compute ``value`` from ``on``."""
    from fusecli.bisect.selection import _reads

    producers = {o.uid: e for e in exprs for o in e.outputs}
    stack, seen = [value], set()
    while stack:
        current = stack.pop()
        if current.uid == on.uid:
            return True
        if current.uid in seen or current.uid not in producers:
            continue
        seen.add(current.uid)
        stack.extend(_reads(producers[current.uid], aliases))
    return False

