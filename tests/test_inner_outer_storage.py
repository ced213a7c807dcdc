"""Segment boundaries at sizes a GPU runs: the inner_outer scheduler's buffer storage
(``inner_outer_storage``: one row of the inner reduction, shared memory then registers, the
outer partials in registers, as getPersistentBufferStorageParams), and size() reads that
cross no boundary (nvFuser's size is the extent itself).
"""

from __future__ import annotations

import torch
from test_codegen import define, fusion_of
from test_inner_outer import layer_norm_backward

from fusecli.frontend import DataType
from fusecli.runtime.segmented import run_fusion
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.reasons import Reason
from fusecli.segment.rules import PROFILES, ScheduleContext
from fusecli.segment.schedulers import check, inner_outer_storage
from fusecli.segment.segmenter import segment_fusion


def _schedulers(fusion, inputs, profile: str = "nvfuser") -> list[str]:
    segmented = segment_fusion(fusion, inputs, profile=profile)
    assert segmented.ok
    return [s.scheduler for s in segmented.segments]


def test_a_layer_norm_backward_of_32768_rows_is_one_inner_outer_segment() -> None:
    """The outer sums run over 32768 rows; the buffers are a row of 1024 (projected to the
    bf16 inputs) in shared memory and two rows of partial sums in registers: they fit, as
    nvFuser's one kernel for it shows. Bounding the row by the outer reductions' length split
    it into two segments with four [32768, 1024] float tensors between them (the 2024
    profile keeps that older bound)."""
    fusion, inputs = layer_norm_backward(32768, 1024, torch.bfloat16)
    assert _schedulers(fusion, inputs) == ["inner_outer_persistent"]
    assert len(_schedulers(fusion, inputs, "nvfuser-2024")) == 2


def _whole(fusion, inputs) -> tuple[object, ScheduleContext]:
    from fusecli.segment.candidate import Candidate, FusionGraph

    runtime = RuntimeInfo(fusion, inputs)
    graph = FusionGraph(fusion, runtime)
    candidate = Candidate.of(graph, graph.live_tensor_exprs())
    return candidate, ScheduleContext(runtime, PROFILES["nvfuser"])


def test_the_storage_split_follows_the_rows_of_the_inner_reduction() -> None:
    fusion, inputs = layer_norm_backward(64, 1024, torch.float32)
    candidate, ctx = _whole(fusion, inputs)
    found = inner_outer_storage.storage(candidate, ctx, vectorize=4)
    assert found is not None and found.fits
    # grad weight and grad bias: a float per column each, in registers
    assert found.registers == 2 * 1024 * 4
    # the buffers, projected to the float inputs of a row, in shared memory (rounded up for
    # block sizes from 128 to 512 threads)
    assert 0 < found.shared <= found.available_shared
    assert found.available_shared == 227 * 1024 - 512 * 4 - 128


def test_rows_too_wide_for_registers_and_shared_memory_are_refused() -> None:
    """[8, 131072] floats: the partial sums alone need 1 MB of registers."""
    fusion, inputs = layer_norm_backward(8, 131072, torch.float32)
    candidate, ctx = _whole(fusion, inputs)
    verdict = check("inner_outer_persistent", candidate, ctx)
    assert not verdict.accepted
    assert verdict.reason.startswith(Reason.PERSISTENT_TOO_LARGE.value.rstrip("."))
    assert "getPersistentBufferStorageParams" in verdict.hardware


def test_a_size_of_a_computed_tensor_makes_no_segment_output_and_runs() -> None:
    """var_mean's count is size(cast(x)): with the cast in two segments (an outer sum and an
    inner var_mean), the cast's float output is written by neither; the size comes from its
    extents. The results match eager torch."""
    x = torch.randn(64, 48, generator=torch.Generator().manual_seed(5)).to(torch.float16)

    def body(fd):
        t = fd.ops.cast(define(fd, x), DataType.Float)
        fd.add_output(fd.ops.sum(t, dims=[0]))
        var, mean = fd.ops.var_mean(t, dims=[1], correction=1)
        fd.add_output(var)
        fd.add_output(mean)

    fusion = fusion_of(body).fusion
    segmented = segment_fusion(fusion, [x])
    assert [s.scheduler for s in segmented.segments] == ["reduction", "inner_persistent"]
    outputs = {o.value.uid for o in segmented.fusion.outputs}
    for segment in segmented.segments:
        assert {t.uid for t in segment.outputs} <= outputs, segment.scheduler
    _, result = run_fusion(fusion, [x], executor="aten")
    x64 = x.double()
    expected = [x64.sum(0), x64.var(1, correction=1), x64.mean(1)]
    for got, want in zip(result.outputs, expected, strict=True):
        torch.testing.assert_close(got.double(), want, rtol=1e-4, atol=1e-4)
