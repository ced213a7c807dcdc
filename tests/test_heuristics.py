"""Schedulers pick heuristic parameters at run-time sizes; codegen dispatches on the scheduler
and builds its kernel from them; ``fusecli codegen`` shows them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fusecli.cli.main import cli, register
from fusecli.codegen import ATEN_SCHEDULERS, GENERATORS, Kernel, Unsupported, generate
from fusecli.frontend import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.heuristics import PointwiseParams, ReductionParams, TransposeParams
from fusecli.segment.rules import PROFILES, SCHEDULER_NAMES, RuleProfile, Verdict
from fusecli.segment.schedulers import REGISTRY
from fusecli.segment.segmenter import segment_fusion

FUSIONS = Path(__file__).parent.parent / "fusions"
register()


def define(fd: FusionDefinition, tensor: torch.Tensor):
    return fd.define_tensor(sizes=list(tensor.shape), strides=list(tensor.stride()),
                            dtype=dt.from_torch(tensor.dtype))


def rms_norm(x: torch.Tensor, w: torch.Tensor):
    """RMSNorm over the last dim, computed in float, stored in x's dtype."""
    shape, last = list(x.shape), x.dim() - 1
    with FusionDefinition() as fd:
        xf = fd.ops.cast(define(fd, x), DataType.Float)
        wf = fd.ops.cast(define(fd, w), DataType.Float)
        total = fd.ops.sum(fd.ops.mul(xf, xf), dims=[last])
        var = fd.ops.mul(fd.ops.broadcast_in_dim(total, shape=shape,
                                                 broadcast_dims=list(range(last))),
                         fd.define_scalar(1.0 / shape[-1]))
        inv = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-6)))
        weight = fd.ops.broadcast_in_dim(wf, shape=shape, broadcast_dims=[last])
        out = fd.ops.mul(fd.ops.mul(xf, inv), weight)
        if x.dtype != torch.float32:  # a cast to float itself is a set: a segment of its own
            out = fd.ops.cast(out, dt.from_torch(x.dtype))
        fd.add_output(out)
    return fd.fusion


def add(a: torch.Tensor, b: torch.Tensor):
    """a + b, stored in a's dtype (the frontend computes half types in float)."""
    with FusionDefinition() as fd:
        total = fd.ops.add(define(fd, a), define(fd, b))
        if a.dtype in (torch.bfloat16, torch.float16):
            total = fd.ops.cast(total, dt.from_torch(a.dtype))
        fd.add_output(total)
    return fd.fusion


def column_sum(x: torch.Tensor):
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sum(define(fd, x), dims=[0]))
    return fd.fusion


def only_segment(fusion, inputs):
    segmented = segment_fusion(fusion, inputs)
    assert segmented.ok and len(segmented.segments) == 1
    return segmented.segments[0]


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device="meta")  # sizes, no memory


@pytest.mark.parametrize(("shape", "dtype", "vectorize", "threads", "rows_per_block", "slots"), [
    ((16384, 8192), torch.bfloat16, 8, 512, 1, 2),
    ((4096, 1000), torch.float32, 4, 128, 1, 2),
    ((8, 128, 4096), torch.float16, 8, 256, 1, 2),
    ((64, 65536), torch.bfloat16, 8, 1024, 1, 8),
    ((512, 64), torch.bfloat16, 8, 4, 32, 2),
])
def test_rms_norm_is_inner_persistent_with_vectorized_rows(shape, dtype, vectorize, threads,
                                                           rows_per_block, slots) -> None:
    x, w = meta(*shape, dtype=dtype), meta(shape[-1], dtype=dtype)
    segment = only_segment(rms_norm(x, w), [x, w])
    assert segment.scheduler == "inner_persistent"
    params = segment.params
    assert isinstance(params, ReductionParams)
    assert (params.vectorize, params.threads, params.rows_per_block, params.slots) == (
        vectorize, threads, rows_per_block, slots)
    assert params.persistent and params.inner
    assert params.reduced_dims == (len(shape) - 1,)
    assert params.row_size == shape[-1] and params.rows * params.row_size == x.numel()


