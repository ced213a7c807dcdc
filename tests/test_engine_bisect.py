# ruff: noqa: E501
"""``fusecli bisect --engine nvfuser`` end to end, without a GPU: a stand-in ``nvfuser_direct``
(``tests/standin``) fails as nvFuser does (an assert on an op pattern, a wrong value, a hang, a
segfault), and bisect must minimize each failure to a plain script that fails alone."""

from __future__ import annotations

import json
import os
import re
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


def _bisect(
    tmp_path: Path, faults: str, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess, dict]:
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO, encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "bisect", str(repro), "--engine", "nvfuser", "-o",
         str(out), "-j", "2", "--json", *extra],
        capture_output=True, text=True, env={**_env(faults), **(env or {})}, timeout=600,
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


def test_a_wrong_shape_minimizes_to_a_script_that_checks_its_shapes(tmp_path):
    """nvFuser returning an output of another shape (a lost expand): a wrong result whose
    minimized.py raises on the shape under the fault and passes without it; a corpus run
    attributes the cluster to nvFuser by the same check."""
    done, report = _bisect(tmp_path, "shape:sin")
    assert done.returncode == 0, done.stderr
    assert report["failure_kind"] == "accuracy"
    minimized = report["minimized"]
    assert "sin" in minimized["exprs"] and minimized["verified"], minimized
    script = Path(minimized["repro_py"])
    failing = _plain(script, "shape:sin")
    assert failing.returncode == 1 and ", expected (" in failing.stderr, failing.stderr
    assert _plain(script, "").returncode == 0
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.py").write_text(REPRO, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "fusecli", "run", str(corpus), "--engine", "nvfuser", "--json"],
        capture_output=True, text=True, env=_env("shape:sin"), timeout=600,
    )
    (cluster,) = json.loads(run.stdout)["clusters"]
    assert cluster["signature"] == "mismatch: wrong shape", cluster
    assert cluster["attribution"] == "nvfuser", cluster
    assert cluster["plain"] == "wrong result: output 0: shape (1,), expected (16,)", cluster


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


def test_a_time_budget_keeps_the_smallest_failure_found_and_progress_reaches_a_log(tmp_path):
    done, report = _bisect(tmp_path, "assert:tanh+sum", "--max-seconds", "1", "--no-shrink",
                           env={"FUSECLI_PROGRESS_AFTER": "0"})
    assert done.returncode == 0, done.stderr
    assert any("--max-seconds 1 spent" in note for note in report["notes"]), report["notes"]
    minimized = report["minimized"]
    assert {"sum", "tanh"} <= set(minimized["exprs"])  # still failing, maybe not minimal
    assert Path(minimized["repro_py"]).is_file()
    # stderr is a file here, not a terminal: the progress comes as lines, one per phase
    lines = [line for line in done.stderr.splitlines() if line.startswith("bisect ")]
    assert any(line.startswith("bisect reproduce") for line in lines), done.stderr
    assert any(line.startswith("bisect minimize") for line in lines), done.stderr


def _minimized(tmp_path: Path, text: str, faults: str) -> dict:
    """``fusecli bisect --mode minimize`` of the repro ``text``: its report's minimization."""
    repro = tmp_path / "repro.py"
    repro.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "bisect", str(repro), "--engine", "nvfuser", "-o",
         str(tmp_path / "out"), "-j", "2", "--json", "--mode", "minimize", "--no-shrink"],
        capture_output=True, text=True, env=_env(faults), timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["minimized"]


def test_dead_code_goes_first_in_one_question_as_nvfuser_never_compiles_it(tmp_path):
    """The fusion's own outputs need 5 of its 11 ops; the rest is dead code that nvFuser
    drops before it segments. Minimization asks about the live part first, in one
    question, rather than removing dead ops one by one with each dead end an output."""
    dead = REPRO.replace(
        "    fd.add_output(T7)\n",
        "    T11 = fd.ops.cos(T9)\n    T12 = fd.ops.sum(T11, dims=[0], keepdim=False)\n",
    ).replace("    fd.add_output(T10)\n", "    fd.add_output(T3)\n    fd.add_output(T10)\n")
    minimized = _minimized(tmp_path, dead, "assert:sin+sum")
    first = minimized["steps"][0]
    assert (first["phase"], first["failing"]) == ("dead code", True), minimized["steps"][:3]
    assert first["question"] == "5 ops the outputs need"
    assert sorted(minimized["exprs"]) == ["sin", "sum"]
    assert minimized["verified"]


