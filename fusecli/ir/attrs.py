"""Which operand is which, for the ops that pack several values into an expr's ``inputs``.

A slice lists a start and an end per dimension after its tensor; attention and embedding list
only the optional scalars the user gave, named by attributes; a seeded random op ends with its
seed and offset. Every consumer of exprs (the reference, the ATen executor, bisect's replay, the
printer) reads the same layout, so it is decoded here once. The functions take the operands as
the consumer holds them (IR values, runtime values, frontend handles), aligned with
``expr.inputs``, and return them grouped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from fusecli.ir.nodes import Expr

T = TypeVar("T")

# The optional scalars of sdpfa_fwd, in operand order; attribute ``has_<name>`` says if given.
SDPFA_OPTIONS = ("dropout_p", "is_causal", "scale")


def slice_bounds(expr: Expr, operands: Sequence[T]) -> tuple[list[T], list[T]]:
    """(starts, ends) of a slice expr: one start per dimension, then one end per dimension."""
    rank = expr.inputs[0].ndim
    return list(operands[1 : 1 + rank]), list(operands[1 + rank : 1 + 2 * rank])


def pad_widths(operands: Sequence[T]) -> list[T]:
    """A pad's widths, innermost dimension first as (left, right) pairs, after tensor and value."""
    return list(operands[2:])


def sdpfa_options(expr: Expr, operands: Sequence[T]) -> dict[str, T]:
    """The optional scalars given to sdpfa_fwd, by name; they follow query, key and value."""
    given = [name for name in SDPFA_OPTIONS if expr.attr(f"has_{name}", False)]
    return dict(zip(given, operands[3:], strict=True))


def embedding_options(expr: Expr, operands: Sequence[T]) -> dict[str, T]:
    """The keyword options given to embedding_fwd, by name; they follow indices and weight."""
    return dict(zip(expr.attr("options", ()), operands[2:], strict=True))


def random_seed(expr: Expr, operands: Sequence[T]) -> tuple[T, T] | None:
    """A seeded random expr's (seed, offset) operands, its last two; None when unseeded."""
    if not expr.attr("seeded", False):
        return None
    seed, offset = operands[-2:]
    return seed, offset
