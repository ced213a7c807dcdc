"""Persistent-buffer sizes as nvFuser's persistentBufferSizeBit computes them
(``buffer_sizes``): a buffer is live from itself to where it is read after its reduction, the
size is the most bytes live at one value, and a buffer made after a reduction projects to the
inputs through a broadcast back over the reduced axes."""

from __future__ import annotations

import torch
from test_codegen import define, fusion_of

from fusecli.frontend import DataType
from fusecli.segment.candidate import Candidate, FusionGraph, RuntimeInfo
from fusecli.segment.rules import PROFILES, ScheduleContext
from fusecli.segment.schedulers import buffer_sizes, common

ROWS, COLUMNS = 2048, 64


def _two_outer_centerings():
    """y = x - sum(x) over rows (float); z = bf16(y); z - sum(z): the buffers are x (read by
    the first sum and by y) and z (read by the second sum and by the output)."""
    x = torch.randn(ROWS, COLUMNS)
    full = [ROWS, COLUMNS]

    def body(fd):
        xt = define(fd, x)
        mean = fd.ops.broadcast_in_dim(fd.ops.sum(xt, dims=[0]), shape=full, broadcast_dims=[1])
        z = fd.ops.cast(fd.ops.sub(xt, mean), DataType.BFloat16)
        again = fd.ops.broadcast_in_dim(fd.ops.sum(z, dims=[0]), shape=full, broadcast_dims=[1])
        fd.add_output(fd.ops.sub(z, again))

    return fusion_of(body).fusion, [x]


def _whole(fusion, inputs, profile: str) -> tuple[Candidate, ScheduleContext]:
    runtime = RuntimeInfo(fusion, inputs)
    graph = FusionGraph(fusion, runtime)
    return (Candidate.of(graph, graph.live_tensor_exprs()),
            ScheduleContext(runtime, PROFILES[profile]))


def test_buffers_live_at_different_values_count_as_the_larger_one() -> None:
    candidate, ctx = _whole(*_two_outer_centerings(), "nvfuser")
    assert [t.dtype for t in common.persistent_buffers(candidate)] == [
        DataType.Float, DataType.BFloat16]
    # x is resolved where y is made, before z exists: a float row, not a float and a bf16 row
    assert buffer_sizes.persistent_bytes(candidate, ctx) == ROWS * 4
    # z follows sum(x) through a broadcast back over the rows, so it projects to x
    assert buffer_sizes.projected_bytes(candidate, ctx) == ROWS * 4


def test_older_profiles_add_every_buffer_and_project_none_made_after_a_reduction() -> None:
    candidate, ctx = _whole(*_two_outer_centerings(), "nvfuser-2024")
    assert buffer_sizes.persistent_bytes(candidate, ctx) == ROWS * (4 + 2)
    assert buffer_sizes.projected_bytes(candidate, ctx) is None


def _scaled_by_their_product_sum(derived: bool):
    """Two buffers read by one sum and read again after it: y is a second input, or (when
    ``derived``) exp(x), a buffer computed only from the buffer x."""
    inputs = [torch.randn(ROWS, COLUMNS), torch.randn(ROWS, COLUMNS)]

    def body(fd):
        xt, yt = define(fd, inputs[0]), define(fd, inputs[1])
        other = fd.ops.exp(xt) if derived else yt
        total = fd.ops.broadcast_in_dim(fd.ops.sum(fd.ops.mul(xt, other), dims=[1]),
                                        shape=[ROWS, COLUMNS], broadcast_dims=[0])
        fd.add_output(fd.ops.add(fd.ops.mul(xt, total), fd.ops.mul(other, total)))

    return fusion_of(body).fusion, inputs


def test_buffers_live_at_the_same_values_add_up() -> None:
    candidate, ctx = _whole(*_scaled_by_their_product_sum(derived=False), "nvfuser")
    assert len(common.persistent_buffers(candidate)) == 2
    assert buffer_sizes.persistent_bytes(candidate, ctx) == COLUMNS * (4 + 4)


def test_a_buffer_computed_from_buffers_only_needs_no_room_of_its_own() -> None:
    """canProjectToPersistentProducer: exp(x) is recomputed from the buffer x."""
    candidate, ctx = _whole(*_scaled_by_their_product_sum(derived=True), "nvfuser")
    assert len(common.persistent_buffers(candidate)) == 2
    assert buffer_sizes.persistent_bytes(candidate, ctx) == COLUMNS * 4
    candidate, older = _whole(*_scaled_by_their_product_sum(derived=True), "nvfuser-2024")
    assert buffer_sizes.persistent_bytes(candidate, older) == COLUMNS * (4 + 4)
