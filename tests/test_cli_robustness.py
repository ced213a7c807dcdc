"""Runs of many fusions survive any one of them; bad options and outputs fail before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.app import pipeline
from fusecli.cli.main import cli, hoist_debug, register
from fusecli.errors import InputError

register()
FUSIONS = Path(__file__).resolve().parent.parent / "fusions"
RMS_NORM = FUSIONS / "rms_norm.py"

GOOD = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.exp(t0))

fd.execute([torch.randn(4, 8)])
"""


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _corpus(tmp_path: Path, **scripts: str) -> Path:
    for name, text in scripts.items():
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
    return tmp_path


def test_an_internal_error_is_that_fusions_record_and_the_run_goes_on(tmp_path, monkeypatch):
    from mixed_corpus import crash_when_named

    folder = _corpus(tmp_path, a_crashes=GOOD, b_fine=GOOD)
    crash_when_named(monkeypatch, "a_crashes.py")
    result = invoke("run", str(folder), "--json")
    assert result.exit_code == 3
    document = json.loads(result.stdout)  # one complete document despite the crash
    crashed, fine = document["fusions"]
    assert crashed["status"] == "error"
    assert crashed["error"] == "internal error: ZeroDivisionError: integer modulo by zero"
    assert "Traceback" in crashed["detail"] and "crash_on_a" in crashed["detail"]
    assert fine["status"] == "pass" and fine["detail"] is None
    assert document["ok"] is False


def test_a_script_that_never_ends_times_out_and_the_run_goes_on(tmp_path):
    folder = _corpus(tmp_path, a_loops="while True:\n    pass\n" + GOOD, b_fine=GOOD)
    result = invoke("run", str(folder), "--json", "--timeout", "1")
    assert result.exit_code == 3
    looping, fine = json.loads(result.stdout)["fusions"]
    assert looping["status"] == "error" and "longer than --timeout 1 s" in looping["error"]
    assert fine["status"] == "pass"


def test_an_interrupted_run_reports_what_finished(tmp_path, monkeypatch):
    folder = _corpus(tmp_path, a_fine=GOOD, b_interrupted=GOOD, c_never=GOOD)
    real = pipeline.run_file

    def interrupt_at_b(path, options):
        if path.name == "b_interrupted.py":
            raise KeyboardInterrupt
        return real(path, options)

    monkeypatch.setattr(pipeline, "run_file", interrupt_at_b)
    monkeypatch.setenv("FUSECLI_IN_PROCESS", "1")  # the patch is in this process
    junit = tmp_path / "out" / "results.xml"
    result = invoke("run", str(folder), "--json", "--junit", str(junit))
    assert result.exit_code == 125
    document = json.loads(result.stdout)
    assert document["interrupted"] == "interrupted" and document["ok"] is False
    assert [f["name"] for f in document["fusions"]] == ["a_fine"]
    assert 'tests="1"' in junit.read_text(encoding="utf-8")
    assert "the report covers the 1 fusion(s) that finished" in result.stderr


@pytest.mark.parametrize(
    ("option", "value"), [("--rtol", "-1"), ("--rtol", "nan"), ("--atol", "inf")]
)
def test_bad_tolerances_are_usage_errors(option, value):
    result = invoke("run", str(RMS_NORM), option, value)
    assert result.exit_code == 2
    assert "must be a finite number >= 0" in result.stderr


