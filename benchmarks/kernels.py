"""Generated kernels against eager torch and torch.compile, on the GPU, in one run.

The measuring is ``fusecli.app.bench`` (also behind ``fusecli bench PATH...``); this script adds
large synthetic fusions with hand-written torch baselines, for the issue's speed targets.

For each fusion (synthetic large bf16 ones, then the corpus) it times three executions of the
same computation with CUDA events (warm-up, then the median of repeats; inputs of hundreds of MB,
far beyond the 60 MB L2): fusecli's generated kernels as ``fd.execute`` runs them (the warm
run of the input signature; ATen for segments without a kernel), eager
torch, and torch.compile of the same torch code. Synthetic fusions have hand-written torch
baselines, which also check the generated outputs; the corpus's eager baseline is fusecli's
reference interpreter (eager torch op by op, plus its bookkeeping), compiled only with
--compile-corpus. It reports time, GB/s by counted bytes (each
input's stored elements read once, each output written once), percent of the measured
device-to-device copy bandwidth, and the speedups. Then two host-side measurements: the cost of
a warm launch per segment, and of a kernel-cache hit (a fresh process's disk cache).

    python benchmarks/kernels.py               # table on stdout (last)
    python benchmarks/kernels.py --json out.json --repeat 50
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

from fusecli.app.bench import (
    Row,
    copy_bandwidth,
    format_table,
    make_report,
    measure,
    reference_function,
)
from fusecli.frontend import DataType, FusionDefinition
from fusecli.load import discover, load_path
from fusecli.runtime.cupy_executor import CupyExecutor
from fusecli.runtime.registry import install

ROOT = Path(__file__).parent.parent


# -- synthetic fusions: the speed targets --------------------------------------------


def _bf16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)


def swiglu(rows: int = 65536, hidden: int = 4096):
    def body(fd):
        g, u = (fd.define_tensor(shape=[rows, hidden], contiguity=[True, True],
                                 dtype=DataType.BFloat16) for _ in range(2))
        g32, u32 = fd.ops.cast(g, DataType.Float), fd.ops.cast(u, DataType.Float)
        fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.silu(g32), u32), DataType.BFloat16))

    def torch_fn(g, u):
        return (F.silu(g.float()) * u.float()).to(torch.bfloat16)

    return "silu(g)*u bf16 65536x4096", body, torch_fn, [_bf16(rows, hidden), _bf16(rows, hidden)]


def rms_norm(rows: int = 16384, hidden: int = 8192):
    def body(fd):
        x = fd.define_tensor(shape=[rows, hidden], contiguity=[True, True],
                             dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[hidden], contiguity=[True], dtype=DataType.BFloat16)
        x32 = fd.ops.cast(x, DataType.Float)
        mean = fd.ops.div(fd.ops.sum(fd.ops.mul(x32, x32), dims=[1]),
                          fd.define_scalar(float(hidden), dtype=DataType.Double))
        inv = fd.ops.rsqrt(fd.ops.add(mean, fd.define_scalar(1e-6, dtype=DataType.Double)))
        inv = fd.ops.broadcast_in_dim(inv, shape=[rows, hidden], broadcast_dims=[0])
        w32 = fd.ops.broadcast_in_dim(fd.ops.cast(w, DataType.Float), shape=[rows, hidden],
                                      broadcast_dims=[1])
        fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.mul(x32, inv), w32), DataType.BFloat16))

    def torch_fn(x, w):
        x32 = x.float()
        y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (y * w.float()).to(torch.bfloat16)

    return (f"RMSNorm bf16 {rows}x{hidden}", body, torch_fn,
            [_bf16(rows, hidden), _bf16(hidden)])


def layer_norm(rows: int = 16384, hidden: int = 8192):
    def body(fd):
        x = fd.define_tensor(shape=[rows, hidden], contiguity=[True, True],
                             dtype=DataType.BFloat16)
        w, b = (fd.define_tensor(shape=[hidden], contiguity=[True], dtype=DataType.BFloat16)
                for _ in range(2))
        x32 = fd.ops.cast(x, DataType.Float)
        var, mean = fd.ops.var_mean(x32, dims=[1], correction=0)
        inv = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5, dtype=DataType.Double)))

        def rows_of(t):
            return fd.ops.broadcast_in_dim(t, shape=[rows, hidden], broadcast_dims=[0])

        def columns_of(t):
            return fd.ops.broadcast_in_dim(fd.ops.cast(t, DataType.Float), shape=[rows, hidden],
                                           broadcast_dims=[1])

        y = fd.ops.mul(fd.ops.sub(x32, rows_of(mean)), rows_of(inv))
        y = fd.ops.add(fd.ops.mul(y, columns_of(w)), columns_of(b))
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))

    def torch_fn(x, w, b):
        return F.layer_norm(x.float(), (hidden,), w.float(), b.float(), 1e-5).to(torch.bfloat16)

    return (f"LayerNorm bf16 {rows}x{hidden}", body, torch_fn,
            [_bf16(rows, hidden), _bf16(hidden), _bf16(hidden)])


def softmax(rows: int = 8192, hidden: int = 8192):
    def body(fd):
        x = fd.define_tensor(shape=[rows, hidden], contiguity=[True, True], dtype=DataType.Float)
        top = fd.ops.broadcast_in_dim(fd.ops.max(x, dims=[1]), shape=[rows, hidden],
                                      broadcast_dims=[0])
        e = fd.ops.exp(fd.ops.sub(x, top))
        total = fd.ops.broadcast_in_dim(fd.ops.sum(e, dims=[1]), shape=[rows, hidden],
                                        broadcast_dims=[0])
        fd.add_output(fd.ops.div(e, total))

    def torch_fn(x):
        return torch.softmax(x, dim=-1)

    x = torch.randn(rows, hidden, device="cuda")
    return f"softmax f32 {rows}x{hidden}", body, torch_fn, [x]


def transpose_add(size: int = 8192):
    def body(fd):
        a, b = (fd.define_tensor(shape=[size, size], contiguity=[True, True],
                                 dtype=DataType.BFloat16) for _ in range(2))
        total = fd.ops.add(fd.ops.cast(fd.ops.permute(a, dims=[1, 0]), DataType.Float),
                           fd.ops.cast(b, DataType.Float))
        fd.add_output(fd.ops.cast(total, DataType.BFloat16))

    def torch_fn(a, b):
        return (a.t().float() + b.float()).to(torch.bfloat16)

    return f"transpose+add bf16 {size}x{size}", body, torch_fn, [_bf16(size, size),
                                                               _bf16(size, size)]


SYNTHETIC = (swiglu, rms_norm, layer_norm, softmax, transpose_add)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--no-corpus", action="store_true", help="synthetic fusions only")
    parser.add_argument("--compile-corpus", action="store_true",
                        help="also torch.compile the corpus fusions (eager torch through "
                        "fusecli's reference interpreter; slow to compile)")
    args = parser.parse_args()
    torch.manual_seed(0)
    executor = CupyExecutor(cache_dir=Path(tempfile.mkdtemp(prefix="fusecli-kernels-")))
    install("cupy", executor)  # measure() times fd.execute's path, on this fresh kernel cache
    copy_gbps = copy_bandwidth(args.repeat)
    rows: list[Row] = []
    for make in SYNTHETIC:
        name, body, torch_fn, inputs = make()
        with FusionDefinition() as fd:
            body(fd)
        rows.append(measure(name, fd.fusion, inputs, torch_fn, args.repeat, copy_gbps))
        del inputs
        torch.cuda.empty_cache()
    if not args.no_corpus:
        for path in discover([ROOT / "fusions"]):
            for loaded in load_path(path, device="cuda"):
                baseline = reference_function(loaded.fusion, list(loaded.inputs))
                rows.append(measure(path.name, loaded.fusion, loaded.inputs, baseline,
                                    args.repeat, copy_gbps, args.compile_corpus))
    report = make_report(rows, copy_gbps, executor)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    notes = [f"  {r.name}: {r.note}" for r in rows if r.note]
    if notes:
        print("segments on ATen, and why:", *notes, sep="\n")
    print(format_table(rows, report))


if __name__ == "__main__":
    main()
