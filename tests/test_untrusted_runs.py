"""Nothing a file does can break a run (issue 23): what folder discovery runs, explain over
folders, option values, a stdout that closes or fills, names that hold terminal escapes, and
scripts that exit, interrupt or swallow every exception.

Runs that start workers or close stdout use ``python -m fusecli`` in a subprocess; the rest use
click's CliRunner.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.cli.main import cli, register

register()
ROOT = Path(__file__).resolve().parent.parent
RMS_NORM = ROOT / "fusions" / "rms_norm.py"
SOFTMAX = ROOT / "fusions" / "softmax.yaml"
HEADER = "from nvfuser import FusionDefinition, DataType\n"
GOOD = HEADER + """\
import torch

with FusionDefinition() as fd:
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.exp(t0))

fd.execute([torch.randn(4, 8)])
"""
NOTICE = "executed as Python code with your privileges"


def invoke(*args: str, **env: str):
    return CliRunner(env=env or None).invoke(cli, list(args), catch_exceptions=False)


def fusecli(*args: str, stdout: int | object = subprocess.PIPE, timeout: float = 300,
            **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fusecli", *args], stdout=stdout,
                          stderr=subprocess.PIPE, timeout=timeout, **kwargs)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- 1. folder discovery -------------------------------------------------------------------------


def marking(marker: Path) -> str:
    """A script that looks like a repro and leaves ``marker`` behind when it is executed."""
    return HEADER + f"open({str(marker)!r}, 'w').write('ran')\n"


NEVER_RUN_FROM_A_FOLDER = [
    "conftest.py", "setup.py", "test_fusions.py", "fusions_test.py", "sub/test_deep.py",
    "venv/lib/a.py", ".venv/lib/a.py", "env/lib/a.py", "lib/python3/site-packages/pkg/a.py",
    "node_modules/pkg/a.py", "__pycache__/a.py", ".hidden/a.py", "pkg/__pycache__/b.py",
]


def test_a_folder_run_never_executes_tooling_environments_or_test_modules(tmp_path):
    folder = tmp_path / "corpus"
    write(folder / "fusion.py", GOOD)
    write(folder / "env" / "pyvenv.cfg", "home = /usr/bin\n")  # a venv of any name
    markers = {}
    for index, name in enumerate(NEVER_RUN_FROM_A_FOLDER):
        markers[name] = tmp_path / f"ran_{index}"
        write(folder / name, marking(markers[name]))
    result = invoke("run", str(folder), "--json")
    assert result.exit_code == 0, result.output
    assert [f["name"] for f in json.loads(result.stdout)["fusions"]] == ["fusion"]
    assert [name for name, marker in markers.items() if marker.exists()] == []
    named = invoke("run", str(folder / "test_fusions.py"), "--json")  # named: always taken
    assert markers["test_fusions.py"].exists(), named.output


def test_a_folder_run_says_once_on_stderr_that_scripts_run_as_code(tmp_path):
    write(tmp_path / "a.py", GOOD)
    write(tmp_path / "b.py", GOOD)
    folder = invoke("run", str(tmp_path), "--json", FUSECLI_IN_PROCESS="1")
    assert folder.exit_code == 0, folder.output
    assert folder.stderr.count(NOTICE) == 1
    assert json.loads(folder.stdout)["ok"] is True  # stdout: the document alone
    single = invoke("run", str(tmp_path / "a.py"))
    assert NOTICE not in single.stderr


def test_the_readme_quick_start_says_scripts_run_as_code():
    quick_start = (ROOT / "README.md").read_text().split("## Quick start")[1].split("\n## ")[0]
    assert "as code with your privileges" in quick_start


# -- 2. explain-segmentation over folders, every decision kind ----------------------------------

LOADS_NOT = HEADER + "raise ValueError('boom')\n"


def test_explain_segmentation_takes_a_folder_and_goes_on_past_a_bad_file(tmp_path):
    shutil.copy(RMS_NORM, tmp_path / "a_good.py")
    write(tmp_path / "b_bad.py", LOADS_NOT)
    shutil.copy(SOFTMAX, tmp_path / "c_good.yaml")
    result = invoke("explain-segmentation", str(tmp_path), "--json", FUSECLI_IN_PROCESS="1")
    assert result.exit_code == 2, result.output  # the worst: the file that does not load
    document = json.loads(result.stdout)
    good, bad, yaml = document["fusions"]
    assert good["status"] == "pass" and good["segments"] and yaml["status"] == "pass"
    assert bad["status"] == "error" and "b_bad.py:2: the script raised ValueError: boom" in (
        bad["error"])
    assert document["ok"] is False and result.stderr.count(NOTICE) == 1
    tree = invoke("explain-segmentation", str(tmp_path), "--summary", FUSECLI_IN_PROCESS="1")
    assert tree.exit_code == 2
    assert "a_good" in tree.stdout and "softmax  " in tree.stdout  # the YAML name
    assert "fusecli: error: " in tree.stderr and "ValueError: boom" in tree.stderr


# Two same-shape reductions of one input: the segment_set makes nvFuser skip the un-segmented
# try, and its CombineReductions pass merges the two sums' groups (a "combine" decision).
COMBINED = HEADER + """\
import torch

