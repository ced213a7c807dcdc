"""Which operand is which, for the ops that pack several values into an expr's ``inputs``.

A slice lists a start and an end per dimension after its tensor; attention, grouped_mm and
embedding list only the optional operands the user gave, after the required ones, named by
their ``options`` attribute; a seeded random op ends with its seed and offset. Every consumer of
exprs (the reference, the ATen executor, bisect's replay, the printer) reads the same layout, so
it is decoded here once. The functions take the operands as the consumer holds them (IR values,
runtime values, frontend handles), aligned with ``expr.inputs``, and return them grouped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from fusecli.ir.nodes import Expr

T = TypeVar("T")

def slice_bounds(expr: Expr, operands: Sequence[T]) -> tuple[list[T], list[T]]:
    """(starts, ends) of a slice expr: one start per dimension, then one end per dimension."""
    rank = expr.inputs[0].ndim
    return list(operands[1 : 1 + rank]), list(operands[1 + rank : 1 + 2 * rank])


def pad_widths(operands: Sequence[T]) -> list[T]:
    """A pad's widths, innermost dimension first as (left, right) pairs, after tensor and value."""
    return list(operands[2:])


def given_options(expr: Expr, operands: Sequence[T]) -> dict[str, T]:
    """The optional operands given to sdpfa_fwd, sdpfa_bwd or grouped_mm, by name, in signature
    order; they follow the required ones."""
    names = expr.attr("options", ())
    return dict(zip(names, operands[len(operands) - len(names):], strict=True))


def embedding_options(expr: Expr, operands: Sequence[T]) -> dict[str, T]:
    """The keyword options given to embedding_fwd, by name; they follow indices and weight."""
    return dict(zip(expr.attr("options", ()), operands[2:], strict=True))


def random_seed(expr: Expr, operands: Sequence[T]) -> tuple[T, T] | None:
    """A seeded random expr's (seed, offset) operands, its last two; None when unseeded."""
    if not expr.attr("seeded", False):
        return None
    seed, offset = operands[-2:]
    return seed, offset