def test_dead_code_a_failure_needs_stays_dead_code(tmp_path):
    """nvFuser keeps dead code in its Fusion, and a failure can need it (fuzz_700046 of
    tests/nvfuser_failures): here the assert fires only while a cos no output reads is defined.
    The live part alone passes; the fusion as given (its dead code read by no output, not made
    an output) is what minimization starts from, and the minimized repro keeps the cos dead."""
    dead = REPRO.replace(
        "    fd.add_output(T7)\n",
        "    T11 = fd.ops.cos(T9)\n    fd.add_output(T7)\n",
    )
    minimized = _minimized(tmp_path, dead, "dead:cos")
    first, second = minimized["steps"][:2]
    assert (first["phase"], first["failing"]) == ("dead code", False)
    assert (second["phase"], second["failing"]) == ("dead code", True)
    # a fusion needs an output: the abs that reads what the cos reads is the one left
    assert sorted(minimized["exprs"]) == ["abs", "cos"]
    assert minimized["verified"]
    script = Path(minimized["repro_py"])
    text = script.read_text(encoding="utf-8")
    assert "fd.ops.cos(" in text and "add_output" in text
    assert re.search(r"add_output\((\w+)\)", text).group(1) not in re.findall(
        r"(\w+) = fd\.ops\.cos\(", text)  # the cos is no output
    assert _plain(script, "dead:cos").returncode == 1
    assert _plain(script, "").returncode == 0


