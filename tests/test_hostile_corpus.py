"""Hostile files through every command that reads one (issue 23): files that are not what their
name says (a folder, a symbolic link loop, a dangling link, binary, UTF-16, empty, one 10 MB
line, 10,000-element YAML lists, YAML nested past the parser's recursion, impossible shapes), and
scripts that fight the process running them (a forked child or a subprocess that keeps stdout
open, signals ignored, ``sys.exit``/``os._exit``/``SystemExit('text')``, writes to descriptor 1,
a daemon thread printing after the run, a deleted working folder).

The contract for each: bad input exits 2 with one line on stderr naming the file and no
traceback; ``--json`` prints one document on stdout; a folder run goes on past the file; nothing
outlives ``--timeout`` by more than a few seconds. Files that are only data run in this process
(``FUSECLI_IN_PROCESS=1``, fast); scripts run through ``python -m fusecli`` with its workers.
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

from fusecli.cli.main import cli, register

register()
ROOT = Path(__file__).resolve().parent.parent
SOFTMAX = (ROOT / "fusions" / "softmax.yaml").read_text()
HEADER = "from nvfuser import FusionDefinition, DataType\n"
DEFINE = """\
import torch

with FusionDefinition() as fd:
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.exp(t0))
"""
EXECUTE = "fd.execute([torch.randn(4, 8)])\n"
GOOD = HEADER + DEFINE + EXECUTE


def _softmax_input_shape(shape: str) -> str:
    return SOFTMAX.replace("shape: [2, 4, 64, 64], strides", f"shape: {shape}, strides")


# name -> (file name, how to make it, the words its one-line error holds)
BAD_INPUTS = {
    "a folder named x.py": ("x.py", lambda p: p.mkdir(), "x.py"),
    "a symbolic link loop": ("loop.py", lambda p: os.symlink(p.name, p), "no such file"),
    "a dangling symbolic link": ("gone.py", lambda p: os.symlink("/nonexistent/x.py", p),
                                 "no such file"),
    "an empty file": ("empty.py", lambda p: p.write_text(""), "the script runs no fusion"),
    "binary bytes": ("binary.py", lambda p: p.write_bytes(bytes(range(256)) * 8),
                     "cannot read the script"),
    "UTF-16 text": ("wide.py", lambda p: p.write_bytes(GOOD.encode("utf-16")),
                    "the file is UTF-16 text"),
    "one 10 MB line": ("long.py", lambda p: p.write_text("x" * (10 << 20)), "NameError"),
    "YAML nested past recursion": (
        "nested.yaml",
        lambda p: p.write_text("fusecli_yaml: 1\ninputs: " + "[" * 50000 + "]" * 50000 + "\n"),
        "not valid YAML: nested too deeply"),
    "YAML of one bare line": ("bare.yaml", lambda p: p.write_text("a" * 1000),
                              "bare.yaml:1: a fusion document is a mapping"),
    "YAML listing 10,000 inputs": (
        "many.yaml",
        lambda p: p.write_text(SOFTMAX + "- {kind: tensor, dtype: float32, shape: [2]}\n" * 10000),
        "10001 inputs listed, but the definition takes 1"),
    "YAML with a 10,000-dimension shape": (
        "dims.yaml", lambda p: p.write_text(_softmax_input_shape("[" + "1," * 9999 + "1]")),
        "4 strides for 10000 dimensions"),
    "a negative shape": ("negative.yaml",
                         lambda p: p.write_text(_softmax_input_shape("[2, -4, 64, 64]")),
                         "expected an integer >= 0, got -4"),
    "a 2**62 shape": ("huge.yaml",
                      lambda p: p.write_text(_softmax_input_shape(f"[2, 4, 64, {2**62}]")),
                      "cannot make this input"),
}


def _one_error_line(stderr: str, words: str, path: Path) -> str:
    assert "Traceback" not in stderr, stderr
    (line,) = [line for line in stderr.splitlines() if line.startswith("fusecli: error:")]
    assert words in line and line.count(path.name) == 1, line
    return line


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
@pytest.mark.parametrize("command", [["run", "--json"], ["explain-segmentation", "--json"],
                                     ["convert"]])
def test_a_bad_input_is_exit_2_naming_the_file_once(tmp_path, case, command):
    name, make, words = BAD_INPUTS[case]
    path = tmp_path / name
    make(path)
    runner = CliRunner(env={"FUSECLI_IN_PROCESS": "1"})
    result = runner.invoke(cli, [command[0], str(path), *command[1:]], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    if command[0] == "convert":
        assert result.stdout == ""
        _one_error_line(result.stderr, words, path)
        return
    document = json.loads(result.stdout)
    errors = [document.get("error")] + [fusion["error"] for fusion in document["fusions"]]
    assert document["ok"] is False and any(e and words in e for e in errors), document
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("case", ["UTF-16 text", "YAML nested past recursion", "a 2**62 shape"])
def test_bisect_of_a_bad_input_is_exit_2_with_one_json_document(tmp_path, case):
    name, make, words = BAD_INPUTS[case]
    path = tmp_path / name
    make(path)
    result = CliRunner().invoke(cli, ["bisect", str(path), "--json", "--max-queries", "2",
                                      "--timeout", "20"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert words in json.loads(result.stdout)["error"]
    _one_error_line(result.stderr, words, path)


def test_a_byte_order_mark_is_read_as_python_reads_it(tmp_path):
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbf" + SOFTMAX.encode())
    runner = CliRunner(env={"FUSECLI_IN_PROCESS": "1"})
    result = runner.invoke(cli, ["run", str(tmp_path), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [f["status"] for f in json.loads(result.stdout)["fusions"]] == ["pass", "pass"]


# -- scripts that fight the process running them --------------------------------------------------

SCRIPTS = {
    "forks a child that holds stdout": "import os, time\nif os.fork() == 0:\n"
                                       "    time.sleep(30)\n    os._exit(0)\n",
    "forks a child that runs on": "import os\nos.fork()\n",  # both would run the rest
    "starts a subprocess that holds stdout": "import subprocess\n"
                                             "subprocess.Popen(['sleep', '30'])\n",
    "writes to descriptor 1": "import os, sys\nsys.__stdout__.write('JUNK1\\n')\n"
                              "sys.__stdout__.flush()\nos.write(1, b'JUNK2\\n')\nprint('JUNK3')\n",
    "prints from a daemon thread": "import os, threading, time\ndef late():\n"
                                   "    while True:\n        os.write(1, b'JUNK4\\n')\n"
                                   "        time.sleep(0.05)\n"
                                   "threading.Thread(target=late, daemon=True).start()\n",
    "deletes its working folder": "import os, shutil, tempfile\nd = tempfile.mkdtemp()\n"
                                  "os.chdir(d)\nshutil.rmtree(d)\n",
    "ignores SIGTERM and SIGINT": "import signal\nfor s in (signal.SIGTERM, signal.SIGINT):\n"
                                  "    signal.signal(s, signal.SIG_IGN)\n",
}
ENDS_BADLY = {  # before its fd.execute call: the record's error
    "calls sys.exit(0)": ("import sys\nsys.exit(0)\n", 2, "the script runs no fusion"),
    "raises SystemExit('text')": ("raise SystemExit('bye')\n", 2,
                                  "the script exited with status 1: bye"),
    "calls os._exit(0)": ("import os\nos._exit(0)\n", 3, "the worker exited with status 0"),
    "ignores every signal and sleeps": (
        "import signal, time\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):\n"
        "    signal.signal(s, signal.SIG_IGN)\ntime.sleep(60)\n", 3,
        "took longer than --timeout 2 s"),
}


def fusecli(*args: str, limit: float = 40) -> tuple[subprocess.CompletedProcess, float]:
    """``python -m fusecli ARGS`` with workers, and how long until its stdout closed: a child
    the script left behind holding stdout would keep a reader (``| jq``) waiting."""
    env = {**os.environ, "FUSECLI_IN_PROCESS": ""}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "fusecli", *args], capture_output=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=limit)
    return done, time.monotonic() - started


def _one_document(stdout: bytes) -> dict:
    text = stdout.decode()
    assert "JUNK" not in text, text
    return json.loads(text)  # one document, nothing else


@pytest.mark.parametrize("case", sorted(SCRIPTS))
def test_a_script_alone_that_fights_its_process_still_gives_one_true_document(tmp_path, case):
    path = tmp_path / "fights.py"
    path.write_text(HEADER + SCRIPTS[case] + DEFINE + EXECUTE)
    done, seconds = fusecli("run", str(path), "--json", "--timeout", "5")
    assert done.returncode == 0, done.stderr.decode()
    (fusion,) = _one_document(done.stdout)["fusions"]
    assert fusion["status"] == "pass"
    assert seconds < 25, f"stdout stayed open {seconds:.0f} s"


@pytest.mark.parametrize("case", sorted(ENDS_BADLY))
def test_a_script_alone_that_ends_before_its_fusion_is_its_record(tmp_path, case):
    code, exit_code, words = ENDS_BADLY[case]
    path = tmp_path / "ends.py"
    path.write_text(HEADER + DEFINE + code + EXECUTE)
    done, seconds = fusecli("run", str(path), "--json", "--timeout", "2")
    assert done.returncode == exit_code, done.stderr.decode()
    (fusion,) = _one_document(done.stdout)["fusions"]
    assert fusion["status"] == "error" and words in fusion["error"], fusion
    assert seconds < 25 and "Traceback" not in done.stderr.decode()


@pytest.mark.slow
def test_a_folder_of_hostile_scripts_and_names_goes_on_to_the_good_file(tmp_path):
    """Every case above in one folder, --jobs 2: one record each, in file order, and one
    document; file names with a newline, ESC, quotes and a byte that is not UTF-8 included."""
    for index, case in enumerate(sorted(SCRIPTS)):
        (tmp_path / f"a{index:02}.py").write_text(HEADER + SCRIPTS[case] + DEFINE + EXECUTE)
    for index, case in enumerate(sorted(ENDS_BADLY)):
        code = ENDS_BADLY[case][0]
        (tmp_path / f"b{index:02}.py").write_text(HEADER + DEFINE + code + EXECUTE)
    hostile = os.fsdecode(os.fsencode(tmp_path) + b"/c\n\x1b[31m\"'\xff.py")
    Path(hostile).write_text(GOOD)
    (tmp_path / "d_good.py").write_text(GOOD)
    done, seconds = fusecli("run", str(tmp_path), "--json", "--jobs", "2", "--timeout", "2",
                            "--junit", str(tmp_path / "out" / "results.xml"), limit=120)
    assert done.returncode == 3, done.stderr.decode()  # the worst: a killed worker
    fusions = _one_document(done.stdout)["fusions"]
    statuses = [fusion["status"] for fusion in fusions]
    assert statuses == ["pass"] * len(SCRIPTS) + ["error"] * len(ENDS_BADLY) + ["pass", "pass"]
    assert fusions[-2]["path"] == hostile
    import xml.etree.ElementTree as ET

    assert len(list(ET.parse(tmp_path / "out" / "results.xml").iter("testcase"))) == len(fusions)


def test_convert_runs_a_script_in_a_worker_with_a_timeout(tmp_path):
    path = tmp_path / "hangs.py"
    path.write_text(HEADER + DEFINE + ENDS_BADLY["ignores every signal and sleeps"][0] + EXECUTE)
    done, seconds = fusecli("convert", str(path), "--timeout", "2")
    assert done.returncode == 3, done.stderr.decode()
    _one_error_line(done.stderr.decode(), "took longer than --timeout 2 s", path)
    assert done.stdout == b"" and seconds < 25
    forks = tmp_path / "forks.py"
    forks.write_text(HEADER + SCRIPTS["forks a child that holds stdout"] + DEFINE + EXECUTE)
    done, seconds = fusecli("convert", str(forks))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().startswith("fusecli_yaml: 1\nname: forks\n") and seconds < 25


def test_bisect_asks_a_script_that_closes_descriptor_1_and_hears_its_answer(tmp_path):
    """The question's answer goes out on its own copy of descriptor 1: a script that closes
    stdout still gets a verdict (here: it passes, so there is nothing to bisect)."""
    path = tmp_path / "closes.py"
    path.write_text("import os\nos.close(1)\n" + GOOD, encoding="utf-8")
    result = CliRunner().invoke(cli, ["bisect", str(path), "--json", "--max-queries", "2",
                                      "--timeout", "60"], catch_exceptions=False)
    document = json.loads(result.stdout)
    assert "Bad file descriptor" not in json.dumps(document), document
    assert "dies while loading" not in json.dumps(document), document


def test_a_death_is_named_once_in_bisects_message(tmp_path):
    path = tmp_path / "exits.py"
    path.write_text("import os\nos._exit(0)\n" + GOOD, encoding="utf-8")
    result = CliRunner().invoke(cli, ["bisect", str(path), "--json", "--max-queries", "2",
                                      "--timeout", "60"], catch_exceptions=False)
    error = json.loads(result.stdout)["error"]
    assert result.exit_code == 2 and error.count("exit status 0") == 1, error
