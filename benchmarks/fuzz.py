"""Fuzz fusecli with random fusions from every op family; each one's failure is its record.

Generates ``--n`` fusions (``fusecli.bisect.random_fusion.fuzz_fusion``, seeds ``--seed`` ..
``--seed + n - 1``), runs each as ``fusecli run`` does (segment, execute on ``--executor``,
compare every output with the reference within the run's tolerance) in worker processes, and
prints a table: ran / passed / mismatched / errors / internal errors, and per op family. For
each failure it writes the fusion as a repro (``--out``) and minimizes the first few with
``fusecli bisect``'s minimizer, in this process. Exit 0 only when every fusion passed: the
generator builds valid fusions only, so an error of any kind is a bug.

    python benchmarks/fuzz.py --n 10000 --jobs 2                # the CPU run (ATen executor)
    python benchmarks/fuzz.py --n 1000 --executor cupy          # on a GPU: generated kernels
    python benchmarks/fuzz.py --n 300 --executor emulated       # kernels on the CPU emulator
    python benchmarks/fuzz.py --n 1 --seed 388                  # one seed, to reproduce it
    python benchmarks/fuzz.py --n 10000 --json /tmp/fuzz.json   # the records as JSON
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import sys
import time
import traceback
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import torch

from fusecli.app.pipeline import RunOptions, internal_error_outcome, run_loaded, time_limit
from fusecli.bisect.random_fusion import FAMILIES, fuzz_fusion
from fusecli.errors import FusecliError, MissingEnvironmentError

STATUSES = ("pass", "mismatch", "error", "internal")


def use_emulated_kernels() -> None:
    """``--executor emulated``: the CuPy executor's generated kernels, run on the CPU by the
    host emulator (fusecli.codegen.emulate, g++) where CuPy and a GPU would run them."""
    import torch

    from fusecli.codegen import emulate
    from fusecli.runtime import registry
    from fusecli.runtime.cupy_executor import CupyExecutor

    class EmulatingExecutor(CupyExecutor):
        def _check_environment(self) -> None:
            pass

        def _device(self, inputs, ctx) -> torch.device:
            return torch.device("cpu")

        def _load(self, kernel, device):
            return kernel

        def _launch(self, segment, prepared, values, device) -> None:
            emulate.emulate(prepared.kernel, values)

    registry.install("cupy", EmulatingExecutor(poison=True))


def run_one(seed: int, options: RunOptions, max_ops: int) -> dict:
    on_gpu = options.executor == "cupy" and options.device != "cpu"
    device = "cuda" if on_gpu and torch.cuda.is_available() else "cpu"
    """One seed's record: status, error, families, and how its segments ran."""
    started = time.perf_counter()
    record = {"seed": seed, "families": [], "ops": [], "segments": 0, "kernels": 0}
    try:
        made = fuzz_fusion(seed, max_ops=max_ops, device=device)
    except Exception as error:  # the generator itself: a bug too
        record.update(status="internal", error=f"generator: {type(error).__name__}: {error}",
                      detail=traceback.format_exc())
        return record
    record["families"], record["ops"] = list(made.families), list(made.ops)
    try:
        with time_limit(options.timeout, f"seed {seed}"):
            outcome = run_loaded(made.loaded, options)
    except FusecliError as error:  # the time limit
        record.update(status="error", error=str(error), detail=None)
        return record
    except Exception as error:
        outcome = internal_error_outcome(made.loaded.name, made.loaded.name, error)
    status = outcome.status
    if status == "error" and (outcome.error or "").startswith("internal error"):
        status = "internal"
    record.update(
        status=status, error=outcome.error, detail=outcome.detail,
        segments=len(outcome.segments),
        kernels=sum(1 for s in outcome.segments if s.executor == "cupy"),
        fallbacks=sorted({s.fallback for s in outcome.segments if s.fallback}),
        seconds=time.perf_counter() - started,
    )
    if status == "mismatch":
        bad = [d for d in outcome.outputs if not d.ok]
        record["error"] = "; ".join(
            f"output {i}: max abs err {d.max_abs_err:.3g}" for i, d in enumerate(bad)
        )
    return record


def run_chunk(
    seeds: list[int], options: RunOptions, max_ops: int, emulated: bool = False
) -> list[dict]:
    warnings.simplefilter("ignore")  # var() with too few elements, and such: expected here
    if emulated:
        use_emulated_kernels()
    return [run_one(seed, options, max_ops) for seed in seeds]


