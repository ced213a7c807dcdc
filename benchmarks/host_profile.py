"""Host time of one warm ``fd.execute`` on an idle device, fusecli against real nvFuser.

On the GPU machine, with nvFuser's wheel unpacked (``. .nvfuser/activate.sh``):

    PYTHONPATH=. python3 benchmarks/host_profile.py rms_norm,fuzz_417880882 [--seed 0]

For each population member whose name or number matches one of the comma-separated words
(``population.draw(100, SEED)``): the median over 400 calls of one warm call's host time, the
device idle before each (synchronized, not timed), for both engines, with fusecli's host time
to its first cuLaunchKernel; each engine's CUDA-event time of a call (as ``vs_nvfuser.py``
times it) and device time (torch's profiler); the parts of fusecli's call timed back to back
(an output's allocation, the input signature's key, the replay alone); fusecli's warm replay
as the Python source it runs (``runtime.warm``); and a cProfile of 300 warm calls, the
functions of most own time first. CUDA-event timings count the host time before the first
launch; this shows where it goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import population  # noqa: E402
from vs_nvfuser import (  # noqa: E402
    device_profile,
    median_ms,
    nvfuser_definition,
    nvfuser_module,
)


def host_us(call: Callable[[], object], calls: int = 400) -> float:
    """Median host microseconds of ``call`` started on an idle device."""
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def first_launch_us(call: Callable[[], object], stamps: list[float],
                    calls: int = 400) -> float | None:
    """Median host microseconds from the start of a warm call of fusecli's to its first
    cuLaunchKernel (``stamps``: ``stamping_launches``'); None where the call launches nothing
    through CuPy's driver binding."""
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        stamps.clear()
        started = time.perf_counter()
        call()
        if stamps:
            times.append(stamps[0] - started)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6 if times else None


def stamping_launches(stamps: list[float]) -> None:
    """Wrap CuPy's launchKernel so that each launch appends its host time to ``stamps``."""
    from cupy.cuda import driver

    launch = getattr(driver, "_fusecli_unwrapped", driver.launchKernel)
    driver._fusecli_unwrapped = launch
    clock = time.perf_counter

    def stamped(*args: object) -> object:
        stamps.append(clock())
        return launch(*args)

    driver.launchKernel = stamped


def back_to_back_us(call: Callable[[], object], calls: int = 2000) -> float:
    """Mean host microseconds of ``call`` made ``calls`` times in a row, nothing synchronized
    between (the first CUDA call after a synchronize costs more: ``host_us`` counts that)."""
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(calls):
        call()
    elapsed = time.perf_counter() - started
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def parts(fusion: Any, inputs: list, outputs: list, runs: list) -> str:
    """What the pieces of a warm call cost alone, each made back to back: one
    ``torch.empty_strided`` per output as the launch makes it, the input signature's key (the
    function written for the fusion, as the warm call computes it), and the compiled replay
    without ``fd.execute``'s way to it."""
    from fusecli.runtime.cache import value_free_scalars
    from fusecli.runtime.warm_keys import key_function

    empties = [back_to_back_us(lambda o=o: torch.empty_strided(
        o.shape, o.stride(), dtype=o.dtype, device=o.device))
        for o in outputs if isinstance(o, torch.Tensor)]
    keyed = key_function(fusion, value_free_scalars(fusion))
    key = back_to_back_us(lambda: keyed(inputs, "nvfuser", "auto", None))
    text = (f"   parts, back to back: torch.empty_strided per output "
            f"{', '.join(f'{u:.1f}' for u in empties)} us; the key {key:.1f} us")
    for run in filter(None, runs):
        text += f"; the replay alone {back_to_back_us(lambda run=run: run(inputs), 500):.1f} us"
    return text


def profile(call: Callable[[], object], calls: int = 300, rows: int = 14) -> str:
    profiler = cProfile.Profile()
    torch.cuda.synchronize()
    profiler.enable()
    for _ in range(calls):
        call()
        torch.cuda.synchronize()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(rows)
    return text.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("members", help="comma-separated names or numbers (e.g. rms_norm,004)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--population", type=int, default=100)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("host_profile: needs a CUDA GPU", file=sys.stderr)
        return 4
    nvfuser, why = nvfuser_module()
    for member in population.named(args.members, args.population, args.seed):
        report(member, nvfuser, why)
    return 0


def report(member: population.Member, nvfuser: object, why: str | None) -> None:
    inputs = member.make_inputs("cuda")
    fd = member.fd
    stamps: list[float] = []
    stamping_launches(stamps)  # before the first call: the warm run keeps the function it finds
    for _ in range(5):
        outputs = fd.execute(inputs)
    ours = lambda: fd.execute(inputs)  # noqa: E731
    line = f"== {member.name}: host fusecli {host_us(ours):.1f} us"
    first = first_launch_us(ours, stamps)
    line += f" (first launch at {first:.1f} us)" if first is not None else ""
    events = [median_ms(ours, 400) * 1e3]  # as vs_nvfuser.py times a call
    devices = [device_profile(ours)[0] * 1e3]
    if nvfuser is not None:
        theirs = nvfuser_definition(fd, "member", inputs, nvfuser)
        for _ in range(5):
            theirs.execute(inputs)
        line += f", nvFuser {host_us(lambda: theirs.execute(inputs)):.1f} us"
        events.append(median_ms(lambda: theirs.execute(inputs), 400) * 1e3)
        devices.append(device_profile(lambda: theirs.execute(inputs))[0] * 1e3)
    else:
        line += f" (nvFuser: {why})"
    print(line)
    print("   CUDA-event time per call (us): " + " / ".join(f"{e:.1f}" for e in events)
          + "; device time: " + " / ".join(f"{d:.1f}" for d in devices))
    print(parts(fd.fusion, inputs, outputs, list(fd.fusion.memo.get("warm", {}).values())))
    for run in fd.fusion.memo.get("warm", {}).values():
        print(getattr(run, "source", "(no replay: every call runs in full)"))
    print(profile(lambda: fd.execute(inputs)))


if __name__ == "__main__":
    sys.exit(main())