@pytest.mark.parametrize("per_row", ["output", "expanded output", "input"])
def test_a_float_tensor_of_one_value_per_row_leaves_half_rows_16_byte_lanes(per_row) -> None:
    """A norm's mean or inverse deviation in float, read or written once per row, does not
    halve the lanes of bf16 rows (it did: 4 lanes, 8-byte accesses, for layer-norm backward)."""
    x = meta(8192, 4096, dtype=torch.bfloat16)
    stat = meta(8192)
    with FusionDefinition() as fd:
        xf = fd.ops.cast(define(fd, x), DataType.Float)
        shift = (fd.ops.broadcast_in_dim(define(fd, stat), shape=[8192, 4096],
                                         broadcast_dims=[0]) if per_row == "input" else xf)
        total = fd.ops.sum(fd.ops.mul(xf, shift), dims=[1])
        if per_row == "expanded output":  # rsqrt of the expanded sum: [8192, 1 ex 4096]
            inv = fd.ops.rsqrt(fd.ops.broadcast_in_dim(total, shape=[8192, 4096],
                                                       broadcast_dims=[0]))
            scaled = fd.ops.mul(xf, inv)
        else:
            inv = fd.ops.rsqrt(total)
            scaled = fd.ops.mul(xf, fd.ops.broadcast_in_dim(inv, shape=[8192, 4096],
                                                            broadcast_dims=[0]))
        fd.add_output(fd.ops.cast(scaled, DataType.BFloat16))
        if per_row != "input":
            fd.add_output(inv)
    inputs = [x, stat] if per_row == "input" else [x]
    segment = only_segment(fd.fusion, inputs)
    assert segment.scheduler == "inner_persistent"
    assert segment.params.vectorize == 8


def test_an_outer_reduction_walks_rows_one_thread_each() -> None:
    x = meta(8192, 1024)
    segment = only_segment(column_sum(x), [x])
    assert segment.scheduler == "reduction"
    assert segment.params == ReductionParams(
        vectorize=1, threads=1, rows_per_block=128, slots=8192, persistent=False, inner=False,
        reduced_dims=(0,), rows=1024, row_size=8192, row_dims=(1,), row_shape=(1024,),
        reduced_shape=(8192,))


@pytest.mark.parametrize(("shape", "dtype", "vectorize", "widest"), [
    ((4, 16), torch.bfloat16, 8, 8),
    ((4, 6), torch.bfloat16, 2, 8),
    ((3, 5), torch.float32, 1, 4),
    ((1024, 16), torch.float64, 2, 2),
])
def test_pointwise_vectorizes_16_bytes_dividing_the_inner_dim(shape, dtype, vectorize,
                                                              widest) -> None:
    a, b = meta(*shape, dtype=dtype), meta(*shape, dtype=dtype)
    segment = only_segment(add(a, b), [a, b])
    assert segment.scheduler == "pointwise"
    assert segment.params == PointwiseParams(vectorize, widest, threads=256)


def test_a_large_transposed_input_gets_the_transpose_scheduler_and_its_tiles() -> None:
    a = torch.empty(512, 1024).t()
    b = torch.empty(1024, 512)
    fusion = add(a, b)
    segment = only_segment(fusion, [a, b])
    assert segment.scheduler == "transpose"
    assert isinstance(segment.params, TransposeParams)
    assert segment.params.tiles == (64, 32) and segment.params.threads == 256
    assert segment.params.pointwise.vectorize == 4
    kernel = generate(segment, RuntimeInfo(fusion, [a, b]), [a, b])
    assert isinstance(kernel, Kernel)
    assert "tiles of 64x64" in kernel.heuristics
    assert kernel.params.startswith("transpose(pointwise=PointwiseParams(vectorize=4")


def test_without_inputs_there_are_no_params_and_codegen_computes_them() -> None:
    x, w = torch.randn(6, 64, dtype=torch.bfloat16), torch.randn(64, dtype=torch.bfloat16)
    fusion = rms_norm(x, w)
    unsized = segment_fusion(fusion, None, keep_log=True)
    assert [s.params for s in unsized.segments] == [None]
    assert all(v.params is None for entry in unsized.log for v in entry.verdicts)
    sized = only_segment(fusion, [x, w])
    sizes = RuntimeInfo(fusion, [x, w])
    with_params = generate(sized, sizes, [x, w])
    without = generate(replace(sized, params=None), sizes, [x, w])
    assert isinstance(with_params, Kernel) and with_params == without


