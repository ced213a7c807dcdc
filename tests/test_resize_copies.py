"""Resize ops that resize nothing are copies, as nvFuser's ``csrc/ops/alias.cpp`` makes them:
a slice of every element of static sizes, a pad of constant zero widths, a cat of one tensor
each return ``set(inp)``. The segmenter then sees a copy, which any scheduler takes, not a
resize op (a resize segment of its own before a reduction, where nvFuser has none)."""

from __future__ import annotations

import pytest
import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.optype import OpType
from fusecli.segment.segmenter import segment_fusion


@pytest.mark.parametrize("end, sliced", [([8, 16], False), ([8, 40], False), ([8, 15], True)])
def test_a_slice_of_every_element_of_static_sizes_is_a_copy_as_nvfusers(end, sliced):
    """nvFuser's ``slice`` (csrc/ops/alias.cpp) returns ``set(inp)`` where no dimension needs
    slicing: start 0 and a stop that is (or is clamped to) the dimension's constant extent. The
    segmenter then sees a copy, which any scheduler takes, not a resize op."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[8, 16], contiguity=[True, True])
        part = fd.ops.slice(t, start_indices=[0, 0], end_indices=end)
        fd.add_output(fd.ops.sum(fd.ops.mul(part, part), dims=[0, 1]))
    ops = [e.op for e in fd.fusion.exprs]
    assert (OpType.slice in ops) is sliced and (OpType.set in ops) is not sliced
    x = torch.randn(8, 16)
    expected = x[:, :end[1]].double().square().sum()
    torch.testing.assert_close(fd.execute([x])[0].double(), expected)
    if not sliced:
        (segment,) = segment_fusion(fd.fusion, [x]).segments
        assert segment.scheduler == "reduction"


def test_a_slice_of_a_symbolic_size_stays_a_slice():
    """Against an extent known only at run time the stop is not the same value: nvFuser slices."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        fd.add_output(fd.ops.slice(t, start_indices=[0, 0], end_indices=[8, 16]))
    assert [e.op for e in fd.fusion.exprs] == [OpType.slice]


@pytest.mark.parametrize("widths, padded", [([0, 0, 0, 0], False), ([0, 0], False),
                                            ([0, 1, 0, 0], True)])
def test_a_pad_of_zero_widths_is_a_copy(widths, padded):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[8, 16], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.pad(t, widths), dims=[0, 1]))
    ops = [e.op for e in fd.fusion.exprs]
    assert (OpType.pad in ops) is padded and (OpType.set in ops) is not padded
    x = torch.randn(8, 16)
    torch.testing.assert_close(fd.execute([x])[0], x.sum())


def test_a_pad_of_a_width_known_at_run_time_stays_a_pad():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[8, 16], contiguity=[True, True], dtype=DataType.Float)
        width = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.pad(t, [width, width]))
    assert [e.op for e in fd.fusion.exprs] == [OpType.pad]
    x = torch.randn(8, 16)
    assert torch.equal(fd.execute([x, 0])[0], x)


def test_a_cat_of_one_tensor_is_a_copy():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.cat([t], dim=1))
    assert [e.op for e in fd.fusion.exprs] == [OpType.set]
    x = torch.randn(3, 5)
    (out,) = fd.execute([x])
    assert torch.equal(out, x)  # a set of an input is returned as an alias of it, as nvFuser's
