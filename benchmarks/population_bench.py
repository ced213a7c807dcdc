"""``vs_nvfuser.py --population N --seed S``: fusecli against real nvFuser on random fusions.

Draws the population (``population.py``), then per fusion, in one process on one GPU: times
fusecli's and nvFuser's ``fd.execute`` taking turns call by call (``vs_nvfuser.interleaved_ms``:
median CUDA-event time of a warm call), eager torch op by op (fusecli's reference interpreter,
``run_reference``: the fusion as eager torch runs it) and, with ``--compile``, that under
``torch.compile``. It prints the geometric mean of nvFuser's time over fusecli's (above 1:
fusecli is faster), their distribution, every fusion's row, and the ten worst with their
segments and why each is slow: segments that fell back to ATen and why, more kernels than
nvFuser launches, slower kernels (device time from torch's profiler) or host time, outputs
copied where nvFuser returns views. ``--dry-run`` only draws and prints the population (no
GPU needed); without a GPU or nvFuser the run exits 4 saying what is missing.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import vs_nvfuser as tools
from population import Member, draw, largest_tensor

from fusecli.reference import run_reference
from fusecli.runtime.segmented import run_fusion

WORST = 10
BUCKETS = (0.5, 0.8, 0.95, 1.05, 1.25)  # edges of the ratio histogram


@dataclass
class Result:
    name: str
    summary: str
    ms: dict[str, float | None] = field(default_factory=dict)  # per engine
    host_us: dict[str, float | None] = field(default_factory=dict)  # host time of a call
    moved_bytes: int = 0
    segments: list[str] = field(default_factory=list)  # "pointwise on cupy", ...
    fallbacks: list[str] = field(default_factory=list)
    copied_views: int = 0  # outputs fusecli copies that nvFuser returns as views
    compile_s: float | None = None  # --compile: torch.compile's own time (in this process)
    note: str = ""
    why: list[str] = field(default_factory=list)  # the worst ten: why it is slow
    # where torch.compile beats nvFuser and fusecli: each engine's device time and kernels
    kernels: dict[str, str] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        ours, theirs = self.ms.get("fusecli"), self.ms.get("nvfuser")
        return theirs / ours if ours and theirs else None


def missing_environment() -> str | None:
    """What a measured run lacks, in a sentence; None when CUDA and nvFuser are there."""
    if not torch.cuda.is_available():
        return ("vs_nvfuser --population needs a CUDA device, and torch sees none "
                "(--dry-run draws and prints the population without one)")
    nvfuser, missing = tools.nvfuser_module()
    if nvfuser is None:
        return (f"vs_nvfuser --population needs real nvFuser (nvfuser_direct): {missing}; "
                "on the GPU machine: . .nvfuser/activate.sh")
    return None


def run_population(args: Any) -> int:
    members = draw(args.population, args.seed, args.min_elements)
    if getattr(args, "members", None):  # a part of the population, by name
        wanted = [part.strip() for part in args.members.split(",") if part.strip()]
        members = [m for m in members if any(part in m.name for part in wanted)]
    if args.dry_run:
        print_population(members, args)
        return 0
    missing = missing_environment()
    if missing is not None:
        print(missing, file=sys.stderr)
        return 4
    nvfuser, _ = tools.nvfuser_module()
    ahead = None
    if args.compile:  # in child processes first: in parallel, and a crash ends one of them
        from precompile import child_command, precompile

        command = child_command(args.population, args.seed, args.min_elements)
        ahead = precompile([m.name for m in members], command, args.compile_workers)
        print(ahead.summary(), file=sys.stderr, flush=True)
        if getattr(args, "compile_only", False):
            print(ahead.summary())
            return 0
    results = []
    for member in members:
        crashed = ahead.crashed.get(member.name) if ahead else None
        results.append(measure(member, nvfuser, args, crashed))
        compiled = results[-1].ms.get("compile")
        print(f"measured {member.name}: {_ratio_text(results[-1].ratio)}"
              + (f", torch.compile {compiled:.3f} ms" if compiled else ""),
              file=sys.stderr, flush=True)
        _write_json(args, results)  # after each member: a run cut short keeps what it measured
        torch.cuda.empty_cache()
    worst = sorted((r for r in results if r.ratio is not None), key=lambda r: r.ratio)[:WORST]
    for result in worst:
        member = next(m for m in members if m.name == result.name)
        result.why = explain(member, result, nvfuser)
    print_report(results, worst, args)
    if ahead:
        print(ahead.summary())
    _write_json(args, results)
    return 0


def _write_json(args: Any, results: list[Result]) -> None:
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "min_elements": args.min_elements,
                                         "results": [asdict(r) for r in results]}, indent=1))


def print_population(members: list[Member], args: Any) -> None:
    print(f"population of {len(members)} fusions (seed {args.seed}, large tensors of at "
          f"least {args.min_elements} elements)")
    for member in members:
        inputs = member.make_inputs("meta" if member.source == "template" else "cpu")
        outputs = sum(1 for o in member.fd.fusion.outputs if o.alias_input is None)
        print(f"{member.name:<28} {member.source:<9} largest {largest_tensor(inputs):>10} "
              f"outputs {outputs}  {member.summary}")


# -- measuring ------------------------------------------------------------------------------------


def measure(member: Member, nvfuser: Any, args: Any, crashed: str | None = None) -> Result:
    """One member's row; ``crashed``: how compiling it ahead ended its process (it is not
    compiled again here)."""
    result = Result(member.name, member.summary)
    inputs = member.make_inputs("cuda")
    fd = member.fd
    try:
        outputs = fd.execute(inputs)
        _, run = run_fusion(fd.fusion, inputs)
    except Exception as error:  # fusecli's failure is the row's note
        result.note = f"fusecli: {_first_line(error)}"
        return result
    result.moved_bytes = tools.moved_bytes(inputs, outputs)
    result.segments = [f"{s.scheduler} on {s.executor}" for s in run.segments]
    result.fallbacks = [f"segment {s.id} ({s.scheduler}): {s.fallback}"
                        for s in run.segments if s.fallback]
    nv_fd = None
    try:
        nv_fd = tools.nvfuser_definition(fd, member.name.replace(" ", "_"), inputs, nvfuser)
        nv_outputs = nv_fd.execute(inputs)
        result.copied_views = _views(nv_outputs, inputs) - _views(outputs, inputs)
    except Exception as error:  # nvFuser's own failure is the row's note
        nv_fd, result.note = None, f"nvFuser: {_first_line(error)}"
    runs = [lambda: fd.execute(inputs)] + ([lambda: nv_fd.execute(inputs)] if nv_fd else [])
    timed = tools.interleaved_ms(runs, args.iters)
    result.ms["fusecli"] = timed[0]
    result.ms["nvfuser"] = timed[1] if nv_fd else None
    hosted = host_ms(runs, args.iters)
    result.host_us["fusecli"] = 1e3 * hosted[0]
    result.host_us["nvfuser"] = 1e3 * hosted[1] if nv_fd else None

    def eager(*tensors):
        return run_reference(fd.fusion, list(tensors)).outputs

    result.ms["eager"] = tools.median_ms(lambda: eager(*inputs), args.iters)
    if args.compile and crashed:
        result.note = "; ".join(filter(None, [result.note, "torch.compile: compiling it "
                                              f"ended the compiling process ({crashed})"]))
    elif args.compile:
        try:
            started = time.perf_counter()
            compiled = tools.compiled_graph(eager, inputs)
            result.compile_s = time.perf_counter() - started
            result.ms["compile"] = tools.median_ms(lambda: compiled(*inputs), args.iters)
        except Exception as error:  # make_fx or Inductor failed: say so
            result.ms["compile"] = None
            result.note = "; ".join(filter(None, [result.note,
                                                  f"torch.compile: {_first_line(error)}"]))
        else:  # where it wins: what each engine runs on the device, for the summary
            if compile_wins(result):
                result.kernels = {engine: _device_line(run) for engine, run in (
                    ("fusecli", runs[0]), ("nvFuser", runs[1]),
                    ("torch.compile", lambda: compiled(*inputs)))}
    return result


def compile_wins(result: Result) -> bool:
    """Whether torch.compile beats nvFuser on this member and fusecli does not beat it: the
    members whose kernels the compile summary lists."""
    ours, theirs, compiled = (result.ms.get(k) for k in ("fusecli", "nvfuser", "compile"))
    return bool(ours and theirs and compiled) and compiled < theirs and ours > compiled


def _device_line(run: Any) -> str:
    try:
        device_ms, listed = tools.device_profile(run)
    except Exception as error:  # the profiler's failure is the line, not the member's end
        return f"not profiled: {_first_line(error)}"
    return f"device {device_ms * 1e3:.0f} us: {listed or 'no kernel'}"


def host_ms(runs: list[Any], iters: int) -> list[float]:
    """Each run's median host time of one warm call started on an idle device (the time until
    ``fd.execute`` returns, its launches queued, not waited for), the runs taking turns: the
    part of the CUDA-event time that is not the kernels'."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(iters):
        for run, kept in zip(runs, times):
            torch.cuda.synchronize()
            started = time.perf_counter()
            run()
            kept.append((time.perf_counter() - started) * 1e3)
    torch.cuda.synchronize()
    return [statistics.median(kept) for kept in times]


