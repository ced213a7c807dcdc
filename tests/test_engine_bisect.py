# ruff: noqa: E501
"""``fusecli bisect --engine nvfuser`` end to end, without a GPU: a stand-in ``nvfuser_direct``
(``tests/standin``) fails as nvFuser does (an assert on an op pattern, a wrong value, a hang, a
segfault), and bisect must minimize each failure to a plain script that fails alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fusecli.engines.signature import error_signature

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "standin"

REPRO = """\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.add(T0, T1)
    T3 = fd.ops.exp(T2)
    T4 = fd.ops.mul(T3, T1)
    T5 = fd.ops.tanh(T4)
    T6 = fd.ops.sum(T5, dims=[1], keepdim=False)
    T7 = fd.ops.neg(T6)
    T8 = fd.ops.sin(T3)
    T9 = fd.ops.sum(T8, dims=[0], keepdim=False)
    T10 = fd.ops.abs(T9)
    fd.add_output(T7)
    fd.add_output(T10)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(16, 8, device='cuda:0'),
    torch.randn(16, 8, device='cuda:0'),
]
fd.execute(inputs)
"""


def _env(faults: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(STANDIN), str(ROOT), env.get("PYTHONPATH", "")])
    env["FUSECLI_STANDIN_FAULTS"] = faults
    return env


def _bisect(tmp_path: Path, faults: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO, encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "bisect", str(repro), "--engine", "nvfuser", "-o",
         str(out), "-j", "2", "--json", *extra],
        capture_output=True, text=True, env=_env(faults), timeout=600,
    )
    return done, json.loads(done.stdout)


def _plain(script: Path, faults: str) -> subprocess.CompletedProcess:
    """``python minimized.py`` with only the stand-in on the path, as a user runs it."""
    env = _env(faults)
    env["PYTHONPATH"] = str(STANDIN) + os.pathsep + str(ROOT)  # the stand-in needs fusecli
    return subprocess.run([sys.executable, script.name], cwd=script.parent, capture_output=True,
                          text=True, env=env, timeout=300)


def test_an_assert_minimizes_to_a_plain_script_that_fails_the_same_way(tmp_path):
    done, report = _bisect(tmp_path, "assert:tanh+sum")
    assert done.returncode == 0, done.stderr
    minimized = report["minimized"]
    assert sorted(minimized["exprs"]) == ["sum", "tanh"]
    assert minimized["verified"]
    script = Path(minimized["repro_py"])
    text = script.read_text(encoding="utf-8")
    assert "import fusecli" not in text and "from fusecli" not in text
    assert "from nvfuser_direct import" in text
    plain = _plain(script, "assert:tanh+sum")
    assert plain.returncode == 1
    original = error_signature(report["original"]["detail"] or report["original"]["message"])
    assert error_signature(plain.stderr).key == original.key
    assert "standin_analysis.cpp:187" in original.key
    # without the stand-in's fault the same script passes: the repro is the bug, nothing else
    assert _plain(script, "").returncode == 0
    md = (script.parent / "report.md").read_text(encoding="utf-8")
    for part in ("# ", "## Environment", "nvFuser: 0.0.0+standin", "## Repro", "## Error",
                 "standin_analysis.cpp:187", "## nvFuser's segmentation",
                 "## A second opinion: fusecli's model", "reduced from 9 ops"):
        assert part in md, part
    assert (script.parent / "minimized.yaml").is_file()


def test_a_wrong_result_minimizes_to_a_script_that_checks_its_outputs(tmp_path):
    done, report = _bisect(tmp_path, "wrong:sin")
    assert done.returncode == 0, done.stderr
    assert report["failure_kind"] == "accuracy"
    minimized = report["minimized"]
    assert "sin" in minimized["exprs"] and len(minimized["exprs"]) <= 3
    script = Path(minimized["repro_py"])
    failing = _plain(script, "wrong:sin")
    assert failing.returncode == 1 and "outside the error bound" in failing.stderr
    assert _plain(script, "").returncode == 0


def test_a_segment_that_fails_alone_is_found_among_nvfusers_segments(tmp_path):
    done, report = _bisect(tmp_path, "assert:sin+sum", "--no-shrink")
    assert done.returncode == 0, done.stderr
    segment = report["segments"]
    assert segment is not None and segment["fails_alone"], report.get("notes")
    assert "sin" in segment["exprs"]
    assert Path(segment["repro"]).is_file()


def test_a_crash_of_the_process_is_its_own_failure(tmp_path):
    done, report = _bisect(tmp_path, "segfault:tanh+sum", "--no-shrink")
    assert done.returncode == 0, done.stderr
    assert report["original"]["status"] == "died"
    assert sorted(report["minimized"]["exprs"]) == ["sum", "tanh"]
    assert report["minimized"]["verified"]


@pytest.mark.parametrize("text, location", [
    ('RuntimeError:  INTERNAL ASSERT FAILED at /workspace/Fuser/csrc/fusion_segmenter.cpp:4015,'
     ' please report a bug with repro script to NVFuser at https://github.com/NVIDIA/Fuser/'
     'issues. \nExpected scheduler_type != SchedulerType::None . Can not find a scheduler\n'
     'Exception raised from deriveSchedulerType at /workspace/Fuser/csrc/fusion_segmenter.cpp'
     ':4015 (most recent call first):\nframe #0: nvfuser::nvfCheckFail',
     "csrc/fusion_segmenter.cpp:4015"),
    ('RuntimeError: h.has_value() INTERNAL ASSERT FAILED at "/opt/pytorch/nvfuser/csrc/'
     'fusion_segmenter.cpp":3671, please report a bug with repro script to NVFuser at '
     'https://github.com/NVIDIA/Fuser/issues. Can not find a scheduler for T12_g_float[iS3{i0}]',
     "csrc/fusion_segmenter.cpp:3671"),
])
def test_signatures_keep_the_location_and_normalize_names_and_numbers(text, location):
    signature = error_signature(text)
    assert signature.kind == "assert" and signature.location == location
    renamed = text.replace("T12", "T3").replace("i0", "i7").replace("iS3", "iS9")
    assert error_signature(renamed).key == signature.key
    moved = text.replace(location.split(":")[1], "9999")
    assert error_signature(moved).key != signature.key
    grouped = "Error from segmentation group 8: " + text
    assert error_signature(grouped).key == signature.key
    assert error_signature(grouped).group == 8
