"""Delta debugging (Zeller and Hildebrandt's ddmin) over any list of items.

``ddmin(items, test)`` returns a 1-minimal sublist that still fails: removing any single item
makes it pass. ``test`` receives a batch of candidate sublists and says which fail; batches let
the caller answer several candidates in parallel. Within a batch the first failing candidate
(in ddmin's order) wins, so the result does not depend on how many run at once. At each
granularity the complements (all but one chunk) are tried before the chunks themselves, in one
list, so that a wave of parallel questions holds both: a failure that needs ops spread over the
fusion (most of nvFuser's segmenter and scheduler asserts) survives the removal of one chunk far
more often than it lives in one chunk. Simulated with a failure that needs 6 of 40 items
spread at random, this halves the waves of 8 parallel questions (42 to 23) against
subsets-first.
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
            complements = [] if granularity <= 2 else [
                [item for other, chunk in enumerate(chunks) if other != index for item in chunk]
                for index in range(len(chunks))
            ]
            # complements (all but one chunk), then subsets, in one list: a wave of ``width``
            # questions may hold both, and the first failing one in this order wins, as asked
            # one by one
            found = first_failing(complements + chunks, test, width)
            if found is not None and found < len(complements):
                current = complements[found]
                granularity = max(granularity - 1, 2)
                continue
            if found is not None:
                current, granularity = chunks[found - len(complements)], 2
                continue
            if granularity >= len(current):
                break
            granularity = min(len(current), 2 * granularity)
            if granularity >= len(current):
                return one_by_one(current, test, width=width, on_step=on_step)
    except Budget:
        pass
    return current


def one_by_one(
    items: Sequence[T],
    test: BatchTest,
    *,
    width: int = 1,
    on_step: Callable[[list[T], int], None] | None = None,
) -> list[T]:
    """ddmin's last granularity (each item removed alone), as passes that go on after a
    removal from where they were rather than from the first item: the items before it were
    needed a moment ago and mostly still are, so asking about them again is what made this
    phase quadratic. A pass without a removal ends it: the list is then 1-minimal. The first
    failing candidate of a wave wins and the next wave starts right after it, so the result
    is the same for any ``width``."""
    current = list(items)
    cursor, removed = 0, False
    try:
        while len(current) >= 2:
            if cursor >= len(current):
                if not removed:
                    break
                cursor, removed = 0, False
            if on_step:
                on_step(current, len(current))
            end = min(len(current), cursor + max(1, width))
            candidates = [current[:index] + current[index + 1:] for index in range(cursor, end)]
            results = test(candidates)
            found = next((offset for offset, failed in enumerate(results) if failed), None)
            if found is None:
                cursor = end
                continue
            current, cursor, removed = candidates[found], cursor + found, True
    except Budget:
        pass
    return current
