"""DESIGN.md's command contracts, each command against each exit code it promises.

Exit codes: 0 all good, 1 a mismatch (bisect: the failure did not reproduce), 2 bad input or
usage (one line on stderr naming the file, no traceback), 3 the pipeline failed on the fusion,
4 the environment lacks what was asked for. Never above 125. Outputs are never overwritten
without --force. The JSON documents carry the fields DESIGN.md lists.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fusecli.cli.main import cli, register

register()
FUSIONS = Path(__file__).resolve().parent.parent / "fusions"
SEED = str(FUSIONS / "matmul_reshape_permute.py")
RMS_NORM = str(FUSIONS / "rms_norm.py")
NO_GPU = not torch.cuda.is_available()

COMMANDS = {
    "run": ["run"],
    "explain-segmentation": ["explain-segmentation"],
    "bisect": ["bisect", "--in-process"],
    "codegen": ["codegen"],
    "ir": ["ir"],
    "convert": ["convert"],
}


def invoke(args: list[str], env: dict | None = None):
    return CliRunner().invoke(cli, args, env=env)


def one_line_error(result) -> str:
    """The error: one line (notes, each on a line of its own, may come before it)."""
    lines = [line for line in result.stderr.strip().splitlines()
             if not line.startswith("fusecli: note: ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("fusecli: error: ") and "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_missing_file_is_exit_2_naming_it(command, tmp_path):
    missing = str(tmp_path / "nowhere.py")
    result = invoke([*COMMANDS[command], missing])
    assert result.exit_code == 2
    assert missing in one_line_error(result)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_broken_script_is_exit_2_naming_its_line(command, tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("from nvfuser import FusionDefinition\n\nx = (\n", encoding="utf-8")
    result = invoke([*COMMANDS[command], str(script)])
    assert result.exit_code == 2
    assert f"{script}:" in one_line_error(result)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_succeeds_on_the_seed(command, tmp_path):
    extra = {"bisect": [], "convert": ["-o", str(tmp_path / "seed.yaml")]}.get(command, [])
    result = invoke([*COMMANDS[command], SEED, *extra])
    # bisect of a fusion that does not fail: "the failure did not reproduce"
    assert result.exit_code == (1 if command == "bisect" else 0), result.output


def test_run_exit_1_on_a_mismatch_and_3_when_no_scheduler_fits():
    faulty = invoke(["run", RMS_NORM, "--json"], env={"FUSECLI_INJECT_FAULT": "rsqrt"})
    assert faulty.exit_code == 1
    assert json.loads(faulty.stdout)["fusions"][0]["status"] == "mismatch"
    unschedulable = invoke(["run", SEED, "--rules", "nvfuser-2024", "--json"])
    assert unschedulable.exit_code == 3
    record = json.loads(unschedulable.stdout)["fusions"][0]
    assert record["status"] == "error"
    assert "Can not find a scheduler" in record["error"]


def test_explain_exit_3_when_no_scheduler_fits():
    result = invoke(["explain-segmentation", SEED, "--rules", "nvfuser-2024"])
    assert result.exit_code == 3


@pytest.mark.skipif(not NO_GPU, reason="exit 4 is for machines without a GPU")
@pytest.mark.parametrize("args", [["run", RMS_NORM, "--executor", "cupy"], ["bench", RMS_NORM]])
def test_asking_for_a_gpu_without_one_is_exit_4(args):
    result = invoke(args)
    assert result.exit_code == 4, result.output
    one_line_error(result)


def test_the_run_json_has_designs_fields():
    document = json.loads(invoke(["run", SEED, "--json"]).stdout)
    assert set(document) >= {"ok", "fusions"}
    (fusion,) = document["fusions"]
    assert set(fusion) >= {"path", "name", "ok", "status", "error", "segments", "outputs"}
    for segment in fusion["segments"]:
        assert set(segment) >= {"id", "scheduler", "executor", "exprs"}
    for output in fusion["outputs"]:
        assert set(output) >= {"index", "dtype", "shape", "ok", "max_abs_err", "max_rel_err"}
        assert output["dtype"] == "bfloat16"  # torch's short name


def test_the_explain_json_adds_the_log():
    document = json.loads(invoke(["explain-segmentation", SEED, "--json"]).stdout)
    (fusion,) = document["fusions"]
    assert fusion["log"] and set(fusion["log"][0]) >= {"candidate", "scheduler", "accepted",
                                                        "reason"}


@pytest.mark.parametrize("command", ["convert", "explain"])
def test_no_output_is_overwritten_without_force(command, tmp_path):
    target = tmp_path / ("out.yaml" if command == "convert" else "out.dot")
    target.write_text("mine\n", encoding="utf-8")
    args = (["convert", SEED, "-o", str(target)] if command == "convert"
            else ["explain-segmentation", SEED, "--dot", str(target)])
    result = invoke(args)
    assert result.exit_code == 2 and "--force" in one_line_error(result)
    assert target.read_text(encoding="utf-8") == "mine\n"
    assert invoke([*args, "--force"]).exit_code == 0
    assert target.read_text(encoding="utf-8") != "mine\n"
