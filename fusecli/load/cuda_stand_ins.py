"""Host stand-ins for the CUDA calls repro scripts make around a fusion.

Scripts pasted from issues time and profile their fusions: ``torch.cuda.synchronize()``,
``torch.cuda.Event(enable_timing=True)``, ``torch.cuda.cudart().cudaProfilerStart()``,
``torch.cuda.nvtx.range_push``, ``torch.cuda.get_device_name()``, streams. On a torch without
CUDA each raises ("Torch not compiled with CUDA enabled") and the script never reaches its
fusion. While CUDA is mapped to the CPU (``fusecli.load.devices``) these calls do on the host
what they mean: events time with the host clock, synchronization and profiler markers do
nothing (nothing runs asynchronously), and device queries describe the GPU fusecli's
schedulers model (an H200, sm_90), so that a script's ``if capability >= (9, 0)`` takes the
path it would take on the machine the repro came from. ``torch.cuda.is_available()`` stays
False.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# What device queries answer: the GPU the segmenter's run-time checks assume.
MODELED_NAME = "NVIDIA H200 (modeled by fusecli; CUDA mapped to the CPU)"
MODELED_CAPABILITY = (9, 0)
MODELED_SM_COUNT = 132


class HostEvent:
    """``torch.cuda.Event`` on the host: ``record`` reads the clock, ``elapsed_time`` is ms."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._recorded: float | None = None

    def record(self, stream: Any = None) -> None:
        self._recorded = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: HostEvent) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._recorded is None or end_event._recorded is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._recorded - self._recorded) * 1000.0


class HostStream:
    """``torch.cuda.Stream`` on the host: work is already done when it is queued."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = device
        self.priority = priority

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: HostEvent | None = None) -> HostEvent:
        event = event or HostEvent()
        event.record(self)
        return event

    def __enter__(self) -> HostStream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _HostCudart:
    """``torch.cuda.cudart()``: the profiler range calls succeed and do nothing."""

    def cudaProfilerStart(self) -> int:  # noqa: N802 (CUDA's spelling)
        return 0

    def cudaProfilerStop(self) -> int:  # noqa: N802
        return 0


@dataclass(frozen=True, slots=True)
class ModeledProperties:
    """What ``torch.cuda.get_device_properties`` tells of the modeled GPU."""

    name: str = MODELED_NAME
    major: int = MODELED_CAPABILITY[0]
    minor: int = MODELED_CAPABILITY[1]
    multi_processor_count: int = MODELED_SM_COUNT
    total_memory: int = 141 * 10**9


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _zero(*args: Any, **kwargs: Any) -> int:
    return 0


@contextlib.contextmanager
def _no_context(*args: Any, **kwargs: Any) -> Iterator[None]:
    yield


def _host_memory(*args: Any, **kwargs: Any) -> tuple[int, int]:
    """``torch.cuda.mem_get_info``: the host's free and total memory, where the OS says."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return 0, 0
    return free, total


# (module path under torch.cuda, attribute) -> the stand-in.
STAND_INS: dict[tuple[str, str], object] = {
    ("", "Event"): HostEvent,
    ("", "Stream"): HostStream,
    ("", "current_stream"): lambda device=None: HostStream(device),
    ("", "default_stream"): lambda device=None: HostStream(device),
    ("", "stream"): _no_context,
    ("", "device"): _no_context,
    ("", "cudart"): _HostCudart,
    ("", "set_device"): _nothing,
    ("", "current_device"): _zero,
    ("", "get_device_name"): lambda device=None: MODELED_NAME,
    ("", "get_device_capability"): lambda device=None: MODELED_CAPABILITY,
    ("", "get_device_properties"): lambda device=None: ModeledProperties(),
    ("", "mem_get_info"): _host_memory,
    ("", "reset_peak_memory_stats"): _nothing,
    ("", "reset_max_memory_allocated"): _nothing,
    ("", "ipc_collect"): _nothing,
    ("nvtx", "range_push"): _zero,
    ("nvtx", "range_pop"): _zero,
    ("nvtx", "mark"): _nothing,
    ("nvtx", "range"): _no_context,
}
