"""Timing generated kernels against eager torch and torch.compile (``fusecli bench``).

Each measurement runs the same computation three ways in one process, with CUDA events
(warm-up, then the median of repeats): fusecli's generated kernels (ATen for segments without
one), eager torch, and torch.compile of the same torch code. It reports time, GB/s by counted
bytes (each input's stored elements read once, each output written once), percent of the
measured device-to-device copy bandwidth, and the speedups; plus the host cost of a warm
segment launch and of a kernel-cache hit.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from fusecli.compare import compare_tensors, tolerance_for
from fusecli.errors import FusecliError, MissingEnvironmentError
from fusecli.frontend import FusionDefinition
from fusecli.ir.optype import OpKind
from fusecli.load import discover, load_path
from fusecli.reference import run_reference
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.cupy_executor import CupyExecutor, ModuleCache, cupy_available
from fusecli.runtime.registry import install
from fusecli.runtime.segmented import execute, run_fusion
from fusecli.segment.segmenter import segment_fusion


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
    graph_ms: float | None = None  # --graphs: the warm run replayed as a CUDA graph

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
    """A fusion run as ``fd.execute`` runs it: the executor cache's compiled run of its input
    signature (``runtime.warm``), on the CuPy executor (ATen for segments without a kernel).
    ``graph``: the same run captured once in a CUDA graph, replayed by ``replay``."""

    def __init__(self, fusion, inputs, graphs: bool = False) -> None:
        _, run = run_fusion(fusion, inputs, executor="cupy")  # the segments, as a report
        self.fusion, self.inputs, self.runs = fusion, inputs, run.segments
        self.outputs = execute(fusion, inputs, executor="cupy")  # compiles the warm run
        self.graph, self.graph_note = None, ""
        if graphs:
            self._capture()

    def __call__(self) -> None:
        execute(self.fusion, self.inputs, executor="cupy")

    def _capture(self) -> None:
        """The warm run captured in a CUDA graph: a replay launches every segment's kernels
        with no host work between them (on the inputs and outputs of the capture)."""
        try:
            self()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.graph_outputs = execute(self.fusion, self.inputs, executor="cupy")
            self.graph = graph
        except Exception as error:  # an ATen op that synchronizes, say: reported, not fatal
            self.graph_note = f"CUDA graph capture failed: {type(error).__name__}: {error}"[:200]

    def replay(self) -> None:
        self.graph.replay()

    @property
    def kernels(self) -> str:
        ran = sum(run.executor == "cupy" for run in self.runs)
        return f"{ran}/{len(self.runs)}"

    @property
    def fallbacks(self) -> str:
        return "; ".join(sorted({run.fallback for run in self.runs if run.fallback}))


def _clone(inputs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def counted_bytes(inputs, outputs) -> int:
    """Each input's stored elements (an expanded dim counts once) and each output's, in bytes."""
    total = 0
    for value in (*inputs, *outputs):
        if isinstance(value, torch.Tensor):
            stored = math.prod(s for s, st in zip(value.shape, value.stride()) if st != 0)
            total += stored * value.element_size()
    return total


def reference_function(fusion, inputs: list | None = None) -> Callable:
    """The fusion as eager torch: the reference interpreter, traced (given inputs) into a flat
    graph of aten ops, so that neither eager timing nor torch.compile sees the interpreter."""

    def interpret(*values):
        return run_reference(fusion, list(values)).outputs


    if inputs is None or any(e.op.kind is OpKind.RANDOM for e in fusion.exprs):
        return interpret  # a trace would freeze or lose fusecli's random stream
    from torch.fx.experimental.proxy_tensor import make_fx

    try:
        return make_fx(interpret)(*inputs)
    except Exception:  # a fusion the tracer cannot follow: time the interpreter itself
        return interpret


def measure(name, fusion, inputs, torch_fn, repeat, copy_gbps,
            compile_baseline: bool = True, graphs: bool = False) -> Row:
    generated = Generated(fusion, inputs, graphs)
    notes = [generated.fallbacks] if generated.fallbacks else []
    notes += _mismatches(generated.outputs, torch_fn(*inputs))
    ours = time_ms(generated, repeat)
    graph_ms = time_ms(generated.replay, repeat) if generated.graph is not None else None
    if graph_ms is not None:
        notes += _mismatches(generated.graph_outputs, torch_fn(*inputs))
    elif generated.graph_note:
        notes.append(generated.graph_note)
    eager = time_ms(lambda: torch_fn(*inputs), repeat)
    compiled_ms = None
    if compile_baseline:
        try:
            compiled = torch.compile(torch_fn, dynamic=False)
            compiled_ms = time_ms(lambda: compiled(*inputs), repeat)
        except Exception as error:  # report it, keep measuring the others
            notes.append(f"torch.compile failed: {type(error).__name__}: {error}"[:200])
    return Row(name, counted_bytes(inputs, generated.outputs), ours, eager, compiled_ms,
               copy_gbps, generated.kernels, "; ".join(notes), graph_ms)


def _mismatches(ours: list, theirs) -> list[str]:
    """A note per output where the generated kernels disagree with the torch baseline."""

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


def execute_overhead() -> float:
    """Host microseconds per warm ``fd.execute`` of a one-op fusion (relu over 128 floats):
    the public path, key to outputs (the CuPy executor this run installed)."""
    x = torch.randn(128, device="cuda")
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.relu(fd.define_tensor(sizes=[128], strides=[1])))
    for _ in range(100):
        execute(fd.fusion, [x], executor="cupy")
    torch.cuda.synchronize()
    calls = 5000
    started = time.perf_counter()
    for _ in range(calls):
        execute(fd.fusion, [x], executor="cupy")
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


def geomean(values: list[float | None]) -> float | None:
    present = [v for v in values if v]
    if not present:
        return None
    return round(math.exp(sum(math.log(v) for v in present) / len(present)), 3)


def format_table(rows: list[Row], report: dict) -> str:
    graphs = any(row.graph_ms is not None for row in rows)
    header = (f"{'fusion':<34} {'kernels':>7} {'fusecli ms':>10} {'GB/s':>7} {'% copy':>6} "
              f"{'eager ms':>9} {'compile ms':>10} {'x eager':>7} {'x compile':>9}"
              + (f" {'graph ms':>9}" if graphs else ""))
    lines = [header, "-" * len(header)]
    for row in rows:
        data = row.as_dict()
        lines.append(
            f"{row.name[:34]:<34} {row.kernels:>7} {row.fusecli_ms:>10.4f} {row.gbps:>7.0f} "
            f"{data['percent_of_copy']:>6.1f} {_ms(row.eager_ms):>9} {_ms(row.compile_ms):>10} "
            f"{_x(data['speedup_vs_eager']):>7} {_x(data['speedup_vs_compile']):>9}"
            + (f" {_ms(row.graph_ms):>9}" if graphs else "")
        )
    lines += [
        "-" * len(header),
        f"device: {report['device']}; device-to-device copy: {report['copy_gbps']:.0f} GB/s",
        f"geomean speedup: vs eager {_x(report['geomean_speedup_vs_eager'])}, "
        f"vs torch.compile {_x(report['geomean_speedup_vs_compile'])}",
        f"host time per warm fd.execute of a one-op fusion: "
        f"{report['execute_overhead_us']:.1f} us; per warm segment launch: "
        f"{report['launch_overhead_us']:.1f} us",
        f"kernel cache hit: {report['cache_hit_ms']:.3f} ms per kernel (target < 1)",
    ]
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _x(value: float | None) -> str:
    return "n/a" if not value else f"{value:.2f}x"


def make_report(rows: list[Row], copy_gbps: float, executor: CupyExecutor) -> dict:
    """The whole run as data: per-fusion rows, the geometric means, and the host costs."""
    return {
        "device": torch.cuda.get_device_name(),
        "copy_gbps": round(copy_gbps, 1),
        "launch_overhead_us": round(launch_overhead(executor), 2),
        "execute_overhead_us": round(execute_overhead(), 2),
        "cache_hit_ms": round(cache_hit_ms(executor), 3),
        "geomean_speedup_vs_compile": geomean(
            [r.as_dict()["speedup_vs_compile"] for r in rows]
        ),
        "geomean_speedup_vs_eager": geomean([r.as_dict()["speedup_vs_eager"] for r in rows]),
        "fusions": [r.as_dict() for r in rows],
    }


def bench_paths(
    paths: list, repeat: int = 30, compile_baseline: bool = True,
    progress: Callable[[str], None] | None = None, graphs: bool = False,
) -> tuple[list[Row], dict]:
    """Benchmark every fusion under ``paths`` on the GPU; the eager baseline is fusecli's
    reference interpreter (eager torch, op by op), torch.compile compiles that same code."""
    import tempfile
    from pathlib import Path


    missing = cupy_available()
    if missing:
        raise MissingEnvironmentError(f"fusecli bench needs a GPU and CuPy: {missing}")
    executor = CupyExecutor(cache_dir=Path(tempfile.mkdtemp(prefix="fusecli-kernels-")))
    install("cupy", executor)  # fd.execute's path, on this run's fresh kernel cache
    copy_gbps = copy_bandwidth(repeat)
    rows, failures = [], []
    for path in discover(list(paths)):
        try:
            loaded_fusions = load_path(path, device="cuda")
        except FusecliError as error:
            failures.append({"path": str(path), "name": path.stem, "error": str(error)})
            continue
        for loaded in loaded_fusions:
            if progress:
                progress(loaded.name)
            try:
                rows.append(measure(loaded.name, loaded.fusion, loaded.inputs,
                                    reference_function(loaded.fusion, _clone(loaded.inputs)),
                                    repeat, copy_gbps, compile_baseline, graphs))
            except Exception as error:  # one fusion's failure is its record; timing goes on
                message = str(error).strip().splitlines()
                failures.append({
                    "path": str(loaded.path), "name": loaded.name,
                    "error": f"{type(error).__name__}: {message[0] if message else ''}",
                })
    report = make_report(rows, copy_gbps, executor)
    report["errors"] = failures
    return rows, report
