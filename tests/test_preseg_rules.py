"""nvFuser's pre-segmentation rules for fusions nobody recorded (issue 25), each on a small
fusion with the segmentation nvFuser's source implies, and the notes on GPU-dependent
decisions."""

from __future__ import annotations

import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.optype import OpType
from fusecli.reference import run_reference
from fusecli.runtime.segmented import execute_segmented
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.hardware import is_close
from fusecli.segment.remove_empty import remove_empty
from fusecli.segment.segmenter import segment_fusion


def _segments(fd: FusionDefinition, inputs, **options) -> list[tuple[str, list[str]]]:
    result = segment_fusion(fd.fusion, inputs, **options)
    assert result.ok
    return [(s.scheduler, [e.op.value for e in s.exprs]) for s in result.segments]


def _length(fd: FusionDefinition, size: int):
    return fd.define_scalar(size, dtype=DataType.Int)


# -- SegmentInplaceUpdatePass (segment_inplace_update.cpp, #2999, issue #2664) ---------------


def _issue_2664_repro1(n: int = 64):
    """test_issue2664_repro1: a 0-d input stepped in place and read through a broadcast."""
    with FusionDefinition() as fd:
        t1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        t2 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float)
        t4 = fd.ops.add(t2, fd.define_scalar(1.0, dtype=DataType.Double))
        t7 = fd.ops.broadcast_in_dim(t4, shape=[_length(fd, n)], broadcast_dims=[])
        fd.add_output(t4, t2)
        fd.add_output(fd.ops.mul(t1, t7))
    return fd, [torch.randn(n), torch.randn(())]


def test_an_update_read_through_a_broadcast_is_copied_by_a_segment_of_its_own():
    fd, inputs = _issue_2664_repro1()
    segments = _segments(fd, inputs)
    # the copy (segment_set + set) ends the first kernel; the set, with no concrete
    # dimension, is taken by no_op: the extra segment nvFuser's logs show (exprs in the walk
    # from the outputs, the aliased one first)
    assert segments == [
        ("pointwise", ["add", "segment_set", "broadcast", "expand", "mul"]),
        ("no_op", ["set"]),
    ]
    result = segment_fusion(fd.fusion, inputs)
    written = result.fusion.outputs[0]
    assert written.alias_input is fd.fusion.inputs[1]
    assert result.fusion.definition(written.value).op is OpType.set


def test_the_update_still_writes_the_input():
    fd, inputs = _issue_2664_repro1()
    expected = run_reference(fd.fusion, [t.clone() for t in inputs]).outputs
    actual = [t.clone() for t in inputs]
    outputs = execute_segmented(segment_fusion(fd.fusion, actual), actual).outputs
    assert torch.allclose(actual[1], inputs[1] + 1.0)
    assert torch.allclose(outputs[-1], expected[-1])


def test_an_input_whose_broadcast_dimension_is_concretized_is_cut_too():
    """test_issue2664_repro4: no broadcast op, but the [N, 1] input meets [N, 128]."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.add(t1, t0))
        fd.add_output(fd.ops.neg(t0), t0)
    segments = _segments(fd, [torch.randn(8, 1), torch.randn(8, 16)])
    assert ("pointwise", ["set"]) in segments
    assert ("pointwise", ["neg", "segment_set"]) in segments


def test_a_trivial_update_is_not_segmented():
    """AliasTest.TrivialInplaceUpdateNoSegmentation: no broadcast anywhere, one kernel."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3, 4], contiguity=[True] * 3, dtype=DataType.Float)
        t1 = fd.ops.add(t0, fd.define_scalar(3.141, dtype=DataType.Double))
        fd.add_output(t1)
        fd.add_output(fd.ops.set(t1), t0)
    assert _segments(fd, [torch.randn(2, 3, 4)]) == [("pointwise", ["add", "set"])]


def test_the_2024_profile_predates_the_pass():
    fd, inputs = _issue_2664_repro1()
    segments = _segments(fd, inputs, profile="nvfuser-2024")
    assert all("segment_set" not in ops for _, ops in segments)


# -- RemoveEmptyPass (remove_empty.cpp, #543) -----------------------------------------------


def _cat_with_empty():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t2 = fd.ops.exp(t0)
        t3 = fd.ops.cat([t2, t1], dim=1)
        fd.add_output(fd.ops.mul(t3, t3))
    return fd


def test_an_empty_cat_input_is_dropped_and_a_cat_of_one_is_a_copy():
    fd = _cat_with_empty()
    inputs = [torch.randn(4, 8), torch.randn(4, 0)]
    rewritten = remove_empty(fd.fusion, RuntimeInfo(fd.fusion, inputs))
    assert OpType.cat not in {e.op for e in rewritten.exprs}
    # no resize op is left: one pointwise kernel, where the cat took a resize segment
    assert _segments(fd, inputs) == [("pointwise", ["exp", "set", "mul"])]
    nonempty = [torch.randn(4, 8), torch.randn(4, 3)]
    assert [s for s, _ in _segments(fd, nonempty)] != ["pointwise"]


def test_a_sum_over_an_empty_dimension_is_a_fill():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        t2 = fd.ops.sum(t0, dims=[0], keepdim=False)
        fd.add_output(fd.ops.add(t2, t1))
    inputs = [torch.randn(0, 16), torch.randn(16)]
    assert _segments(fd, inputs) == [("pointwise", ["full", "add"])]
    expected = run_reference(fd.fusion, inputs).outputs
    outputs = execute_segmented(segment_fusion(fd.fusion, inputs), inputs).outputs
    assert torch.equal(outputs[0], expected[0])


def test_an_empty_output_is_a_fill_of_zeros_no_kernel_computes():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(t0))
    assert _segments(fd, [torch.randn(0, 16)]) == [("no_op", ["full"])]


def test_sizes_unknown_leave_the_fusion_alone():
    fd = _cat_with_empty()
    assert remove_empty(fd.fusion, RuntimeInfo(fd.fusion, None)) is fd.fusion


# -- decisions resting on the GPU (hardware.py) --------------------------------------------


def _softmax(rows: int, cols: int):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        top = fd.ops.max(t0, dims=[1], keepdim=False)
        shifted = fd.ops.exp(fd.ops.sub(t0, fd.ops.broadcast_in_dim(top, [rows, cols], [0])))
        total = fd.ops.sum(shifted, dims=[1], keepdim=False)
        fd.add_output(fd.ops.div(shifted, fd.ops.broadcast_in_dim(total, [rows, cols], [0])))
    return fd, [torch.randn(rows, cols)]


def test_a_persistent_decision_says_it_depends_on_the_gpu():
    fd, inputs = _softmax(8, 1024)
    result = segment_fusion(fd.fusion, inputs)
    (segment,) = result.segments
    assert segment.scheduler == "inner_persistent"
    (note,) = segment.gpu_notes
    assert note.startswith("inner_persistent: depends on the GPU: nvFuser queries")
    assert "normalization_inner.cpp" in note and "H200" in note
    assert not is_close(note)


def test_a_row_near_the_register_limit_is_marked_close():
    # 128 KiB of float per row on a 256 KiB register file per SM
    fd, inputs = _softmax(2, 32768)
    result = segment_fusion(fd.fusion, inputs, keep_log=True)
    notes = [v.hardware for entry in result.log for v in entry.verdicts
             if v.scheduler == "inner_persistent" and v.hardware]
    assert notes and any(is_close(n) for n in notes)


def test_without_sizes_nothing_is_claimed():
    fd, _ = _softmax(8, 1024)
    (segment,) = segment_fusion(fd.fusion, None).segments
    assert segment.gpu_notes == ()
