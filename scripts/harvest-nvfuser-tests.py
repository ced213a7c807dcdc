"""Harvest the fusions nvFuser's own Python tests execute, as repro scripts: a real-repro set.

    python scripts/harvest-nvfuser-tests.py --from .nvfuser/suites --out DIR           # GPU host
    python scripts/harvest-nvfuser-tests.py --from .nvfuser/suites --device cpu --jobs 2 \\
        --out DIR --file test_python_frontend.py                                     # here
    python scripts/harvest-nvfuser-tests.py --fuser CLONE --device cpu --out DIR       # a clone

Runs an exported suite's test files (``tests/conformance/run.py --export``; or a clone's, as
``run.py`` extracts them) under pytest with ``tests/conformance/harvest_plugin.py``, which writes
every distinct fusion the tests execute as ``DIR/<file>__<test>__<k>.py`` (nvFuser's
``repro_script_for`` of its inputs, then ``fd.execute(inputs)``; legacy-suite names start with
``legacy_``). ``--device cuda`` (a GPU host with real nvFuser on the path, ``scripts/gpu-harvest``):
the tests run on real nvFuser, so the scripts are what nvFuser itself was given; ``--device
cpu``: through ``plugin.py`` (nvFuser mapped to fusecli's frontend, CUDA to the CPU, its skips
and time limit), which exercises the harvest where no GPU is. ``DIR/harvest.json`` counts the
fusions per file and test, the duplicates passed over and the harvesting errors;
``DIR/pytest/`` keeps each pytest process's output. Then ``scripts/record-nvfuser-logs.py``
records nvFuser's segmentation of the files and ``scripts/segmentation-population.py compare
DIR LOGS`` measures fusecli's against it.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "tests" / "conformance"
FRONTEND_MODULE = {"direct": "nvfuser_direct", "legacy": "nvfuser"}
NAME_PREFIX = {"direct": "", "legacy": "legacy_"}  # both suites have a test_python_frontend.py
GRACE_S = 30  # past the budget, for the tests running then to end, before processes are killed


def conformance_run():
    """``tests/conformance/run.py``, for its suites and their export."""
    spec = importlib.util.spec_from_file_location("conformance_run", CONFORMANCE / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def suite_tree(name: str, exported: Path | None, fuser: Path | None, rev: str,
               scratch: Path) -> tuple[Path, str, list[str]]:
    """The suite's ``tests/python`` tree, its revision and its test files: from an export, or
    extracted from a clone into ``scratch``."""
    if exported is not None:
        folder = exported.resolve() / name
        commit, *files = (folder / "files.txt").read_text(encoding="utf-8").split()
        return folder, commit, files
    folder = scratch / name
    files = conformance_run().export_suite(fuser, name, rev, folder)
    return folder, (folder / "files.txt").read_text(encoding="utf-8").split()[0], files


def pytest_command(device: str, folder: Path, files: list[str], extra: list[str]) -> list[str]:
    """pytest over ``files`` with the harvest plugin, and on the CPU ``plugin.py`` first (it
    maps nvFuser to fusecli before the harvest plugin wraps the frontend)."""
    plugins = ["-p", "harvest_plugin"] if device == "cuda" else ["-p", "plugin", "-p",
                                                                 "harvest_plugin"]
    return [sys.executable, "-m", "pytest", "-q", *plugins, "-p", "no:cacheprovider",
            "--continue-on-collection-errors", "-o", "addopts=", "--rootdir",
            str(folder / "tests"), *extra, *[str(folder / f) for f in files]]


def harvest_suite(name: str, folder: Path, files: list[str], out: Path, scratch: Path,
                  args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    """Run the suite's ``files`` in ``args.jobs`` pytest processes at once (files dealt out
    round-robin, as ``run.py`` does), harvesting into ``out``; the events the plugin logged
    and each process's files and exit status (negative: killed by that signal)."""
    (scratch / "seen").mkdir(exist_ok=True)
    (out / "pytest").mkdir(parents=True, exist_ok=True)
    deadline = time.time() + args.budget if args.budget else None
    env = dict(
        os.environ, FUSECLI_CONFORMANCE_DEVICE=args.device, FUSECLI_HARVEST_DEVICE=args.device,
        FUSECLI_HARVEST_OUT=str(out.resolve()), FUSECLI_HARVEST_SEEN=str(scratch / "seen"),
        FUSECLI_HARVEST_MODULE=FRONTEND_MODULE[name], FUSECLI_HARVEST_PREFIX=NAME_PREFIX[name],
        FUSECLI_HARVEST_TIME_LIMIT_S=str(args.time_limit),
        FUSECLI_HARVEST_DEADLINE=str(deadline or ""),
        PYTHONPATH=os.pathsep.join(filter(None, [str(CONFORMANCE), str(ROOT),
                                                 str(folder / "tests"),
                                                 os.environ.get("PYTHONPATH")])),
    )
    extra = ["-k", args.k] if args.k else []
    shares = [files[k::args.jobs] for k in range(max(1, args.jobs)) if files[k::args.jobs]]
    running = []
    for k, share in enumerate(shares):
        events = scratch / f"events_{name}_{k}.jsonl"
        output = out / "pytest" / f"{name}_{k}.txt"
        with open(output, "wb") as sink:
            process = subprocess.Popen(
                pytest_command(args.device, folder, share, extra), cwd=folder / "tests",
                env={**env, "FUSECLI_HARVEST_LOG": str(events)}, stdout=sink,
                stderr=subprocess.STDOUT, start_new_session=True)
        running.append((process, share, events, output))
    processes, events = [], []
    for process, share, log, output in running:
        try:
            timeout = deadline + GRACE_S - time.time() if deadline else None
            process.wait(timeout=max(timeout, 0) if timeout is not None else None)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # its own session: this pytest and children
            process.wait()
        processes.append({"files": share, "returncode": process.returncode,
                          "output": str(output.relative_to(out))})
        if log.exists():
            events += [json.loads(line) for line in log.read_text().splitlines() if line]
    return events, processes


