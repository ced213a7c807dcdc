"""Run nvFuser's own Python frontend test suites against fusecli's frontend, on the CPU.

    git clone https://github.com/NVIDIA/Fuser /tmp/Fuser        # once (or any clone, bare too)
    pip install -e '.[conformance]'      # expecttest and looseversion: its utilities import them
    python tests/conformance/run.py --fuser /tmp/Fuser          # both suites, a table at the end
    python tests/conformance/run.py --fuser /tmp/Fuser --suite direct --json /tmp/direct.json
    python tests/conformance/run.py --fuser /tmp/Fuser --file test_python_frontend.py  # one file
    python tests/conformance/run.py --fuser /tmp/Fuser --export .nvfuser/suites   # for a GPU host
    python tests/conformance/run.py --from .nvfuser/suites --device cuda --jobs 8  # there

The suites are read from the clone's git history, never copied into this repository:

- ``legacy``: every ``tests/python/test_*.py`` (``import nvfuser``: the frontend tests,
  normalization, schedules...) as they stood before nvFuser removed them (the parent of commit
  ``LEGACY_REMOVED``);
- ``direct``: every ``tests/python/direct/test_*.py`` (``import nvfuser_direct``) at the clone's
  HEAD (``--rev``).

Each suite's ``tests/python`` tree is extracted into a temporary folder and run by pytest with
``plugin.py`` (nvFuser mapped to fusecli, CUDA to the CPU, out-of-scope tests skipped by a
reason listed in ``scope.py``, a time limit per test, the address space capped). The table
counts collected, passed, failed (assertion or error), skipped by reason, and "too large" (out
of memory on inputs sized for an H200: not run here, not in the pass rate); ``--json`` also
writes every test's outcome and first error line, and the most common failure lines. CI does
not run this: it needs nvFuser's sources and takes minutes.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LEGACY_REMOVED = "a092ad9e3"  # "Remove legacy python tests" in NVIDIA/Fuser

SUITES = {
    "legacy": {"rev": f"{LEGACY_REMOVED}^", "folder": "tests/python",
               "also": ["tests/python/opinfo/test_legacy_ops.py"]},
    "direct": {"rev": None, "folder": "tests/python/direct",
               "also": ["tests/python/opinfo/test_direct_ops.py"]},
}


def suite_files(fuser: Path, rev: str, folder: str, also: list[str]) -> list[str]:
    """The suite's test files: every ``test_*.py`` directly in ``folder`` at ``rev``, and its
    op tests (``also``: the OpInfo suite, one file per frontend)."""
    names = git(fuser, "ls-tree", "--name-only", rev, folder + "/").decode().split("\n")
    files = [n for n in names if Path(n).name.startswith("test_") and n.endswith(".py")]
    present = set(git(fuser, "ls-tree", "-r", "--name-only", rev, "tests/python").decode().split())
    return sorted(files) + [name for name in also if name in present]


def git(fuser: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(fuser), *args], check=True,
                          capture_output=True).stdout


def extract(fuser: Path, rev: str, into: Path) -> None:
    """The ``tests/python`` tree at ``rev`` under ``into``, as files."""
    names = git(fuser, "ls-tree", "-r", "--name-only", rev, "tests/python").decode().split("\n")
    for name in filter(None, names):
        if "/multidevice/" in name or not name.endswith((".py", ".json")):
            continue
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git(fuser, "show", f"{rev}:{name}"))
    (into / "tests" / "__init__.py").touch()


def export_suite(fuser: Path, name: str, head: str, into: Path) -> list[str]:
    """The suite's ``tests/python`` tree under ``into`` and its test files, listed in
    ``into/files.txt``: what ``--from`` runs where no clone is (a GPU host)."""
    suite = SUITES[name]
    rev = suite["rev"] or head
    extract(fuser, rev, into)
    files = suite_files(fuser, rev, suite["folder"], suite["also"])
    commit = git(fuser, "rev-parse", rev).decode().strip()
    (into / "files.txt").write_text(f"{commit}\n" + "\n".join(files) + "\n", encoding="utf-8")
    return files


def run_suite(fuser: Path | None, name: str, head: str, extra: list[str],
              only: list[str] | None = None, jobs: int = 1, device: str = "cpu",
              exported: Path | None = None) -> list[dict]:
    """The suite's outcomes: its files in ``jobs`` pytest processes at once (files dealt out
    round-robin, each process logging to a file of its own), on ``device``; from a clone, or
    from an ``--export`` folder."""
    with tempfile.TemporaryDirectory(prefix=f"fusecli-conformance-{name}-") as scratch:
        if exported is not None:
            folder = exported.resolve() / name
            rev, *files = (folder / "files.txt").read_text(encoding="utf-8").split()
        else:
            folder = Path(scratch)
            files = export_suite(fuser, name, head, folder)
            rev = SUITES[name]["rev"] or head
        if only:
            files = [f for f in files if Path(f).name in only]
            if not files:
                return []
        env = dict(os.environ, FUSECLI_CONFORMANCE_DEVICE=device,
                   PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT), str(folder / "tests")]))
        print(f"conformance: {name} suite at {rev}: {len(files)} files in "
              f"{SUITES[name]['folder']} on {device}, {jobs} at once", flush=True)
        shares = [files[k::jobs] for k in range(max(1, jobs)) if files[k::jobs]]
        logs = [Path(scratch) / f"outcomes_{k}.jsonl" for k in range(len(shares))]
        running = []
        for share, log in zip(shares, logs):
            command = [sys.executable, "-m", "pytest", "-q", "-p", "plugin", "-p",
                       "no:cacheprovider", "--continue-on-collection-errors", "-o", "addopts=",
                       "--rootdir", str(folder / "tests"), *extra,
                       *[str(folder / f) for f in share]]
            running.append(subprocess.Popen(
                command, cwd=folder / "tests", env={**env, "FUSECLI_CONFORMANCE_LOG": str(log)},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for process in running:
            process.wait()
        return [json.loads(line) for log in logs if log.exists()
                for line in log.read_text().splitlines() if line]


# A failure that is the CPU running out of memory on inputs sized for an H200 (2**29 draws,
# 100 times): the test did not run here; counted apart, not in the pass rate.
TOO_LARGE = ("can't allocate memory", "MemoryError", "DefaultCPUAllocator")


def _outcome(record: dict) -> str:
    if record["outcome"] == "failed" and any(t in (record["reason"] or "") for t in TOO_LARGE):
        return "too large"
    return record["outcome"]


def tally(outcomes: list[dict]) -> dict:
    for record in outcomes:
        record["outcome"] = _outcome(record)
    counts = collections.Counter(o["outcome"] for o in outcomes)
    skipped = collections.Counter(
        (o["reason"] or "").removeprefix("Skipped: ") for o in outcomes if o["outcome"] == "skipped"
    )
    failures = collections.Counter(
        _normalized(o["reason"] or "") for o in outcomes if o["outcome"] == "failed"
    )
    ran = counts["passed"] + counts["failed"]
    return {
        "collected": len(outcomes), "passed": counts["passed"], "failed": counts["failed"],
        "skipped": counts["skipped"], "too_large": counts["too large"], "ran": ran,
        "pass_rate": round(100 * counts["passed"] / ran, 1) if ran else 0.0,
        "skipped_by_reason": dict(skipped.most_common()),
        "top_failures": failures.most_common(25),
    }


def _normalized(line: str) -> str:
    import re

    line = re.sub(r"0x[0-9a-f]+", "0x…", line)
    line = re.sub(r"\d+(\.\d+)?", "N", line)
    return line[:160]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fuser", type=Path,
                        help="a clone of NVIDIA/Fuser (a bare git directory will do)")
    parser.add_argument("--suite", choices=[*SUITES, "all"], default="all")
    parser.add_argument("--rev", default="HEAD", help="the revision of the direct suite")
    parser.add_argument("--json", type=Path, help="write every outcome and the tallies here")
    parser.add_argument("-k", help="only tests matching this pytest expression")
    parser.add_argument("--file", action="append", dest="files", metavar="NAME",
                        help="only this test file of each suite, by its name "
                             "(test_python_frontend.py); repeatable")
    parser.add_argument("--jobs", type=int, default=1, help="pytest processes at once")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cpu: CUDA mapped to the CPU, ATen executes (the default); cuda: on "
                             "a GPU host, fusecli's generated kernels on the GPU")
    parser.add_argument("--export", type=Path, metavar="DIR",
                        help="only write the suites' test trees to DIR (for --from)")
    parser.add_argument("--from", type=Path, dest="exported", metavar="DIR",
                        help="run the suites --export wrote to DIR (no clone needed)")
    args = parser.parse_args(argv)
    if (args.fuser is None) == (args.exported is None):
        parser.error("give --fuser CLONE or --from DIR")
    extra = ["-k", args.k] if args.k else []
    names = list(SUITES) if args.suite == "all" else [args.suite]
    if args.export is not None:
        for name in names:
            files = export_suite(args.fuser, name, args.rev, args.export / name)
            print(f"{name}: {len(files)} files in {args.export / name}")
        return 0
    results = {}
    for name in names:
        outcomes = run_suite(args.fuser, name, args.rev, extra, args.files, args.jobs,
                             args.device, args.exported)
        results[name] = {"tally": tally(outcomes), "outcomes": outcomes}
    print(f"\n{'suite':8} {'collected':>9} {'ran':>5} {'passed':>6} {'failed':>6} "
          f"{'skipped':>7} {'too large':>9} {'pass %':>7}")
    for name, result in results.items():
        t = result["tally"]
        print(f"{name:8} {t['collected']:>9} {t['ran']:>5} {t['passed']:>6} {t['failed']:>6} "
              f"{t['skipped']:>7} {t['too_large']:>9} {t['pass_rate']:>7}")
    print("(pass % = passed / ran; 'too large': out of memory on inputs sized for a GPU)")
    for name, result in results.items():
        print(f"\n{name}: skipped by reason")
        for reason, count in result["tally"]["skipped_by_reason"].items():
            print(f"  {count:5}  {reason[:110]}")
        print(f"{name}: most common failures")
        for line, count in result["tally"]["top_failures"][:12]:
            print(f"  {count:5}  {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
