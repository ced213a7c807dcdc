"""Host time of a warm ``fd.execute`` of a one-op fusion, against the eager op it runs.

A script calls ``fd.execute`` in loops; past the first call of an input signature, the executor
cache (``fusecli.runtime.cache``) leaves binding the tensors and running the segments. This
times that path for ``relu`` over a small tensor (so the time is host time), on the GPU when
there is one, else on the CPU, next to ``torch.relu`` itself, in one process.

    python benchmarks/host_overhead.py               # 2,000 calls each
    python benchmarks/host_overhead.py --calls 10000 --device cpu
    python benchmarks/host_overhead.py --breakdown   # where a warm call's host time goes

``--breakdown`` adds an RMSNorm over [64, 1024] bfloat16 (two outputs), the host cost of each
primitive a warm call makes (torch.empty, the stream query, attribute reads of the key) and a
cProfile of the warm calls, its top functions by own time.
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
    parser.add_argument("--breakdown", action="store_true",
                        help="time a warm call's primitives and profile its functions")
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
    if args.breakdown:
        breakdown(fd, x, args.calls, device)


def rms_norm(device: str) -> tuple[FusionDefinition, list[torch.Tensor]]:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16)
        xf = fd.ops.cast(x, DataType.Float)
        var = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=True)
        inv = fd.ops.rsqrt(fd.ops.add(fd.ops.div(var, fd.define_scalar(1024.0)),
                                      fd.define_scalar(1e-6)))
        y = fd.ops.mul(fd.ops.mul(xf, inv), fd.ops.cast(fd.ops.broadcast_in_dim(
            w, shape=fd.ops.shape(x), broadcast_dims=[1]), DataType.Float))
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
        fd.add_output(inv)
    inputs = [torch.randn(64, 1024, device=device, dtype=torch.bfloat16),
              torch.randn(1024, device=device, dtype=torch.bfloat16)]
    return fd, inputs


def breakdown(relu: FusionDefinition, x: torch.Tensor, calls: int, device: str) -> None:
    import cProfile
    import pstats

    fd, inputs = rms_norm(device)
    print(f"rms_norm fd.execute {per_call_us(lambda: fd.execute(inputs), calls, device):.1f} "
          "us per warm call")
    dev = torch.device(device)
    primitives = {
        "torch.empty([64, 1024], bf16)": lambda: torch.empty((64, 1024), dtype=torch.bfloat16,
                                                             device=dev),
        "torch.empty([64, 1], f32)": lambda: torch.empty((64, 1), dtype=torch.float32,
                                                         device=dev),
        "x.shape, x.stride(), x.device": lambda: (x.shape, x.stride(), x.device),
        "x.data_ptr()": x.data_ptr,
        "x.dtype, x.is_neg()": lambda: (x.dtype, x.is_neg()),
    }
    if device == "cuda":
        primitives["current raw stream"] = lambda: torch._C._cuda_getCurrentRawStream(0)
    for label, call in primitives.items():
        print(f"  {label:<34} {per_call_us(call, calls, device):.2f} us")
    for label, (definition, given) in {"relu": (relu, [x]), "rms_norm": (fd, inputs)}.items():
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(calls):
            definition.execute(given)
        profiler.disable()
        print(f"\ncProfile of {calls} warm calls of {label} (own time):")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
