"""``fusecli bisect`` on the command line, and corpus runs for CI (jobs, shards, JUnit)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.app.corpus import (
    cluster_failures,
    parse_shard,
    run_corpus,
    select_shard,
)
from fusecli.app.pipeline import RunOptions, run_paths
from fusecli.cli.bisect import bisect
from fusecli.cli.main import cli, register
from fusecli.errors import InputError
from fusecli.load import discover
from fusecli.report.junit import write_junit
from fusecli.report.run_view import clusters_record

register()
if "bisect" not in cli.commands:  # until the lead registers it in fusecli/cli/main.py
    cli.add_command(bisect)

FUSIONS = Path(__file__).resolve().parent.parent / "fusions"
ONE_EXP = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.exp(T0)
    fd.add_output(T1)

inputs = [torch.ones(2, 3)]
fd.execute(inputs)
"""


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, ["bisect", *args], env=env)


def test_bisect_json_localizes_a_planted_fault(tmp_path):
    result = invoke(str(FUSIONS / "softmax.yaml"), "--in-process", "--json", "-o",
                    str(tmp_path), env={"FUSECLI_INJECT_FAULT": "exp"})
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["ok"] and document["reproduced"]
    assert document["failure_kind"] == "accuracy"
    assert document["segments"]["index"] == 0 and document["segments"]["fails_alone"]
    assert document["minimized"]["exprs"] == ["exp"] and document["minimized"]["verified"]
    assert Path(document["minimized"]["repro_yaml"]).exists()
    assert any(name.startswith("minimize: first bad") for name in document["replay"])
    assert "FUSECLI_INJECT_FAULT" in result.stderr  # said loudly


def test_bisect_asks_every_question_in_a_process_of_its_own_by_default(tmp_path):
    repro = tmp_path / "one_exp.py"
    repro.write_text(ONE_EXP)
    result = invoke(str(repro), "--no-shrink", "-j", "2", "-o", str(tmp_path / "out"),
                    "--json", env={"FUSECLI_INJECT_FAULT": "exp"})
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["minimized"]["verified"] and document["minimized"]["exprs"] == ["exp"]
    replay = document["replay"]["minimize: first bad (the minimized repro)"]
    assert " -m fusecli.bisect " in replay and replay.endswith("minimized.py")
    assert not list((tmp_path / "out" / "questions").glob("*.pt"))  # bundles cleaned up


def test_a_failure_that_does_not_reproduce_exits_1(tmp_path):
    result = invoke(str(FUSIONS / "softmax.yaml"), "--in-process", "--json", "-o",
                    str(tmp_path), env={"FUSECLI_INJECT_FAULT": ""})
    assert result.exit_code == 1
    assert json.loads(result.stdout)["reproduced"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a.py", "b.py"], "one repro file"),
        (["--command", "true", "a.py"], "go with --git"),
        (["missing.py"], "no such file"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, message):
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr


# -- corpus runs --------------------------------------------------------------------------------


def test_parallel_corpus_runs_match_serial_ones_and_write_junit(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "exp")
    files = [FUSIONS / "softmax.yaml", FUSIONS / "gelu_tanh.py", FUSIONS / "reductions.yaml",
             FUSIONS / "pad_cat.py"]
    options = RunOptions(device="cpu")
    parallel = run_corpus(files, options, jobs=2)
    serial = run_paths(files, options)
    assert [(f.path, f.status) for f in parallel.fusions] == [
        (f.path, f.status) for f in serial.fusions
    ]
    assert [f.status for f in parallel.fusions] == ["mismatch", "pass", "pass", "mismatch"]
    junit = write_junit(parallel, tmp_path / "reports" / "junit.xml")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "0")
    failing = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert {case.get("name") for case in failing} == {"softmax", "pad_cat"}
    assert all("output" in case.find("failure").get("message") for case in failing)
    clusters = cluster_failures(parallel)
    assert len(clusters) == 2 and sum(c.count for c in clusters) == 2
    assert clusters_record(clusters)[0]["signature"].startswith("mismatch: ")


def test_errors_cluster_by_normalized_message(tmp_path):
    for index in range(3):
        (tmp_path / f"bad{index}.py").write_text(
            f"from nvfuser import FusionDefinition\nraise ValueError('broken at line {index}')\n"
        )
    report = run_corpus([tmp_path], RunOptions(device="cpu"))
    (cluster,) = cluster_failures(report)
    assert cluster.count == 3 and cluster.signature.startswith("error: ")


def test_shards_split_a_corpus_without_overlap():
    files = discover([FUSIONS])
    shards = [select_shard(files, (k, 3)) for k in (1, 2, 3)]
    assert sorted(sum(shards, [])) == sorted(files)
    assert all(shards) and len({f for s in shards for f in s}) == len(files)
    assert parse_shard("2/3") == (2, 3) and parse_shard(None) is None
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(InputError):
            parse_shard(bad)


def test_bisect_minimizes_when_segmentation_itself_crashes(tmp_path, monkeypatch):
    """Segment bisection needs segments; when the segmenter raises, op-level minimization
    still localizes the failure (a crash of the segmenter is a failure like any other)."""
    from fusecli.bisect import segments

    def crash(*args, **kwargs):
        raise RuntimeError("segment graph is not a DAG")

    monkeypatch.setattr(segments, "segment_fusion", crash)
    result = invoke(str(FUSIONS / "softmax.yaml"), "--in-process", "--json", "-o",
                    str(tmp_path), env={"FUSECLI_INJECT_FAULT": "exp"})
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["segments"] is None
    assert document["minimized"]["exprs"] == ["exp"] and document["minimized"]["verified"]
    assert any("segmentation itself raised RuntimeError: segment graph is not a DAG" in note
               for note in document["notes"])
