"""Generated kernels against eager torch and torch.compile, on the GPU, in one run.

For each fusion (synthetic large bf16 ones, then the corpus) it times three executions of the
same computation with CUDA events (warm-up, then the median of repeats; inputs of hundreds of MB,
far beyond the 60 MB L2): fusecli's generated kernels (ATen for segments without one), eager
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
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from fusecli.frontend import DataType, FusionDefinition
from fusecli.load import discover, load_path
from fusecli.reference import run_reference
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.cupy_executor import CupyExecutor, ModuleCache
from fusecli.segment.segmenter import segment_fusion

ROOT = Path(__file__).parent.parent


@dataclass
class Row:
    name: str
    bytes: int
    fusecli_ms: float
    eager_ms: float | None
    compile_ms: float | None
    copy_gbps: float
    kernels: str  # "3/4" segments on generated kernels
    note: str = ""

    @property
    def gbps(self) -> float:
        return self.bytes / (self.fusecli_ms * 1e-3) / 1e9

    def as_dict(self) -> dict:
        data = asdict(self)
        data["fusecli_gbps"] = round(self.gbps, 1)
        data["percent_of_copy"] = round(100 * self.gbps / self.copy_gbps, 1)
        data["speedup_vs_eager"] = _ratio(self.eager_ms, self.fusecli_ms)
        data["speedup_vs_compile"] = _ratio(self.compile_ms, self.fusecli_ms)
        return data


def _ratio(baseline: float | None, ours: float) -> float | None:
    return round(baseline / ours, 3) if baseline else None


def time_ms(function: Callable[[], object], repeat: int, warmup: int = 5) -> float:
    """Median CUDA-event time of ``function`` in milliseconds."""
    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def copy_bandwidth(repeat: int) -> float:
    source = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    milliseconds = time_ms(lambda: target.copy_(source), repeat)
    return 2 * source.numel() / (milliseconds * 1e-3) / 1e9


class Generated:
    """A fusion executed segment by segment on the CuPy executor (ATen where it has no kernel)."""

    def __init__(self, fusion, inputs, executor: CupyExecutor) -> None:
        self.fusion, self.executor = fusion, executor
        self.segments = segment_fusion(fusion, inputs).segments
        reference = run_reference(fusion, _clone(inputs), keep_intermediates=True).values
        self.env = {v.uid: x for v, x in zip(fusion.inputs, inputs)}
        self.env.update({u: v for u, v in reference.items() if not isinstance(v, torch.Tensor)})
        self.ctx = ExecutionContext.for_fusion(fusion, device=torch.device("cuda"),
                                               faults=frozenset(),
                                               extents=bind_inputs(fusion, inputs).extents)
        env = dict(self.env)
        self.outcomes = [executor.run_segment(s, env, self.ctx) for s in self.segments]
        self.outputs = [env[o.value.uid] for o in fusion.outputs if o.alias_input is None]

    def __call__(self) -> None:
        env = dict(self.env)
        for segment in self.segments:
            self.executor.run_segment(segment, env, self.ctx)

    @property
    def kernels(self) -> str:
        ran = sum(outcome.executor == "cupy" for outcome in self.outcomes)
        return f"{ran}/{len(self.outcomes)}"

    @property
    def fallbacks(self) -> str:
        return "; ".join(sorted({o.fallback for o in self.outcomes if o.fallback}))


def _clone(inputs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def counted_bytes(fusion, inputs) -> int:
    total = 0
    for value in inputs:
        if isinstance(value, torch.Tensor):
            stored = math.prod(s for s, st in zip(value.shape, value.stride()) if st != 0)
            total += stored * value.element_size()
    reference = run_reference(fusion, _clone(inputs)).outputs
    for value in reference:
        if isinstance(value, torch.Tensor):
            total += value.numel() * value.element_size()
    return total


def reference_function(fusion) -> Callable:
    return lambda *inputs: run_reference(fusion, list(inputs)).outputs


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


def measure(name, fusion, inputs, torch_fn, executor, repeat, copy_gbps,
            compile_baseline: bool = True) -> Row:
    generated = Generated(fusion, inputs, executor)
    notes = [generated.fallbacks] if generated.fallbacks else []
    notes += _mismatches(generated.outputs, torch_fn(*inputs))
    ours = time_ms(generated, repeat)
    eager = time_ms(lambda: torch_fn(*inputs), repeat)
    compiled_ms = None
    if compile_baseline:
        try:
            compiled = torch.compile(torch_fn, dynamic=False)
            compiled_ms = time_ms(lambda: compiled(*inputs), repeat)
        except Exception as error:  # report it, keep measuring the others
            notes.append(f"torch.compile failed: {type(error).__name__}: {error}"[:200])
    return Row(name, counted_bytes(fusion, inputs), ours, eager, compiled_ms, copy_gbps,
               generated.kernels, "; ".join(notes))


def _mismatches(ours: list, theirs) -> list[str]:
    """A note per output where the generated kernels disagree with the torch baseline."""
    from fusecli.compare import compare_tensors, tolerance_for

    theirs = list(theirs) if isinstance(theirs, list | tuple) else [theirs]
    notes = []
    for index, (actual, expected) in enumerate(zip(ours, theirs)):
        if not isinstance(expected, torch.Tensor):
            continue
        diff = compare_tensors(actual, expected, tolerance=tolerance_for(expected.dtype, 8192))
        if not diff.ok:
            notes.append(f"OUTPUT {index} MISMATCH: max abs error {diff.max_abs_err}")
    return notes


def launch_overhead(executor: CupyExecutor) -> float:
    """Host microseconds per warm segment launch (a 128-element exp)."""
    x = torch.randn(128, device="cuda")
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.exp(fd.define_tensor(sizes=[128], strides=[1])))
    (segment,) = segment_fusion(fd.fusion, [x]).segments
    env = {fd.fusion.inputs[0].uid: x}
    ctx = ExecutionContext.for_fusion(fd.fusion, device=torch.device("cuda"), faults=frozenset(),
                                      extents=bind_inputs(fd.fusion, [x]).extents)
    for _ in range(100):
        executor.execute_segment(segment, env, ctx)
    torch.cuda.synchronize()
    calls = 5000
    started = time.perf_counter()
    for _ in range(calls):
        executor.execute_segment(segment, env, ctx)
    elapsed = time.perf_counter() - started
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def cache_hit_ms(executor: CupyExecutor) -> float:
    """Milliseconds to load one compiled kernel from the disk cache into a fresh module cache."""
    kernels = executor.kernels()
    fresh = ModuleCache(executor.modules.directory)
    started = time.perf_counter()
    for kernel in kernels:
        fresh.function(kernel, torch.device("cuda"))
    return (time.perf_counter() - started) / max(1, len(kernels)) * 1e3


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
    copy_gbps = copy_bandwidth(args.repeat)
    rows: list[Row] = []
    for make in SYNTHETIC:
        name, body, torch_fn, inputs = make()
        with FusionDefinition() as fd:
            body(fd)
        rows.append(measure(name, fd.fusion, inputs, torch_fn, executor, args.repeat,
                            copy_gbps))
        del inputs
        torch.cuda.empty_cache()
    if not args.no_corpus:
        for path in discover([ROOT / "fusions"]):
            for loaded in load_path(path, device="cuda"):
                rows.append(measure(path.name, loaded.fusion, loaded.inputs,
                                    reference_function(loaded.fusion), executor, args.repeat,
                                    copy_gbps, args.compile_corpus))
    overhead = launch_overhead(executor)
    hit = cache_hit_ms(executor)
    report = {
        "device": torch.cuda.get_device_name(),
        "copy_gbps": round(copy_gbps, 1),
        "launch_overhead_us": round(overhead, 2),
        "cache_hit_ms": round(hit, 3),
        "geomean_speedup_vs_compile": _geomean([r.as_dict()["speedup_vs_compile"]
                                                for r in rows]),
        "geomean_speedup_vs_eager": _geomean([r.as_dict()["speedup_vs_eager"] for r in rows]),
        "fusions": [r.as_dict() for r in rows],
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    notes = [f"  {r.name}: {r.note}" for r in rows if r.note]
    if notes:
        print("segments on ATen, and why:", *notes, sep="\n")
    print(_table(rows, report))


def _geomean(values: list[float | None]) -> float | None:
    present = [v for v in values if v]
    if not present:
        return None
    return round(math.exp(sum(math.log(v) for v in present) / len(present)), 3)


def _table(rows: list[Row], report: dict) -> str:
    header = (f"{'fusion':<34} {'kernels':>7} {'fusecli ms':>10} {'GB/s':>7} {'% copy':>6} "
              f"{'eager ms':>9} {'compile ms':>10} {'x eager':>7} {'x compile':>9}")
    lines = [header, "-" * len(header)]
    for row in rows:
        data = row.as_dict()
        lines.append(
            f"{row.name[:34]:<34} {row.kernels:>7} {row.fusecli_ms:>10.4f} {row.gbps:>7.0f} "
            f"{data['percent_of_copy']:>6.1f} {_ms(row.eager_ms):>9} {_ms(row.compile_ms):>10} "
            f"{_x(data['speedup_vs_eager']):>7} {_x(data['speedup_vs_compile']):>9}"
        )
    lines += [
        "-" * len(header),
        f"device: {report['device']}; device-to-device copy: {report['copy_gbps']:.0f} GB/s",
        f"geomean speedup: vs eager {_x(report['geomean_speedup_vs_eager'])}, "
        f"vs torch.compile {_x(report['geomean_speedup_vs_compile'])}",
        f"host overhead per warm segment launch: {report['launch_overhead_us']:.1f} us "
        "(target <= 15)",
        f"kernel cache hit: {report['cache_hit_ms']:.3f} ms per kernel (target < 1)",
    ]
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "n/a"


def _x(value: float | None) -> str:
    return f"{value:.2f}x" if value else "n/a"


if __name__ == "__main__":
    main()
