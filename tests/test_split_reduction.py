"""fusecli.codegen.split_reduction: few, long rows (a sum over every dim, batch norm's sums over
N, H and W of NCHW), each row split over many blocks whose partials the row's last block
combines in one kernel.

Kernels run on the CPU emulator through the CuPy executor's own flow (test_outer_reduction's
``run``: arguments, workspaces, outputs poisoned first) and are checked against eager torch in
float64. NVRTC tests compile for sm_90 and skip without NVRTC.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from test_codegen import kernels_of
from test_outer_reduction import (
    check,
    fusion_of,
    launched_three_times,
    needs_gxx,
    needs_nvrtc,
    reference,
    run,
)

from fusecli.codegen import ArgKind, Kernel, generate, nvrtc
from fusecli.ir.dtype import DataType
from fusecli.load import load_path
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.segmenter import segment_fusion

CORPUS = Path(__file__).parent / "nvfuser_corpus"


def split_kernel(kernels: list[Kernel]) -> Kernel:
    (kernel,) = [k for k in kernels if k.heuristics.startswith("split-row reduction: ")]
    assert kernel.grid[1] > 1 and kernel.block == (1, 256, 1)
    return kernel


def sample(shape, dtype: torch.dtype, op: str = "sum", seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator, dtype=torch.float64)
    if op == "prod":  # near 1, so that a product of a hundred thousand stays finite
        x = 1 + x / 512
    return x.to(dtype)


def count(shape, dims) -> int:
    return math.prod(shape[d] for d in dims)


FULL = [((100003,), [0]), ((37, 4099), [0, 1]), ((5, 67, 61), [0, 1, 2])]


@needs_gxx
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("shape", "dims"), FULL, ids=["x".join(map(str, s)) for s, _ in FULL])
def test_full_reductions_match_eager_torch(op, dtype, shape, dims) -> None:
    x = sample(shape, dtype, op)
    (out,), kernels = run([x], lambda fd, t: [getattr(fd.ops, op)(t, dims=dims)])
    split_kernel(kernels)
    check(out, reference(op, x, dims), count(shape, dims))


MIDDLE = [((8, 3, 33, 65), [0, 2, 3]), ((8, 3, 32, 64), [0, 2, 3]), ((9, 2, 2000), [0, 2])]


@needs_gxx
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("shape", "dims"), MIDDLE, ids=["x".join(map(str, s)) for s, _ in MIDDLE])
def test_middle_reductions_of_nchw_match_eager_torch(op, dtype, shape, dims) -> None:
    """N, H and W reduced around the kept C: the row's elements are N runs of H x W."""
    x = sample(shape, dtype, op, seed=1)
    (out,), kernels = run([x], lambda fd, t: [getattr(fd.ops, op)(t, dims=dims)])
    kernel = split_kernel(kernels)
    assert kernel.grid[0] == shape[1]
    check(out, reference(op, x, dims), count(shape, dims))


def test_aligned_contiguous_runs_load_16_bytes_others_element_by_element() -> None:
    assert "16-byte accesses: T0" in kernel_for((8, 3, 32, 64), [0, 2, 3]).heuristics
    assert "Vec<bfloat16, 8>" in kernel_for((4, 4096), [0, 1], torch.bfloat16).source
    assert "16-byte accesses: none" in kernel_for((8, 3, 33, 65), [0, 2, 3]).heuristics


@needs_gxx
@pytest.mark.parametrize("layout", ["transposed", "offset"])
def test_inputs_of_any_layout_are_read_right(layout) -> None:
    base = sample((130, 400), torch.float32, seed=2)
    x = {"transposed": base.t(), "offset": base.view(-1)[1:]}[layout]
    dims = list(range(x.dim()))
    (out,), kernels = run([x], lambda fd, t: [fd.ops.sum(t, dims=dims)])
    assert "16-byte accesses: none" in split_kernel(kernels).heuristics
    check(out, x.double().sum(dims), x.numel())


