"""``fusecli bisect --git GOOD BAD``: the commit that introduced a failure, with git bisect.

The user's checkout is never touched: bisect adds a worktree of its own (``git worktree add
--detach``, at BAD) and runs ``git bisect`` there, whose state git keeps per worktree; the
worktree is removed at the end, whatever happens (a failure, Ctrl-C). Repro files stay where
they are, in the user's tree, named by absolute path.

The oracle runs at each commit of the worktree, in one of three ways:

- by default, ``fusecli run PATH...`` of the checked-out fusecli (the worktree first on
  ``PYTHONPATH``), after checking that the commit imports at all;
- ``--command CMD``: any shell command, in the worktree, with the worktree first on
  ``PYTHONPATH``;
- ``--build CMD``: the build command installs the commit into a fresh folder
  (``$FUSECLI_BUILD_PREFIX``); a failing build makes the commit untestable. Then the installed
  fusecli asks ``python -m fusecli.bisect REPRO [--engine E]`` of each repro (or runs
  ``--command``) with that folder first on ``PYTHONPATH``: how an nvFuser checkout is bisected.

``gitstep.py`` turns each outcome into git bisect's codes (0 good, 1 bad, 125 untestable) and
never exits above 125. Before bisecting, BAD is checked to fail (else the failure does not
reproduce: exit 1) and GOOD to pass. All state lives in one temporary run directory (the
worktree, the step, its spec, the log, the builds), removed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import fusecli
from fusecli.bisect.results import Commit, GitReport, GitStep, Tracker
from fusecli.errors import InputError, MissingEnvironmentError

_FUSECLI_MAIN = "import sys; from fusecli.cli.main import main; sys.argv[0] = 'fusecli'; main()"
_FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
_HASH_LINE = re.compile(r"^([0-9a-f]{40})\b", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class GitOptions:
    command: str | None = None  # a shell command; None: the commit's own ``fusecli run``
    build: str | None = None  # run first at each commit; the commit is then asked with it
    engine: str = "fusecli"  # with ``build``: the engine the installed fusecli asks with
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
    # Nothing about the checkout's state matters (uncommitted changes, a bisect of the user's
    # own in progress): bisect's worktree has its own HEAD, index and bisect state.
    return Path(_git(repo, "rev-parse", "--show-toplevel"))


def _spec(run_dir: Path, worktree: Path, paths: list[Path], options: GitOptions) -> dict:
    command: str | list[str] | None = None
    questions, import_check, python_path = None, None, []
    if options.command is not None:
        command = options.command.replace("{paths}", _joined(paths))
        flavor = "command"
    elif options.build is not None:
        questions = [_question(options, path) for path in paths]
        flavor = "question"
        python_path = _fusecli_path()
    else:
        command = [options.python, "-c", _FUSECLI_MAIN, "run", *map(str, paths)]
        flavor = "fusecli"
        import_check = [options.python, "-c", "import fusecli.cli.main"]
    return {
        "repo": str(worktree), "command": command, "questions": questions, "flavor": flavor,
        "import_check": import_check, "python_path": python_path, "build": options.build,
        "builds": str(run_dir / "builds"), "kind": options.kind, "check_str": options.check_str,
        "timeout": options.timeout, "log": str(run_dir / "steps.jsonl"),
    }


def _question(options: GitOptions, path: Path) -> list[str]:
    """The installed fusecli's oracle question about one repro file."""
    # fusecli is the default engine: leaving it out keeps the question valid for a child
    # that predates --engine.
    engine = [] if options.engine == "fusecli" else ["--engine", options.engine]
    return [options.python, "-m", "fusecli.bisect", str(path), *engine]


def _fusecli_path() -> list[str]:
    """Where this fusecli is imported from, for PYTHONPATH, unless it is site-packages (the
    child finds it there anyway): the question runs outside any checkout, in the build folder."""
    root = Path(fusecli.__file__).resolve().parent.parent
    site_dirs = {Path(d).resolve() for d in site.getsitepackages()}
    return [] if root in site_dirs else [str(root)]


def _joined(paths: Sequence[Path]) -> str:
    return " ".join(shlex.quote(str(p)) for p in paths)


def _resolve_inputs(paths: Sequence[Path]) -> list[Path]:
    """The repro files, by absolute path: they stay in the user's tree, not the worktree."""
    resolved = [Path(p).resolve() for p in paths]
    for path in resolved:
        if not path.is_file():
            raise InputError("no such file", str(path))
    return resolved


def _command_text(spec: dict) -> str:
    command = spec["command"]
    if spec["flavor"] == "question":
        asked = "; ".join(shlex.join(["python", *q[1:]]) for q in spec["questions"])
        text = f"{asked}  (the installed fusecli, the build first on PYTHONPATH)"
    elif isinstance(command, str):
        text = command
    else:
        paths = " ".join(shlex.quote(p) for p in command[4:])
        text = f"fusecli run {paths}  (the commit's own fusecli, via PYTHONPATH)"
    return text if spec["build"] is None else f"{text}; built with: {spec['build']}"