def _views(outputs: list[Any], inputs: list[Any]) -> int:
    """How many of ``outputs`` share memory with an input."""
    storages = {x.untyped_storage().data_ptr() for x in inputs if isinstance(x, torch.Tensor)}
    return sum(1 for out in outputs if isinstance(out, torch.Tensor)
               and out.untyped_storage().data_ptr() in storages)


def explain(member: Member, result: Result, nvfuser: Any) -> list[str]:
    """Why fusecli is slower than nvFuser on this fusion, from what can be measured."""
    why = [f"fell back to ATen: {reason}" for reason in result.fallbacks]
    if result.copied_views > 0:
        why.append(f"copies {result.copied_views} output(s) nvFuser returns as views")
    inputs = member.make_inputs("cuda")
    fd = member.fd
    ours_ms, ours = tools.device_profile(lambda: fd.execute(inputs))
    nv_fd = tools.nvfuser_definition(fd, member.name.replace(" ", "_"), inputs, nvfuser)
    theirs_ms, theirs = tools.device_profile(lambda: nv_fd.execute(inputs))
    ours_count, theirs_count = (len(listed.split("; ")) if listed else 0
                                for listed in (ours, theirs))
    if ours_count > theirs_count:
        why.append(f"{ours_count} distinct kernels per call, nvFuser {theirs_count}")
    if theirs_ms and ours_ms > 1.1 * theirs_ms:
        why.append(f"kernels slower: device {ours_ms:.3f} ms vs nvFuser's {theirs_ms:.3f} ms")
    wall = result.ms.get("fusecli") or 0.0
    if ours_ms and wall > 1.5 * ours_ms:
        why.append(f"host time: {wall:.3f} ms per call for {ours_ms:.3f} ms on the device")
    why.append(f"fusecli kernels: {ours or 'none'}")
    why.append(f"nvFuser kernels: {theirs or 'none'}")
    return why


