"""``fusecli bisect --git``: a planted regression in a temporary repository's history.

The repository holds a tiny package whose behaviour regresses in one commit, and a commit that
does not import (untestable, skipped). The oracle runs each commit's own code, or, with
``--build``, what the build command installed. Bisect works in a worktree of its own: the
user's checkout (branch, index, untracked and ignored files) is never touched.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.bisect.driver import BisectOptions, GitRange, run_bisect
from fusecli.bisect.gitstep import BAD, GOOD, SKIP, classify
from fusecli.errors import InputError

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
}
CHECK = "import sys\nfrom tinycalc import double\nsys.exit(0 if double(21) == 42 else 1)\n"
FAKE_FUSECLI_MAIN = """
import sys
from fusecli.behaviour import WRONG

def main():
    path = sys.argv[2]
    sys.exit(1 if WRONG and open(path).read().startswith("fusion") else 0)
"""

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
    reason="needs git",
)


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                            env={**os.environ, **GIT_ENV}, check=True)
    return result.stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _history(repo: Path, files_for) -> list[str]:
    """Ten commits; ``files_for(i)`` gives commit i's files."""
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    return [_commit(repo, files_for(i), f"change {i}") for i in range(10)]


def _tinycalc(i: int) -> dict[str, str]:
    """double() regresses at commit 6; commit 4 (git's first midpoint) does not import."""
    body = "def double(x):\n    return 2 * x" + (" + 1" if i >= 6 else "") + "\n"
    if i == 4:
        body = "def double(x) return 2 * x\n"
    return {"tinycalc/__init__.py": body, "tinycalc/version.py": f"VERSION = {i}\n",
            "check.py": CHECK}


def _fake_fusecli(i: int) -> dict[str, str]:
    """A package called fusecli whose `fusecli run` starts failing at commit 7; commit 4
    does not import."""
    files = {
        "fusecli/__init__.py": "",
        "fusecli/cli/__init__.py": "",
        "fusecli/cli/main.py": FAKE_FUSECLI_MAIN,
        "fusecli/behaviour.py": f"WRONG = {i >= 7}\n",
        "fusecli/version.py": f"VERSION = {i}\n",
    }
    if i == 4:
        files["fusecli/behaviour.py"] = "from fusecli.missing import WRONG\n"
    return files


def _assert_restored(repo: Path) -> None:
    assert _git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert _git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert not (repo / ".git" / "BISECT_START").exists()
    _assert_no_worktree_left(repo)


def _assert_no_worktree_left(repo: Path) -> None:
    listed = _git(repo, "worktree", "list", "--porcelain").splitlines()
    assert [line for line in listed if line.startswith("worktree ")] == [f"worktree {repo}"]
    assert _git(repo, "for-each-ref", "refs/bisect") == ""


def test_a_planted_regression_is_found_with_any_oracle_command(tmp_path):
    repo = tmp_path / "repo"
    shas = _history(repo, _tinycalc)
    report = run_bisect(
        [], BisectOptions(), GitRange(shas[0], shas[-1], repo=repo,
                                      command=f"{sys.executable} check.py"),
    )
    assert report.reproduced and report.exit_code == 0
    assert report.first_bad.hash == shas[6] and report.first_bad.subject == "change 6"
    outcomes = {step.commit.hash: step.outcome for step in report.steps}
    assert outcomes[shas[-1]] == "bad" and outcomes[shas[0]] == "good"
    assert outcomes[shas[4]] == "skip"
    assert len(report.steps) <= 2 + 5
    assert any("git: first bad" in name for name in report.replays)
    _assert_restored(repo)


def test_each_commit_runs_its_own_fusecli(tmp_path):
    repo = tmp_path / "repo"
    shas = _history(repo, _fake_fusecli)
    repro = tmp_path / "repro.py"
    repro.write_text("fusion\n")
    report = run_bisect([repro], BisectOptions(), GitRange(shas[1], shas[9], repo=repo))
    assert report.first_bad.hash == shas[7]
    assert "fusecli run" in report.command
    skipped = [s for s in report.steps if s.outcome == "skip"]
    assert all("does not import" in s.reason for s in skipped)
    _assert_restored(repo)


