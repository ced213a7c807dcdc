"""Host time of a warm ``fd.execute`` of a one-op fusion, against the eager op it runs.

A script calls ``fd.execute`` in loops; past the first call of an input signature, the executor
cache (``fusecli.runtime.cache``) leaves binding the tensors and running the segments. This
times that path for ``relu`` over a small tensor (so the time is host time), on the GPU when
there is one, else on the CPU, next to ``torch.relu`` itself, in one process.

    python benchmarks/host_overhead.py               # 2,000 calls each
    python benchmarks/host_overhead.py --calls 10000 --device cpu
"""

from __future__ import annotations

import argparse
import time

import torch

from fusecli.frontend import DataType, FusionDefinition


def per_call_us(function, calls: int, device: str) -> float:
    for _ in range(50):
        function()
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(calls):
        function()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    args = parser.parse_args()
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(t0))
    x = torch.randn(1024, device=device)
    fusecli_us = per_call_us(lambda: fd.execute([x]), args.calls, device)
    eager_us = per_call_us(lambda: torch.relu(x), args.calls, device)
    print(f"device            {device}")
    print(f"fd.execute        {fusecli_us:.1f} us per warm call")
    print(f"torch.relu        {eager_us:.1f} us per call")
    print(f"ratio             {fusecli_us / eager_us:.1f}x eager")


if __name__ == "__main__":
    main()
