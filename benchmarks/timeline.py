"""Where a timed call's time goes, fusecli against real nvFuser: host, launch latency, kernels.

On the GPU machine, with nvFuser's wheel unpacked (``. .nvfuser/activate.sh``):

    PYTHONPATH=. python3 benchmarks/timeline.py gemma_geglu_tanh,054 [--seed 0] [--calls 20]

For each corpus member (``tests/nvfuser_corpus``) or population member (``population.draw(
100, SEED)``, by name or number) matching one of the comma-separated words, both engines'
warm calls are timed as ``vs_nvfuser.py`` times them (L2 flushed, device idle, CUDA events
around ``fd.execute``) under torch's profiler, and each call's trace is cut into: the host time
from the start event's record to the first kernel launch (the call's own host path), from that
launch to the kernel's start on the device, the kernels' own time, the device idle between
kernels, and from the last kernel's end to the end event's record. The medians over the calls
are printed side by side. A CUDA-event time counts all of them; a kernel time counts only one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import population  # noqa: E402
from vs_nvfuser import (  # noqa: E402
    corpus_cases,
    flush_l2,
    nvfuser_definition,
    nvfuser_module,
)

_LAUNCHES = ("LaunchKernel", "cuLaunch", "cudaLaunch")
PARTS = ("event", "to launch", "to start", "kernels", "gaps", "to end", "launches")


def timed_calls(run, calls: int, label: str) -> list[float]:
    """CUDA-event milliseconds of ``calls`` warm calls, each in a profiler range ``label#i``."""
    times = []
    for number in range(calls):
        flush_l2()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        with torch.profiler.record_function(f"{label}#{number}"):
            start.record()
            run()
            end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def breakdown(events: list[dict], label: str, times: list[float]) -> dict[str, float]:
    """The medians of each part (microseconds) over the calls ``label#i`` of a trace."""
    kernels = {e["args"].get("correlation"): e for e in events
               if e.get("cat") == "kernel" and "args" in e}
    parts: dict[str, list[float]] = {name: [] for name in PARTS}
    for number, event_ms in enumerate(times):
        window = next((e for e in events if e.get("name") == f"{label}#{number}"
                       and e.get("cat") == "user_annotation"), None)
        if window is None:
            continue
        low, high = window["ts"], window["ts"] + window["dur"]
        api = sorted((e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                      and low <= e["ts"] <= high), key=lambda e: e["ts"])
        records = [e for e in api if "EventRecord" in e["name"]]
        launches = [e for e in api if any(word in e["name"] for word in _LAUNCHES)]
        ran = sorted((kernels[e["args"].get("correlation")] for e in launches
                      if e["args"].get("correlation") in kernels), key=lambda k: k["ts"])
        if len(records) < 2 or not ran:
            continue
        parts["event"].append(event_ms * 1e3)
        parts["to launch"].append(launches[0]["ts"] - records[0]["ts"])
        parts["to start"].append(ran[0]["ts"] - launches[0]["ts"])
        parts["kernels"].append(sum(k["dur"] for k in ran))
        parts["gaps"].append(sum(max(0.0, b["ts"] - (a["ts"] + a["dur"]))
                                 for a, b in zip(ran, ran[1:])))
        parts["to end"].append(records[-1]["ts"] - (ran[-1]["ts"] + ran[-1]["dur"]))
        parts["launches"].append(len(launches))
    return {name: statistics.median(values) if values else float("nan")
            for name, values in parts.items()}


def compare(name: str, fd, inputs: list, nvfuser, calls: int) -> None:
    engines = {"fusecli": lambda: fd.execute(inputs)}
    if nvfuser is not None:
        theirs = nvfuser_definition(fd, name, inputs, nvfuser)
        engines["nvfuser"] = lambda: theirs.execute(inputs)
    for run in engines.values():
        for _ in range(5):
            run()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as trace:
        times = {label: timed_calls(run, calls, label) for label, run in engines.items()}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        trace.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    rows = {label: breakdown(events, label, kept) for label, kept in times.items()}
    print(f"== {name} (us, median of {calls} calls)")
    print("   " + f"{'':10s}" + "".join(f"{part:>11s}" for part in PARTS))
    for label, row in rows.items():
        print("   " + f"{label:10s}" + "".join(f"{row[part]:11.1f}" for part in PARTS))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("members", help="comma-separated corpus names, population names or "
                        "numbers (e.g. gemma_geglu_tanh,054)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--population", type=int, default=100)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("timeline: needs a CUDA GPU", file=sys.stderr)
        return 4
    nvfuser, why = nvfuser_module()
    if nvfuser is None:
        print(f"timeline: fusecli only ({why})")
    wanted = set(args.members.split(","))
    for name, fd, inputs in corpus_cases():
        if name in wanted:
            compare(name, fd, inputs, nvfuser, args.calls)
    for member in population.named(args.members, args.population, args.seed):
        compare(member.name, member.fd, member.make_inputs("cuda"), nvfuser, args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
