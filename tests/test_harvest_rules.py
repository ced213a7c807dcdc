"""Rules found on fusions from nvFuser's own Python tests, each on a small fusion a user might
write, with the schedulers nvFuser 0.2.36 picks (its source named per test), and a check that
the segments still compute the fusion."""

from __future__ import annotations

import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.reference import run_reference
from fusecli.runtime.segmented import execute_segmented
from fusecli.segment.segmenter import segment_fusion


def _schedulers(fd: FusionDefinition, inputs) -> list[str]:
    result = segment_fusion(fd.fusion, inputs)
    assert result.ok
    ours = execute_segmented(result, inputs).outputs
    for got, want in zip(ours, run_reference(fd.fusion, inputs).outputs, strict=True):
        torch.testing.assert_close(got, want)
    return [segment.scheduler for segment in result.segments]


# -- MarkAliasesPrepare: a size() read off an input is no use of it ---------------------------


def test_a_slice_bounded_by_the_inputs_size_is_one_expr_eval_segment():
    """mark_aliases_prepare.cpp, insertSegmentSetAfter: no segment_set after a fusion input
    all of whose uses are meta ops; fd.ops.size makes no expr, so it is no use."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        rows = fd.ops.minimum(fd.ops.size(x, dim=0), fd.define_scalar(4, dtype=DataType.Int))
        fd.add_output(fd.ops.slice(x, start_indices=[1, 0], end_indices=[rows, 6],
                                   strides=[1, 1], manual_normalization=True))
    assert _schedulers(fd, [torch.randn(10, 8)]) == ["expr_eval"]


def test_split_heads_of_a_fused_qkv_tensor_are_one_view_segment():
    """Sizes computed from size() (minimum) are known when nvFuser concretizes, so the
    reshape after each slice splits a dimension of known size: every output is an alias of
    the input (expr_eval_sched.cpp, allOutputsArePointerArithmetics)."""
    with FusionDefinition() as fd:
        qkv = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.Float)
        batch, seq = fd.ops.size(qkv, dim=0), fd.ops.size(qkv, dim=1)
        for head in range(3):
            end = fd.ops.minimum(fd.ops.size(qkv, dim=2),
                                 fd.define_scalar(64 * (head + 1), dtype=DataType.Int))
            part = fd.ops.slice(qkv, start_indices=[0, 0, 64 * head],
                                end_indices=[batch, seq, end], strides=[1, 1, 1],
                                manual_normalization=True)
            heads = fd.ops.reshape(part, new_shape=[2, 16, 4, 16])
            fd.add_output(fd.ops.permute(heads, dims=[0, 2, 1, 3]))
    assert _schedulers(fd, [torch.randn(2, 16, 192)]) == ["expr_eval"]


# -- ExprEvalScheduler::canScheduleCompileTime -------------------------------------------------


def test_an_input_handed_back_as_output_is_expr_eval():
    """expr_eval_sched.cpp: an output that is a fusion input counts as pointer arithmetic,
    and expr_eval is tried before no_op."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float)
        fd.add_output(x)
    assert _schedulers(fd, [torch.randn(1, 5)]) == ["expr_eval"]


def test_a_take_along_axis_alone_goes_to_aten():
    """expr_eval_sched.cpp: a single GatherOp (take_along_axis too) is expr_eval's (#5907);
    the add before it, whose output the gather may not read in a kernel, is pointwise."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        index = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        fd.add_output(fd.ops.take_along_axis(fd.ops.add(a, b), index, dim=0))
    inputs = [torch.randn(8, 16), torch.randn(8, 16), torch.randint(0, 8, (8, 16))]
    assert sorted(_schedulers(fd, inputs)) == ["expr_eval", "pointwise"]


# -- TranslateNoReductionMatmulToMulSqueeze (#3810) ---------------------------------------------


def test_an_outer_product_written_as_matmul_is_fused_with_its_reduction():
    """translate_no_reduction_matmul_to_mul_squeeze.cpp: a matmul with K = 1 becomes
    broadcast, mul and squeeze, so the sum after it is one reduction kernel, no ATen matmul."""
    with FusionDefinition() as fd:
        column = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, True, None],
                                  dtype=DataType.Float)
        row = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True],
                               dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.matmul(column, row), dims=[0]))
    assert _schedulers(fd, [torch.randn(2, 8, 1), torch.randn(2, 1, 6)]) == ["reduction"]


def test_a_matrix_times_a_length_one_vector_is_a_multiply_then_a_view():
    """[M, 1] x [1]: the vector is broadcast to [1, 1] and multiplied in a pointwise kernel;
    the squeeze that ends the fusion is a meta op MarkAliasesPrepare cuts off (expr_eval)."""
    with FusionDefinition() as fd:
        matrix = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        vector = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float)
        fd.add_output(fd.ops.matmul(matrix, vector))
    assert _schedulers(fd, [torch.randn(5, 1), torch.randn(1)]) == ["pointwise", "expr_eval"]


# -- RemoveBcastSqueeze (#2291, #3034) ----------------------------------------------------------


def test_a_sum_broadcast_back_and_squeezed_is_the_output_itself():
    """remove_bcast_squeeze.cpp: broadcast, a same-dtype cast (a set) and the squeeze that
    undoes the broadcast are removed, so no expr_eval segment of meta ops follows the
    reduction: one kernel computes both outputs."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.Float)
        total = fd.ops.sum(fd.ops.mul(x, y), dims=[0, 2])
        kept = fd.ops.cast(fd.ops.broadcast(total, [True, False, True]), DataType.Float)
        fd.add_output(fd.ops.squeeze(kept, dims=[0, 2]))
        fd.add_output(fd.ops.add(x, y))
    inputs = [torch.randn(4, 8, 16), torch.randn(4, 8, 16)]
    assert _schedulers(fd, inputs) == ["reduction"]


def test_a_squeeze_of_an_expanded_axis_is_no_inverse_of_a_broadcast():
    """Found on the performance population: a keepdim max (a broadcast of extent 1) and then a
    sum over an expanded axis (a squeeze of extent 4) line up as a broadcast and a squeeze,
    but do not cancel; RemoveBcastSqueeze leaves them."""
    x = torch.randn(3, 1, 5).expand(3, 4, 5)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, None, True],
                              dtype=DataType.Float, stride_order=[2, 1, 0])
        t1 = fd.ops.max(t0, dims=[0], keepdim=True)
        fd.add_output(fd.ops.sum(t1, dims=[1]))
    _schedulers(fd, [x])
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.amax(0, keepdim=True).sum(1))


def test_a_cat_written_out_as_pads_is_the_users_cat():
    """nvfuser_direct's printer writes a user's cat as a pad of each operand to the output's
    extent and a cat with manual_padding: the output is the operands side by side, as wide as
    one padded operand, not their padded widths added up."""
    a, b = torch.randn(2, 3, 5), torch.randn(2, 3, 4)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True])
        t1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True])
        zero = fd.define_scalar(0.0, dtype=DataType.Float)
        left = fd.ops.pad(t0, pad_widths=[0, fd.ops.size(t1, dim=2)], value=zero)
        right = fd.ops.pad(t1, pad_widths=[fd.ops.size(t0, dim=2), 0], value=zero)
        fd.add_output(fd.ops.cat([left, right], dim=2, manual_padding=True))
    assert _schedulers(fd, [a, b]) == ["resize"]
    (out,) = fd.execute([a, b])
    torch.testing.assert_close(out, torch.cat([a, b], dim=2))
