"""No file can break a run: each runs in a worker of its own (DESIGN.md, "Runs of many fusions").

A script that exits, kills itself, segfaults, raises KeyboardInterrupt, ignores SIGALRM and
loops, or writes to file descriptor 1 is that file's record; the others pass, the exit code is
the worst, and ``--json`` prints exactly one document. These run ``python -m fusecli`` in a
subprocess: CliRunner captures in this process, where a crash would end the test run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.app.attribution import NVFUSER, PASSES, TRANSLATION, attribute_script
from fusecli.app.corpus import cluster_failures, failure_signature
from fusecli.app.pipeline import FusionOutcome, RunReport
from fusecli.cli.main import cli, register

register()

DEFINE = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.{op}(t0))

"""
EXECUTE = "fd.execute([torch.randn(4, 8, device='cuda:0')])\n"

# name: (script, expected status, words of the expected error)
SCRIPTS = {
    "a_passes": (DEFINE.format(op="exp") + EXECUTE, "pass", None),
    "b_exits": (DEFINE.format(op="exp") + EXECUTE + "import os\nos._exit(7)\n",
                "error", "the worker exited with status 7 before reporting"),
    "c_kills_itself": (
        DEFINE.format(op="exp") + EXECUTE
        + "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "error", "the worker died: killed by signal SIGKILL"),
    "d_segfaults": (DEFINE.format(op="exp") + EXECUTE + "import ctypes\nctypes.string_at(0)\n",
                    "error", "the worker died: killed by signal SIGSEGV (a crash in native code"),
    "e_interrupts": (DEFINE.format(op="exp") + EXECUTE + "raise KeyboardInterrupt\n",
                     "error", "the script raised KeyboardInterrupt"),
    "f_ignores_alarms": (
        DEFINE.format(op="exp")
        + "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass\n",
        "error", "took longer than --timeout 5 s; the worker was killed"),
    "g_writes_to_fd_1": (
        DEFINE.format(op="neg") + "import os\nos.write(1, b'garbage\\n')\nprint('more')\n"
        + EXECUTE,
        "pass", None),
    "h_passes": (DEFINE.format(op="tanh") + EXECUTE, "pass", None),
}


def write_scripts(folder: Path) -> Path:
    for name, (text, _, _) in SCRIPTS.items():
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_no_script_breaks_a_run_and_stdout_is_one_document(tmp_path, jobs):
    folder = write_scripts(tmp_path)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "run", str(folder), "--jobs", jobs,
         "--timeout", "5", "--json"],
        capture_output=True, timeout=120, env={**os.environ, "FUSECLI_IN_PROCESS": ""},
    )
    elapsed = time.monotonic() - started
    stderr = done.stderr.decode()
    assert done.returncode == 3, stderr
    document = json.loads(done.stdout)  # nothing the scripts wrote precedes or follows it
    by_name = {f["name"]: f for f in document["fusions"]}
    assert sorted(by_name) == sorted(SCRIPTS)
    for name, (_, status, words) in SCRIPTS.items():
        record = by_name[name]
        assert record["status"] == status, (name, record)
        if status == "pass":
            assert record["outputs"] and all(o["ok"] for o in record["outputs"]), record
        else:
            assert words in record["error"], (name, record["error"])
            assert record["detail"], name  # the worker's last output, or the traceback
    assert "garbage" in stderr and "more" in stderr  # descriptor 1 of a script: stderr
    assert "Segmentation fault" in by_name["d_segfaults"]["detail"]  # the stack at the crash
    assert document["ok"] is False
    assert sorted(sum((c["files"] for c in document["clusters"]), [])) == sorted(
        str(folder / f"{name}.py") for name, (_, status, _) in SCRIPTS.items()
        if status == "error"
    )
    assert elapsed < 60, f"the run took {elapsed:.0f} s"


