"""Buffers made ahead (``runtime.spares``): the budget, and a plain launch that makes its next
call's outputs after queuing its kernel, on the CPU with a stand-in driver."""

from __future__ import annotations

import gc

from fusecli.runtime.spares import Spare, Spares


def _held(spares: Spares, nbytes: int) -> Spare:
    spare = Spare()
    spare.entry = (0, [])
    spares.hold(spare, nbytes)
    return spare


def test_the_least_recently_used_spares_are_dropped_past_the_budget() -> None:
    spares = Spares(400)
    assert spares.takes(100) and not spares.takes(101) and not spares.takes(0)
    first, second, third = (_held(spares, 100) for _ in range(3))
    spares.hold(first, 100)  # used again: now the most recent
    fourth, fifth = _held(spares, 100), _held(spares, 100)
    assert second.entry is None and first.entry is not None
    assert all(s.entry is not None for s in (third, fourth, fifth)) and spares.total == 400


def test_a_launch_that_dies_gives_its_bytes_back() -> None:
    spares = Spares(400)
    kept, dropped = _held(spares, 100), _held(spares, 100)
    del dropped
    gc.collect()
    assert spares.total == 100 and len(spares.held) == 1 and kept.entry is not None


def test_no_budget_makes_nothing_ahead() -> None:
    assert not Spares(0).takes(1)


def test_buffers_are_made_ahead_only_behind_kernels_that_hide_them() -> None:
    assert not Spares.hides(32 << 20, 1) and Spares.hides(40 << 20, 1)
    assert not Spares.hides(112 << 20, 3) and Spares.hides(120 << 20, 3)
