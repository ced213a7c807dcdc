"""nvFuser's privatized up-casts (SegmentCandidateFinder::privatizeOps and revertPrivatizedOps,
csrc/fusion_segmenter.cpp) and the transpose grouping's refusal of a tensor with no innermost
dimension (TransposeDomainMap::groupInputsOutputsByInnerDim, csrc/scheduler/tools/
domain_map.cpp), each on a small fusion with the segmentation nvFuser's source implies."""

from __future__ import annotations

import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.reference import run_reference
from fusecli.runtime.segmented import execute_segmented
from fusecli.segment.segmenter import segment_fusion

NO_TRANSPOSE = "cannot find two mismatching inner most dimensions"


def _segments(fd: FusionDefinition, inputs) -> list[tuple[str, list[str]]]:
    result = segment_fusion(fd.fusion, inputs)
    assert result.ok
    return sorted((s.scheduler, [e.op.value for e in s.exprs]) for s in result.segments)


def _assert_computes_the_fusion(fd: FusionDefinition, inputs) -> None:
    result = segment_fusion(fd.fusion, inputs)
    ours = execute_segmented(result, inputs).outputs
    for got, want in zip(ours, run_reference(fd.fusion, inputs).outputs, strict=True):
        torch.testing.assert_close(got, want)


# -- groupInputsOutputsByInnerDim: a 0-d segment input or output ends the grouping ------------


def _transpose_with_a_counter():
    """A transpose (row-major and column-major inputs) that also reads a 0-d tensor."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float,
                             stride_order=[0, 1])
        counter = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float)
        scale = fd.ops.broadcast_in_dim(counter, shape=[64, 64], broadcast_dims=[])
        fd.add_output(fd.ops.mul(fd.ops.add(a, b), scale))
    inputs = [torch.randn(64, 64), torch.randn(64, 64).t(), torch.tensor(2.0)]
    return fd, inputs


def test_a_zero_dim_input_leaves_the_transpose_scheduler_no_groups():
    fd, inputs = _transpose_with_a_counter()
    result = segment_fusion(fd.fusion, inputs, keep_log=True)
    (whole,) = [entry for entry in result.log if entry.phase == "whole"]
    reasons = {v.scheduler: v.reason for v in whole.verdicts if not v.accepted}
    assert reasons["transpose"] == NO_TRANSPOSE
    assert [s.scheduler for s in result.segments] == ["pointwise"]


# -- privatizeUpCastOrSqueezeOp: each use of an up-cast but the first gets its own cast -------


def _rotate_half_of_a_column_major_input():
    """bf16 column-major [64, 4096] cast to float, both halves sliced and swapped by a cat
    (large enough for the transpose scheduler's run-time size check)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16,
                             stride_order=[0, 1])
        wide = fd.ops.cast(x, dtype=DataType.Float)
        left = fd.ops.slice(wide, start_indices=[0, 0], end_indices=[64, 2048])
        right = fd.ops.slice(wide, start_indices=[0, 2048], end_indices=[64, 4096])
        fd.add_output(fd.ops.cast(fd.ops.cat([fd.ops.neg(right), left], dim=1),
                                  dtype=DataType.BFloat16))
    return fd, [torch.randn(4096, 64, dtype=torch.bfloat16).t()]


def test_each_slice_of_an_up_cast_reads_a_cast_of_its_own():
    """The slices need a segment input, so each cast is a transpose segment of its own."""
    fd, inputs = _rotate_half_of_a_column_major_input()
    segments = _segments(fd, inputs)
    assert [s for s in segments if s[0] == "transpose"] == [("transpose", ["cast"])] * 2
    assert [s[0] for s in segments].count("resize") == 1
    _assert_computes_the_fusion(fd, inputs)


def test_copies_that_share_a_segment_are_reverted_to_one_cast():
    """A half input cast once for an outer sum and once for what follows it: the copies end in
    one outer_persistent segment, which keeps one cast."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half)
        wide = fd.ops.cast(x, dtype=DataType.Float)
        total = fd.ops.sum(wide, dims=[0], keepdim=False)
        centered = fd.ops.sub(wide, fd.ops.broadcast_in_dim(total, shape=[256, 64],
                                                            broadcast_dims=[1]))
        fd.add_output(total)
        fd.add_output(fd.ops.segment_set(fd.ops.neg(centered)))
    inputs = [torch.randn(256, 64, dtype=torch.float16)]
    segments = _segments(fd, inputs)
    persistent = [ops for scheduler, ops in segments if scheduler == "outer_persistent"]
    assert len(persistent) == 1
    assert persistent[0].count("cast") == 1
    _assert_computes_the_fusion(fd, inputs)


def test_an_expr_reading_an_up_cast_twice_takes_one_copy_at_both_positions():
    """``lerp(c, c, w)``, the second of three uses of the up-cast ``c``: nvFuser walks the rewritten
    expr's inputs by position, so the copy replaces ``c`` at both and the second position
    reads a cast of one use. fusecli walked the old inputs and moved the second use again
    (random fusion 2105: ``ValueError: list.remove(x)`` out of fd.execute)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        wide = fd.ops.cast(x, dtype=DataType.Float)
        fd.add_output(fd.ops.erfc(wide))
        fd.add_output(fd.ops.segment_set(fd.ops.lerp(wide, wide, w)))  # segments: privatized
        fd.add_output(fd.ops.sin(wide))  # a third use: the second position is no first one
    inputs = [torch.randn(16, 32, dtype=torch.bfloat16), torch.randn(16, 32)]
    assert len(_segments(fd, inputs)) >= 2
    _assert_computes_the_fusion(fd, inputs)
    _, same, _ = fd.execute(inputs)
    torch.testing.assert_close(same, inputs[0].float())