with FusionDefinition() as fd:
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.sum(t0, dims=[1]))
    fd.add_output(fd.ops.sum(fd.ops.mul(t0, t0), dims=[1]))
    fd.add_output(fd.ops.segment_set(fd.ops.neg(t0)))

fd.execute([torch.randn(4, 8)])
"""


@pytest.mark.parametrize("view", ["tree", "nvfuser"])
def test_explain_renders_a_combine_reductions_decision(tmp_path, view):
    path = write(tmp_path / "combined.py", COMBINED)
    document = json.loads(invoke("explain-segmentation", str(path), "--json").stdout)
    assert "combine" in {entry["phase"] for entry in document["fusions"][0]["log"]}
    result = invoke("explain-segmentation", str(path), "--rules", "nvfuser", "--format", view)
    assert result.exit_code == 0, result.output
    if view == "tree":
        assert "combined reductions: sum, mul, sum" in result.stdout
    assert "reduction" in result.stdout


# -- 3. option values, stdout, names --------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "bisect"])
@pytest.mark.parametrize("value", ["nan", "inf", "1e300", "-1", "0"])
def test_a_timeout_that_is_no_usable_number_of_seconds_is_a_usage_error(command, value):
    result = invoke(command, str(RMS_NORM), "--timeout", value)
    assert result.exit_code == 2, result.output
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert "'--timeout'" in error and "Traceback" not in result.output


@pytest.mark.parametrize("value", ["-1", str(2**64)])
def test_a_seed_outside_64_bits_is_a_usage_error(value):
    result = invoke("run", str(RMS_NORM), "--seed", value)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--seed'" in result.stderr


@pytest.mark.parametrize("args", [
    ["--tolerance", "analytic", "--rtol", "1e-3"],
    ["--atol", "1e-3", "--tolerance", "analytic"],
    ["--rtol", "1e-3", "--atol", "1e-3", "--tolerance=analytic"],
])
def test_analytic_tolerance_with_rtol_or_atol_is_a_conflict_not_a_silent_switch(args):
    result = invoke("run", str(RMS_NORM), *args)
    assert result.exit_code == 2, result.output
    assert "--tolerance analytic conflicts with --" in result.stderr


@pytest.mark.parametrize("args", [["--rtol", "1e-3"], ["--tolerance", "loose", "--atol", "1"]])
def test_rtol_and_atol_without_analytic_given_are_no_conflict(args):
    result = invoke("run", str(RMS_NORM), *args)
    assert result.exit_code == 0, result.output


def test_junit_never_overwrites_a_users_file_without_force(tmp_path):
    junit = write(tmp_path / "results.xml", "the user's own file\n")
    refused = invoke("run", str(RMS_NORM), "--junit", str(junit))
    assert refused.exit_code == 2, refused.output
    assert "exists; pass --force" in refused.stderr
    assert junit.read_text() == "the user's own file\n"
    forced = invoke("run", str(RMS_NORM), "--junit", str(junit), "--force")
    assert forced.exit_code == 0, forced.output
    assert "<testsuites" in junit.read_text()


@pytest.mark.parametrize("as_json", [False, True])
def test_a_reader_that_closes_stdout_gets_the_runs_own_exit_code(tmp_path, as_json):
    """``fusecli run DIR | head -1``: the run's exit code (here 2, a file that does not load),
    not rich's 1 nor 141, and no traceback. The read end is closed before fusecli writes, so
    the broken pipe is certain (``head`` closes it after a line, racing the writer)."""
    write(tmp_path / "a_bad.py", LOADS_NOT)
    shutil.copy(RMS_NORM, tmp_path / "b_good.py")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = fusecli("run", str(tmp_path), *(["--json"] if as_json else []),
                       stdout=write_end, env={**os.environ, "FUSECLI_IN_PROCESS": "1"})
    finally:
        os.close(write_end)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "Exception" not in stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["run", str(RMS_NORM)], ["run", str(RMS_NORM), "--json"],
                                     ["explain-segmentation", str(RMS_NORM), "--json"]])
def test_a_full_stdout_is_one_line_and_exit_2(command):
    with open("/dev/full", "w") as full:
        done = fusecli(*command, stdout=full)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert "fusecli: error: cannot write the results to stdout: No space left on device" in stderr
    assert "Traceback" not in stderr


ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b31m\x08\x0d"


def test_names_with_terminal_escapes_are_shown_escaped(tmp_path):
    yaml = SOFTMAX.read_text().replace("name: softmax", f"name: {json.dumps('yaml' + ESCAPES)}")
    write(tmp_path / "a.yaml", yaml)
    shutil.copy(RMS_NORM, tmp_path / "b\x1b[31mred.py")
    write(tmp_path / "c\x1b[8mhidden.py", LOADS_NOT)
    outputs = []
    for args in (["run", str(tmp_path), "-v"], ["explain-segmentation", str(tmp_path)],
                 ["bisect", str(tmp_path / "missing\x1b[2J.py")]):
        result = invoke(*args, FUSECLI_IN_PROCESS="1")
        outputs.append(result.stdout + result.stderr)
    text = "".join(outputs)
    assert not any(char in text for char in "\x1b\x07\x9b\x08\x0d"), repr(text)
    assert "yaml\\x1b]0;owned" in text and "\\x1b[2J\\x9b31m" in text  # in the name
    assert "b\\x1b[31mred" in text and "c\\x1b[8mhidden.py:2" in text  # in file names
    assert "missing\\x1b[2J.py" in outputs[2]  # in a one-line error


# -- 4. scripts that fight the worker ------------------------------------------------------------

SWALLOWS_EVERYTHING = HEADER + """\
import time
while True:
    try:
        time.sleep(1)
    except BaseException:  # the worker's own alarm included
        pass