def test_sigterm_while_minimizing_writes_the_smallest_failure_found(tmp_path):
    """A CI job's time limit sends SIGTERM: bisect stops asking, lets the questions in flight
    end, and writes and checks the smallest failing fusion found so far, saying it stopped."""
    repro, pidfile = tmp_path / "repro.py", tmp_path / "bisect.pid"
    repro.write_text(REPRO, encoding="utf-8")
    env = _env("assert:tanh+sum")
    env["FUSECLI_STANDIN_STOP"] = f"{pidfile}:6"  # the stand-in sends it mid-minimization
    process = subprocess.Popen(
        [sys.executable, "-m", "fusecli", "bisect", str(repro), "--engine", "nvfuser", "-o",
         str(tmp_path / "out"), "-j", "1", "--json", "--mode", "minimize", "--no-shrink"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    pidfile.write_text(str(process.pid), encoding="utf-8")
    stdout, _ = process.communicate(timeout=600)
    assert (tmp_path / "bisect.pid.sent").is_file()
    assert process.returncode == 0
    report = json.loads(stdout)
    assert any("stopped by SIGTERM" in note for note in report["notes"]), report["notes"]
    minimized = report["minimized"]
    assert {"tanh", "sum"} <= set(minimized["exprs"]) and minimized["verified"]
    assert Path(minimized["repro_py"]).is_file()


def test_common_subexpressions_are_read_once_in_one_question(tmp_path):
    """A traced fusion computes the same op once per use; one question merges every copy."""
    twice = REPRO.replace("    T8 = fd.ops.sin(T3)\n",
                          "    T3b = fd.ops.exp(T2)\n    T8b = fd.ops.sin(T3b)\n"
                          "    T8 = fd.ops.add(T8b, T3)\n")
    minimized = _minimized(tmp_path, twice, "assert:sin+sum")
    merged = [s for s in minimized["steps"] if s["phase"] == "merge"]
    assert merged[0]["question"] == "all 1 common subexpressions", merged
    assert merged[0]["failing"]
    assert sorted(minimized["exprs"]) == ["sin", "sum"]
    assert minimized["verified"]


def test_a_corpus_under_the_engine_clusters_and_attributes_failures_in_one_document(tmp_path):
    """Two files fail alike, one passes and one prints on descriptor 1 while it loads: with
    --jobs 2, one JSON document on stdout, one cluster of two, attributed to nvFuser (its
    plain script fails the same way under the stand-in)."""
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(REPRO, encoding="utf-8")
    (tmp_path / "c.py").write_text(REPRO.replace("tanh", "sin"), encoding="utf-8")
    (tmp_path / "d.py").write_text("import os\nos.write(1, b'noise\\n')\n" + REPRO.replace(
        "tanh", "cos"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "run", str(tmp_path), "--engine", "nvfuser", "--json",
         "--jobs", "2"],
        capture_output=True, text=True, env=_env("assert:tanh+sum"), timeout=600,
    )
    document = json.loads(done.stdout)
    assert done.returncode == 3, done.stderr
    statuses = sorted(f["status"] for f in document["fusions"])
    assert statuses == ["error", "error", "pass", "pass"], statuses
    (cluster,) = document["clusters"]
    assert cluster["count"] == 2 and "standin_analysis.cpp:187" in cluster["signature"]
    assert cluster["attribution"] == "nvfuser", cluster


def test_a_wrong_result_in_a_corpus_is_attributed_by_a_plain_script_that_checks_itself(tmp_path):
    """A mismatch cluster is nvFuser's when the plain script, checking its outputs against
    fusecli's reference and bounds, fails its check too; without the fault it would pass."""
    (tmp_path / "a.py").write_text(REPRO, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "run", str(tmp_path), "--engine", "nvfuser", "--json"],
        capture_output=True, text=True, env=_env("wrong:sin"), timeout=600,
    )
    document = json.loads(done.stdout)
    assert [f["status"] for f in document["fusions"]] == ["mismatch"], done.stderr
    (cluster,) = document["clusters"]
    assert cluster["attribution"] == "nvfuser", cluster
    assert cluster["plain"].startswith("wrong result: output 1: "), cluster


def test_a_plain_script_checks_the_shape_and_exact_dtypes_of_its_outputs(tmp_path):
    """An output of another shape, or a bool output with one flipped value, fails the check;
    the reference's own outputs pass it."""
    import torch

    from fusecli.app.attribution import NVFUSER, TRANSLATION, attribute_wrong_result
    from fusecli.app.plain_repro import _check_source

    checks = [(0, torch.ones(2, 3, dtype=torch.float64), torch.full((2, 3), 1e-6)),
              (1, torch.tensor([True, False]), 0.0), (2, torch.zeros(4), None)]

    def script(*outputs: str) -> str:
        return "import torch\noutputs = [" + ", ".join(outputs) + "]\n" + _check_source(checks)

    good = ("torch.ones(2, 3)", "torch.tensor([True, False])", "torch.full((4,), 7.0)")
    assert attribute_wrong_result(script(*good), 60).verdict == TRANSLATION
    shape = attribute_wrong_result(script(good[0], good[1], "torch.zeros(1)"), 60)
    assert shape.verdict == NVFUSER and "output 2: shape (1,), expected (4,)" in shape.plain
    flipped = attribute_wrong_result(script(good[0], "torch.tensor([True, True])", good[2]), 60)
    assert flipped.verdict == NVFUSER and "output 1: 1 of 2 elements" in flipped.plain


def test_a_crash_repro_draws_large_inputs_instead_of_listing_their_values(tmp_path):
    """A bug report's repro must stay readable: inputs above 4096 elements are drawn from a
    seed when the crash does not need their values (it is checked by running it)."""
    repro = tmp_path / "big.py"
    repro.write_text(REPRO.replace("torch.randn(16, 8,", "torch.randn(128, 64,"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "bisect", str(repro), "--engine", "nvfuser", "-o",
         str(tmp_path / "out"), "-j", "2", "--json", "--no-shrink"],
        capture_output=True, text=True, env=_env("assert:tanh+sum"), timeout=600,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    minimized = report["minimized"]
    assert minimized["verified"]
    text = Path(minimized["repro_py"]).read_text(encoding="utf-8")
    assert "values not stored" in text and len(text.splitlines()) < 80, len(text.splitlines())


def test_a_library_that_does_not_survive_a_fork_sends_questions_to_new_interpreters(tmp_path):
    """The stand-in fails with a CUDA initialization error in a forked child only: the
    original, asked again in a new interpreter, answers otherwise, so bisect stops forking,
    says so, and minimizes the real failure."""
    done, report = _bisect(tmp_path, "forked:tanh;assert:tanh+sum", "--no-shrink")
    assert done.returncode == 0, done.stderr
    assert any("every question now runs in a new interpreter" in n for n in report["notes"])
    assert "standin_analysis.cpp:187" in report["original"]["location"]
    assert sorted(report["minimized"]["exprs"]) == ["sum", "tanh"]
    assert report["minimized"]["verified"]


PAD_REPRO = """\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.ops.pad(T0, [S1, S1, S1, S1])
    T4 = fd.ops.add(T3, T2)
    T5 = fd.ops.exp(T4)
    fd.add_output(T5)

with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [torch.randn(12, 10, device='cuda:0'), -3, torch.randn(6, 4, device='cuda:0')]
fd.execute(inputs)
"""


def test_shrinking_keeps_shapes_eager_torch_can_run(tmp_path):
    """A negative pad cannot crop more than its input has: sizes that make eager torch fail
    are invalid questions, not the engine's failure, so the minimized repro stays one that
    fusecli's own pipeline runs (nvFuser's error on an impossible crop proves nothing)."""
    repro = tmp_path / "pad.py"
    repro.write_text(PAD_REPRO, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "bisect", str(repro), "--engine", "nvfuser", "-o",
         str(tmp_path / "out"), "-j", "2", "--json"],
        capture_output=True, text=True, env=_env("assert:pad+add"), timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    minimized = report["minimized"]
    assert sorted(minimized["exprs"]) == ["add", "pad"] and minimized["verified"]
    script = Path(minimized["repro_py"])
    shapes = [list(map(int, m)) for m in re.findall(r"as_strided\(\((\d+), (\d+)\)",
                                                    script.read_text(encoding="utf-8"))]
    assert shapes, script.read_text(encoding="utf-8")
    assert shapes[0][0] >= 7 and shapes[0][1] >= 7  # -3 on each side leaves at least 1
    md = (script.parent / "report.md").read_text(encoding="utf-8")
    assert "runs it and matches eager torch" in md

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


def test_lists_of_domains_of_any_length_are_one_signature():
    """nvFuser lists the domains or graph groups an assert is about; a smaller fusion lists
    fewer (found on fuzz_253 and llama_rope_cos_sin_2d under real nvFuser 0.2.36)."""
    head = ('RuntimeError:  INTERNAL ASSERT FAILED at "/opt/pytorch/nvfuser/csrc/compute_at_map.cpp'
            '":1239, please report a bug with repro script to NVFuser at https://github.com/NVIDIA'
            "/Fuser/issues. Expected !maybe_concrete_ids.vector().empty() . No potential "
            "concrete_id's found for disjoint set ")
    long = head + "{ iS5{i0}rf; iS7{i0}; bS9{1}; iS11{i2}; iS13{i0}rf; iS2{i0} }"
    short = head + "{ iS3{i0}rf; iS4{i0} }"
    assert error_signature(long).key == error_signature(short).key
    bfs = "RuntimeError: BFS traversal could not visit some nodes: idg{{5 6}} (from: {}), visited: ({})"
    assert (error_signature(bfs.format("idg{1} idg{2}", "idg{1}")).key
            == error_signature(bfs.format("idg{1}", "idg{1} idg{2} idg{4} idg{9}")).key)
    other = head.replace("1239", "1240") + "{ iS3{i0}rf }"
    assert error_signature(other).key != error_signature(short).key
