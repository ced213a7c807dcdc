"""``fusecli bisect --git GOOD BAD``: the commit that introduced a failure, with git bisect.

The oracle command runs at each commit with that commit's own code (the repository first on
``PYTHONPATH``): by default ``fusecli run PATH...`` of the checked-out fusecli, after checking
that the commit imports at all; ``--command`` gives any other. ``gitstep.py`` turns each
outcome into git bisect's codes (0 good, 1 bad, 125 untestable) and never exits above 125.

Before bisecting, BAD is checked to fail (else the failure does not reproduce: exit 1) and GOOD
to pass. All state lives in one temporary run directory (the step, its spec, the log, copies
of the repro files, so that checkouts cannot change them), removed at the end. The repository
is always put back where it was: bisect reset, then the original branch or commit.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fusecli.bisect.results import Commit, GitReport, GitStep, Tracker
from fusecli.errors import InputError, MissingEnvironmentError

_FUSECLI_MAIN = "import sys; from fusecli.cli.main import main; sys.argv[0] = 'fusecli'; main()"
_FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
_HASH_LINE = re.compile(r"^([0-9a-f]{40})\b", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class GitOptions:
    command: str | None = None  # a shell command; None: the commit's own ``fusecli run``
    kind: str = "any"  # accuracy, crash, hang, any
    check_str: str | None = None
    timeout: float = 600.0  # per step
    python: str = sys.executable


def _git(repo: Path, *args: str, check: bool = True) -> str:
    try:
        result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    except FileNotFoundError:
        raise MissingEnvironmentError("git is not installed (needed for --git)") from None
    if check and result.returncode != 0:
        detail = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
        raise InputError(f"git {' '.join(args)}: {detail}", str(repo))
    return result.stdout.strip()


def _commit(repo: Path, revision: str) -> Commit:
    sha = _git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}", check=False)
    if not sha:
        raise InputError(f"unknown revision {revision!r}", str(repo))
    return Commit(sha, _git(repo, "log", "-1", "--format=%s", sha))


def _check_repository(repo: Path) -> Path:
    if not repo.is_dir():
        raise InputError("no such folder", str(repo))
    top = Path(_git(repo, "rev-parse", "--show-toplevel"))
    if Path(_git(top, "rev-parse", "--absolute-git-dir"), "BISECT_START").exists():
        raise InputError("a git bisect is already in progress here; finish it with "
                         "`git bisect reset` first", str(top))
    if _git(top, "status", "--porcelain", "--untracked-files=no"):
        raise InputError("the checkout has uncommitted changes; commit or stash them first",
                         str(top))
    return top


def _spec(run_dir: Path, top: Path, paths: list[Path], options: GitOptions) -> dict:
    if options.command is not None:
        joined = " ".join(shlex.quote(str(p)) for p in paths)
        command: str | list[str] = options.command.replace("{paths}", joined)
        flavor, import_check = "command", None
    else:
        command = [options.python, "-c", _FUSECLI_MAIN, "run", *map(str, paths)]
        flavor = "fusecli"
        import_check = [options.python, "-c", "import fusecli.cli.main"]
    return {
        "repo": str(top), "command": command, "flavor": flavor, "import_check": import_check,
        "kind": options.kind, "check_str": options.check_str, "timeout": options.timeout,
        "log": str(run_dir / "steps.jsonl"),
    }


def _copy_inputs(paths: Sequence[Path], run_dir: Path) -> list[Path]:
    copies = []
    for index, path in enumerate(paths):
        if not path.is_file():
            raise InputError("no such file", str(path))
        copy = run_dir / "inputs" / f"{index}_{path.name}" if len(paths) > 1 else (
            run_dir / "inputs" / path.name
        )
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copy)
        copies.append(copy)
    return copies


def _command_text(spec: dict) -> str:
    command = spec["command"]
    if isinstance(command, str):
        return command
    paths = " ".join(shlex.quote(p) for p in command[4:])
    return f"fusecli run {paths}  (the commit's own fusecli, via PYTHONPATH)"


def git_bisect(
    repo: Path,
    good: str,
    bad: str,
    paths: Sequence[Path],
    options: GitOptions,
    tracker: Tracker | None = None,
) -> GitReport:
    """Find the first commit between GOOD and BAD at which the oracle command fails."""
    tracker = tracker or Tracker()
    started = time.perf_counter()
    top = _check_repository(Path(repo).resolve())
    good_commit, bad_commit = _commit(top, good), _commit(top, bad)
    original = _git(top, "symbolic-ref", "-q", "--short", "HEAD", check=False) or _git(
        top, "rev-parse", "HEAD"
    )
    run_dir = Path(tempfile.mkdtemp(prefix="fusecli-git-bisect-"))
    try:
        step_file = run_dir / "gitstep.py"
        shutil.copy2(Path(__file__).with_name("gitstep.py"), step_file)
        copies = _copy_inputs([Path(p).resolve() for p in paths], run_dir)
        spec = _spec(run_dir, top, copies, options)
        spec_file = run_dir / "spec.json"
        spec_file.write_text(json.dumps(spec, indent=1), encoding="utf-8")
        report = GitReport(str(top), good_commit, bad_commit, _command_text(spec), False)
        step = [options.python, str(step_file), str(spec_file)]
        try:
            _bisect(top, good_commit, bad_commit, step, report, tracker)
        finally:
            report.restored = _restore(top, original)
            report.steps = _read_steps(Path(spec["log"]))
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    report.replays = _replays(top, report, _replay_command(options, paths))
    report.seconds = time.perf_counter() - started
    return report


def _bisect(
    top: Path, good: Commit, bad: Commit, step: list[str], report: GitReport, tracker: Tracker
) -> None:
    for commit, wanted in ((bad, 1), (good, 0)):
        tracker.update("git", f"checking {commit.hash[:10]} ({'BAD' if wanted else 'GOOD'})")
        _git(top, "checkout", "--quiet", "--detach", commit.hash)
        code = subprocess.run(step, cwd=top, capture_output=True, text=True).returncode
        tracker.query_done()
        if wanted == 1 and code != 1:
            report.notes.append(f"BAD ({commit.hash[:10]}) does not fail: the failure does "
                                "not reproduce" + (" (untestable there)" if code == 125 else ""))
            return
        if wanted == 0 and code != 0:
            state = "fails too" if code == 1 else "is untestable"
            raise InputError(f"GOOD ({commit.hash[:10]} {commit.subject!r}) {state}; "
                             "give a GOOD commit at which the command passes", str(top))
    report.reproduced = True
    _git(top, "bisect", "start", bad.hash, good.hash)
    tracker.update("git", f"bisecting {good.hash[:10]}..{bad.hash[:10]}")
    process = subprocess.Popen(
        ["git", "-C", str(top), "bisect", "run", *step], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    output = []
    try:
        for line in process.stdout:
            output.append(line)
            if line.startswith("fusecli-step "):
                tracker.update(
                    "git", f"tested {line.split()[1][:10]}: {line.split()[2].rstrip(':')}"
                )
                tracker.query_done()
        process.wait()
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM): stop git's bisect run before the checkout is put
        # back, or it would go on checking out commits under the restored branch.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)  # git, and the step it is running
        process.wait()
        raise
    text = "".join(output)
    found = _FIRST_BAD.search(text)
    if found:
        report.first_bad = _commit(top, found.group(1))
    elif "could be any of" in text:
        tail = text.split("could be any of", 1)[1]
        report.candidates = [_commit(top, sha) for sha in _HASH_LINE.findall(tail)]
        report.notes.append("untestable commits hide the first bad commit; it is one of "
                            f"{len(report.candidates)} candidates")
    else:
        report.notes.append(f"git bisect run ended without an answer: {text.strip()[-300:]}")


def _restore(top: Path, original: str) -> str:
    """Put the checkout back: end the bisect, then the original branch or commit."""
    if Path(_git(top, "rev-parse", "--absolute-git-dir"), "BISECT_START").exists():
        _git(top, "bisect", "reset", original, check=False)
    _git(top, "checkout", "--quiet", original, check=False)
    return original


def _read_steps(log: Path) -> list[GitStep]:
    if not log.exists():
        return []
    steps = []
    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        steps.append(GitStep(
            Commit(record["commit"], record["subject"]), record["outcome"],
            record["exit_status"], record["reason"], record["seconds"],
        ))
    return steps


def _replay_command(options: GitOptions, paths: Sequence[Path]) -> str:
    originals = " ".join(shlex.quote(str(Path(p).resolve())) for p in paths)
    if options.command is not None:
        return options.command.replace("{paths}", originals)
    return f"{shlex.quote(options.python)} -c {shlex.quote(_FUSECLI_MAIN)} run {originals}"


def _replays(top: Path, report: GitReport, command: str) -> dict[str, str]:
    """Commands that test the last good and the first bad commit again, by hand."""
    if report.first_bad is None:
        return {}
    replays = {}
    parent = _git(top, "rev-parse", "--verify", "--quiet", f"{report.first_bad.hash}^",
                  check=False)
    for name, sha in (("last good", parent), ("first bad", report.first_bad.hash)):
        if sha:
            replays[f"git: {name} ({sha[:10]})"] = (
                f"cd {shlex.quote(str(top))} && git checkout --detach {sha} && "
                f"PYTHONPATH={shlex.quote(str(top))} {command}; git checkout -"
            )
    return replays
