"""LayerNorm's kernel at other block sizes, with var_mean combined in one or two block rounds.

On the GPU machine: ``PYTHONPATH=. python3 benchmarks/norm_variants.py``. For LayerNorm bf16
16384x8192 and f32 2048x8192 (``benchmarks/vs_nvfuser.py``'s definition), it generates the
kernel with the heuristics' thread count replaced (the same row spread over fewer or more
threads) and ``reduction_ops.COMBINED_VARIANCE`` off and on, and times the kernel alone with
CUDA events (median of 30). What it measured on an H200 is in ``reduction_ops``' comment.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from pathlib import Path

import cupy
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_nvfuser  # noqa: E402

import fusecli.codegen as codegen  # noqa: E402
from fusecli.codegen import reduction_ops  # noqa: E402
from fusecli.frontend import DataType, FusionDefinition  # noqa: E402
from fusecli.runtime.bind import bind_inputs  # noqa: E402
from fusecli.runtime.context import ExecutionContext  # noqa: E402
from fusecli.runtime.cupy_executor import EnvironmentSizes  # noqa: E402
from fusecli.segment.segmenter import segment_fusion  # noqa: E402


def layer_norm_f32(fd: FusionDefinition, rows: int = 2048, hidden: int = 8192) -> None:
    x = fd.define_tensor(shape=[rows, hidden], contiguity=[True, True], dtype=DataType.Float)
    w = fd.define_tensor(shape=[hidden], contiguity=[True], dtype=DataType.Float)
    b = fd.define_tensor(shape=[hidden], contiguity=[True], dtype=DataType.Float)
    var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=False)
    full = [rows, hidden]
    centered = fd.ops.sub(x, fd.ops.broadcast_in_dim(mean, shape=full, broadcast_dims=[0]))
    rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5, dtype=DataType.Double)))
    y = fd.ops.mul(centered, fd.ops.broadcast_in_dim(rstd, shape=full, broadcast_dims=[0]))
    y = fd.ops.mul(y, fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1]))
    fd.add_output(fd.ops.add(y, fd.ops.broadcast_in_dim(b, shape=full, broadcast_dims=[1])))


def kernel(define, inputs: list[torch.Tensor], threads: int | None, combined: bool):
    with FusionDefinition() as fd:
        define(fd)
    segment = segment_fusion(fd.fusion, inputs).segments[0]
    bound = bind_inputs(fd.fusion, inputs)
    ctx = ExecutionContext.for_fusion(fd.fusion, device=torch.device("cuda"),
                                      extents=bound.extents)
    original = codegen.heuristics_for

    def respread(kernel_ctx):
        params = original(kernel_ctx)
        if threads:
            params = dataclasses.replace(params, threads=threads,
                                         slots=params.slots * params.threads // threads)
        return params

    codegen.heuristics_for, reduction_ops.COMBINED_VARIANCE = respread, combined
    try:
        return codegen.generate(segment, EnvironmentSizes(ctx, dict(bound.values)), inputs)
    finally:
        codegen.heuristics_for, reduction_ops.COMBINED_VARIANCE = original, False


def kernel_us(generated, arguments) -> float:
    function = cupy.RawKernel(generated.source, generated.name, options=("-std=c++17",))
    for _ in range(3):
        function(generated.grid, generated.block, arguments)
    torch.cuda.synchronize()
    times = []
    for _ in range(30):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        function(generated.grid, generated.block, arguments)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times) * 1e3


def main() -> None:
    cases = [
        ("LayerNorm bf16 16384x8192", vs_nvfuser.layer_norm,
         [vs_nvfuser._bf16(16384, 8192), vs_nvfuser._bf16(8192), vs_nvfuser._bf16(8192)]),
        ("LayerNorm f32 2048x8192", layer_norm_f32,
         [vs_nvfuser._f32(2048, 8192), vs_nvfuser._f32(8192), vs_nvfuser._f32(8192)]),
    ]
    for name, define, inputs in cases:
        arguments = tuple(cupy.asarray(t) for t in (*inputs, torch.empty_like(inputs[0])))
        for threads in (None, 1024, 256, 128):
            for combined in (False, True):
                generated = kernel(define, inputs, threads, combined)
                print(f"{name}: {generated.block[0]} threads, var_mean in "
                      f"{'one round' if combined else 'two rounds'}: "
                      f"{kernel_us(generated, arguments):.1f} us", flush=True)


if __name__ == "__main__":
    main()
