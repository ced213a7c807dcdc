"""How many questions, and how long, ``fusecli bisect`` takes on planted faults (CPU only).

1. Segment bisection on corpus fusions with several segments: a fault planted in one op
   (FUSECLI_INJECT_FAULT) puts the culprit in a known segment; the bound is
   2 log2(segments) + 3 questions (bisection proper plus the check of the segment alone).
2. Minimization of 200-op random fusions with one planted ``exp``: to at most 4 ops in at
   most 150 questions, counting every question (reproduction, segment bisection,
   re-verification of accepted steps, shrinking, the final check in a fresh interpreter).

Each question runs in a process of its own (``--isolate``, what the CLI does: forked from a
preloaded interpreter, or with ``--no-fork`` a new interpreter each) or in this process (the
algorithm's own cost). The final check of the minimized repro always starts a new interpreter.

    python benchmarks/bisect_efficiency.py                      # both, in this process
    python benchmarks/bisect_efficiency.py --isolate --seeds 1  # a process per question
    python benchmarks/bisect_efficiency.py --isolate --no-fork --seeds 1
    python benchmarks/bisect_efficiency.py --isolate --jobs 2 --seeds 1
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
import warnings
from pathlib import Path

from fusecli.bisect.driver import BisectOptions, bisect_path
from fusecli.bisect.random_fusion import write_random_fusion
from fusecli.runtime import FaultInjectionWarning

FUSIONS = Path(__file__).resolve().parent.parent / "fusions"
SEGMENT_CASES = [  # (fusion, planted op)
    ("reductions.yaml", "sum"),
    ("reductions.yaml", "prod"),
    ("reductions.yaml", "max"),
    ("reductions.yaml", "min"),
    ("attention_scores_mask.py", "matmul"),
    ("attention_scores_mask.py", "exp"),
    ("pad_cat.py", "pad"),
    ("silu_swiglu_linear.py", "silu"),
]


def _run(path: Path, fault: str, options: BisectOptions):
    os.environ["FUSECLI_INJECT_FAULT"] = fault
    started = time.perf_counter()
    report = bisect_path(path, options)
    return report, time.perf_counter() - started


def segment_bisection(args: argparse.Namespace, out: Path) -> None:
    print("segment bisection (bound: 2 log2(segments) + 3 questions)")
    print(f"{'fusion':<26} {'fault':<7} {'segments':>8} {'culprit':>7} {'queries':>7} "
          f"{'+repro':>6} {'bound':>5} {'seconds':>8}  alone")
    for name, fault in SEGMENT_CASES:
        options = BisectOptions(isolate=args.isolate, fork=not args.no_fork, jobs=args.jobs,
                                mode="segments", output=out / f"{Path(name).stem}_{fault}")
        report, seconds = _run(FUSIONS / name, fault, options)
        finding = report.segments
        bound = 2 * math.log2(max(finding.count, 2)) + 3
        print(f"{name:<26} {fault:<7} {finding.count:>8} {finding.index:>7} "
              f"{finding.queries:>7} {report.queries:>6} {bound:>5.1f} {seconds:>8.2f}  "
              f"{finding.fails_alone}")


def minimization(args: argparse.Namespace, out: Path) -> None:
    print("\nminimization of 200-op random fusions, one planted exp "
          "(target: <= 4 ops, <= 150 questions)")
    print(f"{'seed':>4} {'ops':>5} {'final ops':<14} {'final inputs':<22} {'queries':>7} "
          f"{'runs':>5} {'seconds':>8}  verified")
    for seed in range(args.seeds):
        source = write_random_fusion(out / f"random200_{seed}.py", num_ops=200, seed=seed)
        options = BisectOptions(isolate=args.isolate, fork=not args.no_fork, jobs=args.jobs,
                                output=out / f"random200_{seed}")
        report, seconds = _run(source, "exp", options)
        result = report.minimized
        print(f"{seed:>4} {result.ops_before:>5} {','.join(result.ops):<14} "
              f"{' '.join(result.inputs):<22} {report.queries:>7} {report.runs:>5} "
              f"{seconds:>8.2f}  {result.verified}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isolate", action="store_true",
                        help="ask every question in a fresh interpreter (the CLI default)")
    parser.add_argument("--no-fork", action="store_true",
                        help="with --isolate: a new interpreter per question")
    parser.add_argument("--jobs", type=int, default=1, help="questions asked in parallel")
    parser.add_argument("--seeds", type=int, default=5, help="random 200-op fusions")
    parser.add_argument("--skip-segments", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore", FaultInjectionWarning)
    mode = "in this process"
    if args.isolate:
        mode = "a new interpreter each" if args.no_fork else "a forked process each"
    print(f"questions: {mode}, jobs {args.jobs}, {os.cpu_count()} CPUs\n")
    with tempfile.TemporaryDirectory(prefix="fusecli-bisect-bench-") as folder:
        if not args.skip_segments:
            segment_bisection(args, Path(folder))
        minimization(args, Path(folder))


if __name__ == "__main__":
    main()