def test_cli_json_names_the_first_bad_commit(tmp_path):
    from fusecli.cli.bisect import bisect
    from fusecli.cli.main import cli, register

    register()
    if "bisect" not in cli.commands:
        cli.add_command(bisect)
    repo = tmp_path / "repo"
    shas = _history(repo, _tinycalc)
    result = CliRunner().invoke(cli, [
        "bisect", "--git", shas[0], shas[-1], "--repo", str(repo),
        "--command", f"{sys.executable} check.py", "--json",
    ])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["first_bad_commit"] == {"hash": shas[6], "subject": "change 6"}
    assert document["ok"] is True and document["restored"] == "main"
    _assert_restored(repo)


def test_build_goes_with_git(tmp_path):
    from fusecli.cli.bisect import bisect
    from fusecli.cli.main import cli, register

    register()
    if "bisect" not in cli.commands:
        cli.add_command(bisect)
    repro = tmp_path / "repro.py"
    repro.write_text("fusion\n")
    result = CliRunner().invoke(cli, ["bisect", "--build", "true", str(repro)])
    assert result.exit_code == 2
    assert "--build" in result.stderr and "--git" in result.stderr


def test_good_that_fails_is_bad_usage_and_bad_that_passes_does_not_reproduce(tmp_path):
    repo = tmp_path / "repo"
    shas = _history(repo, _tinycalc)
    command = f"{sys.executable} check.py"
    with pytest.raises(InputError, match="fails too"):
        run_bisect([], BisectOptions(), GitRange(shas[7], shas[9], repo=repo, command=command))
    _assert_restored(repo)
    report = run_bisect([], BisectOptions(), GitRange(shas[0], shas[2], repo=repo,
                                                      command=command))
    assert not report.reproduced and report.exit_code == 1
    _assert_restored(repo)


def _state(repo: Path, files: list[str]) -> dict[str, object]:
    """Everything bisect must leave as it was in the user's checkout."""
    return {
        "head": _git(repo, "rev-parse", "HEAD"),
        "branch": _git(repo, "symbolic-ref", "--short", "HEAD"),
        "status": _git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all"),
        "index": _git(repo, "ls-files", "--stage"),
        "staged": _git(repo, "diff", "--cached"),
        "files": {name: (repo / name).read_bytes() for name in files},
    }


