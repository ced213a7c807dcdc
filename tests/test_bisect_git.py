"""``fusecli bisect --git``: a planted regression in a temporary repository's history.

The repository holds a tiny package whose behaviour regresses in one commit, and a commit that
does not import (untestable, skipped). The oracle runs each commit's own code; the checkout is
always restored.
"""

from __future__ import annotations

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


def test_a_dirty_checkout_is_refused_untouched(tmp_path):
    repo = tmp_path / "repo"
    shas = _history(repo, _tinycalc)
    (repo / "check.py").write_text("changed\n")
    with pytest.raises(InputError, match="uncommitted changes"):
        run_bisect([], BisectOptions(), GitRange(shas[0], shas[-1], repo=repo, command="true"))
    assert (repo / "check.py").read_text() == "changed\n"


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
         str(repo), "--command", f"{sys.executable} check.py"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # until a commit is checked out and being tested
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 125, err.decode()
    assert "interrupted" in err.decode()
    _assert_restored(repo)
    # and git's bisect run is not left going on, to check out commits under the restored branch
    assert not _processes_mentioning(str(repo), "bisect")


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
