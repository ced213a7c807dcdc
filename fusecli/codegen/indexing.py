"""Index arithmetic: affine forms over loop variables, simplified with their ranges.

An ``Index`` is ``sum(coefficient * term) + constant``. A term is a loop variable (``i0``, the
thread's lane in a row, the vector lane) or an opaque C expression (a quotient, a remainder, an
index loaded from a tensor), each with a known range. Dividing by a constant splits the form
into the multiples of the divisor and the rest; when the rest provably stays in
``[0, divisor)`` the division is exact arithmetic on coefficients, as in tinygrad's symbolic
simplifier. This keeps reshapes, permutes and broadcasts as plain strided indexing in the
generated C, and lets the kernel builders see which accesses are contiguous.

The vector lane is the term ``LANE``; its value is substituted when the index is printed, so
that one form describes all the lanes of a vector access.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

LANE = "@lane"


@dataclass(frozen=True, slots=True)
class Index:
    terms: tuple[tuple[str, int], ...] = ()  # (term, coefficient), sorted, no zero coefficient
    const: int = 0

    def coefficient(self, term: str) -> int:
        return dict(self.terms).get(term, 0)

    def without(self, term: str) -> Index:
        return Index(tuple(t for t in self.terms if t[0] != term), self.const)

    def mentions(self, text: str) -> bool:
        return any(text in term for term, _ in self.terms)

    def text(self, lane: int | None = 0) -> str:
        """C text with ``lane`` substituted for LANE (None keeps the placeholder)."""
        parts: list[str] = []
        constant = self.const
        for term, coefficient in self.terms:
            if term == LANE and lane is not None:
                constant += coefficient * lane
                continue
            name = term if lane is None else term.replace(LANE, str(lane))
            parts.append(name if coefficient == 1 else f"{name} * {coefficient}")
        if constant or not parts:
            parts.append(str(constant))
        return " + ".join(parts).replace("+ -", "- ")


def const(value: int) -> Index:
    return Index((), int(value))


def add(a: Index, b: Index) -> Index:
    merged = dict(a.terms)
    for term, coefficient in b.terms:
        merged[term] = merged.get(term, 0) + coefficient
    return Index(tuple(sorted((t, c) for t, c in merged.items() if c)), a.const + b.const)


def scale(a: Index, factor: int) -> Index:
    if factor == 0:
        return const(0)
    return Index(tuple((t, c * factor) for t, c in a.terms), a.const * factor)


@dataclass(slots=True)
class IndexSpace:
    """The ranges of the terms of one kernel, and the arithmetic that uses them."""

    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)  # inclusive bounds

    def var(self, name: str, low: int, high: int) -> Index:
        self.ranges[name] = (low, high)
        return Index(((name, 1),), 0)

    def bounds(self, a: Index) -> tuple[int, int]:
        low = high = a.const
        for term, coefficient in a.terms:
            term_low, term_high = self.ranges[term]
            low += min(coefficient * term_low, coefficient * term_high)
            high += max(coefficient * term_low, coefficient * term_high)
        return low, high

    def divide(self, a: Index, divisor: int) -> Index:
        """``a / divisor`` for ``a >= 0``: the multiples of the divisor divide exactly."""
        factor = _common_factor(a, divisor)
        a, divisor = _divided(a, factor), divisor // factor
        if divisor == 1:
            return a
        multiples, rest = self._split(a, divisor)
        low, high = self.bounds(rest)
        if low < 0:
            return self._opaque(f"{_paren(a.text(None))} / {divisor}", self.bounds(a), divisor)
        if high < divisor:
            return multiples
        quotient = self._opaque(f"{_paren(rest.text(None))} / {divisor}", (low, high), divisor)
        return add(multiples, quotient)

    def remainder(self, a: Index, divisor: int) -> Index:
        """``a % divisor`` for ``a >= 0``; a common factor f gives ``f * (a/f % divisor/f)``."""
        factor = _common_factor(a, divisor)
        if factor > 1:
            return scale(self.remainder(_divided(a, factor), divisor // factor), factor)
        if divisor == 1:
            return const(0)
        _, rest = self._split(a, divisor)
        low, high = self.bounds(rest)
        if low < 0:
            rest = a
            low, high = 0, divisor - 1
        if high < divisor:
            return rest
        name = f"{_paren(rest.text(None))} % {divisor}"
        self.ranges[name] = (0, divisor - 1)
        return Index(((name, 1),), 0)

    def _split(self, a: Index, divisor: int) -> tuple[Index, Index]:
        """(the multiples of ``divisor`` in ``a``, divided by it; what is left)."""
        multiples = tuple((t, c // divisor) for t, c in a.terms if c % divisor == 0)
        rest = Index(tuple((t, c) for t, c in a.terms if c % divisor), a.const % divisor)
        return Index(multiples, a.const // divisor), rest

    def _opaque(self, name: str, bounds: tuple[int, int], divisor: int) -> Index:
        low, high = bounds
        self.ranges[name] = (max(low, 0) // divisor, max(high, 0) // divisor)
        return Index(((name, 1),), 0)


def _common_factor(a: Index, divisor: int) -> int:
    return math.gcd(divisor, a.const, *(c for _, c in a.terms))


def _divided(a: Index, factor: int) -> Index:
    return Index(tuple((t, c // factor) for t, c in a.terms), a.const // factor)


def _paren(text: str) -> str:
    """``text`` parenthesized unless it is one name or number."""
    return text if text.replace("_", "").replace("@", "").isalnum() else f"({text})"


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of ``shape``."""
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= size
    return tuple(reversed(strides))