def test_the_users_checkout_is_never_touched(tmp_path):
    """An old commit tracks local.cfg, which the user's checkout ignores and holds with their
    own content: checking that commit out in the checkout would delete it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = [_commit(repo, {**_tinycalc(0), "local.cfg": "tracked at commit 0\n"}, "change 0")]
    (repo / "local.cfg").unlink()
    shas.append(_commit(repo, {**_tinycalc(1), ".gitignore": "local.cfg\n"}, "change 1"))
    shas += [_commit(repo, _tinycalc(i), f"change {i}") for i in range(2, 10)]
    (repo / "local.cfg").write_bytes(b"user = me\r\nsecret = 42\n")
    (repo / "notes.txt").write_text("untracked notes\n")
    (repo / "tinycalc" / "version.py").write_text("VERSION = 'staged'\n")
    _git(repo, "add", "tinycalc/version.py")
    (repo / "check.py").write_text("raise SystemExit('an unstaged edit, not what is bisected')\n")
    files = ["local.cfg", "notes.txt", "tinycalc/version.py", "check.py"]
    before = _state(repo, files)
    report = run_bisect(
        [], BisectOptions(), GitRange(shas[0], shas[-1], repo=repo,
                                      command=f"{sys.executable} check.py"),
    )
    assert report.first_bad.hash == shas[6]
    assert report.restored == "main"
    assert _state(repo, files) == before
    _assert_no_worktree_left(repo)
    assert not any(".git/worktrees" in str(path) for path in (repo / ".git").rglob("*"))


def test_a_bisect_of_the_users_own_goes_on_undisturbed(tmp_path):
    repo = tmp_path / "repo"
    shas = _history(repo, _tinycalc)
    _git(repo, "bisect", "start", shas[-1], shas[0])  # checks out a midpoint, by hand
    before = {
        "head": _git(repo, "rev-parse", "HEAD"), "log": _git(repo, "bisect", "log"),
        "refs": _git(repo, "for-each-ref", "refs/bisect"),
    }
    report = run_bisect([], BisectOptions(), GitRange(shas[2], shas[8], repo=repo,
                                                      command=f"{sys.executable} check.py"))
    assert report.first_bad.hash == shas[6]
    assert before == {
        "head": _git(repo, "rev-parse", "HEAD"), "log": _git(repo, "bisect", "log"),
        "refs": _git(repo, "for-each-ref", "refs/bisect"),
    }
    _git(repo, "bisect", "reset")
    _assert_restored(repo)


def test_a_repro_file_is_read_from_the_users_tree(tmp_path):
    """Relative repro paths name files of the user's tree, not of the worktree's commit."""
    repo = tmp_path / "repo"
    shas = _history(repo, _fake_fusecli)
    (repo / "repro.py").write_text("fusion\n")  # untracked: no commit has it
    previous = Path.cwd()
    os.chdir(repo)
    try:
        report = run_bisect([Path("repro.py")], BisectOptions(),
                            GitRange(shas[1], shas[9], repo=Path(".")))
    finally:
        os.chdir(previous)
    assert report.first_bad.hash == shas[7]
    assert str(repo / "repro.py") in report.command
    _assert_restored(repo)


# A stand-in for nvFuser's Python package: fusecli's frontend under nvfuser_direct's name,
# whose execute fails from the commit that introduces the bug on, as nvFuser's segmenter does.
STANDIN_ASSERT = (
    ' INTERNAL ASSERT FAILED at "/workspace/Fuser/csrc/fusion_segmenter.cpp":4015, please '
    "report a bug with repro script to NVFuser at https://github.com/NVIDIA/Fuser/issues. "
    "Expected scheduler_type != SchedulerType::None . Can not find a scheduler to schedule "
    "fusion segment"
)
STANDIN = """
from fusecli.frontend import DataType
from fusecli.frontend import FusionDefinition as _FusionDefinition

VERSION = {version}
BROKEN = {broken}


class FusionDefinition(_FusionDefinition):
    def execute(self, *args, **kwargs):
        if BROKEN:
            raise RuntimeError({message!r})
        return super().execute(*args, **kwargs)


__all__ = ["DataType", "FusionDefinition"]
"""
STANDIN_REPRO = """
import torch
from nvfuser_direct import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 3], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.exp(T0)
    fd.add_output(T1)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [torch.ones(2, 3)]
