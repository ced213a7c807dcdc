"""Segmenter rules fitted on the segmentation population (issue 25), each against nvFuser.

Each golden in ``tests/golden/segpop/`` is a fit-part fusion of the population
(``scripts/segmentation-population.py``, seed % 3 != 0) and the log real nvFuser 0.2.36 printed
for it on an H100 (``NVFUSER_DUMP=segmenter_logging,segmented_fusion``), trimmed to the
un-segmented attempt and the final segments. fusecli must cut the same segments: the same
scheduler and the same tensor ops in each.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from fusecli.engines.nvfuser_log import parse_log
from fusecli.ir.dtype import DataType
from fusecli.load import load_path
from fusecli.segment.consecutive_cast import is_inclusive
from fusecli.segment.segmenter import segment_fusion

GOLDENS = Path(__file__).resolve().parent / "golden" / "segpop"


def _nvfuser(name: str):
    return parse_log((GOLDENS / f"{name}.log").read_text(encoding="utf-8"))


def _segments_of_nvfuser(name: str) -> Counter:
    return Counter((s.scheduler, tuple(sorted(s.ops))) for s in _nvfuser(name).segments)


def _segment(name: str, keep_log: bool = False):
    (loaded,) = load_path(GOLDENS / f"{name}.py", device="cpu")
    return segment_fusion(loaded.fusion, loaded.inputs, keep_log=keep_log)


def _segments_of_fusecli(segmented) -> Counter:
    return Counter((s.scheduler, tuple(sorted(e.op.value for e in s.exprs)))
                   for s in segmented.segments)


@pytest.mark.parametrize("name", ["pop_44", "pop_172", "pop_248", "pop_272", "pop_461"])
def test_segments_match_nvfuser(name: str) -> None:
    """pop_461: mergePadWithConsumers prefers a pad of a forwarded cast of an input with its
    consumer, as one of another group's tensor."""
    assert _segments_of_fusecli(_segment(name)) == _segments_of_nvfuser(name)


def test_up_casts_are_privatized_before_var_mean_is_translated() -> None:
    """privatizeOps runs before findSegments translates var_mean: the cast a var_mean and a
    sub read gets one copy (two casts in all, as nvFuser has), where translating first gave
    it three readers and two copies, and MergeUpAndDownCast a chain nvFuser never tries."""
    ours = sorted(s.scheduler for s in _segment("pop_488").segments)
    assert ours == sorted(s.scheduler for s in _nvfuser("pop_488").segments)


@pytest.mark.parametrize("name", ["pop_193", "pop_1754", "pop_1097"])
def test_cat_and_pad_merge_order_gives_nvfusers_schedulers(name: str) -> None:
    """MergeCatWithInputPads moves each cat's group to the end of the group list (pop_193,
    pop_1754: the normalization groups find other partners first) and a pad of a fusion input
    merges with its consumer first (pop_1097). nvFuser's cat is pads and a CatOp, so its
    segments list ops fusecli's one cat does not have: the schedulers are compared."""
    ours = sorted(s.scheduler for s in _segment(name).segments)
    assert ours == sorted(s.scheduler for s in _nvfuser(name).segments)


@pytest.mark.parametrize("name", ["pop_1687", "pop_1598"])
def test_scoped_persistent_buffers_keep_the_outer_persistent_kernel_whole(name: str) -> None:
    """persistentBufferSizeBit: two outer sums' buffers are live one after the other, and the
    second projects to the input through the broadcast of the first sum, so one row fits one
    SM's registers and outer_persistent needs no grid persistence (which plain sums cannot
    have: "non-Welford not enabled yet"). Adding up the buffers split off a reduction
    (pop_1687) or a pointwise segment (pop_1598)."""
    ours = Counter(s.scheduler for s in _segment(name).segments)
    assert ours == Counter(s.scheduler for s in _nvfuser(name).segments)


def test_combined_reduction_rejects_an_outer_result_read_by_the_inner_reduction() -> None:
    """isConnectedOnlyThroughReductionProducer: a sum over dim 0 broadcast back into the input
    of a layer norm over dim 1 reaches the inner reduction through its consumers, so
    inner_outer_persistent refuses the whole fusion with nvFuser's words."""
    (theirs,) = [v for c in _nvfuser("pop_44").candidates if c.phase == "whole"
                 for v in c.verdicts if v.scheduler == "inner_outer_persistent"]
    segmented = _segment("pop_44", keep_log=True)
    (ours,) = [v for entry in segmented.log if entry.phase == "whole"
               for v in entry.verdicts if v.scheduler == "inner_outer_persistent"]
    assert not theirs.accepted and not ours.accepted
    assert ours.reason == theirs.reason
    assert "should not have shared consumer" in ours.reason


def test_welford_becomes_two_passes_once_segmented() -> None:
    """TranslateApplicableWelford: the layer norm's var_mean is a sum, a division and a sum of
    squares in nvFuser's final segments; its x is then a persistent buffer, so the layer norm
    goes to inner_persistent and the outer sum after it to outer_persistent."""
    segmented = _segment("pop_172")
    ops = Counter(e.op.value for s in segmented.segments for e in s.exprs)
    assert ops["var_mean"] == 0 and ops["sum"] == 3
    assert sorted(s.scheduler for s in segmented.segments) == [
        "inner_persistent", "outer_persistent"]


def test_down_cast_lifted_above_a_copy_folds_into_the_up_cast() -> None:
    """ConsecutiveCastPass: an empty cat input dropped leaves cast(set(cast(x: half -> float))
    -> half); the down-cast moves above the set and cancels the up-cast, leaving set(x), which
    expr_eval takes as pointer arithmetic without segmenting."""
    whole = [c for c in _nvfuser("pop_272").candidates if c.phase == "whole"]
    assert [v.scheduler for c in whole for v in c.verdicts if v.accepted] == ["expr_eval"]
    segmented = _segment("pop_272")
    (segment,) = segmented.segments
    assert segment.scheduler == "expr_eval"
    assert [e.op.value for e in segment.exprs] == ["set"]


@pytest.mark.parametrize(("base", "wider", "holds"), [
    (DataType.Half, DataType.Float, True), (DataType.BFloat16, DataType.Float, True),
    (DataType.Float, DataType.Half, False), (DataType.Half, DataType.BFloat16, False),
    (DataType.Bool, DataType.Half, True), (DataType.Int32, DataType.Double, True),
])
def test_inclusive_types_as_nvfuser(base: DataType, wider: DataType, holds: bool) -> None:
    """isInclusiveType (csrc/type.cpp) decides which casts of a chain fold away."""
    assert is_inclusive(base, wider) is holds