def test_an_unwritable_junit_path_fails_before_any_work(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    result = invoke("run", str(RMS_NORM), "--junit", str(blocker / "results.xml"))
    assert result.exit_code == 2
    assert "not a writable folder" in result.stderr
    assert "running" not in result.stdout and result.stdout == ""


def test_debug_may_follow_the_subcommand():
    assert hoist_debug(["run", "x.py", "--debug"]) == ["--debug", "run", "x.py"]
    assert hoist_debug(["bisect", "--", "--debug"]) == ["bisect", "--", "--debug"]
    with pytest.raises(InputError, match="no such file"):  # --debug: the error, raised
        invoke("run", str(FUSIONS / "missing.py"), "--debug")


def test_a_reader_that_stops_early_is_not_a_failure():
    """``fusecli run ... --json | head -c 100``: exit 0 (the run passed), no traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "fusecli", "run", str(FUSIONS), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(100)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=600) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr


@pytest.mark.slow
@pytest.mark.parametrize(("signal_number", "word"), [(2, "interrupted"), (15, "terminated")])
def test_a_signal_to_the_parent_alone_stops_the_workers(tmp_path, signal_number, word):
    """``timeout -s INT`` and CI runners signal only the parent: it must not wait for workers."""
    folder = _corpus(tmp_path, a_fine=GOOD, b_loops="import nvfuser\nwhile True:\n    pass\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "fusecli", "run", str(folder), "--jobs", "2", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:  # still running, as it should: now signal the parent
        process.send_signal(signal_number)
        out, err = process.communicate(timeout=60)
    else:
        pytest.fail(f"the run ended before the signal: {err.decode()}")
    assert process.returncode == 125, err.decode()
    document = json.loads(out)
    assert document["interrupted"] == word
    assert f"fusecli: {word}" in err.decode()


def test_a_folder_run_never_executes_files_that_are_not_repros(tmp_path):
    marker = tmp_path / "setup_ran"
    folder = _corpus(
        tmp_path, fusion=GOOD, setup=f"open({str(marker)!r}, 'w').write('ran')\n",
    )
    result = invoke("run", str(folder), "--json")
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    document = json.loads(result.stdout)
    assert [f["name"] for f in document["fusions"]] == ["fusion"]
    (notice,) = document["notices"]
    assert "skipped 1 file(s)" in notice and "setup.py" in notice


def test_bisect_never_writes_into_a_full_folder_without_force(tmp_path):
    (tmp_path / "minimized.py").write_text("# the user's own file\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["bisect", str(RMS_NORM), "-o", str(tmp_path)])
    assert result.exit_code == 2
    assert "is not empty; pass --force" in result.stderr
    assert (tmp_path / "minimized.py").read_text(encoding="utf-8") == "# the user's own file\n"


@pytest.mark.parametrize("command", ["explain", "convert"])
def test_unwritable_outputs_are_usage_errors(tmp_path, command):
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    target = str(blocker / "out.txt")
    args = (["explain-segmentation", str(RMS_NORM), "--dot", target] if command == "explain"
            else ["convert", str(RMS_NORM), "-o", target])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "not a writable folder" in result.stderr and "Traceback" not in result.output


def test_a_yaml_input_larger_than_memory_is_refused_before_allocation(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text(
        "fusecli_yaml: 1\n"
        "name: huge\n"
        "definition: |\n"
        "  def nvfuser_fusion(fd : FusionDefinition) -> None :\n"
        "      T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True],"
        " dtype=DataType.Float, is_cpu=False)\n"
        "      fd.add_output(fd.ops.exp(T0))\n"
        "inputs:\n"
        "  - kind: tensor\n"
        "    dtype: float32\n"
        "    shape: [1000000, 1000000]\n",
        encoding="utf-8",
    )
    result = invoke("run", str(path))
    assert result.exit_code == 2, result.output
    assert "inputs[0]: cannot make this input" in result.stderr
    assert "more than half of this machine's memory" in result.stderr
    assert f"{path}:" in result.stderr  # the file and line of that input


def test_explain_reports_a_segmenter_crash_as_that_fusions_record(tmp_path, monkeypatch):
    from fusecli.app import explain

    path = tmp_path / "two.py"
    path.write_text(GOOD + GOOD.replace("fd.ops.exp", "fd.ops.neg").split("\n", 2)[2],
                    encoding="utf-8")
    real = explain.segment_fusion

    def crash_on_neg(fusion, *args, **kwargs):
        if any(e.op.value == "neg" for e in fusion.exprs):
            raise RuntimeError("segment graph is not a DAG")
        return real(fusion, *args, **kwargs)

    monkeypatch.setattr(explain, "segment_fusion", crash_on_neg)
    monkeypatch.setenv("FUSECLI_IN_PROCESS", "1")  # the patch is in this process
    result = invoke("explain-segmentation", str(path), "--json")
    assert result.exit_code == 3
    first, second = json.loads(result.stdout)["fusions"]
    assert first["status"] == "pass" and first["segments"]
    assert second["status"] == "error"
    assert second["error"] == "internal error: RuntimeError: segment graph is not a DAG"
    assert "crash_on_neg" in second["detail"]
    tree = invoke("explain-segmentation", str(path))
    assert tree.exit_code == 3 and "the segmenter failed" in tree.stdout


def test_a_folder_of_zero_size_crashing_and_valid_fusions_reports_each(tmp_path, monkeypatch):
    from mixed_corpus import run_mixed_corpus, write_mixed_corpus

    run_mixed_corpus(write_mixed_corpus(tmp_path), monkeypatch, cli, "--executor", "aten")
