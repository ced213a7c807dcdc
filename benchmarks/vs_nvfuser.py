"""fusecli against real nvFuser through the public path, ``fd.execute``, in one process.

On the GPU machine, with nvFuser's wheel unpacked (``. .nvfuser/activate.sh``; see the README):

    PYTHONPATH=.:$PYTHONPATH python3 benchmarks/vs_nvfuser.py [--corpus] [--compile] [--json F]

Every fusion is defined once with ``fusecli.frontend``. nvFuser gets the same definition the
way ``--engine nvfuser`` gives it (``fusecli convert --to direct``), so both run the same
nvFuser-API definition on the same inputs. Each is timed warm with CUDA events, as the median
of ``--iters`` calls of ``fd.execute``, next to eager torch (and ``torch.compile`` with
``--compile``). fusecli and nvFuser take turns call by call, so that the shared host's slow
spells fall on both; before each timed call L2 is flushed and the device waited for
(``flush_l2``, as nvFuser's benchmarks clear L2), so that no engine reads what the other's
turn left cached (``--warm-l2``: the earlier method, no flush). GB/s counts each input and
output once; % is of the device's copy bandwidth, measured in the same run. Host time is per
warm ``fd.execute`` of a one-op fusion over 1,024 floats, with one synchronize after 1,000
calls: the median of 5 rounds, the engines taking turns. Memory: fusecli's device memory and
host RSS before and after 10,000 warm calls. ``--corpus`` adds ``tests/nvfuser_corpus/`` (LLM-block
shapes). Without nvfuser_direct the other columns run and the table says so.

``--population N --seed S`` measures a random population of memory-bound fusions instead
(``population.py``, ``population_bench.py``): geometric mean, distribution, and the ten worst
with their segments and why they are slow. It needs CUDA and nvFuser and exits 4 naming what
is missing; ``--dry-run`` only draws and prints the population, on any machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)  # before torch: the nvFuser wheel needs it

import torch  # noqa: E402

from fusecli.frontend import DataType, FusionDefinition  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


# -- the fusions of issue 10's table, at its sizes ------------------------------------------


def rms_norm(fd: FusionDefinition, rows: int = 16384, hidden: int = 8192) -> None:
    x = fd.define_tensor(shape=[rows, hidden], contiguity=[True, True],
                         dtype=DataType.BFloat16)
    w = fd.define_tensor(shape=[hidden], contiguity=[True], dtype=DataType.BFloat16)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    total = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=False, dtype=DataType.Null)
    mean = fd.ops.div(fd.ops.broadcast_in_dim(total, shape=[rows, 1], broadcast_dims=[0]),
                      fd.define_scalar(float(hidden), dtype=DataType.Double))
    rstd = fd.ops.rsqrt(fd.ops.add(mean, fd.define_scalar(1e-5, dtype=DataType.Double)))
    y = fd.ops.mul(xf, fd.ops.broadcast_in_dim(rstd, shape=[rows, hidden],
                                               broadcast_dims=[0, 1]))
    wf = fd.ops.cast(fd.ops.broadcast_in_dim(w, shape=[rows, hidden], broadcast_dims=[1]),
                     dtype=DataType.Float)
    fd.add_output(fd.ops.cast(fd.ops.mul(y, wf), dtype=DataType.BFloat16))


def layer_norm(fd: FusionDefinition, rows: int = 16384, hidden: int = 8192) -> None:
    x = fd.define_tensor(shape=[rows, hidden], contiguity=[True, True],
                         dtype=DataType.BFloat16)
    w = fd.define_tensor(shape=[hidden], contiguity=[True], dtype=DataType.BFloat16)
    b = fd.define_tensor(shape=[hidden], contiguity=[True], dtype=DataType.BFloat16)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
    full = [rows, hidden]
    centered = fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape=full, broadcast_dims=[0]))
    rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5, dtype=DataType.Double)))
    y = fd.ops.mul(centered, fd.ops.broadcast_in_dim(rstd, shape=full, broadcast_dims=[0]))
    wf = fd.ops.cast(fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1]),
                     dtype=DataType.Float)
    bf = fd.ops.cast(fd.ops.broadcast_in_dim(b, shape=full, broadcast_dims=[1]),
                     dtype=DataType.Float)
    fd.add_output(fd.ops.cast(fd.ops.add(fd.ops.mul(y, wf), bf), dtype=DataType.BFloat16))


def softmax(fd: FusionDefinition, rows: int = 8192, cols: int = 8192) -> None:
    x = fd.define_tensor(shape=[rows, cols], contiguity=[True, True], dtype=DataType.Float)
    top = fd.ops.max(x, dims=[1], keepdim=False, dtype=DataType.Null)
    e = fd.ops.exp(fd.ops.sub(x, fd.ops.broadcast_in_dim(top, shape=[rows, cols],
                                                         broadcast_dims=[0])))
    total = fd.ops.sum(e, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(fd.ops.div(e, fd.ops.broadcast_in_dim(total, shape=[rows, cols],
                                                        broadcast_dims=[0])))


def silu_mul(fd: FusionDefinition, rows: int = 65536, cols: int = 4096) -> None:
    gate = fd.define_tensor(shape=[rows, cols], contiguity=[True, True],
                            dtype=DataType.BFloat16)
    up = fd.define_tensor(shape=[rows, cols], contiguity=[True, True], dtype=DataType.BFloat16)
    g = fd.ops.cast(gate, dtype=DataType.Float)
    silu = fd.ops.mul(g, fd.ops.sigmoid(g))
    out = fd.ops.mul(silu, fd.ops.cast(up, dtype=DataType.Float))
    fd.add_output(fd.ops.cast(out, dtype=DataType.BFloat16))


def transpose_add(fd: FusionDefinition, size: int = 8192) -> None:
    a = fd.define_tensor(shape=[size, size], contiguity=[True, True], dtype=DataType.BFloat16)
    b = fd.define_tensor(shape=[size, size], contiguity=[True, True], dtype=DataType.BFloat16)
    total = fd.ops.add(fd.ops.cast(fd.ops.permute(a, dims=[1, 0]), dtype=DataType.Float),
                       fd.ops.cast(b, dtype=DataType.Float))
    fd.add_output(fd.ops.cast(total, dtype=DataType.BFloat16))


def sum_dim0(fd: FusionDefinition, rows: int = 65536, cols: int = 4096) -> None:
    x = fd.define_tensor(shape=[rows, cols], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.sum(x, dims=[0], keepdim=False, dtype=DataType.Null))


def dropout_residual(fd: FusionDefinition, rows: int = 16384, cols: int = 8192) -> None:
    x = fd.define_tensor(shape=[rows, cols], contiguity=[True, True], dtype=DataType.BFloat16)
    res = fd.define_tensor(shape=[rows, cols], contiguity=[True, True],
                           dtype=DataType.BFloat16)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    keep = fd.ops.lt(fd.ops.rand_like(xf), fd.define_scalar(0.9, dtype=DataType.Double))
    dropped = fd.ops.mul(fd.ops.where(keep, xf, fd.define_scalar(0.0, dtype=DataType.Double)),
                         fd.define_scalar(1.0 / 0.9, dtype=DataType.Double))
    out = fd.ops.add(dropped, fd.ops.cast(res, dtype=DataType.Float))
    fd.add_output(fd.ops.cast(out, dtype=DataType.BFloat16))


def _bf16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)


def _f32(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device="cuda", dtype=torch.float32)


def _eager_rms(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + 1e-5) * w.float()).bfloat16()


def _eager_dropout(x, res):
    xf = x.float()
    keep = torch.rand_like(xf) < 0.9
    return (torch.where(keep, xf, 0.0) / 0.9 + res.float()).bfloat16()


@dataclass
class Case:
    name: str
    define: Callable[[FusionDefinition], None]
    inputs: Callable[[], list[Any]]
    eager: Callable[..., torch.Tensor]
    random: bool = False


CASES = [
    Case("RMSNorm bf16 16384x8192", rms_norm, lambda: [_bf16(16384, 8192), _bf16(8192)],
         _eager_rms),
    Case("LayerNorm bf16 16384x8192", layer_norm,
         lambda: [_bf16(16384, 8192), _bf16(8192), _bf16(8192)],
         lambda x, w, b: torch.nn.functional.layer_norm(x.float(), (8192,), w.float(),
                                                        b.float()).bfloat16()),
    Case("softmax f32 8192x8192", softmax, lambda: [_f32(8192, 8192)],
         lambda x: torch.softmax(x, dim=1)),
    Case("SiLU*mul bf16 65536x4096", silu_mul, lambda: [_bf16(65536, 4096), _bf16(65536, 4096)],
         lambda g, u: (torch.nn.functional.silu(g.float()) * u.float()).bfloat16()),
    Case("transpose+add bf16 8192x8192", transpose_add,
         lambda: [_bf16(8192, 8192), _bf16(8192, 8192)],
         lambda a, b: (a.t().float() + b.float()).bfloat16()),
    Case("sum over dim 0 f32 65536x4096", sum_dim0, lambda: [_f32(65536, 4096)],
         lambda x: x.sum(0)),
    Case("dropout+residual bf16 16384x8192", dropout_residual,
         lambda: [_bf16(16384, 8192), _bf16(16384, 8192)], _eager_dropout, random=True),
]


# -- measuring ------------------------------------------------------------------------------


def median_ms(run: Callable[[], Any], iters: int) -> float:
    return interleaved_ms([run], iters)[0]


COLD_L2 = True  # ``--warm-l2`` clears it: each call then finds what the call before left in L2
_flush_buffer: list[torch.Tensor] = []


def flush_l2() -> None:
    """Evict the device's L2 cache by reading a buffer of twice its size (as nvFuser's own
    benchmarks clear L2 before each timed call), then wait: the timed call starts on an idle
    device with a cold, clean cache. Without it the call before leaves up to the L2's size of
    the same inputs (or dirty lines of its outputs) for the next engine's call, which then reads
    part of its inputs from L2, or writes the other's lines back: 10-15 us of a 60-100 us call
    depending on the order of the turns, not on the engine."""
    if not _flush_buffer:
        size = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        _flush_buffer.extend((torch.ones(max(size, 1 << 20) // 2, device="cuda"),
                              torch.empty((), device="cuda")))
    buffer, total = _flush_buffer
    torch.sum(buffer, dim=0, out=total)  # reads only: the lines it leaves are clean
    torch.cuda.synchronize()


def interleaved_ms(runs: list[Callable[[], Any]], iters: int) -> list[float]:
    """Each run's median CUDA-event time of one call (host time to launch included), the runs
    taking turns call by call, so that a slow spell of the shared host falls on all of them;
    each call after an L2 flush (``flush_l2``) unless ``--warm-l2`` cleared ``COLD_L2``."""
    for run in runs:
        for _ in range(3):
            run()
    torch.cuda.synchronize()
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(iters):
        for run, kept in zip(runs, times):
            if COLD_L2:
                flush_l2()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            kept.append(start.elapsed_time(end))
    return [statistics.median(kept) for kept in times]


def moved_bytes(inputs: list[Any], outputs: list[torch.Tensor]) -> int:
    tensors = [t for t in [*inputs, *outputs] if isinstance(t, torch.Tensor)]
    return sum(t.numel() * t.element_size() for t in tensors)


def copy_bandwidth(iters: int) -> float:
    source = torch.empty(1 << 29, device="cuda", dtype=torch.float32)  # 2 GiB
    target = torch.empty_like(source)
    ms = median_ms(lambda: target.copy_(source), iters)
    return 2 * source.numel() * 4 / ms / 1e6


def nvfuser_module():
    try:
        import nvfuser_direct
    except ImportError as error:
        return None, str(error).splitlines()[0] if str(error) else type(error).__name__
    return nvfuser_direct, None


def nvfuser_definition(fd: FusionDefinition, name: str, inputs: list[Any], nvfuser) -> Any:
    """The same definition in nvfuser_direct, translated as ``--engine nvfuser`` does."""
    from fusecli.engines.nvfuser import direct_definition
    from fusecli.load.model import LoadedFusion

    loaded = LoadedFusion(Path(f"{name}.py"), name, fd, inputs, None, "python")
    namespace: dict[str, Any] = {"__name__": "vs_nvfuser"}
    exec(compile(direct_definition(loaded), f"<{name}: direct>", "exec"), namespace)
    return namespace["fd"]


@dataclass
class Row:
    fusion: str
    gbps: dict[str, float | None]
    note: str = ""
    kernels: dict[str, str] | None = None  # --profile: the device's own time per call
    moved: int = 0  # bytes the GB/s count: each input and output once
    outputs: int = 0  # tensors fd.execute returns


def device_profile(run: Callable[[], Any], calls: int = 5) -> tuple[float, str]:
    """Device time per call (ms, the kernels' own durations summed) and the kernels, from
    torch's profiler: what a call costs the GPU, without the host time between launches."""
    from torch.profiler import ProfilerActivity, profile

    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as trace:
        for _ in range(calls):
            run()
        torch.cuda.synchronize()
    kernels: dict[str, float] = {}
    for event in trace.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernels[event.name[:40]] = kernels.get(event.name[:40], 0.0) + event.device_time
    total = sum(kernels.values()) / calls / 1e3
    listed = "; ".join(f"{name} {us / calls:.0f}us" for name, us in kernels.items())
    return total, listed


def measure(name: str, fusecli_fd: Any, inputs: list[Any], eager: Callable | None,
            nvfuser, args, random: bool = False) -> Row:
    gbps: dict[str, float | None] = {}
    outputs = fusecli_fd.execute(inputs)
    size = moved_bytes(inputs, outputs)
    mismatch = _mismatch(outputs, eager(*inputs)) if eager is not None and not random else ""
    note, nv_fd = "", None
    if nvfuser is not None:
        try:
            nv_fd = nvfuser_definition(fusecli_fd, name, inputs, nvfuser)
            nv_fd.execute(inputs)
        except Exception as error:  # nvFuser's own failure is the row's note
            nv_fd, note = None, f"nvFuser: {str(error).splitlines()[0][:80]}"
    if nv_fd is not None:  # the two engines take turns, call by call
        ours, theirs = interleaved_ms(
            [lambda: fusecli_fd.execute(inputs), lambda: nv_fd.execute(inputs)], args.iters)
        gbps["fusecli"], gbps["nvfuser"] = size / ours / 1e6, size / theirs / 1e6
    else:
        gbps["fusecli"] = size / median_ms(lambda: fusecli_fd.execute(inputs), args.iters) / 1e6
        if nvfuser is not None:
            gbps["nvfuser"] = None
    if args.profile:
        ms, fusecli_kernels = device_profile(lambda: fusecli_fd.execute(inputs))
        gbps["fusecli device"] = size / ms / 1e6 if ms else None
        kernels = {"fusecli": fusecli_kernels}
        if gbps.get("nvfuser"):
            ms, kernels["nvfuser"] = device_profile(lambda: nv_fd.execute(inputs))
            gbps["nvfuser device"] = size / ms / 1e6 if ms else None
        row_kernels = kernels
    if eager is not None:
        gbps["eager"] = size / median_ms(lambda: eager(*inputs), args.iters) / 1e6
        if args.compile:
            try:
                compiled = compiled_graph(eager, inputs)
                gbps["compile"] = size / median_ms(lambda: compiled(*inputs), args.iters) / 1e6
            except Exception as error:  # Inductor's own failure is the row's note
                gbps["compile"] = None
                note = "; ".join(n for n in (note, f"torch.compile: "
                                             f"{str(error).splitlines()[0][:80]}") if n)
    note = "; ".join(n for n in (mismatch, note) if n)
    return Row(name, gbps, note, row_kernels if args.profile else None, size,
               sum(isinstance(out, torch.Tensor) for out in outputs))


def compiled_graph(eager: Callable[..., Any], inputs: list[Any],
                   backend: str = "inductor") -> Callable[..., Any]:
    """``torch.compile`` of what ``eager`` runs on ``inputs``: its aten ops traced into one
    straight-line graph first (``make_fx``), then compiled by Inductor, with Dynamo's caches
    reset. Compiling ``eager`` itself traced fusecli's reference interpreter (or a helper
    shared by many fusions) frame by frame: past Dynamo's recompile limit (8) it ran eager
    behind guards, slower than eager (0.5x of it on the first population members)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    torch._dynamo.reset()
    graph = make_fx(eager)(*inputs)
    # the reference's scalars are 0-dim CPU tensors (its type promotion): on the inputs' device
    # as the graph's constants, as a torch program would hold them
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor) and x.ndim), None)
    for name, value in list(vars(graph).items()):
        if (device is not None and isinstance(value, torch.Tensor) and value.ndim == 0
                and value.device != device):
            setattr(graph, name, value.to(device))
    compiled = torch.compile(graph, backend=backend)
    compiled(*inputs)  # compiled here, not in the first timed call
    return compiled


def _mismatch(ours: list[Any], eager_output: Any) -> str:
    """"fusecli's output differs from eager torch" where it does (bf16: 2e-2, else 1e-3)."""
    theirs = eager_output if isinstance(eager_output, list | tuple) else [eager_output]
    for index, (a, b) in enumerate(zip(ours, theirs)):
        tolerance = 2e-2 if a.dtype in (torch.bfloat16, torch.float16) else 1e-3
        if not torch.allclose(a.float(), b.float(), rtol=tolerance, atol=tolerance):
            error = (a.float() - b.float()).abs().max().item()
            return f"OUTPUT {index} DIFFERS from eager torch (max abs error {error:.3g})"
    return ""


def host_us(execute: Callable[[], Any], calls: int = 1000) -> float:
    for _ in range(50):
        execute()
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(calls):
        execute()
    torch.cuda.synchronize()
    return (time.perf_counter() - started) / calls * 1e6


def one_op(fd: FusionDefinition) -> None:
    fd.add_output(fd.ops.relu(fd.define_tensor(shape=[1024], contiguity=[True],
                                               dtype=DataType.Float)))


def three_segments(fd: FusionDefinition) -> None:
    """A linear (expr_eval), then a row sum and a normalization (a reduction and a pointwise
    kernel, or one normalization): the host cost of a multi-segment warm call."""
    x = fd.define_tensor(shape=[64, 64], contiguity=[True, True], dtype=DataType.Float)
    w = fd.define_tensor(shape=[64, 64], contiguity=[True, True], dtype=DataType.Float)
    y = fd.ops.linear(x, w)
    total = fd.ops.sum(y, dims=[1], keepdim=True)
    fd.add_output(fd.ops.exp(fd.ops.sub(y, total)))


def seeded_dropout(fd: FusionDefinition) -> None:
    """Dropout seeded by scalar inputs, as Thunder writes it: a new Philox offset every call."""
    x = fd.define_tensor(shape=[1024], contiguity=[True], dtype=DataType.Float)
    seed = fd.define_scalar(None, dtype=DataType.Int)
    offset = fd.define_scalar(None, dtype=DataType.Int)
    drawn = fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), shape=[1024],
                           rng_seed=seed, rng_offset=offset, dtype=DataType.Float)
    keep = fd.ops.lt(drawn, fd.define_scalar(0.9, dtype=DataType.Double))
    fd.add_output(fd.ops.where(keep, x, fd.define_scalar(0.0, dtype=DataType.Double)))


# (label, definition, tensor shapes, the scalar inputs of call number i)
HOST_CASES = (("relu over 1,024 floats", one_op, ((1024,),), None),
              ("linear + sum + sub/exp over 64x64 (several segments)", three_segments,
               ((64, 64), (64, 64)), None),
              ("dropout over 1,024 floats, a new Philox offset each call", seeded_dropout,
               ((1024,),), lambda call: [2024, 4 * call]))


def host_times(nvfuser: Any) -> dict[str, dict[str, float]]:
    """Warm host microseconds per call of each HOST_CASES fusion, per engine (rounds taking
    turns; each engine's median round)."""
    times = {}
    for label, define_fn, shapes, scalars in HOST_CASES:
        with FusionDefinition() as small:
            define_fn(small)
        tensors = [torch.randn(shape, device="cuda") for shape in shapes]
        numbers = itertools.count()

        def inputs(t=tensors, scalars=scalars, numbers=numbers):
            return t if scalars is None else [*t, *scalars(next(numbers))]

        calls = {"fusecli": lambda s=small, made=inputs: s.execute(made())}
        if nvfuser is not None:
            theirs = nvfuser_definition(small, label.split()[0], inputs(), nvfuser)
            calls["nvfuser"] = lambda f=theirs, made=inputs: f.execute(made())
        rounds: dict[str, list[float]] = {engine: [] for engine in calls}
        for _ in range(5):
            for engine, call in calls.items():
                rounds[engine].append(host_us(call))
        times[label] = {engine: statistics.median(r) for engine, r in rounds.items()}
    return times


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def corpus_cases() -> list[tuple[str, Any, list[Any]]]:
    from fusecli.load import discover, load_path

    found = []
    for path in discover([ROOT / "tests" / "nvfuser_corpus"]):
        for loaded in load_path(path, device="cuda"):
            inputs = [x.cuda() if isinstance(x, torch.Tensor) and not x.is_cuda and x.ndim
                      else x for x in loaded.inputs]
            found.append((loaded.name, loaded.fd, inputs))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--corpus", action="store_true", help="add tests/nvfuser_corpus/")
    parser.add_argument("--compile", action="store_true", help="add a torch.compile column")
    parser.add_argument("--compile-workers", type=int, metavar="K",
                        default=max(1, min(8, (os.cpu_count() or 2) // 2)),
                        help="with --population --compile: child processes that compile the "
                             "graphs first (precompile.py; default: half the cores, at most 8)")
    parser.add_argument("--compile-only", action="store_true",
                        help="with --population: compile the graphs ahead (Inductor's caches "
                             "on disk) and stop, measuring nothing: a later --compile run "
                             "loads them")
    parser.add_argument("--memory-calls", type=int, default=10000)
    parser.add_argument("--json", type=Path, help="write the rows here too")
    parser.add_argument("--profile", action="store_true",
                        help="add device-only GB/s (kernel durations from torch's profiler) "
                             "and list each call's kernels")
    parser.add_argument("--population", type=int, metavar="N",
                        help="measure N random memory-bound fusions instead of the table")
    parser.add_argument("--seed", type=int, default=0, help="the population's seed")
    parser.add_argument("--min-elements", type=int, default=1 << 25,
                        help="elements of each large tensor of the population (2^25)")
    parser.add_argument("--members", metavar="NAMES",
                        help="with --population: only the members whose names contain one of "
                             "these comma-separated parts (e.g. fuzz_512423803,rms_norm)")
    parser.add_argument("--dry-run", action="store_true",
                        help="with --population: draw and print it, measure nothing")
    parser.add_argument("--warm-l2", action="store_true",
                        help="time each call without flushing L2 first (the method before "
                             "2026-12-07: the engines' turns leave each other cached data)")
    args = parser.parse_args()
    args.compile = args.compile or args.compile_only
    global COLD_L2
    COLD_L2 = not args.warm_l2
    if args.population is not None:
        sys.modules.setdefault("vs_nvfuser", sys.modules[__name__])  # one copy of this module
        from population_bench import run_population

        return run_population(args)
    if args.dry_run:
        parser.error("--dry-run goes with --population")
    if not torch.cuda.is_available():
        print("vs_nvfuser: needs a GPU", file=sys.stderr)
        return 4
    nvfuser, missing = nvfuser_module()
    copy = copy_bandwidth(args.iters)
    rows = []
    for case in CASES:
        with FusionDefinition() as fd:
            case.define(fd)
        rows.append(measure(case.name, fd, case.inputs(), case.eager, nvfuser, args,
                            case.random))
        print(f"measured {case.name}", file=sys.stderr, flush=True)
    if args.corpus:
        for name, fd, inputs in corpus_cases():
            try:
                rows.append(measure(name, fd, inputs, None, nvfuser, args))
            except Exception as error:  # one fusion's failure is its row
                rows.append(Row(name, {}, f"fusecli: {str(error).splitlines()[0][:80]}"))
    with FusionDefinition() as small:
        one_op(small)
    x = torch.randn(1024, device="cuda")
    host = {"fusecli": [], "eager": []}
    calls = {"fusecli": lambda: small.execute([x]), "eager": lambda: torch.relu(x)}
    if nvfuser is not None:
        nv_small = nvfuser_definition(small, "relu", [x], nvfuser)
        calls["nvfuser"], host["nvfuser"] = (lambda: nv_small.execute([x])), []
    for _ in range(5):  # rounds taking turns; the median round of each
        for engine, call in calls.items():
            host[engine].append(host_us(call))
    host = {engine: statistics.median(rounds) for engine, rounds in host.items()}
    host_cases = host_times(nvfuser)
    torch.cuda.synchronize()
    memory_before, rss_before = torch.cuda.memory_allocated(), rss_mb()
    for _ in range(args.memory_calls):
        small.execute([x])
    torch.cuda.synchronize()
    memory_after, rss_after = torch.cuda.memory_allocated(), rss_mb()

    print(f"\ncopy bandwidth {copy:.0f} GB/s; GB/s per fusion (inputs + outputs once), median "
          f"of {args.iters} warm fd.execute calls, "
          f"{'each after an L2 flush' if COLD_L2 else 'L2 not flushed'}")
    if nvfuser is None:
        print(f"real nvFuser not available ({missing}): its columns are empty")
    columns = ["nvfuser", "fusecli", "eager"] + (["compile"] if args.compile else [])
    if args.profile:
        columns += ["nvfuser device", "fusecli device"]
    header = f"{'fusion':<36}" + "".join(f"{c.replace(' device', ' dev'):>10}" for c in columns)
    print(header + f"{'% copy':>9}{'vs nvF':>9}")
    for row in rows:
        cells = "".join(
            f"{row.gbps[c]:>10.0f}" if row.gbps.get(c) is not None else f"{'-':>10}"
            for c in columns
        )
        ours, theirs = row.gbps.get("fusecli"), row.gbps.get("nvfuser")
        share = f"{100 * ours / copy:>8.1f}%" if ours else f"{'-':>9}"
        ratio = f"{ours / theirs:>8.2f}x" if ours and theirs else f"{'-':>9}"
        print(f"{row.fusion[:36]:<36}{cells}{share}{ratio}" + (f"  {row.note}" if row.note
                                                                else ""))
        for engine, listed in (row.kernels or {}).items():
            print(f"    {engine} kernels per call: {listed}")
    print("\nhost time per warm fd.execute of relu over 1,024 floats: " + ", ".join(
        f"{k} {v:.1f} us" for k, v in host.items()))
    for label, times in host_cases.items():
        print(f"host time per warm fd.execute, {label}: " + ", ".join(
            f"{k} {v:.1f} us" for k, v in times.items()))
    print(f"fusecli over {args.memory_calls} warm calls: device memory "
          f"{memory_before / 2**20:.1f} -> {memory_after / 2**20:.1f} MiB, host RSS "
          f"{rss_before:.0f} -> {rss_after:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps({
            "copy_gbps": copy, "rows": [asdict(r) for r in rows], "host_us": host,
            "host_us_cases": host_cases,
            "memory": {"device_before": memory_before, "device_after": memory_after,
                       "rss_before_mb": rss_before, "rss_after_mb": rss_after},
        }, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
