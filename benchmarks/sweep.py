"""Heuristics from measurement: each scheduler's launch parameters swept over a population.

On the GPU machine: ``PYTHONPATH=. python3 benchmarks/sweep.py --population 100 --out F.json``.
Each fusion of ``population.draw`` runs segment by segment as ``fd.execute`` runs it; for each
kernel segment its scheduler's params at its sizes and their variants (``variant_grid``) are
generated and each distinct kernel timed alone (CUDA events, median of ``--iters``, outputs
allocated once; none where its outputs differ from the default's). The JSON has every time and
per (scheduler, size class) the variant of least geometric-mean time relative to the default,
among those timed in every segment of the class: the table printed last (``*``: chosen).
``--write-table fusecli/segment/tuning.json``: the chosen variants as the table heuristics read
(``fusecli/segment/tuning.py``, which says what is chosen), the measurements beside it; with
``--schedulers``, the other schedulers' classes are kept from the table there. The default is
always the heuristics' own (``Scheduler.heuristics``), never an earlier table's.
``--dry-run``: meta tensors, every variant generated and NVRTC-compiled. ``--from F.json``
(an earlier ``--out``): its measurements summarized again and, with ``--write-table``, written
as the table, on any machine (the settings and device are the file's). ``--add`` keeps the
table's classes this sweep does not measure: a sweep at other sizes adds its own. ``--files
PATH...`` sweeps those fusions' segments instead of the population (why one is slow; never a
table).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
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
from fusecli.segment import tuning
from fusecli.segment.result import Segment
from fusecli.segment.schedulers import REGISTRY
from fusecli.segment.segmenter import segment_fusion
from fusecli.segment.variants import knobs, label, size_class, variant_grid

sys.path.insert(0, str(Path(__file__).resolve().parent))
import population  # noqa: E402


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
                         size_class(segment.candidate, default, case.sizes), label(default))
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
    (1.0: none better), the segments where it ``wins`` over theirs, the commonest default, and
    the best's ``knobs`` (what the table records)."""
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
            default=Counter(s.default for s in group).most_common(1)[0][0],
            knobs=group[0].params.get(best)))
    return choices


def report(args: argparse.Namespace, device: str | None, sweeps: Sequence[SegmentSweep],
           problems: Sequence[str]) -> dict[str, Any]:
    """``--out``'s JSON: settings, every measurement (ms null: untimed; failed: why), summary."""
    measurements = [
        dict(member=s.member, segment=s.segment, scheduler=s.scheduler, size_class=s.size_class,
             label=name, params=s.params[name], default=name == s.default,
             kernel=s.kernel_of.get(name), failed=s.failed.get(name),
             ms=s.times[name] if math.isfinite(s.times.get(name, math.nan)) else None)
        for s in sweeps for name in s.params]
    kept = {k: v for k, v in vars(args).items()
            if k not in ("out", "write_table", "recorded", "add")}
    return {"settings": kept,
            "device": device, "problems": list(problems), "measurements": measurements,
            "summary": summarize(sweeps)}


def write_table(path: Path, args: argparse.Namespace, device: str | None,
                sweeps: Sequence[SegmentSweep], problems: Sequence[str]) -> dict[str, Any]:
    """``--write-table``: the table ``tuning.load`` reads at ``path``, with its provenance, and
    beside it (``X.measurements.json`` for ``X.json``) every measurement it came from. With
    ``--schedulers``, the other schedulers' classes and their measurements are kept from the
    table already at ``path``; with ``--add``, every class this sweep did not measure (a sweep
    at other sizes adds its classes). The earlier provenance goes under ``kept``, naming the
    schedulers; a chain of partial sweeps nests its provenances."""
    measured = report(args, device, sweeps, problems)
    beside = path.with_name(f"{path.stem}.measurements.json")
    provenance = dict(
        measured=True, device=device, population=args.population, seed=args.seed,
        min_elements=args.min_elements, iters=args.iters, schedulers=args.schedulers,
        commit=args.commit or checkout_commit(), segments=sum(s.timed for s in sweeps),
        fusions_failed=len(problems), measurements=beside.name)
    document = tuning.table_document(measured["summary"], provenance)
    add = getattr(args, "add", False)  # absent in a Namespace made by hand
    if (args.schedulers or add) and path.is_file():
        swept = set(args.schedulers.split(",")) if args.schedulers else set()
        classes = {(e["scheduler"], e["size_class"]) for e in measured["summary"]}

        def kept(entry: dict[str, Any]) -> bool:  # not this sweep's to decide
            if args.schedulers and entry["scheduler"] in swept:
                return False
            return not add or (
                (entry["scheduler"], entry["size_class"]) not in classes)

        before = json.loads(path.read_text(encoding="utf-8"))
        before_beside = path.with_name(before["provenance"]["measurements"])
        others = [m for m in json.loads(before_beside.read_text(encoding="utf-8"))["measurements"]
                  if kept(m)]
        measured["measurements"] += others
        for part in ("choices", "defaults_kept"):
            document[part] = sorted(
                [*document[part], *(e for e in before[part] if kept(e))],
                key=lambda e: (e["scheduler"], e["size_class"]))
        # the earlier table's provenance whole: its own "kept" names where the classes it
        # kept in turn came from
        document["provenance"]["kept"] = {
            **before["provenance"], "schedulers_kept": sorted({m["scheduler"] for m in others})}
    path.write_text(json.dumps(document, indent=1) + "\n")
    beside.write_text(json.dumps(measured, separators=(",", ":")) + "\n")
    return document