def test_params_made_for_other_sizes_are_recomputed() -> None:
    small = [torch.randn(6, 64, dtype=torch.bfloat16), torch.randn(64, dtype=torch.bfloat16)]
    large = [torch.randn(6, 2048, dtype=torch.bfloat16), torch.randn(2048, dtype=torch.bfloat16)]
    fusion_small, fusion_large = rms_norm(*small), rms_norm(*large)
    stale = only_segment(fusion_small, small).params
    segment = only_segment(fusion_large, large)
    sizes = RuntimeInfo(fusion_large, large)
    fresh = generate(segment, sizes, large)
    assert isinstance(fresh, Kernel)
    assert generate(replace(segment, params=stale), sizes, large) == fresh


def test_the_generator_builds_from_the_params_it_is_given() -> None:
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    fusion = add(a, b)
    segment = only_segment(fusion, [a, b])
    sizes = RuntimeInfo(fusion, [a, b])
    kernel = generate(segment, sizes, [a, b])
    assert isinstance(kernel, Kernel) and kernel.block == (256, 1, 1)
    narrow = replace(segment, params=replace(segment.params, threads=128, max_vectorize=2))
    changed = generate(narrow, sizes, [a, b])
    assert isinstance(changed, Kernel) and changed.block == (128, 1, 1)
    assert "groups of 2" in changed.heuristics and "groups of 4" in kernel.heuristics


def test_a_scheduler_without_a_generator_says_so() -> None:
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    fusion = add(a, b)
    segment = replace(only_segment(fusion, [a, b]), scheduler="fake")
    answer = generate(segment, RuntimeInfo(fusion, [a, b]), [a, b])
    assert answer == Unsupported("no CUDA generator for the fake scheduler")


def test_every_kernel_scheduler_has_a_generator_and_aten_ones_have_none() -> None:
    assert set(ATEN_SCHEDULERS) == {"expr_eval", "matmul", "no_op"}
    assert set(GENERATORS) == set(SCHEDULER_NAMES) - set(ATEN_SCHEDULERS)
    assert not set(GENERATORS) & set(ATEN_SCHEDULERS)


def test_scheduler_names_come_from_the_registry_and_profiles_use_them() -> None:
    assert SCHEDULER_NAMES == tuple(REGISTRY)
    assert {"inner_persistent", "outer_persistent", "inner_outer_persistent"} <= set(REGISTRY)
    assert all(name == scheduler.name for name, scheduler in REGISTRY.items())
    for profile in PROFILES.values():
        assert set(profile.order) <= set(REGISTRY)
    with pytest.raises(ValueError, match="unregistered schedulers"):
        RuleProfile("typo", ("pointwise", "pointwsie"), False, False, "")


def test_verdicts_compare_without_their_params() -> None:
    params = PointwiseParams(4, 4)
    assert replace(Verdict.accept("pointwise"), params=params) == Verdict.accept("pointwise")
    assert replace(Verdict.accept("pointwise"), params=params).params is params


def test_params_describe_themselves_by_scheduler() -> None:
    params = ReductionParams(8, 512, 1, 2, True, True, (1,), 16384, 8192)
    assert params.describe("inner_persistent") == (
        "inner_persistent(vectorize=8, threads=512, rows_per_block=1, slots=2, persistent=True, "
        "inner=True, reduced_dims=(1,), rows=16384, row_size=8192, max_blocks=1048576)")


def test_fusecli_codegen_prints_each_segments_params() -> None:
    result = CliRunner().invoke(cli, ["codegen", str(FUSIONS / "rms_norm.py")],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    params = [line for line in lines if line.startswith("params: ")]
    assert params and params[0].startswith("params: inner_persistent(vectorize=")
    index = lines.index(params[0])
    assert lines[index - 1].startswith("kernel ") and lines[index + 1].startswith("heuristics: ")


def test_a_segment_carries_the_params_of_the_verdict_that_accepted_it() -> None:
    x, w = torch.randn(6, 64, dtype=torch.bfloat16), torch.randn(64, dtype=torch.bfloat16)
    segmented = segment_fusion(rms_norm(x, w), [x, w], keep_log=True)
    (segment,) = segmented.segments
    accepted = [v for entry in segmented.log for v in entry.verdicts if v.accepted]
    assert accepted and accepted[-1].scheduler == segment.scheduler
    assert accepted[-1].params is segment.params
    rejected = [v for entry in segmented.log for v in entry.verdicts if not v.accepted]
    assert rejected and all(v.params is None for v in rejected)
