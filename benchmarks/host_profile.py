"""Host time of one warm ``fd.execute`` on an idle device, fusecli against real nvFuser.

On the GPU machine, with nvFuser's wheel unpacked (``. .nvfuser/activate.sh``):

    PYTHONPATH=. python3 benchmarks/host_profile.py rms_norm,fuzz_417880882 [--seed 0]

For each population member whose name or number matches one of the comma-separated words
(``population.draw(100, SEED)``): the median over 400 calls of one warm call's host time, the
device idle before each (synchronized, not timed), for both engines; fusecli's warm replay as
the Python source it runs (``runtime.warm``); and a cProfile of 300 warm calls, the functions
of most own time first. CUDA-event timings (``vs_nvfuser.py``) count this host time before the
first launch; this shows where it goes.
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

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import population  # noqa: E402
from vs_nvfuser import nvfuser_definition, nvfuser_module  # noqa: E402


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
    wanted = set(args.members.split(","))
    for member in population.draw(args.population, args.seed):
        if set(member.name.split(" ", 1)) & wanted:
            report(member, nvfuser, why)
    return 0


def report(member: population.Member, nvfuser: object, why: str | None) -> None:
    inputs = member.make_inputs("cuda")
    fd = member.fd
    for _ in range(5):
        fd.execute(inputs)
    line = f"== {member.name}: host fusecli {host_us(lambda: fd.execute(inputs)):.1f} us"
    if nvfuser is not None:
        theirs = nvfuser_definition(fd, "member", inputs, nvfuser)
        for _ in range(5):
            theirs.execute(inputs)
        line += f", nvFuser {host_us(lambda: theirs.execute(inputs)):.1f} us"
    else:
        line += f" (nvFuser: {why})"
    print(line)
    for run in fd.fusion.memo.get("warm", {}).values():
        print(getattr(run, "source", "(no replay: every call runs in full)"))
    print(profile(lambda: fd.execute(inputs)))


if __name__ == "__main__":
    sys.exit(main())
