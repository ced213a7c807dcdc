"""More of nvFuser's rules for fusions nobody recorded (issue 25), each on a small fusion with
the segmentation nvFuser's source implies and the reason it logs."""

from __future__ import annotations

import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.reference import run_reference
from fusecli.runtime.segmented import execute_segmented
from fusecli.segment.segmenter import segment_fusion

NON_UNIQUE = "Broadcasting dimension might be broadcasting to multiple sizes."


def _whole_fusion_reasons(fd: FusionDefinition, inputs) -> dict[str, str]:
    result = segment_fusion(fd.fusion, inputs, keep_log=True)
    (whole,) = [entry for entry in result.log if entry.phase == "whole"]
    return {v.scheduler: v.reason for v in whole.verdicts if not v.accepted}


def _segments(fd: FusionDefinition, inputs) -> list[tuple[str, list[str]]]:
    result = segment_fusion(fd.fusion, inputs)
    assert result.ok
    return [(s.scheduler, [e.op.value for e in s.exprs]) for s in result.segments]


# -- hasNonUniqueBcast (registry_utils.cpp) in pointwise, reduction and the persistent ---------
# schedulers: a broadcast that meets rows of two different extents


def _bias_for_two_heights():
    """One [1, C] bias added to a [R, C] and multiplied into an [S, C] tensor."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        bias = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        row = fd.ops.broadcast(fd.ops.neg(bias), [True, False])
        fd.add_output(fd.ops.add(a, row))
        fd.add_output(fd.ops.mul(b, row))
    return fd, [torch.randn(4, 8), torch.randn(6, 8), torch.randn(8)]


def test_a_broadcast_to_two_extents_is_cut_into_two_pointwise_kernels():
    fd, inputs = _bias_for_two_heights()
    reasons = _whole_fusion_reasons(fd, inputs)
    assert reasons["pointwise"] == NON_UNIQUE
    assert reasons["transpose"] == NON_UNIQUE
    assert _segments(fd, inputs) == [
        ("pointwise", ["neg", "broadcast", "add"]),
        ("pointwise", ["mul"]),
    ]


def test_the_two_kernels_still_compute_the_fusion():
    fd, inputs = _bias_for_two_heights()
    result = segment_fusion(fd.fusion, inputs)
    ours = execute_segmented(result, inputs).outputs
    for got, want in zip(ours, run_reference(fd.fusion, inputs).outputs, strict=True):
        torch.testing.assert_close(got, want)


def _column_sums_of_two_heights():
    """Column sums of a [R, C] and an [S, C] tensor, each combined with one [1, C] row."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        bias = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        row = fd.ops.broadcast(bias, [True, False])
        first = fd.ops.sum(fd.ops.add(a, row), dims=[0])
        second = fd.ops.sum(fd.ops.mul(b, row), dims=[0])
        fd.add_output(fd.ops.add(first, second))
    return fd, [torch.randn(64, 128), torch.randn(96, 128), torch.randn(128)]


def test_reduction_and_persistent_schedulers_refuse_a_broadcast_to_two_extents():
    fd, inputs = _column_sums_of_two_heights()
    reasons = _whole_fusion_reasons(fd, inputs)
    for scheduler in ("reduction", "inner_persistent", "outer_persistent",
                      "inner_outer_persistent"):
        assert reasons[scheduler] == NON_UNIQUE
    # each sum keeps the broadcast's one extent: one reduction kernel per height
    assert _segments(fd, inputs) == [
        ("reduction", ["broadcast", "add", "sum"]),
        ("reduction", ["mul", "sum", "add"]),
    ]


def test_one_extent_stays_one_kernel():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        bias = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        row = fd.ops.broadcast(bias, [True, False])
        fd.add_output(fd.ops.add(a, row))
        fd.add_output(fd.ops.mul(a, row))
    inputs = [torch.randn(4, 8), torch.randn(8)]
    assert _segments(fd, inputs) == [("pointwise", ["broadcast", "add", "mul"])]
