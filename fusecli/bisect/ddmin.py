"""Delta debugging (Zeller and Hildebrandt's ddmin) over any list of items.

``ddmin(items, test)`` returns a 1-minimal sublist that still fails: removing any single item
makes it pass. ``test`` receives a batch of candidate sublists and says which fail; batches let
the caller answer several candidates in parallel. Within a batch the first failing candidate
(in ddmin's order) wins, so the result does not depend on how many run at once. Candidates are
tried as subsets first, then as complements; a single failure-inducing item among n is found
with about 2 log2(n) questions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

BatchTest = Callable[[list[list[T]]], list[bool]]


class Budget(Exception):
    """Raised by a test to stop minimization early (the question budget is spent)."""


def split(items: Sequence[T], parts: int) -> list[list[T]]:
    """``items`` in ``parts`` contiguous chunks whose sizes differ by at most one."""
    size, extra = divmod(len(items), parts)
    chunks, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        chunks.append(list(items[start:end]))
        start = end
    return [c for c in chunks if c]


def first_failing(candidates: list[list[T]], test: BatchTest, width: int) -> int | None:
    """The index of the first failing candidate, asking ``width`` at a time."""
    for start in range(0, len(candidates), max(1, width)):
        results = test(candidates[start : start + width])
        for offset, failed in enumerate(results):
            if failed:
                return start + offset
    return None


def ddmin(
    items: Sequence[T],
    test: BatchTest,
    *,
    width: int = 1,
    on_step: Callable[[list[T], int], None] | None = None,
) -> list[T]:
    """A 1-minimal failing sublist of ``items`` (which must fail as a whole).

    ``on_step(current, granularity)`` is told before each round. A ``Budget`` raised by
    ``test`` ends the search with the smallest failing list found so far.
    """
    current = list(items)
    granularity = 2
    try:
        while len(current) >= 2:
            if on_step:
                on_step(current, granularity)
            chunks = split(current, granularity)
            found = first_failing(chunks, test, width)
            if found is not None:
                current, granularity = chunks[found], 2
                continue
            if granularity > 2:
                complements = [
                    [item for other, chunk in enumerate(chunks) if other != index for item in chunk]
                    for index in range(len(chunks))
                ]
                found = first_failing(complements, test, width)
                if found is not None:
                    current, granularity = complements[found], max(granularity - 1, 2)
                    continue
            if granularity >= len(current):
                break
            granularity = min(len(current), 2 * granularity)
    except Budget:
        pass
    return current
