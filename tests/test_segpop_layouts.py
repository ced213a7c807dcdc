"""Layout and resize rules fitted on the segmentation population (issue 25), each against nvFuser.

The goldens in ``tests/golden/segpop/`` are fit-part fusions (seed % 3 != 0) with the log real
nvFuser 0.2.36 printed for each, trimmed to the un-segmented attempt, the candidates a rule
decides and the final segments. Each test holds fusecli's verdict on a candidate to nvFuser's
words for the same candidate, and its segments to nvFuser's.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from fusecli.engines.nvfuser_log import parse_log
from fusecli.load import load_path
from fusecli.segment.allocation import allocation_orders
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.segmenter import segment_fusion

GOLDENS = Path(__file__).resolve().parent / "golden" / "segpop"


def _load(name: str):
    (loaded,) = load_path(GOLDENS / f"{name}.py", device="cpu")
    return loaded


def _theirs(name: str, scheduler: str, ops: set[str] | None) -> str:
    """nvFuser's reason for rejecting the candidate of exactly ``ops`` (its printed math), or
    the whole fusion for None."""
    log = parse_log((GOLDENS / f"{name}.log").read_text(encoding="utf-8"))
    for candidate in log.candidates:
        if (candidate.phase == "whole") if ops is None else set(candidate.ops) == ops:
            for verdict in candidate.verdicts:
                if verdict.scheduler == scheduler:
                    return verdict.reason
    raise AssertionError(f"{name}: no {scheduler} verdict on {sorted(ops)}")


def _ours(name: str, scheduler: str, ops: set[str] | None) -> str:
    loaded = _load(name)
    segmented = segment_fusion(loaded.fusion, loaded.inputs, keep_log=True)
    for entry in segmented.log:
        if (entry.phase != "whole") if ops is None else (
                {e.op.value for e in entry.candidate.exprs} != ops):
            continue
        for verdict in entry.verdicts:
            if verdict.scheduler == scheduler:
                assert not verdict.accepted
                return verdict.reason
    raise AssertionError(f"{name}: fusecli asked no {scheduler} about {sorted(ops)}")


@pytest.mark.parametrize("name", ["pop_28", "pop_83", "pop_305", "pop_331"])
def test_segments_match_nvfuser(name: str) -> None:
    log = parse_log((GOLDENS / f"{name}.log").read_text(encoding="utf-8"))
    theirs = Counter((s.scheduler, tuple(sorted(s.ops))) for s in log.segments)
    if name == "pop_305":  # nvFuser writes the cat as pads and a cat: schedulers only
        theirs = Counter(s.scheduler for s in log.segments)
    loaded = _load(name)
    segmented = segment_fusion(loaded.fusion, loaded.inputs)
    ours = Counter((s.scheduler, tuple(sorted(e.op.value for e in s.exprs)))
                   for s in segmented.segments)
    if name == "pop_305":
        ours = Counter(s.scheduler for s in segmented.segments)
    assert ours == theirs


def test_output_of_column_major_inputs_is_column_major() -> None:
    """AllocationDomainPass: the add of two column-major inputs is written column-major, so
    inputs and output agree on the innermost dimension and nothing is a transpose."""
    loaded = _load("pop_83")
    fusion = loaded.fusion
    orders = allocation_orders(fusion, RuntimeInfo(fusion, loaded.inputs))
    assert orders[fusion.outputs[0].value.uid] == (0, 1)
    assert _ours("pop_83", "transpose", None) == _theirs("pop_83", "transpose", None)
    assert _theirs("pop_83", "transpose", None) == (
        "cannot find two mismatching inner most dimensions")


def test_resize_refuses_an_output_laid_out_after_a_column_major_input() -> None:
    """The softmax output padded, sliced and cast back to half is a fusion output, so it takes
    the column-major order of the input; its producer between segments is row-major. The resize
    scheduler then sees a transpose and the cast goes to a pointwise segment of its own."""
    ops = {"pad", "slice", "cast"}
    assert _ours("pop_28", "resize", ops) == _theirs("pop_28", "resize", ops)
    assert _theirs("pop_28", "resize", ops) == "Transpose-like patterns not supported."


def test_transpose_reference_must_reach_every_segment_input() -> None:
    """findReferenceFor: a slice of a column-major input is an alias with the input's layout,
    so its group is apart from the cat's output; but it is no valid reference (the other cat
    input's dimension is not among its own), so there are no two valid groups. (nvFuser asks
    about the cat of the two slices as pads and a cat; fusecli keeps the cat whole.)"""
    ours = _ours("pop_305", "transpose", {"cat", "full", "broadcast", "expand", "add"})
    theirs = _theirs("pop_305", "transpose", {"pad", "cat"})
    assert ours == theirs == "cannot find two mismatching inner most dimensions"


def test_transpose_size_is_the_first_groups_reference() -> None:
    """The run-time size check counts the reference of the largest group (the sliced output,
    64 x 2048), not the larger input the slice reads (64 x 4096)."""
    ours = _ours("pop_305", "transpose", {"slice", "neg"})
    assert ours.startswith(_theirs("pop_305", "transpose", {"slice", "neg"}))


def test_resize_refuses_a_resized_dimension_that_meets_a_broadcast() -> None:
    """hasResizeOfBroadcast checks the whole broadcast-graph group of the padded dimension: a
    product with a broadcast scalar puts a broadcast there, so pointwise and resize split."""
    ops = {"add", "broadcast", "expand", "mul", "pad", "slice", "cast", "segment_set"}
    assert _ours("pop_331", "resize", ops) == _theirs("pop_331", "resize", ops)
    assert _theirs("pop_331", "resize", ops) == "Resize of a broadcast ID is not allowed."