fd.execute(inputs)
"""
BUILD = 'cp -r nvfuser_direct "$FUSECLI_BUILD_PREFIX"/'
BUG, BROKEN_BUILD = 5, 3  # commit 3 is git's first midpoint of 0..7


def _standin_history(tmp_path: Path) -> tuple[Path, list[str]]:
    """Eight commits of a repository holding the stand-in package: the bug comes in at commit
    5; at commit 3 the package is moved away, so the build (a copy of it) fails."""
    repo = tmp_path / "standin"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(8):
        _git(repo, "rm", "-rq", "--ignore-unmatch", ".")
        folder = "nvfuser_direct_wip" if i == BROKEN_BUILD else "nvfuser_direct"
        package = STANDIN.format(version=i, broken=i >= BUG, message=STANDIN_ASSERT)
        shas.append(_commit(repo, {f"{folder}/__init__.py": package}, f"change {i}"))
    (repo / ".gitignore").write_text("local.cfg\n")
    (repo / "local.cfg").write_text("the user's\n")
    return repo, shas


def _assert_standin_report(report, repo: Path, shas: list[str]) -> None:
    assert report.reproduced and report.first_bad.hash == shas[BUG], report.steps
    steps = {step.commit.hash: step for step in report.steps}
    broken = steps[shas[BROKEN_BUILD]]
    assert broken.outcome == "skip" and broken.reason.startswith("the build failed"), broken
    assert "nvfuser_direct" in broken.reason  # the build's own last lines: cp names the file
    assert steps[shas[BUG]].outcome == "bad" and "Can not find a scheduler" in steps[
        shas[BUG]].reason
    assert steps[shas[BUG - 1]].outcome == "good"
    assert (repo / "local.cfg").read_text() == "the user's\n"
    _assert_restored(repo)


def test_each_commit_is_built_and_a_failing_build_is_skipped(tmp_path):
    """--build with an oracle --command: the command sees what the build installed, first on
    PYTHONPATH, and never the worktree's sources."""
    repo, shas = _standin_history(tmp_path)
    check = tmp_path / "check.py"  # outside the repository: its folder goes on sys.path
    check.write_text(
        "import os, nvfuser_direct\n"
        "assert nvfuser_direct.__file__.startswith(os.environ['FUSECLI_BUILD_PREFIX'])\n"
        "assert os.environ['FUSECLI_BISECT_COMMIT'] == os.popen('git rev-parse HEAD').read()"
        ".strip()\n" + STANDIN_REPRO
    )
    report = run_bisect([], BisectOptions(), GitRange(
        shas[0], shas[-1], repo=repo, command=f"{sys.executable} {check}", build=BUILD,
    ))
    _assert_standin_report(report, repo, shas)
    assert "built with: cp -r nvfuser_direct" in report.command
    first_bad = report.replays[f"git: first bad ({shas[BUG][:10]})"]
    assert "worktree add --detach" in first_bad and "FUSECLI_BUILD_PREFIX" in first_bad


@functools.cache
def _child_takes_engine() -> bool:
    result = subprocess.run([sys.executable, "-m", "fusecli.bisect", "--help"],
                            capture_output=True, text=True)
    return "--engine" in result.stdout


def test_nvfuser_engine_bisect_over_a_built_standin_history(tmp_path):
    """What `fusecli bisect --git GOOD BAD --repo FUSER --build CMD --engine nvfuser -- repro`
    does, with the stand-in package for nvFuser: the installed fusecli asks each commit's build
    the question, and the first bad commit is the one that introduced the assert."""
    if not _child_takes_engine():
        pytest.skip("`python -m fusecli.bisect` has no --engine option yet: the nvFuser "
                    "engine's child question is not there to ask")
    repo, shas = _standin_history(tmp_path)
    repro = tmp_path / "repro.py"
    repro.write_text(STANDIN_REPRO)
    options = BisectOptions(check_str="Can not find a scheduler", timeout=120.0)
    report = run_bisect([repro], options, GitRange(
        shas[0], shas[-1], repo=repo, build=BUILD, engine="nvfuser",
    ))
    _assert_standin_report(report, repo, shas)
    assert "-m fusecli.bisect" in report.command and "--engine nvfuser" in report.command


def test_an_engine_other_than_fusecli_needs_a_build(tmp_path):
    with pytest.raises(InputError, match="needs --build"):
        run_bisect([tmp_path / "repro.py"], BisectOptions(),
                   GitRange("a", "b", repo=tmp_path, engine="nvfuser"))


def _verdict_line(status: str, error_type: str | None, message: str) -> str:
    verdict = {"status": status, "error_type": error_type, "message": message}
    return f"FUSECLI_PHASE execute\nFUSECLI_VERDICT {json.dumps(verdict)}\n"