@needs_gxx
def test_the_epilogue_casts_scales_keeps_dims_and_stores_every_output() -> None:
    """Pointwise ops before the reductions, several reductions of one row, ops on the reduced
    values, keepdim, and a whole-loop output that needs no reduction."""
    shape = [8, 3, 33, 65]
    x = sample(shape, torch.bfloat16, seed=3)
    w = sample((3,), torch.bfloat16, seed=4)

    def body(fd, t, v):
        f = fd.ops.mul(fd.ops.cast(t, DataType.Float),
                       fd.ops.broadcast_in_dim(fd.ops.cast(v, DataType.Float), shape=shape,
                                               broadcast_dims=[1]))
        total = fd.ops.sum(f, dims=[0, 2, 3])
        largest = fd.ops.max(f, dims=[0, 2, 3])
        scaled = fd.ops.mul(fd.ops.sum(f, dims=[0, 2, 3], keepdim=True), fd.define_scalar(0.5))
        return [fd.ops.cast(total, DataType.BFloat16), fd.ops.sub(largest, total), scaled,
                fd.ops.cast(f, DataType.BFloat16)]

    (total, gap, scaled, product), kernels = run([x, w], body)
    split_kernel(kernels)
    f = x.double() * w.double()[None, :, None, None]
    rows = count(shape, [0, 2, 3])
    check(total, f.sum((0, 2, 3)), rows)
    check(gap, f.amax((0, 2, 3)) - f.sum((0, 2, 3)), rows)
    check(scaled, f.sum((0, 2, 3), keepdim=True) * 0.5, rows)
    check(product, f, 1)


@needs_gxx
@pytest.mark.parametrize(("shape", "dims"), [((100003,), [0]), ((8, 3, 33, 65), [0, 2, 3])])
@pytest.mark.parametrize("correction", [0, 1])
def test_var_mean_accumulates_welford_and_combines_partials_by_chans_rule(
        shape, dims, correction) -> None:
    x = sample(shape, torch.float32, seed=5) * 3 + 5  # a mean away from zero
    (var, mean), kernels = run(
        [x], lambda fd, t: list(fd.ops.var_mean(t, dims=dims, correction=correction)))
    split_kernel(kernels)
    expected_var, expected_mean = torch.var_mean(x.double(), dims, correction=correction)
    check(mean, expected_mean, count(shape, dims))
    check(var, expected_var, count(shape, dims))


@needs_gxx
def test_welford_and_a_bfloat16_variance() -> None:
    x = sample((4, 5000), torch.bfloat16, seed=6)

    def body(fd, t):
        f = fd.ops.cast(t, DataType.Float)
        avg, m2, n = fd.ops.welford(f, dims=[0, 1])
        var = fd.ops.var(f, dims=[0, 1], correction=1)
        return [avg, m2, fd.ops.cast(var, DataType.BFloat16)]

    (avg, m2, var), kernels = run([x], body)
    split_kernel(kernels)
    xd = x.double()
    check(avg, xd.mean(), 20000)
    check(m2, ((xd - xd.mean()) ** 2).sum(), 20000)
    check(var, xd.var(correction=1), 20000)


@needs_gxx
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_integer_reductions_are_exact(op) -> None:
    x = torch.randint(-100, 100, (3, 9001), dtype=torch.int32)
    (out,), kernels = run([x], lambda fd, t: [getattr(fd.ops, op)(t, dims=[0, 1])])
    split_kernel(kernels)
    expected = {"sum": x.long().sum(), "max": x.amax(), "min": x.amin()}[op]
    assert torch.equal(out.long(), expected.long())


@needs_gxx
def test_a_double_sum() -> None:
    x = sample((70001,), torch.float64, seed=7)
    (out,), kernels = run([x], lambda fd, t: [fd.ops.sum(t, dims=[0])])
    split_kernel(kernels)
    assert torch.allclose(out, x.sum(), rtol=1e-12, atol=1e-9)


@needs_gxx
def test_results_are_the_same_every_run_and_the_counters_end_at_zero() -> None:
    x = sample((8, 3, 33, 65), torch.float32, seed=8)
    kernel, results = launched_three_times(x, lambda fd, t: [fd.ops.sum(t, dims=[0, 2, 3])])
    split_kernel([kernel])
    assert torch.equal(results[0], results[1]) and torch.equal(results[0], results[2])
    check(results[0], x.double().sum((0, 2, 3)), 8 * 33 * 65)


# -- launch configuration -------------------------------------------------------------------------


def kernel_for(shape, dims, dtype=torch.float32, op: str = "sum") -> Kernel:
    x = torch.empty(shape, dtype=dtype, device="meta")  # sizes and strides, no memory
    fusion = fusion_of([x], lambda fd, t: [getattr(fd.ops, op)(t, dims=dims)])
    segmented = segment_fusion(fusion, [x])
    (segment,) = segmented.segments
    kernel = generate(segment, RuntimeInfo(segmented.fusion, [x]), [x])
    assert isinstance(kernel, Kernel)
    return kernel


