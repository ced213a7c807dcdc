"""What a warm ``fd.execute`` runs on the GPU path, per fusion, on a machine without a GPU.

    PYTHONPATH=. python3 benchmarks/warm_audit.py [--corpus] [--population N] [--seed S]
                                                  [--source WORDS] [--slow-only] [--time WORDS]

The CuPy executor runs each fusion twice as on the GPU, but kernels are neither compiled nor
launched: a stand-in module gives each kernel an address, the driver's launch does nothing and
outputs are zero-filled CPU tensors. Segmentation, code generation, launch planning and the
compiled warm run (``runtime.warm``) are the GPU path's own, so the warm run's source is the
one the GPU machine replays. Per fusion it prints the warm run's steps: ``P`` a plain launch
(``runtime.plain_launch``), ``L`` a launch's general call (its parameters read from the
environment), ``T`` a torch call on tensors (an ATen segment's op, a view through its ATen
entry), ``V`` a view made by its torch method (``runtime.warm_views``), ``N`` a number each
call computes, ``E`` an expr run on the environment, then how it returns: ``locals`` (the
values as they are), ``made`` (the collection plan's recipes) or ``collected`` (the full run's
``collect_outputs``). ``L``, ``E``, ``collected`` and a run kept with the whole environment
cost host time a plain call does not; ``--slow-only`` lists only fusions with one of them, or
with no compiled run at all. Population members are drawn at a tenth of their size (their
structure, not their bytes, decides the steps). ``--source`` prints the runs of the fusions
whose names contain one of the comma-separated words. ``--time WORDS`` times instead the warm
``fd.execute`` of the fusions named, each allocation made once and the launch a stand-in, so
that only the call's Python is timed; run from this checkout with ``PYTHONPATH`` naming
another's, it times that one's (back to checkouts of 2026-12-07, whose driver is ``_driver``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import re
import sys
import timeit
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("fusecli") is None:  # PYTHONPATH may name another checkout's
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fusecli.runtime import launch as launch_module  # noqa: E402
from fusecli.runtime import registry  # noqa: E402
from fusecli.runtime.cupy_executor import CupyExecutor  # noqa: E402
from fusecli.runtime.segmented import execute  # noqa: E402


class AuditExecutor(CupyExecutor):
    """The CuPy executor with a stand-in device: every kernel gets an address and plans its
    launch as on the GPU; nothing is compiled or launched."""

    def _check_environment(self) -> None:
        pass

    def _device(self, inputs: Any, ctx: Any) -> torch.device:
        return torch.device("cuda", 0)

    def _load(self, kernel: Any, device: torch.device) -> Any:
        return types.SimpleNamespace(ptr=1)


def _on_cpu(function: Any, kept: dict | None) -> Any:
    """``function`` on the CPU, its memory zeroed; with ``kept``, the same tensor again for the
    same arguments (allocation out of a timing: only the warm call's Python is timed)."""
    def made(*arguments: Any, device: Any = None, **options: Any) -> torch.Tensor:
        if kept is None:
            return function(*arguments, **options).zero_()
        key = (function, arguments, options.get("dtype"))
        found = kept.get(key)
        if found is None:
            found = kept[key] = function(*arguments, **options).zero_()
        return found
    return made


@contextlib.contextmanager
def stand_in_device(reuse: bool = False) -> Iterator[None]:
    """Allocations on the CPU (zeroed; with ``reuse``, one tensor per shape made once), the
    driver's launch and torch's stream stand-ins, and the AuditExecutor installed as
    ``cupy``. The driver is ``cuda_driver`` (``_driver`` in checkouts before 2026-12-07)."""
    saved = {name: getattr(torch, name) for name in ("empty", "empty_strided", "zeros")}
    like = torch.Tensor.new_empty_strided
    stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    named = "cuda_driver" if hasattr(launch_module, "cuda_driver") else "_driver"
    driver = getattr(launch_module, named)
    previous = registry._made.get("cupy")
    kept: dict | None = {} if reuse else None
    try:
        for name, function in saved.items():
            setattr(torch, name, _on_cpu(function, kept))
        torch.Tensor.new_empty_strided = lambda self, size, stride: torch.empty_strided(
            size, stride, dtype=self.dtype)
        torch._C._cuda_getCurrentRawStream = lambda index: 0
        setattr(launch_module, named,
                lambda: types.SimpleNamespace(launchKernel=lambda *a: None))
        registry.install("cupy", AuditExecutor())
        yield
    finally:
        for name, function in saved.items():
            setattr(torch, name, function)
        torch.Tensor.new_empty_strided = like
        if stream is None:
            del torch._C._cuda_getCurrentRawStream
        else:
            torch._C._cuda_getCurrentRawStream = stream
        setattr(launch_module, named, driver)
        if previous is None:
            registry._made.pop("cupy", None)
        else:
            registry._made["cupy"] = previous


_STEPS = (("P", re.compile(r"= P\d+\(")), ("L", re.compile(r"L\d+\(S\d+")),
          ("E", re.compile(r"\.run_expr\(")), ("N", re.compile(r"^v\d+ = (PY\(|INT64|FLOAT32|"
                                                               r"float\(|\(v)")),
          ("T", re.compile(r"= (F|A)\d+\(|\.to\(C\d+\)$")),
          ("V", re.compile(r"^v\d+ = v\d+(\[K\d+\]|\.(reshape|permute|expand)\(K\d+\))?$")))


def steps(source: str) -> tuple[str, str, bool]:
    """(the steps in order, how the run returns, whether it keeps the whole environment)."""
    found = []
    for line in source.splitlines()[1:]:
        line = line.strip()
        if line.startswith("if ") and ".to(C" in line:
            continue  # a cast where the step's result is not the dtype asked: no call
        for letter, pattern in _STEPS:
            if pattern.search(line):
                found.append(letter)
                break
    last = source.rstrip().splitlines()[-1]
    returned = ("collected" if "O" in last and "(U" in last
                else "made" if re.search(r"return \[.*r\d", last) else "locals")
    return "".join(found), returned, "env = BASE.copy()" in source


def audit(name: str, fd: Any, inputs: list[Any], show: bool) -> tuple[str, bool]:
    """One line for the fusion, and whether it shows a slow construct."""
    fusion = fd.fusion
    try:
        for _ in range(2):
            execute(fusion, inputs, executor="cupy")
    except Exception as error:  # one fusion's failure ends only its line
        return f"{name:44s} failed: {type(error).__name__}: {str(error)[:80]}", True
    runs = [run for run in fusion.memo.get("warm", {}).values()]
    if not runs or runs[-1] is None:
        return f"{name:44s} no compiled run: every call runs in full", True
    run = runs[-1]
    found, returned, with_env = steps(run.source)
    if show:
        print(f"== {name}\n{run.source}")
    slow = any(letter in found for letter in "LE") or returned == "collected" or with_env
    flags = " env" if with_env else ""
    return f"{name:44s} {found:12s} {returned}{flags}", slow


def corpus() -> list[tuple[str, Any, list[Any]]]:
    from fusecli.load import discover, load_path

    found = []
    for path in discover([ROOT / "tests" / "nvfuser_corpus"]):
        for loaded in load_path(path, device="cpu"):
            found.append((loaded.name, loaded.fd, list(loaded.inputs)))
    return found


def population_members(count: int, seed: int) -> list[tuple[str, Any, list[Any]]]:
    import population

    members = population.draw(count, seed, population.MIN_ELEMENTS // 10)
    return [(member.name, member.fd, member.make_inputs("cpu")) for member in members]


def time_calls(cases: list[tuple[str, Any, list[Any]]]) -> int:
    """Each fusion's warm ``fd.execute``: the best of 15 rounds of 2,000 calls, in us."""
    times = []
    with stand_in_device(reuse=True), torch.no_grad():
        for name, fd, inputs in cases:
            for _ in range(2):
                fd.execute(inputs)
            rounds = timeit.repeat(lambda fd=fd, inputs=inputs: fd.execute(inputs),
                                   number=2000, repeat=15)
            times.append(min(rounds) / 2000 * 1e6)
            print(f"{name:44s} {times[-1]:6.2f} us", flush=True)
    if times:
        print(f"median {sorted(times)[len(times) // 2]:.2f} us over {len(times)} fusions")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", action="store_true")
    parser.add_argument("--population", type=int, default=0, metavar="N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--source", default="", metavar="WORDS")
    parser.add_argument("--slow-only", action="store_true")
    parser.add_argument("--time", metavar="WORDS",
                        help="instead: time the warm fd.execute of the fusions whose names "
                             "contain one of these comma-separated words, allocations made "
                             "once and the launch a stand-in, so that only its Python counts")
    args = parser.parse_args()
    if not args.corpus and not args.population:
        parser.error("give --corpus, --population N or both")
    words = [w for w in args.source.split(",") if w]
    cases = (corpus() if args.corpus else []) + (
        population_members(args.population, args.seed) if args.population else [])
    if args.time:
        return time_calls([c for c in cases if any(w in c[0] for w in args.time.split(","))])
    slow_count = 0
    with stand_in_device(), torch.no_grad():
        for name, fd, inputs in cases:
            line, slow = audit(name, fd, inputs, any(w in name for w in words))
            slow_count += slow
            if slow or not args.slow_only:
                print(line, flush=True)
    print(f"{slow_count} of {len(cases)} fusions take a slow construct on the warm path")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
