"""Buffers made ahead: after its last launch, a compiled warm run (``runtime.warm``) makes the
next call's outputs and workspaces of each plain launch (``runtime.plain_launch``), while the
device runs the kernels, so that the next call launches without waiting on the allocator first
(``torch.empty_strided`` costs 4-7 us per buffer on the GPU machine, all of it before the
device starts: a CUDA-event time counts it), where the last kernel runs long enough to hide
them (``Spares.hides``).
The spare buffers stay allocated between calls, within a process-wide budget
(``FUSECLI_ALLOCATE_AHEAD_MIB``, 512 by default, 0 for none): the least recently used launch's
are dropped first, and a launch whose buffers exceed a quarter of the budget makes none."""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict

import torch


class Spare:
    """One planned launch's buffers made ahead: ``entry`` is (stream, buffers) or None."""

    __slots__ = ("entry", "__weakref__")

    def __init__(self) -> None:
        self.entry: tuple[int, list[torch.Tensor]] | None = None


class Spares:
    """The spare buffers of all launches: at most ``budget`` bytes, the least recently used
    dropped first; a launch whose buffers exceed a quarter of it makes none."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.held: OrderedDict[int, tuple[weakref.ref, int]] = OrderedDict()
        self.total = 0
        self.lock = threading.RLock()  # a launch's death may drop its entry while held

    def takes(self, nbytes: int) -> bool:
        return 0 < nbytes <= self.budget // 4

    @staticmethod
    def hides(moved: int, buffers: int) -> bool:
        """Whether a last kernel moving ``moved`` bytes runs long enough to hide the making of
        ``buffers`` buffers after its launch: else they delay the call's return. Measured on
        the H100 (the corpus through ``vs_nvfuser.py``, buffers made ahead from 24 MiB a
        buffer against none, one call): fusions moving 40 MiB or more per output gained 11%
        (geometric mean), those of 24-40 MiB none (some lost 10-15%, whose timelines show
        the return 20-30 us after the last kernel's end), those of less (none made) 2%; so
        40 MiB a buffer, about 15 us of a kernel at 2.7 TB/s."""
        return moved >= (40 << 20) * buffers

    def hold(self, spare: Spare, nbytes: int) -> None:
        """``spare`` now holds ``nbytes``; the least recently used are dropped past the budget."""
        with self.lock:
            key = id(spare)
            if key in self.held:
                self.held.move_to_end(key)
                return
            self.held[key] = (weakref.ref(spare, lambda _: self._forget(key)), nbytes)
            self.total += nbytes
            while self.total > self.budget:
                _, (oldest, size) = self.held.popitem(last=False)
                self.total -= size
                if (alive := oldest()) is not None:
                    alive.entry = None  # a launch reading it holds its own reference

    def _forget(self, key: int) -> None:
        with self.lock:
            if (entry := self.held.pop(key, None)) is not None:
                self.total -= entry[1]


def _budget() -> int:
    """``FUSECLI_ALLOCATE_AHEAD_MIB`` in bytes (512 MiB where unset or not a number)."""
    try:
        return max(0, int(os.environ.get("FUSECLI_ALLOCATE_AHEAD_MIB", "512"))) << 20
    except ValueError:
        return 512 << 20


SPARES = Spares(_budget())
