"""The nvfuser-2023 rule profile: nvFuser of December 2023, where issues #1541 and #1872 fail.

Both issues end in "Can not find a scheduler to schedule fusion segment" because a slice must
read a segment input and the segmenter of the time could not give it one: #1541's forwarded
``neg`` was pulled back in front of the slice unasked (fixed by nvFuser #1825), #1872's fp32
edge reached the slice through a cast back from half precision (castInputOutputToLowerPrecision,
off by default since #1889). Today's rules segment and run both.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fusecli.cli.main import cli, register
from fusecli.frontend import DataType, FusionDefinition
from fusecli.load import load_path
from fusecli.report.segmentation_view import nvfuser_log
from fusecli.segment.lower_precision import half_precision_edges
from fusecli.segment.rules import PROFILES
from fusecli.segment.segmenter import segment_fusion

register()
ROOT = Path(__file__).resolve().parent.parent
ISSUE_1541 = ROOT / "tests" / "repros_2023" / "issue_1541_slice.py"
ISSUE_1872 = ROOT / "tests" / "repros_2023" / "issue_1872_slice_cast.py"
CORPUS = sorted([*(ROOT / "fusions").glob("*.py"), *(ROOT / "fusions").glob("*.yaml"),
                 *(ROOT / "tests" / "repros_2023").glob("*.py")])

# The un-segmented attempt as issue #1541 quotes it (NVFUSER_DUMP=segmenter_logging), in order
ISSUE_1541_LOG = [
    ("no_op", "output has a concrete dimension"),
    ("reduction", "No reduction op to schedule"),
    ("transpose", "First input of SliceOp must be fusion input."),
    ("pointwise", "First input of SliceOp must be fusion input."),
    ("inner_persistent", "needs a reduction op"),
    ("outer_persistent", "needs a reduction op"),
    ("inner_outer_persistent", "needs a reduction op"),
    ("matmul", "Matmul scheduler supports fusions only with a single MMA op, got: 0"),
]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def _segment(path: Path, profile: str = "nvfuser-2023"):
    (loaded,) = load_path(path, device="cpu")
    return segment_fusion(loaded.fusion, loaded.inputs, profile=profile, keep_log=True)


def _reasons(verdicts) -> list[tuple[str, str]]:
    return [(v.scheduler, v.reason) for v in verdicts]


def _ops(candidate) -> list[str]:
    return [e.op.value for e in candidate.exprs]


# -- issue #1541: a forwarded unary op rejoins the slice ------------------------------------


def test_issue_1541_unsegmented_attempt_is_the_issues_log():
    result = _segment(ISSUE_1541)
    whole = next(e for e in result.log if e.phase == "whole")
    assert _reasons(whole.verdicts) == ISSUE_1541_LOG


def test_issue_1541_fails_when_the_forwarded_neg_rejoins_the_slice():
    result = _segment(ISSUE_1541)
    # the segmenter did cut before the slice: alone, it is schedulable (a slice of a segment
    # input is pointer arithmetic, which no_op took from #1478, December 2023)
    (initial,) = [e for e in result.log if e.phase == "initial"]
    assert _ops(initial.candidate) == ["slice"] and initial.accepted == "no_op"
    # ... but the forwarded neg (after its upcast) is put back in front of it unasked
    assert not any(e.phase == "forward" for e in result.log)
    assert result.failure is not None
    assert _ops(result.failure.candidate) == ["cast", "neg", "slice"]
    assert _reasons(result.failure.verdicts) == ISSUE_1541_LOG
    assert "#1825" in " ".join(result.failure.advice)


def test_issue_1541_segments_once_forwarded_ops_must_fit(monkeypatch):
    """Only forward_unconditionally (ended by nvFuser #1825) makes #1541 fail."""
    fixed = replace(PROFILES["nvfuser-2023"], name="2023-after-1825",
                    forward_unconditionally=False)
    monkeypatch.setitem(PROFILES, fixed.name, fixed)
    result = _segment(ISSUE_1541, profile=fixed.name)
    assert result.ok
    assert [_ops(s.candidate) for s in result.segments] == [["cast", "neg"], ["slice"]]


# -- issue #1872: an fp32 edge crosses as half, the slice reads the cast ---------------------


def test_issue_1872_fails_on_a_slice_of_a_half_precision_edge():
    result = _segment(ISSUE_1872)
    whole = next(e for e in result.log if e.phase == "whole")
    assert ("pointwise", "First input of SliceOp must be fusion input.") in _reasons(
        whole.verdicts)
    assert result.failure is not None
    failing = result.failure.candidate
    assert _ops(failing) == ["slice"]
    (edge,) = failing.inputs  # full's output, a segment input, yet read through a cast
    assert failing.definition(edge).op.value == "full"
    assert _reasons(result.failure.verdicts) == ISSUE_1541_LOG
    assert "#1889" in " ".join(result.failure.advice)


def test_issue_1872_segments_without_lower_precision_edges(monkeypatch):
    """Only io_to_lower_precision (off by default since nvFuser #1889) makes #1872 fail."""
    fixed = replace(PROFILES["nvfuser-2023"], name="2023-after-1889",
                    io_to_lower_precision=False)
    monkeypatch.setitem(PROFILES, fixed.name, fixed)
    result = _segment(ISSUE_1872, profile=fixed.name)
    assert result.ok
    assert [_ops(s.candidate) for s in result.segments] == [
        ["full"], ["slice", "cast"], ["slice", "cast"]
    ]


def test_half_precision_edges_are_float_intermediates_feeding_half_outputs():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[8], contiguity=[True], dtype=DataType.Float)
        y = fd.ops.exp(x)  # Float, feeds the half output: marked
        z = fd.ops.mul(y, y)  # Float, feeds only the float output: not marked
        fd.add_output(fd.ops.cast(y, DataType.Half))
        fd.add_output(z)
    marked = half_precision_edges(fd.fusion)
    assert marked == {y.val.uid}
    assert x.val.uid not in marked  # fusion inputs never cross a segment edge