@pytest.mark.parametrize(
    ("kind", "check_str", "code", "output", "expected"),
    [
        ("any", None, 0, _verdict_line("pass", None, ""), GOOD),
        ("any", None, 1, _verdict_line("crash", "RuntimeError", STANDIN_ASSERT), BAD),
        ("crash", "Can not find a scheduler", 1,
         _verdict_line("crash", "RuntimeError", STANDIN_ASSERT), BAD),
        ("crash", "illegal memory access", 1,
         _verdict_line("crash", "RuntimeError", STANDIN_ASSERT), SKIP),
        ("accuracy", None, 1, _verdict_line("crash", "RuntimeError", STANDIN_ASSERT), SKIP),
        ("accuracy", None, 1, _verdict_line("mismatch", None, "output 0"), BAD),
        ("any", None, 2, _verdict_line("invalid", None, "no fusion"), SKIP),
        ("any", None, 4, _verdict_line("environment", None, "no nvfuser_direct"), SKIP),
    ],
)
def test_questions_of_the_installed_fusecli_map_to_git_bisect_codes(
    kind, check_str, code, output, expected
):
    spec = {"flavor": "question", "kind": kind, "check_str": check_str, "timeout": 1.0}
    assert classify(spec, code, output, "exit")[0] == expected


@pytest.mark.parametrize(
    ("flavor", "kind", "code", "ended", "output", "expected"),
    [
        ("command", "any", 0, "exit", "", GOOD),
        ("command", "any", 3, "exit", "", BAD),
        ("command", "any", 125, "exit", "", SKIP),
        ("command", "any", 127, "exit", "sh: nope: not found", SKIP),
        ("command", "any", 1, "exit",
         "Traceback (most recent call last):\nModuleNotFoundError: No module named 'x'", SKIP),
        ("command", "accuracy", None, "timeout", "", SKIP),
        ("command", "hang", None, "timeout", "", BAD),
        ("command", "crash", -11, "signal", "", BAD),
        ("fusecli", "accuracy", 1, "exit", "", BAD),
        ("fusecli", "accuracy", 3, "exit", "", SKIP),
        ("fusecli", "crash", 3, "exit", "", BAD),
        ("fusecli", "any", 2, "exit", "", SKIP),
        ("fusecli", "any", 4, "exit", "", SKIP),
    ],
)
def test_outcomes_map_to_git_bisect_codes(flavor, kind, code, ended, output, expected):
    spec = {"flavor": flavor, "kind": kind, "check_str": None, "timeout": 1.0}
    assert classify(spec, code, output, ended)[0] == expected


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="looks for processes in /proc")
def test_an_interrupted_git_bisect_restores_the_checkout(tmp_path):
    """SIGINT to fusecli alone (what ``timeout -s INT`` sends) while commits are being tested."""
    import signal
    import time

    repo, started = tmp_path / "repo", tmp_path / "started"

    def files(i: int) -> dict[str, str]:
        # GOOD and BAD answer at once; every commit between takes a minute: the signal comes
        # while git's own bisect run is testing one.
        slow = f"import sys, time\nopen({str(started)!r}, 'w')\ntime.sleep(60)\n"
        check = {0: "import sys\nsys.exit(0)\n", 9: "import sys\nsys.exit(1)\n"}.get(i, slow)
        return {**_tinycalc(i), "check.py": check}

    shas = _history(repo, files)
    process = subprocess.Popen(
        [sys.executable, "-m", "fusecli", "bisect", "--git", shas[0], shas[-1], "--repo",
         str(repo), "--command", f"{sys.executable} check.py {tmp_path}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # until a commit is checked out and being tested
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 125, err.decode()
    assert "interrupted" in err.decode()
    _assert_restored(repo)  # and bisect's worktree is gone
    # and git's bisect run is not left going on, nor the oracle it was running
    assert not _processes_mentioning(str(repo), "bisect")
    deadline = time.monotonic() + 5
    while _processes_mentioning("check.py", str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_mentioning("check.py", str(tmp_path))


def _processes_mentioning(*words: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if all(word in text for word in words):
            found.append(text)
    return found