# -- reporting ------------------------------------------------------------------------------------


def print_report(results: list[Result], worst: list[Result], args: Any) -> None:
    ratios = [r.ratio for r in results if r.ratio is not None]
    print(f"\nfusecli vs real nvFuser on {len(results)} fusions (seed {args.seed}): nvFuser's "
          f"time over fusecli's per warm fd.execute (median of {args.iters}"
          f"{', each after an L2 flush' if tools.COLD_L2 else ', L2 not flushed'}; "
          "above 1: fusecli is faster)")
    if not ratios:
        print("no fusion was measured on both")
    else:
        geomean = math.exp(statistics.fmean(math.log(r) for r in ratios))
        print(f"geometric mean {geomean:.2f}x over {len(ratios)} fusions "
              f"({len(results) - len(ratios)} not measured on both)")
        print("distribution: " + "  ".join(
            f"{label} {value:.2f}" for label, value in _quantiles(ratios)))
        print("histogram: " + "  ".join(
            f"{label}: {count}" for label, count in _histogram(ratios)))
        both = [r for r in results if r.host_us.get("fusecli") and r.host_us.get("nvfuser")]
        if both:
            print("host time of a warm call (median over fusions, us): fusecli "
                  f"{statistics.median(r.host_us['fusecli'] for r in both):.1f}, nvFuser "
                  f"{statistics.median(r.host_us['nvfuser'] for r in both):.1f}")
    if args.compile:
        print_compile_summary(results)
    columns = ["fusecli", "nvfuser", "eager"] + (["compile"] if args.compile else [])
    print(f"\n{'fusion':<30}" + "".join(f"{c + ' ms':>12}" for c in columns)
          + f"{'ratio':>8}{'GB/s':>8}{'host us':>14}  segments")
    for r in results:
        cells = "".join(f"{r.ms[c]:>12.3f}" if r.ms.get(c) else f"{'-':>12}" for c in columns)
        gbps = r.moved_bytes / r.ms["fusecli"] / 1e6 if r.ms.get("fusecli") else 0.0
        host = "/".join(f"{r.host_us[e]:.0f}" if r.host_us.get(e) else "-"
                        for e in ("fusecli", "nvfuser"))
        print(f"{r.name[:30]:<30}{cells}{_ratio_text(r.ratio):>8}{gbps:>8.0f}{host:>14}  "
              f"{', '.join(r.segments)}" + (f"  [{r.note}]" if r.note else ""))
    print(f"\nthe {len(worst)} worst")
    for r in worst:
        print(f"{r.name} {_ratio_text(r.ratio)}: {r.summary}")
        print(f"    segments: {', '.join(r.segments)}")
        for reason in r.why:
            print(f"    {reason}")