def test_an_early_error_is_still_one_json_document(tmp_path):
    missing = tmp_path / "missing.py"
    result = CliRunner().invoke(cli, ["run", str(missing), "--json"])
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert document["ok"] is False and str(missing) in document["fusions"][0]["error"]
    bad_shard = CliRunner().invoke(cli, ["run", str(missing), "--shard", "5/4", "--json"])
    assert bad_shard.exit_code == 2
    assert json.loads(bad_shard.stdout) == {
        "ok": False, "fusions": [], "error": "--shard '5/4': K must be between 1 and N",
    }
    bad_option = CliRunner().invoke(cli, ["run", str(missing), "--jobs", "0", "--json"])
    assert bad_option.exit_code == 2
    usage = json.loads(bad_option.stdout)
    assert usage["ok"] is False and "--jobs" in usage["error"]


ASSERT = (
    'RuntimeError:  INTERNAL ASSERT FAILED at "/workspace/Fuser/csrc/fusion_segmenter.cpp":4015, '
    "please report a bug with repro script to NVFuser at https://github.com/NVIDIA/Fuser/issues. "
    "Expected scheduler_type != SchedulerType::None . Can not find a scheduler for {tensor}\n"
    "Exception raised from deriveSchedulerType at /workspace/Fuser/csrc/fusion_segmenter.cpp:4015"
)


def nvfuser_failure(path: Path, tensor: str) -> FusionOutcome:
    text = ASSERT.format(tensor=tensor)
    return FusionOutcome(
        path=str(path), name=path.stem, status="error", exit_code=3,
        error="nvFuser: " + text.splitlines()[0][:80], detail=text,
    )


def test_nvfuser_asserts_cluster_by_location_and_words(tmp_path):
    small, large, other = (tmp_path / name for name in ("small.py", "large.py", "other.py"))
    small.write_text("x" * 10, encoding="utf-8")
    large.write_text("x" * 1000, encoding="utf-8")
    other.write_text("x", encoding="utf-8")
    different = FusionOutcome(
        path=str(other), name="other", status="error", exit_code=3,
        error="nvFuser: RuntimeError: CUDA error: an illegal memory access was encountered",
        detail="RuntimeError: CUDA error: an illegal memory access was encountered",
    )
    report = RunReport([nvfuser_failure(large, "T12"), nvfuser_failure(small, "T3"), different])
    first, second = cluster_failures(report)
    assert first.count == 2 and first.files == [str(large), str(small)]
    assert first.signature == (
        "error: RuntimeError at csrc/fusion_segmenter.cpp:4015: Expected scheduler_type != "
        "SchedulerType::None . Can not find a scheduler for <val>"
    )
    assert first.smallest == f"{small}: small"
    assert second.count == 1 and "illegal memory access" in second.signature


def test_attribution_runs_the_plain_script(tmp_path):
    signature = failure_signature(nvfuser_failure(tmp_path / "f.py", "T7"))
    fails_alike = "raise RuntimeError({!r})\n".format(ASSERT.format(tensor="T1").split(": ", 1)[1])
    assert attribute_script(fails_alike, signature, timeout=30).verdict == NVFUSER
    passes = attribute_script("print('fine')\n", signature, timeout=30)
    assert (passes.verdict, passes.plain) == (TRANSLATION, PASSES)
    other = attribute_script("raise ValueError('bad strides')\n", signature, timeout=30)
    assert other.verdict == TRANSLATION and other.plain == "error: ValueError: bad strides"


def test_a_worker_can_set_nvfusers_dlopen_flags_before_torch_loads():
    """nvFuser's wheel loads only when the flags are set before torch is first imported."""
    check = "import sys, fusecli.app.worker; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60)


def test_a_script_run_alone_finds_the_modules_a_relative_pythonpath_names(tmp_path, monkeypatch):
    """A plain repro runs in its own folder; ``PYTHONPATH=tests/standin`` as the user typed it
    (relative to where fusecli was started) still names the same folder for it."""
    from fusecli.app.attribution import run_script

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "here_only.py").write_text("VALUE = 7\n", encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    script = tmp_path / "elsewhere" / "repro.py"
    script.write_text("import here_only\nprint(here_only.VALUE)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", "lib")
    run = run_script(script, timeout=60)
    assert run.status == "pass" and run.stdout.strip() == "7"
