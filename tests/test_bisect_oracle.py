"""The bisect oracle: verdicts, targets, and questions in fresh interpreters that hang or die."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fusecli.app.pipeline import RunOptions
from fusecli.bisect.check import Verdict
from fusecli.bisect.oracle import Oracle, Target
from fusecli.bisect.questions import Question
from fusecli.engines.signature import normalize_message

FUSIONS = Path(__file__).resolve().parent.parent / "fusions"
SOFTMAX = FUSIONS / "softmax.yaml"

# A repro script whose executor misbehaves at `exp` once it runs: the patch is made while the
# script loads, in the child, so the failure happens in the execute phase.
EXECUTOR_PATCH = """
import os, time
import fusecli.runtime.aten as aten
_original = aten.AtenExecutor.run_expr
def _run_expr(self, expr, env, ctx):
    if expr.op.value == "exp":
        {action}
    return _original(self, expr, env, ctx)
aten.AtenExecutor.run_expr = _run_expr
"""

EXP_REPRO = """
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.exp(T0)
    fd.add_output(T1)

inputs = [torch.ones(4, 8)]
fd.execute(inputs)
"""


def _script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _oracle(tmp_path: Path, **kwargs) -> Oracle:
    return Oracle(RunOptions(), tmp_path / "questions", **kwargs)


# -- verdicts and targets ------------------------------------------------------------------------


def test_normalized_messages_ignore_positions_paths_and_names():
    one = normalize_message("aten: expr 12 (fd.ops.add): T3 at /tmp/a/b.py 0x7f00 size 512")
    two = normalize_message("aten: expr 3 (fd.ops.add): T9 at /home/x.py 0x1234 size 64")
    assert one == two
    assert normalize_message("expr 3 (fd.ops.add)") != normalize_message("expr 3 (fd.ops.mul)")


def test_targets_match_their_kind_and_signature():
    crash = Verdict("crash", "RuntimeError", "boom in expr 4")
    target = Target.learn(crash)
    assert target.kind == "crash"
    assert target.matches(Verdict("crash", "RuntimeError", "boom in expr 9"))
    assert not target.matches(Verdict("crash", "ValueError", "boom in expr 9"))
    assert not target.matches(Verdict("mismatch", message="output 0"))
    assert Target.learn(Verdict("mismatch")).kind == "accuracy"
    assert Target.learn(Verdict("hang")).matches(Verdict("hang"))
    assert Target("any").matches(Verdict("died", "SIGSEGV")) and not Target("any").matches(
        Verdict("invalid", "InputError", "bad file"))
    checked = Target.learn(crash, "crash", check_str="illegal")
    assert checked.matches(Verdict("crash", "ValueError", "an illegal address"))
    assert not checked.matches(crash)


def test_verdicts_cross_processes_as_json():
    verdict = Verdict("crash", "RuntimeError", "boom", "execute", 0.5, 2)
    assert Verdict.from_json(verdict.to_json()) == verdict


# -- asking --------------------------------------------------------------------------------------


def test_in_process_and_fresh_interpreter_agree(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "exp")
    here = _oracle(tmp_path, isolate=False).ask(Question(path=SOFTMAX))
    fresh = _oracle(tmp_path).ask(Question(path=SOFTMAX))
    assert here.verdict.status == fresh.verdict.status == "mismatch"
    assert here.verdict.message == fresh.verdict.message
    assert fresh.command[1:3] == ["-m", "fusecli.bisect"]
    monkeypatch.delenv("FUSECLI_INJECT_FAULT")
    assert not _oracle(tmp_path, isolate=False).ask(Question(path=SOFTMAX)).failing


def test_a_script_that_sleeps_is_a_hang_while_loading(tmp_path):
    sleeper = _script(tmp_path, "sleeper.py", "import time\ntime.sleep(120)\n")
    answer = _oracle(tmp_path, timeout=1.5).ask(Question(path=sleeper))
    assert answer.failing
    assert (answer.verdict.status, answer.verdict.phase) == ("hang", "load")


@pytest.mark.parametrize(
    ("action", "status", "cause", "fork"),
    [("os.abort()", "died", "SIGABRT", True), ("os._exit(7)", "died", "exit status 7", True),
     ("time.sleep(120)", "hang", None, True), ("os.abort()", "died", "SIGABRT", False)],
)
def test_an_executor_that_dies_or_hangs_is_caught(tmp_path, action, status, cause, fork):
    patch = EXECUTOR_PATCH.format(action=action)
    repro = _script(tmp_path, "repro.py", patch + EXP_REPRO)
    # Only a hang waits for the timeout; a death is seen at once, so its timeout is generous
    # (a loaded machine may take seconds to start the question's process).
    oracle = _oracle(tmp_path, timeout=3.0 if status == "hang" else 120.0, fork=fork)
    answer = oracle.ask(Question(path=repro))
    verdict = answer.verdict
    assert answer.failing
    assert (verdict.status, verdict.phase, verdict.error_type) == (status, "execute", cause)


def test_repeat_catches_a_flaky_failure_and_every_run_measures_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "")  # the script sets it in this process
    # Fails on every other run: the script turns fault injection on at odd loads.
    counter = tmp_path / "count"
    toggle = textwrap.dedent(f"""
        import os
        from pathlib import Path
        counter = Path({str(counter)!r})
        runs = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(runs + 1))
        os.environ["FUSECLI_INJECT_FAULT"] = "exp" if runs % 2 == 1 else ""
        """)
    flaky = _script(tmp_path, "flaky.py", toggle + EXP_REPRO)
    oracle = _oracle(tmp_path, repeat=3, isolate=False)
    measured = oracle.ask(Question(path=flaky), every_run=True)
    assert [v.status for v in measured.verdicts] == ["pass", "mismatch", "pass"]
    found = oracle.ask(Question(path=flaky))  # stops at the first failing run
    assert found.failing and [v.status for v in found.verdicts] == ["mismatch"]
    assert (oracle.queries, oracle.runs) == (2, 4)


def test_bad_input_is_invalid_not_a_failure(tmp_path):
    broken = _script(tmp_path, "broken.py", "raise ValueError('not a repro')\n")
    answer = _oracle(tmp_path, isolate=False).ask(Question(path=broken))
    assert not answer.failing and answer.verdict.status == "invalid"


def test_in_memory_questions_travel_as_bundles_and_leave_nothing_behind(tmp_path, monkeypatch):
    from fusecli.load import load_path

    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "exp")
    loaded = load_path(SOFTMAX, device="cpu")[0]
    oracle = _oracle(tmp_path)
    answer = oracle.ask(Question(loaded=loaded))
    assert answer.failing and answer.verdict.status == "mismatch"
    assert list((tmp_path / "questions").glob("*.pt")) == []
    kept = oracle.command(Question(loaded=loaded), keep_as=tmp_path / "kept.pt")
    assert Path(kept[3]).exists()