def recorded(path: Path) -> tuple[dict[str, Any], str | None, list[SegmentSweep], list[str]]:
    """An ``--out`` file read back: its settings, device, sweeps and problems."""
    document = json.loads(path.read_text(encoding="utf-8"))
    sweeps: dict[tuple[str, int, str], SegmentSweep] = {}
    for m in document["measurements"]:  # the size class too: sweeps at other sizes, merged
        sweep = sweeps.setdefault((m["member"], m["segment"], m["size_class"]), SegmentSweep(
            m["member"], m["segment"], m["scheduler"], m["size_class"], ""))
        sweep.params[m["label"]] = m["params"]
        if m["default"]:
            sweep.default = m["label"]
        if m["kernel"] is not None:
            sweep.kernel_of[m["label"]] = m["kernel"]
        if m["ms"] is not None:
            sweep.times[m["label"]] = m["ms"]
        if m["failed"] is not None:
            sweep.failed[m["label"]] = m["failed"]
    return document["settings"], document["device"], list(sweeps.values()), document["problems"]


def file_members(paths: Sequence[str]) -> list[Any]:
    """The fusions of ``paths`` as population members: a name, the definition, and inputs
    made on a device (the loaded ones moved there, strides kept)."""
    from fusecli.load import discover, load_path

    def maker(inputs: list[Any]) -> Callable[[str], list[Any]]:
        return lambda device: [x.to(device) if isinstance(x, torch.Tensor) else x
                               for x in inputs]

    return [population.Member(loaded.name, "file", loaded.fd, maker(list(loaded.inputs)),
                              str(path))
            for path in discover([Path(p) for p in paths])
            for loaded in load_path(path, device="cpu")]


def checkout_commit() -> str | None:
    """The commit of this checkout, ``-dirty`` where tracked files changed; None outside git."""
    def git(*words: str) -> str:
        return subprocess.run(["git", *words], cwd=Path(__file__).resolve().parent,
                              capture_output=True, text=True, check=True).stdout.strip()
    try:
        head, changed = git("rev-parse", "HEAD"), git("status", "--porcelain", "-uno")
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}-dirty" if changed else head


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
    parser.add_argument("--write-table", type=Path, metavar="PATH",
                        help="write the chosen table (fusecli/segment/tuning.json) and its "
                             "measurements (PATH's stem + .measurements.json); with "
                             "--schedulers, the others' classes are kept from PATH")
    parser.add_argument("--files", nargs="+", metavar="PATH",
                        help="sweep the segments of these fusions (repros, YAML, folders) "
                             "instead of the population: to see why one is slow, not to "
                             "write a table")
    parser.add_argument("--add", action="store_true",
                        help="with --write-table: keep PATH's classes this sweep does not "
                             "measure (a sweep at other sizes, --min-elements, adds its own)")
    parser.add_argument("--from", dest="recorded", type=Path, metavar="F.json",
                        help="summarize an earlier --out file's measurements (no GPU)")
    parser.add_argument("--commit", help="the table's provenance where this is no git checkout "
                                         "(default: git rev-parse HEAD)")
    args = parser.parse_args(argv)
    if args.write_table and args.dry_run:
        parser.error("--write-table: a dry run times nothing to choose from")
    if args.write_table and args.files:
        parser.error("--write-table: a table comes from the population, not from chosen files")
    if args.recorded is not None:
        settings, gpu, sweeps, problems = recorded(args.recorded)
        for name, value in settings.items():  # the sweep's own, as --write-table records them
            if name not in ("recorded", "dry_run", "add"):
                setattr(args, name, value)
        return finish(args, gpu, sweeps, problems)
    if not args.dry_run and not torch.cuda.is_available():
        print("sweep: timing needs a CUDA GPU (--dry-run compiles only)", file=sys.stderr)
        return 4
    timer = compile_only if args.dry_run else partial(time_kernels, iters=args.iters,
                                                       modules=ModuleCache())
    device, executor = ("meta", "aten") if args.dry_run else ("cuda", "auto")
    wanted = set(args.schedulers.split(",")) if args.schedulers else set(GENERATORS)
    if wanted - set(GENERATORS):
        parser.error(f"--schedulers: choose among {', '.join(GENERATORS)}")
    members = (file_members(args.files) if args.files
               else population.draw(args.population, args.seed, args.min_elements))
    gpu = None if args.dry_run else torch.cuda.get_device_name()
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
            args.out.write_text(json.dumps(report(args, gpu, sweeps, problems), indent=1))
    return finish(args, gpu, sweeps, problems)


def finish(args: argparse.Namespace, gpu: str | None, sweeps: list[SegmentSweep],
           problems: list[str]) -> int:
    """The tally, the summary table and, with ``--write-table``, the table written."""
    print(f"{'compiled' if args.dry_run else 'timed'}: {tally(sweeps)}; {len(problems)} "
          f"fusions failed")
    summary = [] if args.dry_run else summarize(sweeps)
    for c in [TABLE_HEADER, *summary] if summary else []:
        mark = "*" if c is not TABLE_HEADER and tuning.chosen(c) else " "
        print(f"{mark}{c['scheduler']:<23}{c['size_class']:<48}{c['segments']:>5}{c['gain']:>7}"
              f"{c['wins']:>5}  {c['best'] or 'none timed in every segment'} ({c['default']})")
    if args.write_table:
        document = write_table(args.write_table, args, gpu, sweeps, problems)
        print(f"wrote {args.write_table}: {len(document['choices'])} choices of "
              f"{len(summary)} classes (gain >= {tuning.MIN_GAIN}, wins in most segments)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