def run_all(args: argparse.Namespace, options: RunOptions) -> list[dict]:
    seeds = list(range(args.seed, args.seed + args.n))
    emulated = args.executor == "emulated"
    if args.jobs <= 1:
        return _with_progress(
            seeds, (run_chunk([s], options, args.max_ops, emulated)[0] for s in seeds)
        )
    # CUDA does not survive fork: workers for the GPU start fresh interpreters
    method = "fork" if args.executor in ("aten", "emulated") else "spawn"
    chunks = [seeds[i:i + args.chunk] for i in range(0, len(seeds), args.chunk)]
    records: list[dict] = []
    pending = chunks
    while pending:
        broken: list[list[int]] = []
        context = multiprocessing.get_context(method)
        with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
            futures = {
                pool.submit(run_chunk, c, options, args.max_ops, emulated): c for c in pending
            }
            for future in as_completed(futures):
                try:
                    records.extend(future.result())
                except BrokenProcessPool:  # a worker died (a crash in C): retry one by one
                    broken.append(futures[future])
                _progress(len(records), len(seeds))
        pending = []
        for chunk in broken:
            if len(chunk) == 1:
                records.append({"seed": chunk[0], "status": "internal", "families": [],
                                "ops": [], "segments": 0, "kernels": 0,
                                "error": "the worker process died running this fusion"})
            else:
                pending.extend([s] for s in chunk)
    return sorted(records, key=lambda r: r["seed"])


def _with_progress(seeds: list[int], records) -> list[dict]:
    done = []
    for record in records:
        done.append(record)
        _progress(len(done), len(seeds))
    return done


def _progress(done: int, total: int) -> None:
    step = max(total // 20, 1)
    if done % step == 0 or done == total:
        print(f"  {done}/{total}", file=sys.stderr, flush=True)


def write_failures(failures: list[dict], args: argparse.Namespace, options: RunOptions) -> None:
    """Each failure as a repro under ``--out``; the first ``--minimize`` minimized in-process."""
    from fusecli.bisect.driver import BisectOptions, bisect_path
    from fusecli.bisect.repro import write_repro

    for index, record in enumerate(failures):
        if record["error"] and record["error"].startswith("generator"):
            continue
        made = fuzz_fusion(record["seed"], max_ops=args.max_ops)
        directory = args.out / f"seed_{record['seed']}"
        header = [f"fuzz seed {record['seed']}: {record['status']}: {record['error']}"]
        py_path, _ = write_repro(made.loaded, directory, "repro", header)
        record["repro"] = str(py_path)
        if index >= args.minimize:
            continue
        try:
            report = bisect_path(py_path, BisectOptions(
                run=options, mode="minimize", isolate=False, output=directory / "bisect",
                max_queries=300,
            ))
            minimized = report.minimized
            record["minimized"] = str(minimized.repro_py) if minimized else None
        except Exception as error:  # minimization is a help, not the verdict
            record["minimized"] = f"not minimized: {type(error).__name__}: {error}"


def print_table(records: list[dict], seconds: float, executor: str) -> None:
    counts = collections.Counter(r["status"] for r in records)
    print(f"\nfuzz: {len(records)} random fusions, executor {executor}, {seconds:.1f} s "
          f"({1000 * seconds / max(len(records), 1):.1f} ms each)")
    print(f"ran {len(records)}  " + "  ".join(f"{s} {counts.get(s, 0)}" for s in STATUSES))
    segments = sum(r["segments"] for r in records)
    kernels = sum(r["kernels"] for r in records)
    print(f"segments {segments}, on generated kernels {kernels}")
    print(f"\n{'family':<10} {'fusions':>8} {'passed':>8} {'failed':>7}")
    for family in FAMILIES:
        using = [r for r in records if family in r["families"]]
        passed = sum(1 for r in using if r["status"] == "pass")
        print(f"{family:<10} {len(using):>8} {passed:>8} {len(using) - passed:>7}")
    failures = [r for r in records if r["status"] != "pass"]
    if failures:
        print(f"\n{len(failures)} failure(s) (rerun one: python benchmarks/fuzz.py --n 1 "
              "--seed SEED):")
    for record in failures[:50]:
        print(f"  seed {record['seed']}: {record['status']}: {record['error']}")
        for key in ("repro", "minimized"):
            if record.get(key):
                print(f"      {key}: {record[key]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument("--executor", choices=("aten", "cupy", "auto", "emulated"),
                        default="aten", help="emulated: generated kernels on the CPU (g++)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=100, help="seeds per worker task")
    parser.add_argument("--max-ops", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per fusion")
    parser.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    parser.add_argument("--minimize", type=int, default=5, help="failures to minimize")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    executor = "cupy" if args.executor == "emulated" else args.executor
    device = "cpu" if args.executor == "emulated" else "auto"
    options = RunOptions(executor=executor, device=device, timeout=args.timeout)
    if args.executor == "cupy":
        from fusecli.runtime.registry import executor_named

        try:
            executor_named("cupy")
        except MissingEnvironmentError as error:
            print(f"fuzz: {error}", file=sys.stderr)
            return error.exit_code
    started = time.perf_counter()
    try:
        records = run_all(args, options)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    seconds = time.perf_counter() - started
    failures = [r for r in records if r["status"] != "pass"]
    if args.executor == "emulated":
        use_emulated_kernels()  # for the minimizer, which asks in this process
    write_failures(failures, args, options)
    print_table(records, seconds, args.executor)
    if args.json:
        args.json.write_text(json.dumps({
            "n": args.n, "seed": args.seed, "executor": args.executor, "seconds": seconds,
            "counts": dict(collections.Counter(r["status"] for r in records)),
            "records": [r for r in records if r["status"] != "pass"],
        }, indent=1, default=str))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