# -- the same rule for pads and cats, and lookups exempt from the casts ----------------------


def _full_then(resize: str):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4], contiguity=[True], dtype=DataType.Float)
        full = fd.ops.full(shape=[4], fill_value=fd.define_scalar(1.0), dtype=DataType.Float)
        if resize == "pad":
            out = fd.ops.pad(full, [1, 1])
        else:
            out = fd.ops.cat([full, x], dim=0)
        fd.add_output(fd.ops.cast(out, DataType.BFloat16))
    return fd.fusion, [torch.randn(4)]


@pytest.mark.parametrize("resize", ["pad", "cat"])
def test_pads_and_cats_read_half_edges_through_a_cast_too(resize):
    """nvFuser builds cat from PadOps: both say PadOp."""
    fusion, inputs = _full_then(resize)
    result = segment_fusion(fusion, inputs, profile="nvfuser-2023")
    assert result.failure is not None
    reasons = dict(_reasons(result.failure.verdicts))
    assert reasons["pointwise"] == "First input of PadOp must be fusion input."
    assert segment_fusion(fusion, inputs, profile="nvfuser").ok


def test_lookups_read_half_edges_directly():
    """castInputOutputToLowerPrecision left the inputs of select-like ops alone."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[6, 4], contiguity=[True, True], dtype=DataType.Float)
        index = fd.define_tensor(shape=[3], contiguity=[True], dtype=DataType.Int)
        y = fd.ops.mul(x, x)
        picked = fd.ops.index_select(y, index, 0)
        fd.add_output(fd.ops.cast(picked, DataType.Half))
    inputs = [torch.randn(6, 4), torch.tensor([0, 2, 5])]
    result = segment_fusion(fd.fusion, inputs, profile="nvfuser-2023", keep_log=True)
    whole = next(e for e in result.log if e.phase == "whole")
    assert ("pointwise", "First input of IndexSelectOp must be fusion input.") in _reasons(
        whole.verdicts)
    assert result.ok
    assert ["index_select", "cast"] in [_ops(s.candidate) for s in result.segments]


# -- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize("repro", [ISSUE_1541, ISSUE_1872], ids=["1541", "1872"])
def test_explain_under_2023_rules_exits_3_with_nvfusers_error(repro):
    result = invoke("explain-segmentation", str(repro), "--rules", "nvfuser-2023")
    assert result.exit_code == 3, result.output
    assert "Can not find a scheduler" in result.stdout
    assert "First input of SliceOp must be fusion input." in result.stdout


@pytest.mark.parametrize("repro", [ISSUE_1541, ISSUE_1872], ids=["1541", "1872"])
def test_the_nvfuser_format_prints_the_issue_log_lines(repro):
    result = invoke("explain-segmentation", str(repro), "--rules", "nvfuser-2023",
                    "--format", "nvfuser")
    text = result.stdout
    assert text.startswith("***Runtime***: Try to schedule fusion un-segmented:\n")
    unsegmented = text.split("\n\n", 1)[0].splitlines()[1:]
    assert unsegmented == [
        f"Scheduler _{name}_ ***rejected*** because : {reason}" for name, reason in ISSUE_1541_LOG
    ]
    assert text.rstrip().endswith("Can not find a scheduler to schedule fusion segment")


@pytest.mark.parametrize("repro", [ISSUE_1541, ISSUE_1872], ids=["1541", "1872"])
def test_run_under_2023_rules_is_a_pipeline_error(repro):
    result = invoke("run", str(repro), "--rules", "nvfuser-2023", "--json")
    assert result.exit_code == 3
    (record,) = json.loads(result.stdout)["fusions"]
    assert record["status"] == "error"
    assert record["error"].startswith("Can not find a scheduler to schedule fusion segment")


@pytest.mark.parametrize("repro", [ISSUE_1541, ISSUE_1872], ids=["1541", "1872"])
def test_todays_rules_segment_and_match_eager_torch(repro):
    result = invoke("run", str(repro), "--json")
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)["fusions"]
    assert record["status"] == "pass" and len(record["segments"]) > 1
    assert record["outputs"] and all(o["ok"] for o in record["outputs"])


@pytest.mark.parametrize("command", ["run", "explain-segmentation", "codegen", "bisect"])
def test_every_command_with_rules_accepts_2023(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert "--rules [nvfuser|nvfuser-2023|nvfuser-2024]" in result.stdout


# -- the corpus ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_the_corpus_segments_under_2023_rules_without_crashing(path):
    """Some fusions legitimately find no scheduler (matmul and linear had no 2023 lowering);
    every one ends in segments or a diagnosis, and its log renders."""
    for loaded in load_path(path, device="cpu"):
        result = segment_fusion(loaded.fusion, loaded.inputs, profile="nvfuser-2023",
                                keep_log=True)
        assert result.ok == (result.failure is None)
        if result.failure is not None:
            assert result.failure.verdicts and result.failure.advice
        assert nvfuser_log(result).startswith("***Runtime***")
