"""Localizing planted faults: segment bisection and op-level minimization (fusecli.bisect).

Faults are planted with FUSECLI_INJECT_FAULT (wrong values) or by patching the ATen executor
(a crash). Most questions are asked in this process for speed; every written repro is checked
in a fresh interpreter, where it must fail alone, and pass without the fault.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fusecli.app.pipeline import RunOptions
from fusecli.bisect.check import Verdict
from fusecli.bisect.driver import BisectOptions, bisect_path
from fusecli.bisect.oracle import Oracle
from fusecli.bisect.questions import Question
from fusecli.bisect.random_fusion import random_fusion, write_random_fusion
from fusecli.errors import InputError
from fusecli.load import load_path

FUSIONS = Path(__file__).resolve().parent.parent / "fusions"

pytestmark = pytest.mark.filterwarnings("ignore::fusecli.runtime.FaultInjectionWarning")


def _bisect(path: Path, out: Path, **options) -> object:
    return bisect_path(path, BisectOptions(isolate=False, output=out, **options))


def _fresh(path: Path, tmp_path: Path) -> Verdict:
    return Oracle(RunOptions(), tmp_path / "check").ask(Question(path=path)).verdict


def test_segment_bisection_finds_the_faulty_reduction_in_few_questions(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "prod")
    report = _bisect(FUSIONS / "reductions.yaml", tmp_path, mode="segments")
    finding = report.segments
    assert report.reproduced and report.exit_code == 0
    # nvFuser's 12 segments: the three keepdim broadcasts after a segment_set are their own
    assert finding.count == 12 and finding.index == 2 and finding.ops == ["prod"]
    assert finding.scheduler == "reduction"
    assert any(v.accepted and v.scheduler == "reduction" for v in finding.decisions)
    assert [v.scheduler for v in finding.decisions if not v.accepted]  # the rejections, too
    # the bisection proper, plus the check of the segment alone
    assert finding.queries <= 2 * math.log2(finding.count) + 3
    assert finding.fails_alone is True
    assert "op = mul" in finding.ir and finding.repro.name == "segment_2.py"
    assert finding.kernel_source is not None or "kernel" in finding.kernel_note
    assert set(report.replays) == {"segments: last good (first 2 on the executor)",
                                   "segments: first bad (first 3 on the executor)"}
    assert report.replays["segments: first bad (first 3 on the executor)"].endswith(
        "reductions.yaml --segments 3")
    assert report.minimized is None


def test_a_planted_fault_in_a_200_op_fusion_minimizes_to_a_repro_that_fails_alone(
    tmp_path, monkeypatch
):
    source = write_random_fusion(tmp_path / "random200.py", num_ops=200, seed=3)
    original = load_path(source, device="cpu")[0]
    assert len(original.fusion.tensor_exprs()) >= 200
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "exp")
    report = _bisect(source, tmp_path / "out")
    result = report.minimized
    assert report.reproduced and report.target.kind == "accuracy"
    assert "exp" in result.ops and len(result.ops) <= 4
    assert report.queries <= 150
    assert result.verified  # fails alone, asked in a fresh interpreter
    assert all(s.size is None or s.size <= 200 for s in result.steps)
    text = result.repro_py.read_text()
    assert "# fusecli bisect: minimized repro" in text and "torch 2." in text
    assert "failure: accuracy" in text and "FUSECLI_INJECT_FAULT=exp" in text
    # the YAML twin loads to the same fusion and inputs
    (from_yaml,) = load_path(result.repro_yaml, device="cpu")
    (from_py,) = load_path(result.repro_py, device="cpu")
    assert repr(from_yaml.fd) == repr(from_py.fd)
    assert all(a.equal(b) for a, b in zip(from_yaml.inputs, from_py.inputs))
    # ... and it passes once the fault is gone
    monkeypatch.delenv("FUSECLI_INJECT_FAULT")
    assert _fresh(result.repro_py, tmp_path).status == "pass"


def test_minimization_starts_from_the_segment_and_drops_unused_outputs(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "rsqrt")
    report = _bisect(FUSIONS / "rms_norm.py", tmp_path)
    result = report.minimized
    assert result.ops == ["rsqrt"] and result.outputs == 1
    assert result.outputs_before == 2 and result.inputs_before == 2
    assert all(dim == "1" for dim in result.inputs[0].split("[")[1].rstrip("]").split(", "))


def test_a_crash_is_minimized_by_its_signature(tmp_path, monkeypatch):
    import fusecli.runtime.aten as aten

    original = aten.AtenExecutor.run_expr

    def crashing(self, expr, env, ctx):
        if expr.op.value == "erf":
            raise RuntimeError(f"CUDA error: an illegal memory access in expr {id(expr)}")
        return original(self, expr, env, ctx)

    monkeypatch.setattr(aten.AtenExecutor, "run_expr", crashing)
    loaded = random_fusion(60, seed=1, planted="erf")
    assert [e.op.value for e in loaded.fusion.exprs].count("erf") == 1
    source = write_random_fusion(tmp_path / "random60.py", num_ops=60, seed=1, planted="erf")
    report = _bisect(source, tmp_path / "out", shrink=False, check_str="illegal memory",
                     mode="minimize")
    assert report.target.kind == "crash" and report.target.check_str == "illegal memory"
    assert report.original.error_type == "RuntimeError"
    assert report.minimized.ops == ["erf"]
    # the patched executor lives in this process only: alone, in a fresh one, it passes
    assert not report.minimized.verified and report.exit_code == 3


def test_a_fusion_that_passes_does_not_reproduce(tmp_path, monkeypatch):
    monkeypatch.delenv("FUSECLI_INJECT_FAULT", raising=False)
    report = _bisect(FUSIONS / "softmax.yaml", tmp_path)
    assert not report.reproduced and report.exit_code == 1
    assert report.segments is None and report.minimized is None


def test_a_failure_of_another_kind_does_not_count(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "exp")
    report = _bisect(FUSIONS / "softmax.yaml", tmp_path, kind="crash")
    assert not report.reproduced and report.exit_code == 1
    assert "not as asked" in report.notes[0]


def test_a_script_that_hangs_while_loading_is_bad_input(tmp_path):
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time\ntime.sleep(120)\n")
    options = BisectOptions(timeout=1.5, output=tmp_path / "out")
    with pytest.raises(InputError, match="does not finish loading"):
        bisect_path(sleeper, options)
