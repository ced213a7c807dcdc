"""The order nvFuser's segmenter merges in, and what it merges first (csrc/fusion_segmenter.cpp):
first groups and their consumer edges in its ``Fusion::exprs()`` order (a walk from the
outputs, not the order a definition was written in), preferred pairs before each round
(PreferredMergeCandidatePicker); and two facts its schedulers read: a transpose reference is
chosen by ``nLogicalDims`` (broadcasts not counted), and integer division of sizes is known
once the fusion is concretized."""

import torch

from fusecli.frontend import DataType as D
from fusecli.frontend import FusionDefinition
from fusecli.ir.order import walk_positions
from fusecli.segment.segmenter import segment_fusion


def _segments(fd, inputs):
    return sorted((s.scheduler, tuple(sorted(e.op.value for e in s.exprs)))
                  for s in segment_fusion(fd.fusion, inputs).segments)


def _two_reductions(b_first: bool) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=D.Float)
        if b_first:
            b = fd.ops.sum(fd.ops.exp(x), dims=[0])
            a = fd.ops.sum(fd.ops.tanh(x), dims=[1])
        else:
            a = fd.ops.sum(fd.ops.tanh(x), dims=[1])
            b = fd.ops.sum(fd.ops.exp(x), dims=[0])
        fd.add_output(a)
        fd.add_output(b)
    return fd


def test_the_walk_follows_the_outputs_not_the_definition():
    for b_first in (True, False):
        fusion = _two_reductions(b_first).fusion
        walk = walk_positions(fusion)
        ops = [e.op.value for e in sorted(fusion.exprs, key=lambda e: walk[e.uid])]
        assert ops == ["tanh", "sum", "exp", "sum"]


def test_a_size_reads_no_tensor_in_the_walk():
    """``fd.ops.size`` of an intermediate is an extent nvFuser shares with the input: the walk
    does not reach the intermediate's producer through it."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=D.Float)
        y = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=D.Float)
        t = fd.ops.exp(x)
        fd.add_output(fd.ops.mul(y, fd.ops.size(t, dim=1)))
        fd.add_output(fd.ops.neg(t))
    walk = walk_positions(fd.fusion)
    order = {e.op.value: walk[e.uid] for e in fd.fusion.exprs if e.uid in walk}
    assert order["mul"] < order["exp"]


def test_the_order_a_definition_was_written_in_does_not_change_its_segments():
    inputs = [torch.randn(64, 32)]
    assert _segments(_two_reductions(True), inputs) == _segments(_two_reductions(False), inputs)


def test_a_reshape_to_sizes_divided_by_sizes_is_a_view():
    """Thunder writes a head split as ``reshape(t, [n, c // n * ...])``: nvFuser concretizes
    ``div(mul(size, 32), size)`` to 32 before segmenting, so the reshape and the permute after it
    are pointer arithmetic, an expr_eval segment."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1, 128], contiguity=[True, True, True], dtype=D.Float)
        s0 = fd.ops.size(t, dim=0)
        head = fd.ops.div(fd.ops.mul(s0, 32), s0)
        split = fd.ops.reshape(t, new_shape=[s0, fd.ops.size(t, dim=1), 4, head])
        fd.add_output(fd.ops.permute(split, dims=[0, 2, 1, 3]))
    (segment,) = segment_fusion(fd.fusion, [torch.randn(2, 16, 128)]).segments
    assert segment.scheduler == "expr_eval"


def test_a_pad_of_another_segments_tensor_merges_with_its_consumer_first():
    """mergePadWithConsumers: a pad whose input another group makes goes with the consumer of
    its output before any other merge of the round. Shaped as pop_554 of the population's fit
    part (an in-place update, a sum over dim 0 subtracted back, padded and sliced), whose
    recorded nvFuser segments are expr_eval, pointwise, pointwise, reduction, resize; merged
    without the preference, the sum's segment took the subtraction (outer_persistent)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=D.Float)
        column = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=D.Float)
        fd.add_output(fd.ops.neg(column), column)
        shifted = fd.ops.add(x, column)
        total = fd.ops.sum(shifted, dims=[0], keepdim=False)
        fd.add_output(total)
        centred = fd.ops.sub(shifted, fd.ops.broadcast_in_dim(total, shape=[512, 256],
                                                              broadcast_dims=[1]))
        padded = fd.ops.pad(centred, [1, 1])
        fd.add_output(fd.ops.slice(padded, start_indices=[0, 1], end_indices=[512, 257]))
    found = [scheduler for scheduler, _ in _segments(fd, [torch.randn(512, 256),
                                                          torch.randn(512, 1)])]
    assert sorted(found) == ["expr_eval", "pointwise", "pointwise", "reduction", "resize"]


def test_a_definition_and_its_printed_copy_segment_the_same():
    """``repr(fd)`` writes nvFuser's order, not the user's; run again, the copy must segment as
    the original (nvFuser's suites check that the copy gives the same outputs, bit for bit).
    pop_172, a fit-part fusion of the segmentation population, segmented otherwise while
    fusecli grouped in definition order."""
    from pathlib import Path

    from fusecli.frontend import DataType
    from fusecli.frontend.direct import FusionDefinition as DirectDefinition
    from fusecli.frontend.translate import translate_fusion
    from fusecli.load import load_path

    golden = Path(__file__).resolve().parent / "golden" / "segpop" / "pop_172.py"
    (loaded,) = load_path(golden, device="cpu")
    namespace = {"FusionDefinition": DirectDefinition, "DataType": DataType}
    exec(translate_fusion(loaded.fusion), namespace)
    with DirectDefinition() as copy:
        namespace["nvfuser_fusion"](copy)
    assert _segments(copy, loaded.inputs) == sorted(
        (s.scheduler, tuple(sorted(e.op.value for e in s.exprs)))
        for s in segment_fusion(loaded.fusion, loaded.inputs).segments)


def test_a_value_read_twice_by_one_op_is_two_edges_to_the_cast_merge():
    """MergeUpAndDownCast brings a producer into an up-cast's group only when it has one
    consumer edge, and nvFuser's buildInitialSegments makes an edge per input of each expr:
    var_mean's ``d * d`` reads ``d = x - mean`` twice, so ``d`` stays out. Shaped as pop_512 of
    the population's fit part (a layer norm whose output is summed over dim 0 and subtracted
    back, cast to half), recorded as inner_persistent + outer_persistent; counting one edge
    per value made it inner_outer_persistent + pointwise."""
    with FusionDefinition() as fd:
        x = fd.ops.cast(fd.define_tensor(shape=[-1, -1], contiguity=[True, True],
                                         dtype=D.Half), dtype=D.Float)
        var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=False)
        scale = fd.ops.broadcast_in_dim(fd.ops.rsqrt(fd.ops.add(var, 1e-5)), shape=[8, 4096],
                                        broadcast_dims=[0])
        centred = fd.ops.sub(x, fd.ops.broadcast_in_dim(mean, shape=[8, 4096],
                                                        broadcast_dims=[0]))
        normed = fd.ops.mul(centred, scale)
        total = fd.ops.sum(normed, dims=[0], keepdim=False)
        fd.add_output(total)
        back = fd.ops.broadcast_in_dim(total, shape=[8, 4096], broadcast_dims=[1])
        fd.add_output(fd.ops.cast(fd.ops.sub(normed, back), dtype=D.Half))
    found = [scheduler for scheduler, _ in _segments(fd, [torch.randn(8, 4096).half()])]
    assert sorted(found) == ["inner_persistent", "outer_persistent"]
