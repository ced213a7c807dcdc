"""Repros inside text: an issue saved as Markdown or pasted as plain text, a Thunder error
message, a pytest log. ``fusecli run`` takes the embedded script, says which block it took, and
exits 2 naming the file when there is none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.cli.main import cli, register
from fusecli.errors import InputError
from fusecli.load import convert_file, discover, load_path

register()
ROOT = Path(__file__).resolve().parent.parent
SEED_ISSUE = ROOT.parent / "shared" / "seeds" / "nvfuser-issue-2127.txt"
EXAMPLE_ISSUE = ROOT / "docs" / "examples" / "issue_2127.md"

IMPORTS = """\
import torch
from nvfuser import FusionDefinition, DataType
"""
DEFINITION = """\
def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.add(T0, T0)
    T2 = fd.ops.exp(T1)
    fd.add_output(T2)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)
"""
EXECUTE = """\
inputs = [
    torch.randn((4, 8), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
"""
SCRIPT = IMPORTS + "\n" + DEFINITION + "\n" + EXECUTE


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_json(path: Path) -> dict:
    result = invoke("run", str(path), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["ok"] is True
    return document


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def prefixed(prefix: str, text: str) -> str:
    return "".join(f"{prefix}{line}".rstrip() + "\n" for line in text.splitlines())


# --- the seed issue, as pasted -------------------------------------------------------------------


@pytest.mark.skipif(not SEED_ISSUE.exists(), reason="the shared seed issue is not checked out")
def test_the_seed_issue_page_runs_as_pasted():
    document = run_json(SEED_ISSUE)
    (fusion,) = document["fusions"]
    assert fusion["status"] == "pass"
    assert fusion["outputs"][0]["shape"] == [2, 16, 16]
    assert ("took the repro from unfenced script at lines 7-35 of nvfuser-issue-2127.txt"
            in fusion["notices"])


def test_the_readme_example_issue_runs():
    (fusion,) = run_json(EXAMPLE_ISSUE)["fusions"]
    assert fusion["status"] == "pass"
    assert any("fenced block" in notice for notice in fusion["notices"])


# --- Markdown -------------------------------------------------------------------------------------


def test_markdown_issue_takes_the_python_block_not_the_others(tmp_path):
    issue = write(tmp_path, "issue.md", (
        "## exp of a doubled tensor is wrong\n\n"
        "Install with:\n\n```bash\npip install nvfuser-cu121\n```\n\n"
        "Repro:\n\n```python\n" + SCRIPT + "```\n\n"
        "Output:\n\n```\nRuntimeError: something failed\n```\n"
    ))
    (fusion,) = run_json(issue)["fusions"]
    assert fusion["status"] == "pass"
    assert fusion["outputs"][0]["shape"] == [4, 8]
    (notice,) = [n for n in fusion["notices"] if n.startswith("took the repro")]
    assert notice == "took the repro from fenced block 2 of 3 (lines 12-27) of issue.md"


def test_markdown_definition_and_execute_in_consecutive_blocks_are_joined(tmp_path):
    issue = write(tmp_path, "split.markdown", (
        "The fusion:\n\n```py\n" + IMPORTS + "\n" + DEFINITION + "```\n\n"
        "and running it fails:\n\n~~~\n" + EXECUTE + "~~~\n"
    ))
    (loaded,) = load_path(issue)
    assert loaded.line == 23  # fd.execute's line in the Markdown file
    assert "fd.ops.exp" in repr(loaded.fd)
    assert loaded.notices[0].startswith("took the repro from fenced blocks 1-2 of 2")
    (fusion,) = run_json(issue)["fusions"]
    assert fusion["status"] == "pass"


def test_the_first_of_several_repros_is_taken_and_the_others_counted(tmp_path):
    second = SCRIPT.replace("fd.ops.exp(T1)", "fd.ops.neg(T1)")
    issue = write(tmp_path, "two.md", (
        "Fails:\n```python\n" + SCRIPT + "```\nAlso fails:\n```python\n" + second + "```\n"
    ))
    (loaded,) = load_path(issue)
    assert "exp" in repr(loaded.fd) and "neg" not in repr(loaded.fd)
    assert loaded.notices[0] == (
        "took the repro from fenced block 1 of 2 (lines 3-18) of two.md "
        "(1 more repro in it not taken)"
    )


def test_a_quoted_repro_in_a_reply_runs(tmp_path):
    reply = write(tmp_path, "reply.md", "> Repro:\n> ```python\n" + prefixed("> ", SCRIPT)
                  + "> ```\n\nThanks, looking.\n")
    (fusion,) = run_json(reply)["fusions"]
    assert fusion["status"] == "pass"


def test_errors_in_an_embedded_repro_name_the_line_of_the_text(tmp_path):
    broken = SCRIPT.replace("fd.ops.exp(T1)", "fd.ops.exp(T1, T1)")
    issue = write(tmp_path, "broken.md", "Some prose.\n\n```python\n" + broken + "```\n")
    with pytest.raises(InputError) as raised:
        load_path(issue)
    assert raised.value.where == f"{issue}:10"  # the exp line, counted in the Markdown file


# --- error messages and logs ---------------------------------------------------------------------

THUNDER_MESSAGE = (
    "An error occurred while executing nvFuser FusionDefinition 0.\n"
    "If you believe this is a bug or need assistance, please file an issue at "
    "https://github.com/NVIDIA/Fuser/issues/new\n"
    "Here's a script to reproduce the error:\n"
    "```python\n"
    "# CUDA devices:\n"
    "#  0: NVIDIA H100 80GB HBM3\n"
    "# torch version: 2.5.0\n"
    "# nvfuser version: 0.2.10\n"
    + SCRIPT
    + "```\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/thunder/thunder/executors/nvfuserex_impl.py", line 412, in __call__\n'
    "    return fd.execute(args, **kwargs)\n"
    "RuntimeError: INTERNAL ASSERT FAILED at \"csrc/fusion_segmenter.cpp\":3671\n"
)


def test_a_thunder_error_message_runs(tmp_path):
    message = write(tmp_path, "thunder_error.txt", THUNDER_MESSAGE)
    (fusion,) = run_json(message)["fusions"]
    assert fusion["status"] == "pass"
    assert any(n.startswith("took the repro from fenced block 1 of 1 (lines 5-24)")
               for n in fusion["notices"])


def test_an_unfenced_nvfuser_message_in_a_log_stops_at_the_traceback(tmp_path):
    message = THUNDER_MESSAGE.replace("```python\n", "").replace("```\n", "")
    log = write(tmp_path, "job.log", "[INFO] step 12\n" + message + "[INFO] exiting\n")
    (loaded,) = load_path(log)
    assert loaded.notices[0] == "took the repro from unfenced script at lines 5-24 of job.log"


def test_a_pytest_failure_log_with_e_prefixes_runs(tmp_path):
    log = write(tmp_path, "pytest.out", (
        "____________________ test_exp_fusion[cuda-float32] ____________________\n\n"
        "    def test_exp_fusion():\n"
        ">       run_fusion(fn, inputs)\n\n"
        "thunder/tests/test_nvfuser.py:88: \n"
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n"
        + prefixed("E   ", "RuntimeError: " + THUNDER_MESSAGE)
        + "\nthunder/executors/nvfuserex_impl.py:412: RuntimeError\n"
        "=========================== short test summary info ===========================\n"
        "FAILED thunder/tests/test_nvfuser.py::test_exp_fusion[cuda-float32]\n"
    ))
    (fusion,) = run_json(log)["fusions"]
    assert fusion["status"] == "pass"
    assert fusion["outputs"][0]["shape"] == [4, 8]


def test_a_py_file_holding_a_log_loads_its_repro_and_a_script_loads_as_before(tmp_path):
    pasted = write(tmp_path, "pasted.py", THUNDER_MESSAGE)
    (loaded,) = load_path(pasted)
    assert loaded.notices[0].startswith("took the repro from fenced block 1 of 1")
    script = write(tmp_path, "script.py", SCRIPT)
    (plain,) = load_path(script)
    assert not any(n.startswith("took the repro") for n in plain.notices)
    assert plain.line == 16


def test_a_suffixless_issue_runs(tmp_path):
    issue = write(tmp_path, "ISSUE", "Title\n\n" + SCRIPT + "\nThis fails.\n")
    (fusion,) = run_json(issue)["fusions"]
    assert fusion["status"] == "pass"


# --- no repro -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "Just prose about FusionDefinition, nothing to run.\n",
    "```python\nimport torch\nprint(torch.ones(3))\n```\n",
    "```python\n" + IMPORTS + DEFINITION + "```\n",  # defined, never executed
])
def test_a_text_without_a_repro_exits_2_naming_the_file(tmp_path, text):
    notes = write(tmp_path, "notes.md", text)
    result = invoke("run", str(notes))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"fusecli: error: {notes}: no fusion repro found in this text: expected a fenced code "
        "block or script that defines a FusionDefinition and calls fd.execute"
    )
    assert "Traceback" not in result.output


# --- folders and convert --------------------------------------------------------------------------


def test_discover_takes_text_files_only_when_they_hold_a_repro(tmp_path):
    write(tmp_path, "issue.md", "Repro:\n```python\n" + SCRIPT + "```\n")
    write(tmp_path, "notes.md", "Nothing here.\n")
    write(tmp_path, "build.log", "compiling...\ndone\n")
    write(tmp_path, "helpers.py", "def helper():\n    return 1\n")
    skipped: list[Path] = []
    found = discover([tmp_path], skipped)
    assert [p.name for p in found] == ["issue.md"]
    assert [p.name for p in skipped] == ["helpers.py"]  # text without a repro: silently passed


def test_run_of_the_corpus_folder_is_unchanged():
    assert [p.suffix for p in discover([ROOT / "fusions"])].count(".md") == 0


def test_convert_a_markdown_issue_to_yaml_and_run_it(tmp_path):
    issue = write(tmp_path, "issue.md", "Repro:\n\n```python\n" + SCRIPT + "```\n")
    target = tmp_path / "issue.yaml"
    result = invoke("convert", str(issue), "-o", str(target))
    assert result.exit_code == 0, result.output
    assert "fusecli_yaml:" in target.read_text()
    assert "fd.ops.exp" in target.read_text()
    (fusion,) = run_json(target)["fusions"]
    assert fusion["status"] == "pass"
    assert "def nvfuser_fusion" in convert_file(issue, to="python")