def tally(events: list[dict]) -> dict:
    """Per test file: fusions harvested, per test, and duplicates; the harvesting errors."""
    files: dict[str, dict] = {}
    for event in events:
        test_file = Path(event["test"].partition("::")[0]).name
        entry = files.setdefault(test_file, {"fusions": 0, "duplicates": 0, "errors": 0,
                                             "tests": collections.Counter()})
        if event["event"] == "harvested":
            entry["fusions"] += 1
            entry["tests"][event["test"]] += 1
        elif event["event"] == "duplicate":
            entry["duplicates"] += 1
        else:
            entry["errors"] += 1
    errors = [{"test": e["test"], "error": e["error"]} for e in events if e["event"] == "error"]
    return {"files": {name: {**entry, "tests": dict(entry["tests"])}
                      for name, entry in sorted(files.items())}, "errors": errors}


def summary(suites: dict[str, dict]) -> dict:
    files = [entry for suite in suites.values() for entry in suite["files"].values()]
    return {
        "fusions": sum(entry["fusions"] for entry in files),
        "duplicates": sum(entry["duplicates"] for entry in files),
        "tests_with_fusions": sum(len(entry["tests"]) for entry in files),
        "harvest_errors": sum(entry["errors"] for entry in files),
        "killed_processes": sum(process["returncode"] < 0 for suite in suites.values()
                                for process in suite["processes"]),
    }


def report(suites: dict[str, dict], totals: dict) -> str:
    lines = [f"{'suite':7} {'test file':34} {'tests':>5} {'fusions':>7} {'dupes':>6} {'errors':>6}"]
    for name, suite in suites.items():
        for test_file, entry in suite["files"].items():
            lines.append(f"{name:7} {test_file[:34]:34} {len(entry['tests']):>5} "
                         f"{entry['fusions']:>7} {entry['duplicates']:>6} {entry['errors']:>6}")
    lines.append(f"total: {totals['fusions']} fusions from {totals['tests_with_fusions']} tests, "
                 f"{totals['duplicates']} duplicates passed over, {totals['harvest_errors']} "
                 f"harvesting errors, {totals['killed_processes']} pytest processes killed")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", type=Path, dest="exported", metavar="DIR",
                        help="the suites run.py --export wrote to DIR")
    parser.add_argument("--fuser", type=Path, help="or a clone of NVIDIA/Fuser")
    parser.add_argument("--rev", default="HEAD", help="with --fuser: the direct suite's revision")
    parser.add_argument("--suite", choices=["direct", "legacy", "both"], default="direct")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cuda: real nvFuser runs the tests; cpu: fusecli's frontend does "
                             "(through tests/conformance/plugin.py)")
    parser.add_argument("--out", type=Path, required=True, help="where the fusions go")
    parser.add_argument("--jobs", type=int, default=1, help="pytest processes at once")
    parser.add_argument("--file", action="append", dest="files", metavar="NAME",
                        help="only this test file of each suite (test_python_frontend.py); "
                             "repeatable")
    parser.add_argument("-k", help="only tests matching this pytest expression")
    parser.add_argument("--time-limit", type=int, default=60, metavar="S",
                        help="seconds per test with --device cuda (plugin.py's own on the CPU)")
    parser.add_argument("--budget", type=float, default=0, metavar="S",
                        help="per suite: after S seconds the remaining tests are skipped, "
                             f"processes still running {GRACE_S} s later killed (default: none)")
    args = parser.parse_args(argv)
    if (args.fuser is None) == (args.exported is None):
        parser.error("give --from DIR or --fuser CLONE")
    args.out.mkdir(parents=True, exist_ok=True)
    suites = {}
    names = ["direct", "legacy"] if args.suite == "both" else [args.suite]
    with tempfile.TemporaryDirectory(prefix="fusecli-harvest-") as scratch:
        for name in names:
            folder, rev, files = suite_tree(name, args.exported, args.fuser, args.rev,
                                            Path(scratch))
            if args.files:
                files = [f for f in files if Path(f).name in args.files]
            print(f"harvest: {name} suite at {rev}: {len(files)} files on {args.device}, "
                  f"{args.jobs} at once", file=sys.stderr, flush=True)
            events, processes = harvest_suite(name, folder, files, args.out, Path(scratch), args)
            suites[name] = {"rev": rev, "device": args.device, **tally(events),
                            "processes": processes}
    totals = summary(suites)
    (args.out / "harvest.json").write_text(
        json.dumps({"totals": totals, "suites": suites}, indent=1) + "\n", encoding="utf-8")
    print(report(suites, totals))
    return 0 if totals["fusions"] else 1


if __name__ == "__main__":
    sys.exit(main())