def print_compile_summary(results: list[Result]) -> None:
    """torch.compile's time over fusecli's (geometric mean), and the fusions where it beats
    nvFuser: whether fusecli beats it there too."""
    timed = [r for r in results if r.ms.get("compile") and r.ms.get("fusecli")]
    if not timed:
        print("torch.compile: no fusion timed")
        return
    geomean = math.exp(statistics.fmean(math.log(r.ms["compile"] / r.ms["fusecli"])
                                        for r in timed))
    took = [r.compile_s for r in timed if r.compile_s is not None]
    print(f"torch.compile's time over fusecli's: geometric mean {geomean:.2f}x over "
          f"{len(timed)} fusions (compiled in this run in a median "
          f"{statistics.median(took):.1f} s each)")
    ahead = [r for r in timed if r.ms.get("nvfuser") and r.ms["compile"] < r.ms["nvfuser"]]
    behind = [r for r in ahead if compile_wins(r)]
    print(f"torch.compile beats nvFuser on {len(ahead)}; fusecli beats torch.compile on "
          f"{len(ahead) - len(behind)} of those")
    for r in behind:
        print(f"    not {r.name}: fusecli {r.ms['fusecli']:.3f} ms, torch.compile "
              f"{r.ms['compile']:.3f} ms, nvFuser {r.ms['nvfuser']:.3f} ms")
        for engine, line in r.kernels.items():
            print(f"        {engine} {line}")


def _quantiles(ratios: list[float]) -> list[tuple[str, float]]:
    ordered = sorted(ratios)

    def at(fraction: float) -> float:
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

    return [("min", ordered[0]), ("p10", at(0.1)), ("p25", at(0.25)), ("median", at(0.5)),
            ("p75", at(0.75)), ("p90", at(0.9)), ("max", ordered[-1])]


def _histogram(ratios: list[float]) -> list[tuple[str, int]]:
    edges = (0.0, *BUCKETS, math.inf)
    return [(f"<{high}" if low == 0 else f">={low}" if high == math.inf else f"{low}-{high}",
             sum(1 for r in ratios if low <= r < high)) for low, high in zip(edges, edges[1:])]


def _ratio_text(ratio: float | None) -> str:
    return f"{ratio:.2f}x" if ratio is not None else "-"


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:100]