"""


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_script_that_swallows_every_exception_is_killed_at_its_timeout(tmp_path, jobs):
    write(tmp_path / "a_swallows.py", SWALLOWS_EVERYTHING)
    shutil.copy(RMS_NORM, tmp_path / "b_good.py")
    started = time.monotonic()
    done = fusecli("run", str(tmp_path), "--jobs", jobs, "--timeout", "5", "--json",
                   env={**os.environ, "FUSECLI_IN_PROCESS": ""})
    elapsed = time.monotonic() - started
    assert done.returncode == 3, done.stderr.decode()
    swallows, good = json.loads(done.stdout)["fusions"]
    assert swallows["error"] == "took longer than --timeout 5 s; the worker was killed"
    assert good["status"] == "pass"
    # its phase's --timeout, the grace the worker's own alarm gets, and interpreter starts
    assert elapsed < 40, f"the run took {elapsed:.0f} s"


@pytest.mark.slow
def test_explain_of_a_folder_isolates_each_file_in_a_worker(tmp_path):
    write(tmp_path / "a_exits.py", HEADER + "import os\nos._exit(7)\n")
    write(tmp_path / "b_interrupts.py", HEADER + "raise KeyboardInterrupt\n")
    write(tmp_path / "c_swallows.py", SWALLOWS_EVERYTHING)
    shutil.copy(RMS_NORM, tmp_path / "d_good.py")
    done = fusecli("explain-segmentation", str(tmp_path), "--timeout", "5", "--json",
                   env={**os.environ, "FUSECLI_IN_PROCESS": ""})
    assert done.returncode == 3, done.stderr.decode()
    exits, interrupts, swallows, good = json.loads(done.stdout)["fusions"]
    assert "the worker exited with status 7" in exits["error"]
    assert interrupts["error"] == "the script raised KeyboardInterrupt"
    assert swallows["error"] == "took longer than --timeout 5 s; the worker was killed"
    assert good["status"] == "pass" and good["segments"]


@pytest.mark.parametrize("command", ["explain-segmentation", "bisect"])
def test_a_file_that_does_not_load_still_gives_one_json_document(tmp_path, command):
    bad = write(tmp_path / "bad.py", LOADS_NOT)
    result = invoke(command, str(bad), "--json")
    assert result.exit_code == 2, result.output
    document = json.loads(result.stdout)
    assert document["ok"] is False
    errors = [document.get("error")] + [f["error"] for f in document["fusions"]]
    assert any(e and "the script raised ValueError: boom" in e for e in errors), document


# -- 5. reports that must stay well-formed whatever the names hold -------------------------------

XML_HOSTILE = "y\x1b[31m\x00\x01\x0b\x7f\x9b\ufffe\ud800z"


def test_junit_stays_valid_xml_with_control_characters_and_non_utf8_file_names(tmp_path):
    import xml.etree.ElementTree as ET

    folder = tmp_path / "corpus"
    yaml = SOFTMAX.read_text().replace("name: softmax", f"name: {json.dumps(XML_HOSTILE)}")
    write(folder / "a.yaml", yaml)
    shutil.copy(RMS_NORM, os.fsdecode(os.fsencode(folder) + b"/b\xff\x1b\x01name.py"))
    write(folder / "c\x02bad.py", HEADER + "raise ValueError('bo\\x00om\\x1b\\udcff')\n")
    junit = tmp_path / "results.xml"
    result = invoke("run", str(folder), "--junit", str(junit), FUSECLI_IN_PROCESS="1")
    assert result.exit_code == 2, result.output  # the file that does not load; not a crash
    cases = list(ET.parse(junit).iter("testcase"))  # parses: nothing XML 1.0 forbids
    assert [case.get("name") for case in cases] == [
        "y\\x1b[31m\\x00\\x01\\x0b\\x7f\\x9b\\ufffe\\ud800z", "b\\udcff\\x1b\\x01name",
        "c\\x02bad"]
    assert cases[1].get("classname").endswith("b\\udcff\\x1b\\x01name.py")
    (error,) = cases[2].iter("error")
    assert "c\\x02bad.py:2: the script raised ValueError: bo\\x00om\\x1b\\udcff" in (
        error.get("message"))


@pytest.mark.parametrize("name", ["bad.py", "bad\x1b[2J.py"])
def test_bisect_of_a_file_that_does_not_load_names_it_once(tmp_path, name):
    bad = write(tmp_path / name, LOADS_NOT)
    result = invoke("bisect", str(bad), "--max-queries", "2")
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    shown = str(bad).replace("\x1b", "\\x1b")
    assert line == f"fusecli: error: {shown}:2: the script raised ValueError: boom"
    assert line.count(name.replace("\x1b", "\\x1b")) == 1
