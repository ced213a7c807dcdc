"""The command line, through click's runner: exit codes, JSON, errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.cli.main import cli, register

register()
FUSIONS = Path(__file__).resolve().parent.parent / "fusions"
SEED = str(FUSIONS / "matmul_reshape_permute.py")


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_run_seed_matches_eager_torch():
    result = invoke("run", SEED, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["ok"] is True
    (fusion,) = document["fusions"]
    assert fusion["status"] == "pass" and fusion["error"] is None
    assert [s["scheduler"] for s in fusion["segments"]] == [
        "expr_eval", "pointwise", "expr_eval", "expr_eval", "expr_eval"
    ]
    assert all(s["executor"] == "aten" for s in fusion["segments"])
    assert fusion["segments"][2]["exprs"] == ["matmul"]
    (output,) = fusion["outputs"]
    assert output["dtype"] == "bfloat16" and output["shape"] == [2, 16, 16]
    assert output["ok"] is True and output["max_abs_err"] == 0.0


def test_run_directory_reports_every_fusion():
    result = invoke("run", str(FUSIONS), "--json")
    document = json.loads(result.stdout)
    assert len(document["fusions"]) == len([*FUSIONS.glob("*.py"), *FUSIONS.glob("*.yaml")])
    assert {f["path"].rsplit(".", 1)[1] for f in document["fusions"]} == {"py", "yaml"}
    assert result.exit_code == 0, [f["error"] for f in document["fusions"] if f["error"]]


def test_run_rich_report_names_segments_and_outputs():
    result = invoke("run", SEED)
    assert result.exit_code == 0
    assert "PASS" in result.stdout and "expr_eval" in result.stdout
    assert "1 passed, 0 mismatched, 0 errors" in result.stdout


def test_fault_injection_makes_a_mismatch_and_says_so():
    result = invoke("run", str(FUSIONS / "gelu_tanh.py"), env={"FUSECLI_INJECT_FAULT": "tanh"})
    assert result.exit_code == 1
    assert "FUSECLI_INJECT_FAULT=tanh" in result.stderr
    assert "MISMATCH" in result.stdout


def test_explain_seed_both_profiles():
    today = invoke("explain-segmentation", SEED)
    assert today.exit_code == 0
    assert "expr_eval" in today.stdout
    old = invoke("explain-segmentation", SEED, "--rules", "nvfuser-2024")
    assert old.exit_code == 3
    assert "MmaOp input has unsupported dependency" in old.stdout
    assert "Can not find a scheduler" in old.stdout


def test_explain_nvfuser_format_matches_the_log_grammar():
    result = invoke("explain-segmentation", SEED, "--rules", "nvfuser-2024", "--format", "nvfuser")
    text = result.stdout
    assert text.startswith("***Runtime***: Try to schedule fusion un-segmented:\n")
    assert "**Segmenter** Considering fusion:\n" in text
    assert "Scheduler _matmul_ ***rejected*** because : MmaOp input has unsupported dependency\n" \
        in text
    assert "***Accepted*** as: pointwise\n" in text
    assert "   = mma(" in text


def test_explain_json_has_the_log():
    result = invoke("explain-segmentation", SEED, "--json")
    document = json.loads(result.stdout)
    (fusion,) = document["fusions"]
    entry = fusion["log"][0]
    assert set(entry) >= {"candidate", "scheduler", "accepted", "reason"}
    accepted = [e for e in fusion["log"] if e["accepted"]]
    assert accepted and all(e["reason"] is None for e in accepted)


def test_explain_dot_never_overwrites(tmp_path):
    target = tmp_path / "segments.dot"
    assert invoke("explain-segmentation", SEED, "--dot", str(target)).exit_code == 0
    assert target.read_text().startswith("digraph segmented_fusion {")
    again = invoke("explain-segmentation", SEED, "--dot", str(target))
    assert again.exit_code == 2 and "--force" in again.stderr


@pytest.mark.parametrize(
    "source,fragment",
    [
        ("import torch\nx = (\n", "syntax"),
        ("from nvfuser import FusionDefinition, DataType\n"
         "with FusionDefinition() as fd:\n"
         "    t = fd.define_tensor(shape=[4, 4], contiguity=[True, True])\n"
         "    fd.ops.reshape(t, new_shape=[3, 5])\n", "reshape"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, source, fragment):
    path = tmp_path / "bad.py"
    path.write_text(source)
    result = invoke("run", str(path))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert fragment in result.stdout.lower() + result.stderr.lower()
    assert "bad.py:" in result.stdout + result.stderr


def test_missing_path_is_exit_2():
    result = invoke("run", "/nonexistent/repro.py")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_unknown_option_is_usage_error():
    result = invoke("run", SEED, "--executor", "magic")
    assert result.exit_code == 2


def test_convert_round_trip_and_no_overwrite(tmp_path):
    yaml_path = tmp_path / "seed.yaml"
    assert invoke("convert", SEED, "-o", str(yaml_path)).exit_code == 0
    assert yaml_path.read_text().startswith("fusecli_yaml: 1")
    again = invoke("convert", SEED, "-o", str(yaml_path))
    assert again.exit_code == 2
    run = invoke("run", str(yaml_path), "--json")
    assert run.exit_code == 0
    assert json.loads(run.stdout)["fusions"][0]["status"] == "pass"


def test_ir_prints_nvfuser_format():
    result = invoke("ir", SEED)
    assert result.exit_code == 0
    assert "Set.Permute(" in result.stdout and "%kernel {" in result.stdout


def test_help_does_not_import_torch():
    code = "import sys; from fusecli.cli.main import main; sys.argv=['fusecli','--help']\n" \
           "try:\n    main()\nexcept SystemExit:\n    pass\nprint('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("False")


def test_debug_shows_traceback(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("import torch\nx = (\n")
    result = CliRunner().invoke(cli, ["--debug", "run", str(path)])
    assert type(result.exception).__name__ == "InputError"  # raised, not turned into a line


def test_codegen_check_compiles_the_corpus_or_says_why():
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    result = invoke("codegen", str(FUSIONS), "--check")
    assert result.exit_code == 0, result.output
    assert "compiled" in result.stdout and "failed" not in result.stdout


def test_codegen_prints_readable_kernels():
    result = invoke("codegen", str(FUSIONS / "gelu_tanh.py"))
    assert result.exit_code == 0
    assert 'extern "C" __global__' in result.stdout
    assert "heuristics:" in result.stdout
    assert "#include" not in result.stdout  # self-contained


def test_bench_without_a_gpu_is_exit_4():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = invoke("bench", SEED)
    assert result.exit_code == 4
    assert "GPU" in result.stderr


def test_run_auto_uses_aten_without_a_gpu_and_says_so_in_json():
    document = json.loads(invoke("run", SEED, "--json").stdout)
    segments = document["fusions"][0]["segments"]
    assert all(s["executor"] == "aten" for s in segments)
    assert all("fallback" in s for s in segments)
