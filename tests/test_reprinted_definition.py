"""A definition that ``repr(fd)`` of ``nvfuser_direct`` prints, defined again, is the same
fusion: it segments as the original and computes the same bits.

nvFuser's printer writes the exprs in its ``Fusion::exprs()`` walk from the outputs, not in the
order the user wrote them, and reads ``fd.ops.size``/``fd.ops.shape`` of an intermediate back
as the input's extent. Its schedulers walk a segment the same way, so the order a definition
was written in changes no decision; fusecli's once followed the written order (which buffer
moves to registers first when shared memory overflows), and an [N, 1] input read before and
after the row reduction counted as a row of persistent buffer, so an RMSNorm backward near the
shared-memory limit was one kernel printed and three segments as written.
"""

from __future__ import annotations

import pytest
import torch

from fusecli.frontend import DataType
from fusecli.frontend.direct import DirectFusionDefinition as FusionDefinition
from fusecli.ir.nodes import flatten_inputs
from fusecli.segment.candidate import Candidate, FusionGraph, RuntimeInfo
from fusecli.segment.schedulers.persistence import persistent_buffers
from fusecli.segment.segmenter import segment_fusion

ROWS = 8


def rms_norm_backward(fd: FusionDefinition) -> None:
    """dx and dw of an RMSNorm, written in the order a user thinks of them (dw first)."""
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    grad = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    rstd = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
    weight = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16)
    xf = fd.ops.cast(x, DataType.Float)
    gf = fd.ops.cast(grad, DataType.Float)
    shape = fd.ops.shape(xf)
    rstd_b = fd.ops.broadcast_in_dim(rstd, shape=shape, broadcast_dims=[0, 1])
    x_hat = fd.ops.mul(xf, rstd_b)
    dw = fd.ops.sum(fd.ops.mul(gf, x_hat), dims=[0])
    weight_b = fd.ops.broadcast_in_dim(fd.ops.cast(weight, DataType.Float), shape=shape,
                                       broadcast_dims=[1])
    g = fd.ops.mul(gf, weight_b)
    row = fd.ops.sum(fd.ops.mul(g, x_hat), dims=[1])
    row_b = fd.ops.broadcast_in_dim(row, shape=[fd.ops.size(xf, dim=0), 1], broadcast_dims=[0])
    mean = fd.ops.mul(row_b, fd.ops.reciprocal(fd.ops.size(xf, dim=1)))
    dx = fd.ops.mul(rstd_b, fd.ops.sub(g, fd.ops.mul(x_hat, mean)))
    fd.add_output(fd.ops.cast(dx, DataType.BFloat16))
    fd.add_output(fd.ops.cast(dw, DataType.BFloat16))


def _inputs(width: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(width)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator)

    return [draw(ROWS, width).bfloat16(), draw(ROWS, width).bfloat16(),
            draw(ROWS, 1).abs() + 0.5, draw(width).bfloat16()]


def _reprinted(fd: FusionDefinition) -> FusionDefinition:
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(repr(fd), namespace)
    with FusionDefinition() as again:
        namespace["nvfuser_fusion"](again)
    return again


def _segments(fd: FusionDefinition, inputs) -> list[tuple[str, list[str]]]:
    segmented = segment_fusion(fd.fusion, flatten_inputs(inputs))
    assert segmented.ok
    return [(s.scheduler, [e.op.value for e in s.exprs]) for s in segmented.segments]


# 28672 columns: the original was segmented and its printout one kernel
@pytest.mark.parametrize("width", [4096, 28672, 45056])
def test_a_printed_definition_segments_and_computes_as_the_original(width: int) -> None:
    with FusionDefinition() as fd:
        rms_norm_backward(fd)
    again = _reprinted(fd)
    inputs = _inputs(width)
    assert _segments(again, inputs) == _segments(fd, inputs)
    expected = fd.execute(inputs)
    actual = again.execute(inputs)
    assert all(torch.equal(a, e) for a, e in zip(actual, expected, strict=True))


def test_an_input_of_one_column_read_around_the_row_reduction_holds_no_row() -> None:
    """rstd [N, 1] is read by x_hat before the row sum and by dx after it, but the sum reduces
    none of its dimensions: nvFuser maps it across, so it is no persistent buffer."""
    with FusionDefinition() as fd:
        rms_norm_backward(fd)
    inputs = _inputs(1024)
    graph = FusionGraph(fd.fusion, RuntimeInfo(fd.fusion, flatten_inputs(inputs)))
    candidate = Candidate.of(graph, graph.live_tensor_exprs())
    buffers = persistent_buffers(candidate)
    rstd = fd.fusion.inputs[2]
    assert buffers and rstd.uid not in {t.uid for t in buffers}
    assert all(not t.logical[1].is_broadcast for t in buffers)  # each holds a row
