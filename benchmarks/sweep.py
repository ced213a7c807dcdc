"""Heuristics from measurement: each scheduler's launch parameters swept over a population.

On the GPU machine: ``PYTHONPATH=. python3 benchmarks/sweep.py --population 100 --out F.json``.
Each fusion of ``population.draw`` runs segment by segment as ``fd.execute`` runs it; for each
kernel segment its scheduler's params at its sizes and their variants (``variant_grid``) are
generated and each distinct kernel timed alone (CUDA events, median of ``--iters``, outputs
allocated once; none where its outputs differ from the default's). The JSON has every time and
per (scheduler, size class) the variant of least geometric-mean time relative to the default,
among those timed in every segment of the class: the table printed last, for heuristics to
read (not done here). ``--dry-run``: meta tensors, every variant generated and NVRTC-compiled.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch

from fusecli.codegen import GENERATORS, Kernel, generate
from fusecli.codegen.nvrtc import CompileError, compile_source
from fusecli.ir.nodes import Fusion
from fusecli.runtime.cupy_executor import EnvironmentSizes
from fusecli.runtime.kernel_modules import ModuleCache
from fusecli.runtime.launch import Stream, kernel_arguments
from fusecli.runtime.segmented import SegmentRunner
from fusecli.segment import heuristics as h
from fusecli.segment.result import Segment
from fusecli.segment.schedulers import REGISTRY
from fusecli.segment.segmenter import segment_fusion

sys.path.insert(0, str(Path(__file__).resolve().parent))
import population  # noqa: E402

POINTWISE_THREADS, POINTWISE_UNROLLS = (128, 256, 512), (1, 2, 4)
POINTWISE_LANE_WIDTHS = 3  # the default's lanes and two halvings (all divide the row)
TRANSPOSE_TILES, TRANSPOSE_ROWS = ((64, 32), (64,), (32,)), (4, 8, 16)  # 32-column blocks
ROW_LANE_WIDTHS = 2  # a reduction's default lanes and half of them
ROW_THREADS = tuple(1 << k for k in range(11))  # 1 to 1024 threads per row
MAX_SLOTS = 16  # vectors per thread: fewer threads per row are not tried
SHARED_BLOCKS = (128, 256, 512)  # block sizes where rows of at most 32 threads share one
OUTER_ROWS_PER_BLOCK = (64, 128, 256, 512)  # a thread per row: rows (threads) per block

KNOBS: dict[type, tuple[str, ...]] = {  # the fields swept: a variant's name in every segment
    h.PointwiseParams: ("vectorize", "threads", "unroll"),
    h.TransposeParams: ("tiles", "rows"),  # and its pointwise kernel's, where no tile fits
    h.ReductionParams: ("vectorize", "threads", "rows_per_block", "persistent"),
}


def knobs(params: h.HeuristicParams) -> dict[str, Any]:
    found = {name: getattr(params, name) for name in KNOBS[type(params)]}
    if isinstance(params, h.TransposeParams):
        found.update({f"pointwise.{k}": v for k, v in knobs(params.pointwise).items()})
    return found


def label(params: h.HeuristicParams) -> str:
    """``threads=256 unroll=2 vectorize=8``: the variant, the same in every segment."""
    return " ".join(f"{name}={value}" for name, value in sorted(knobs(params).items()))


def _halvings(value: int, count: int) -> list[int]:
    return [value >> step for step in range(count) if value >> step >= 1]


def _pointwise_grid(params: h.PointwiseParams, scheduler: str) -> list[h.PointwiseParams]:
    found = []
    for lanes in _halvings(params.vectorize, POINTWISE_LANE_WIDTHS):
        # the default's widest lanes keep its max_vectorize (other loops divide it down)
        widest = params.max_vectorize if lanes == params.vectorize else lanes
        found += [replace(params, vectorize=lanes, max_vectorize=widest, threads=threads,
                          unroll=unroll)
                  for threads in POINTWISE_THREADS for unroll in POINTWISE_UNROLLS]
    return found


def _transpose_grid(params: h.TransposeParams, scheduler: str) -> list[h.TransposeParams]:
    tiled = [replace(params, tiles=tiles, rows=rows) for tiles in TRANSPOSE_TILES
             for rows in TRANSPOSE_ROWS if all(tile % rows == 0 for tile in tiles)]
    return tiled + [replace(params, pointwise=pointwise)
                    for pointwise in _pointwise_grid(params.pointwise, scheduler)]


def _reduction_grid(params: h.ReductionParams, scheduler: str) -> list[h.ReductionParams]:
    """Block shapes the generator accepts: a power of two of threads per row; rows share a
    block only below a warp (``block_reduce`` combines a row within one warp there), a block
    is whole warps, at most 1024 threads; inner_outer keeps its rows in registers."""
    if not params.inner:  # a thread per row (outer_reduction.py tiles its own kernel)
        return [replace(params, rows_per_block=rows) for rows in OUTER_ROWS_PER_BLOCK]
    inner_outer = scheduler == "inner_outer_persistent"
    found = []
    for lanes in _halvings(params.vectorize, ROW_LANE_WIDTHS):
        vectors = params.row_size // lanes
        for threads in ROW_THREADS:
            slots = -(-vectors // threads)
            if threads > vectors or slots > MAX_SLOTS:
                continue
            shared = (1,) if threads > 32 else tuple(b // threads for b in SHARED_BLOCKS)
            fits = slots * lanes <= h.MAX_PERSISTENT_ELEMENTS
            found += [replace(params, vectorize=lanes, threads=threads, slots=slots,
                              rows_per_block=rows, persistent=persistent,
                              max_blocks=_partials(rows) if inner_outer else params.max_blocks)
                      for rows in shared for persistent in (True, False)
                      if (fits or not persistent) and (persistent or not inner_outer)]
    return found


def _partials(rows_per_block: int) -> int:  # inner_outer's blocks, as h.inner_outer counts
    return max(1, min(h.MULTIPROCESSORS, h.MAX_PARTIALS // rows_per_block))


GRIDS: dict[type, Callable[[Any, str], list]] = {
    h.PointwiseParams: _pointwise_grid,
    h.TransposeParams: _transpose_grid,
    h.ReductionParams: _reduction_grid,
}


def variant_grid(params: h.HeuristicParams, scheduler: str) -> list[h.HeuristicParams]:
    """The default first, then its variants, one per label."""
    found: dict[str, h.HeuristicParams] = {label(params): params}
    for variant in GRIDS[type(params)](params, scheduler):
        found.setdefault(label(variant), variant)
    return list(found.values())


def size_class(segment: Segment, params: h.HeuristicParams, sizes: h.Sizes) -> str:
    """What a choice may depend on: log2 elements (of a row too), the widest dtype, rows."""
    shapes = h.segment_shapes(segment.candidate, sizes) or ((1,),)
    elements = max(h.numel(shape) for shape in shapes)
    widest = max((h.itemsize(t) for t in (*segment.inputs, *segment.outputs)), default=1)
    parts = [f"2^{int(math.log2(max(1, elements)))} elements", f"{widest}-byte"]
    if isinstance(params, h.ReductionParams):
        where = "inner" if params.inner else "outer"
        parts.insert(1, f"{where} rows of 2^{int(math.log2(max(1, params.row_size)))}")
    return ", ".join(parts)


@dataclass
class SegmentCase:
    """A segment with the sizes and input tensors its kernel is generated for."""

    member: str
    segment: Segment
    sizes: h.Sizes
    tensors: list[Any]  # in segment.inputs order
    env: dict[int, object]  # every value computed so far: the kernel's arguments
    ctx: Any  # the execution's context (its faults and views, too)


def segment_cases(member: str, fusion: Fusion, inputs: Sequence[Any],
                  executor: str = "auto") -> Iterator[SegmentCase]:
    """Segments as ``fd.execute`` runs them, each with the values earlier ones computed (the
    dry run's: ATen on meta tensors, values of the right shapes and layouts)."""
    segmented = segment_fusion(fusion, inputs)
    runner = SegmentRunner(segmented, inputs, executor=executor)
    for segment in segmented.segments:
        runner.scalars.run_ready()
        if all(value.uid in runner.env for value in segment.inputs):
            yield SegmentCase(member, segment, EnvironmentSizes(runner.ctx, runner.env),
                              [runner.env[value.uid] for value in segment.inputs],
                              runner.env, runner.ctx)
        runner.run(segment)


# A segment's distinct kernels (the default's first) -> each one's ms (NaN: untimed) or why none
Timer = Callable[[SegmentCase, list[Kernel]], list[float | str]]


@dataclass
class SegmentSweep:
    member: str
    segment: int
    scheduler: str
    size_class: str
    default: str  # the default's label
    params: dict[str, dict[str, Any]] = field(default_factory=dict)  # label -> knobs
    kernel_of: dict[str, int] = field(default_factory=dict)  # label -> its distinct kernel
    times: dict[str, float] = field(default_factory=dict)  # label -> ms
    failed: dict[str, str] = field(default_factory=dict)  # label -> why it has no time

    @property
    def best(self) -> str:  # the default where a variant ties with it
        return min(self.times, key=lambda name: (self.times[name], name != self.default))

    @property
    def timed(self) -> bool:
        return math.isfinite(self.times.get(self.default, math.nan))


def sweep_segment(case: SegmentCase, timer: Timer) -> SegmentSweep | None:
    """The segment's variants generated and timed, identical kernels once; None where it has
    no kernel (ATen, no heuristics at these sizes, the generator rejects the default)."""
    segment = case.segment
    default = (REGISTRY[segment.scheduler].heuristics(segment.candidate, case.sizes)
               if segment.scheduler in GENERATORS else None)
    if default is None:
        return None
    sweep = SegmentSweep(case.member, segment.id, segment.scheduler,
                         size_class(segment, default, case.sizes), label(default))
    kernels: list[Kernel] = []
    seen: dict[tuple, int] = {}
    for params in variant_grid(default, segment.scheduler):
        name = label(params)
        sweep.params[name] = knobs(params)
        kernel = generate(replace(segment, params=params), case.sizes, case.tensors,
                          case.ctx.faults, case.ctx.views)
        if not isinstance(kernel, Kernel):
            sweep.failed[name] = f"generator: {kernel.reason}"
            continue
        sweep.kernel_of[name] = seen.setdefault(
            (kernel.source, kernel.grid, kernel.block, kernel.shared_mem), len(kernels))
        kernels += [kernel] if sweep.kernel_of[name] == len(kernels) else []
    if sweep.default not in sweep.kernel_of:
        return None
    results = timer(case, kernels)
    for name, number in sweep.kernel_of.items():
        found = results[number]
        (sweep.failed if isinstance(found, str) else sweep.times)[name] = found
    return sweep


def compile_only(case: SegmentCase, kernels: list[Kernel]) -> list[float | str]:
    """The dry run's timer: each kernel compiled with NVRTC, none timed."""
    results: list[float | str] = [math.nan] * len(kernels)
    for number, kernel in enumerate(kernels):
        try:
            compile_source(kernel.source, kernel.name)
        except CompileError as error:
            results[number] = f"NVRTC: {error}"
    return results


def time_kernels(case: SegmentCase, kernels: list[Kernel], iters: int,
                 modules: ModuleCache) -> list[float | str]:
    """The GPU's timer: each kernel alone on the segment's inputs, outputs allocated once, the
    median of ``iters``; a kernel whose outputs differ from the default's (the first) has none."""
    device = next((t.device for t in case.tensors if isinstance(t, torch.Tensor) and t.is_cuda),
                  torch.device("cuda"))
    stream = Stream(torch.cuda.current_stream(device).cuda_stream)
    results: list[float | str] = [math.nan] * len(kernels)
    launches, outputs, kept = {}, {}, []  # kept: arguments alive while launched
    for number, kernel in enumerate(kernels):
        try:
            function = modules.function(kernel, device)
        except CompileError as error:
            results[number] = f"NVRTC: {error}"
            continue
        values, outputs[number] = kernel_arguments(kernel, case.env, case.ctx, device)
        kept.append(values)
        arguments = tuple(v.data_ptr() if isinstance(v, torch.Tensor) else v for v in values)
        launches[number] = partial(function, kernel.grid, kernel.block, arguments,
                                   shared_mem=kernel.shared_mem, stream=stream)
        launches[number]()  # and a warm-up
    torch.cuda.synchronize()
    for number in [n for n in launches if n and not _same(outputs.get(0), outputs[n])]:
        results[number] = "outputs differ from the default kernel's"
        del launches[number]
    for number, ms in zip(launches, kernel_ms(list(launches.values()), iters)):
        results[number] = ms
    return results


def _same(expected: dict[int, torch.Tensor] | None, found: dict[int, torch.Tensor]) -> bool:
    """As ``vs_nvfuser._mismatch``: 2e-2 for 16-bit floats, else 1e-3 (sums reassociate)."""
    for uid, tensor in (expected or {}).items():
        tolerance = 2e-2 if tensor.dtype in (torch.bfloat16, torch.float16) else 1e-3
        if not torch.allclose(tensor.float(), found[uid].float(), rtol=tolerance,
                              atol=tolerance, equal_nan=True):
            return False
    return expected is not None


def kernel_ms(launches: Sequence[Callable[[], Any]], iters: int) -> list[float]:
    """Median CUDA-event ms of one launch each, the launches taking turns (a slow spell of the
    shared host falls on all), each behind a sleep that hides the host's queuing of it."""
    times: list[list[float]] = [[] for _ in launches]
    for _ in range(iters):
        for launch, found in zip(launches, times):
            start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            torch.cuda._sleep(200_000)  # ~100 us busy while the host queues the launch
            start.record()
            launch()
            end.record()
            end.synchronize()
            found.append(start.elapsed_time(end))
    return [statistics.median(found) for found in times]


def summarize(sweeps: Sequence[SegmentSweep]) -> list[dict[str, Any]]:
    """Per (scheduler, size class): among variants timed in every segment of the class, the
    ``best`` of least geometric-mean time relative to each segment's default, its ``gain``
    (1.0: none better), the segments where it ``wins`` over theirs, the commonest default."""
    classes: dict[tuple[str, str], list[SegmentSweep]] = defaultdict(list)
    for sweep in (sweep for sweep in sweeps if sweep.timed):
        classes[sweep.scheduler, sweep.size_class].append(sweep)
    choices = []
    for (scheduler, size), group in sorted(classes.items()):
        ratios = {name: math.exp(statistics.fmean(
            math.log(s.times[name] / s.times[s.default]) for s in group))
            for name in set.intersection(*(set(s.times) for s in group))}
        best = min(ratios, key=lambda name: (ratios[name], name)) if ratios else None
        choices.append(dict(
            scheduler=scheduler, size_class=size, segments=len(group), best=best,
            gain=round(1 / ratios[best], 3) if best else 1.0,
            wins=sum(s.times[best] < s.times[s.default] for s in group) if best else 0,
            default=Counter(s.default for s in group).most_common(1)[0][0]))
    return choices


def report(args: argparse.Namespace, sweeps: Sequence[SegmentSweep],
           problems: Sequence[str]) -> dict[str, Any]:
    """``--out``'s JSON: settings, every measurement (ms null: untimed; failed: why), summary."""
    measurements = [
        dict(member=s.member, segment=s.segment, scheduler=s.scheduler, size_class=s.size_class,
             label=name, params=s.params[name], default=name == s.default,
             kernel=s.kernel_of.get(name), failed=s.failed.get(name),
             ms=s.times[name] if math.isfinite(s.times.get(name, math.nan)) else None)
        for s in sweeps for name in s.params]
    return {"settings": {k: v for k, v in vars(args).items() if k != "out"},
            "device": None if args.dry_run else torch.cuda.get_device_name(),
            "problems": list(problems), "measurements": measurements,
            "summary": [] if args.dry_run else summarize(sweeps)}


TABLE_HEADER = dict(scheduler="scheduler", size_class="size class", segments="segs",
                    gain="gain", wins="wins", best="best", default="the commonest default")


def tally(found: Sequence[SegmentSweep], each: bool = False) -> str:
    """Counts, by scheduler; with ``each``, every timed segment's best and default time."""
    rejected = sum(why.startswith("generator") for s in found for why in s.failed.values())
    timed = "".join(f"; s{s.segment} {s.scheduler} best {s.times[s.best]:.4f} ms, default "
                    f"{s.times[s.default]:.4f} ms" for s in found if each and s.timed)
    schedulers = ", ".join(f"{n} {k}" for k, n in Counter(s.scheduler for s in found).items())
    return (f"{len(found)} segments swept ({schedulers}), "
            f"{sum(len(s.params) for s in found)} variants, "
            f"{sum(len(set(s.kernel_of.values())) for s in found)} distinct kernels, "
            f"{rejected} rejected by the generator, "
            f"{sum(len(s.failed) for s in found) - rejected} failed{timed}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--population", type=int, default=100, metavar="N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-elements", type=int, default=population.MIN_ELEMENTS,
                        help="elements of each large tensor of the population (2^25)")
    parser.add_argument("--iters", type=int, default=20, help="timings per kernel (median)")
    parser.add_argument("--out", type=Path, help="write the measurements and summary here")
    parser.add_argument("--schedulers", help="comma-separated: sweep only these schedulers")
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: generate and compile every variant, time nothing")
    args = parser.parse_args(argv)
    if not args.dry_run and not torch.cuda.is_available():
        print("sweep: timing needs a CUDA GPU (--dry-run compiles only)", file=sys.stderr)
        return 4
    timer = compile_only if args.dry_run else partial(time_kernels, iters=args.iters,
                                                       modules=ModuleCache())
    device, executor = ("meta", "aten") if args.dry_run else ("cuda", "auto")
    wanted = set(args.schedulers.split(",")) if args.schedulers else set(GENERATORS)
    if wanted - set(GENERATORS):
        parser.error(f"--schedulers: choose among {', '.join(GENERATORS)}")
    members = population.draw(args.population, args.seed, args.min_elements)
    sweeps, problems = [], []
    for number, member in enumerate(members, 1):
        try:
            inputs = member.make_inputs(device)
            cases = segment_cases(member.name, member.fd.fusion, inputs, executor)
            found = [sweep for case in cases if case.segment.scheduler in wanted
                     for sweep in [sweep_segment(case, timer)] if sweep is not None]
            line = f"{member.name}: {tally(found, each=True)}"
        except Exception as error:  # one fusion's failure is its line, and the JSON's
            found, line = [], f"FAILED {member.name}: {type(error).__name__}: {error}"
            problems.append(line)
        print(f"[{number}/{len(members)}] {line}", file=sys.stderr, flush=True)
        sweeps += found
        if args.out:  # after each fusion: a run cut short keeps what it measured
            args.out.write_text(json.dumps(report(args, sweeps, problems), indent=1))
    print(f"{'compiled' if args.dry_run else 'timed'}: {tally(sweeps)}; {len(problems)} "
          f"fusions failed")
    for c in [] if args.dry_run else [TABLE_HEADER, *summarize(sweeps)]:
        print(f"{c['scheduler']:<24}{c['size_class']:<48}{c['segments']:>5}{c['gain']:>7}"
              f"{c['wins']:>5}  {c['best'] or 'none timed in every segment'} ({c['default']})")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