def test_a_long_row_is_split_over_several_waves_of_blocks_with_a_workspace() -> None:
    kernel = kernel_for((1 << 22,), [0])
    assert kernel.grid[0] == 1 and kernel.grid[1] >= 3 * 132 and kernel.block == (1, 256, 1)
    partials, arrivals = [p for p in kernel.args if p.kind is ArgKind.WORKSPACE]
    assert not partials.zeroed and partials.nbytes == kernel.grid[1] * 4
    assert arrivals.zeroed and arrivals.nbytes == 4
    assert "16-byte accesses: T0" in kernel.heuristics and "atomicAdd" in kernel.source
    nchw = kernel_for((16, 64, 64, 64), [0, 2, 3], torch.bfloat16)
    assert nchw.grid[0] == 64 and nchw.grid[1] > 1


@pytest.mark.parametrize(("shape", "dims"), [
    ((4096, 4096), [1]),  # many rows: a block per row fills the GPU
    ((300, 1 << 16), [1]),
    ((4, 1000), [1]),  # short rows
    ((100, 16000), [1]),
    ((64, 4096), [0]),  # an outer reduction keeps its own kernel
])
def test_many_or_short_rows_are_not_split(shape, dims) -> None:
    kernel = kernel_for(shape, dims)
    assert not kernel.heuristics.startswith("split-row"), kernel.heuristics


def test_the_corpus_full_and_batch_norm_reductions_get_the_split_kernel() -> None:
    for name in ("sum_all_dims", "fp8_amax_all_dims", "x_batchnorm_bwd_nchw"):
        (loaded,) = load_path(CORPUS / f"{name}.py", device="cpu")
        kernels = [k for _, k in kernels_of(loaded.fusion, loaded.inputs)]
        kernel = split_kernel([k for k in kernels if isinstance(k, Kernel)])
        assert kernel.grid[0] * kernel.grid[1] >= 2 * 132, name
        if nvrtc.available():
            assert nvrtc.compile_source(kernel.source, kernel.name, "sm_90").cubin


@needs_nvrtc
@pytest.mark.parametrize(("shape", "dims", "dtype", "op"), [
    ((1 << 22,), [0], torch.float32, "sum"),
    ((37, 4099), [0, 1], torch.bfloat16, "max"),
    ((16, 64, 64, 64), [0, 2, 3], torch.float16, "prod"),
    ((3, 9001), [0, 1], torch.int32, "min"),
    ((70001,), [0], torch.float64, "sum"),
])
def test_split_kernels_compile_for_sm_90(shape, dims, dtype, op) -> None:
    kernel = kernel_for(shape, dims, dtype, op)
    assert kernel.heuristics.startswith("split-row")
    assert nvrtc.compile_source(kernel.source, kernel.name, "sm_90").cubin


@needs_nvrtc
def test_a_split_var_mean_compiles_for_sm_90() -> None:
    x = torch.empty(16, 64, 64, 64, device="meta")
    fusion = fusion_of([x], lambda fd, t: list(fd.ops.var_mean(t, dims=[0, 2, 3], correction=1)))
    segmented = segment_fusion(fusion, [x])
    (segment,) = segmented.segments
    kernel = generate(segment, RuntimeInfo(segmented.fusion, [x]), [x])
    split_kernel([kernel])
    assert "shared_count" in kernel.source
    assert nvrtc.compile_source(kernel.source, kernel.name, "sm_90").cubin


def test_a_normalization_over_few_long_strided_rows_runs_on_aten() -> None:
    """A batch norm forward over NCHW: 64 rows of 65,536 elements, each element needing its
    row's mean: no kernel splits such rows yet, and a thread per row would idle the GPU."""
    from fusecli.codegen import Unsupported
    from fusecli.runtime.segmented import run_fusion

    path = Path(__file__).parent / "nvfuser_corpus" / "x_batchnorm_fwd_outer_persistent.py"
    (loaded,) = load_path(path, device="cpu", evaluate=False)
    ((_, kernel),) = kernels_of(loaded.fusion, loaded.inputs)
    assert isinstance(kernel, Unsupported) and "would leave the GPU idle" in kernel.reason
    _, run = run_fusion(loaded.fusion, loaded.inputs, executor="aten")
    x = loaded.inputs[0].float()
    var, mean = torch.var_mean(x, dim=(0, 2, 3), correction=0)
    torch.testing.assert_close(run.outputs[1], mean)
    torch.testing.assert_close(run.outputs[2], torch.rsqrt(var + 1e-5))