def git_bisect(
    repo: Path,
    good: str,
    bad: str,
    paths: Sequence[Path],
    options: GitOptions,
    tracker: Tracker | None = None,
) -> GitReport:
    """Find the first commit between GOOD and BAD at which the oracle command fails.

    Everything happens in a worktree of bisect's own: the checkout at ``repo`` (its branch,
    index, untracked and ignored files) is left exactly as it was."""
    tracker = tracker or Tracker()
    started = time.perf_counter()
    top = _check_repository(Path(repo).resolve())
    good_commit, bad_commit = _commit(top, good), _commit(top, bad)
    original = _git(top, "symbolic-ref", "-q", "--short", "HEAD", check=False) or _git(
        top, "rev-parse", "HEAD"
    )
    repros = _resolve_inputs(paths)
    run_dir = Path(tempfile.mkdtemp(prefix="fusecli-git-bisect-"))
    worktree = run_dir / "worktree"
    try:
        step_file = run_dir / "gitstep.py"
        shutil.copy2(Path(__file__).with_name("gitstep.py"), step_file)
        spec = _spec(run_dir, worktree, repros, options)
        Path(spec["builds"]).mkdir()
        spec_file = run_dir / "spec.json"
        spec_file.write_text(json.dumps(spec, indent=1), encoding="utf-8")
        report = GitReport(str(top), good_commit, bad_commit, _command_text(spec), False,
                           restored=original)
        step = [options.python, str(step_file), str(spec_file)]
        tracker.update("git", f"adding a worktree at {bad_commit.hash[:10]}")
        _git(top, "worktree", "add", "--detach", str(worktree), bad_commit.hash)
        try:
            _bisect(top, worktree, good_commit, bad_commit, step, report, tracker)
        finally:
            report.steps = _read_steps(Path(spec["log"]))
    finally:
        _remove_worktree(top, worktree)
        shutil.rmtree(run_dir, ignore_errors=True)
    report.replays = _replays(top, report, spec)
    report.seconds = time.perf_counter() - started
    return report


def _remove_worktree(top: Path, worktree: Path) -> None:
    """Remove bisect's worktree and git's record of it (what git cannot remove is deleted)."""
    _git(top, "worktree", "remove", "--force", str(worktree), check=False)
    shutil.rmtree(worktree, ignore_errors=True)
    _git(top, "worktree", "prune", check=False)


def _bisect(
    top: Path,
    worktree: Path,
    good: Commit,
    bad: Commit,
    step: list[str],
    report: GitReport,
    tracker: Tracker,
) -> None:
    for commit, wanted in ((bad, 1), (good, 0)):
        tracker.update("git", f"checking {commit.hash[:10]} ({'BAD' if wanted else 'GOOD'})")
        _git(worktree, "checkout", "--quiet", "--detach", commit.hash)
        result = subprocess.run(step, cwd=worktree, capture_output=True, text=True)
        why = _step_reason(result.stdout)
        tracker.query_done()
        if wanted == 1 and result.returncode != 1:
            untestable = f" (untestable there: {why})" if result.returncode == 125 else ""
            report.notes.append(f"BAD ({commit.hash[:10]}) does not fail: the failure does "
                                f"not reproduce{untestable}")
            return
        if wanted == 0 and result.returncode != 0:
            state = "fails too" if result.returncode == 1 else "is untestable"
            raise InputError(f"GOOD ({commit.hash[:10]} {commit.subject!r}) {state} ({why}); "
                             "give a GOOD commit at which the command passes", str(top))
    report.reproduced = True
    _git(worktree, "bisect", "start", bad.hash, good.hash)
    tracker.update("git", f"bisecting {good.hash[:10]}..{bad.hash[:10]}")
    process = subprocess.Popen(
        ["git", "-C", str(worktree), "bisect", "run", *step], stdout=subprocess.PIPE,
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
        # Interrupted (Ctrl-C, SIGTERM): stop git's bisect run before the worktree is
        # removed, or it would go on checking out commits in a folder being deleted.
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


def _step_reason(output: str) -> str:
    """What one step printed about its commit: ``fusecli-step HASH OUTCOME: REASON``."""
    for line in output.splitlines():
        if line.startswith("fusecli-step "):
            return line.split(": ", 1)[-1].strip()
    return output.strip()[-200:] or "no answer"


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


def _replay_body(spec: dict, sha: str) -> str:
    """The shell commands that test commit ``sha`` again, run inside a worktree of it."""
    prepend = '${PYTHONPATH:+:$PYTHONPATH}"'
    if spec["flavor"] == "question":
        asked = " ; ".join(shlex.join(q) for q in spec["questions"])
        extra = "".join(f":{shlex.quote(p)}" for p in spec["python_path"])
        ask = f'cd "$FUSECLI_BUILD_PREFIX" && PYTHONPATH="$FUSECLI_BUILD_PREFIX{extra}{prepend} '
        ask += f"sh -c {shlex.quote(asked)}"
    else:
        command = spec["command"]
        command = command if isinstance(command, str) else shlex.join(command)
        first = "$FUSECLI_BUILD_PREFIX" if spec["build"] else "$PWD"
        ask = f'PYTHONPATH="{first}{prepend} sh -c {shlex.quote(command)}'
    if spec["build"] is None:
        return ask
    return (f"export FUSECLI_BUILD_PREFIX=$(mktemp -d) FUSECLI_BISECT_COMMIT={sha} && "
            f"bash -c {shlex.quote(spec['build'])} && {ask}")


def _replays(top: Path, report: GitReport, spec: dict) -> dict[str, str]:
    """Commands that test the last good and the first bad commit again, by hand, each in a
    worktree of its own (the checkout stays as it is)."""
    if report.first_bad is None:
        return {}
    replays = {}
    parent = _git(top, "rev-parse", "--verify", "--quiet", f"{report.first_bad.hash}^",
                  check=False)
    git = f"git -C {shlex.quote(str(top))} worktree"
    for name, sha in (("last good", parent), ("first bad", report.first_bad.hash)):
        if sha:
            replays[f"git: {name} ({sha[:10]})"] = (
                f'tree=$(mktemp -d) && {git} add --detach "$tree" {sha} && '
                f'(cd "$tree" && {_replay_body(spec, sha)}); {git} remove --force "$tree"'
            )
    return replays
