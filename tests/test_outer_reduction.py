"""fusecli.codegen.outer_reduction: reductions over the leading dims (``sum(x, dims=[0])``), as
nvFuser schedules them: vectorized columns per thread, row groups per block, and the rows split
over blocks at large sizes, the partials combined in one kernel by each tile's last block.

Kernels run on the CPU emulator through the CuPy executor's own flow (arguments, workspaces,
ATen for the segments without a kernel), outputs poisoned first, and are checked against eager
torch in float64. NVRTC tests compile for sm_90 and skip without NVRTC.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from fusecli.codegen import ArgKind, Kernel, emulate, generate, nvrtc
from fusecli.frontend import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.cupy_executor import CupyExecutor, kernel_arguments
from fusecli.runtime.launch import workspace
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.segmenter import segment_fusion

needs_gxx = pytest.mark.skipif(not emulate.available(), reason="g++ is not installed")
needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC is not installed")
CPU = torch.device("cpu")


class EmulatingExecutor(CupyExecutor):
    """The CuPy executor with the CPU emulator where CuPy and the GPU would be."""

    def __init__(self) -> None:
        super().__init__(poison=True)
        self.kernels: list[Kernel] = []

    def _check_environment(self) -> None:
        pass

    def _device(self, inputs, ctx) -> torch.device:
        return CPU

    def _load(self, kernel: Kernel, device: torch.device) -> Kernel:
        return kernel

    def _launch(self, segment, prepared, values, device) -> None:
        self.kernels.append(prepared.kernel)
        emulate.emulate(prepared.kernel, values)


def fusion_of(inputs: list[torch.Tensor], body: Callable):
    with FusionDefinition() as fd:
        tensors = [fd.define_tensor(sizes=list(x.shape), strides=list(x.stride()),
                                    dtype=dt.from_torch(x.dtype)) for x in inputs]
        for out in body(fd, *tensors):
            fd.add_output(out)
    return fd.fusion


def run(inputs: list[torch.Tensor], body: Callable) -> tuple[list[torch.Tensor], list[Kernel]]:
    """The fusion's outputs, every segment run by the emulating executor; and the kernels."""
    outputs, _, _, executor = run_segments(inputs, body)
    return outputs, executor.kernels


def run_segments(inputs: list[torch.Tensor], body: Callable):
    """The fusion's outputs, every segment run by the emulating executor; each segment's
    outcome, the segmentation and the executor."""
    segmented = segment_fusion(fusion_of(inputs, body), inputs)
    fusion = segmented.fusion
    env = {v.uid: x for v, x in zip(fusion.inputs, inputs)}
    ctx = ExecutionContext.for_fusion(fusion, device="cpu", faults=frozenset(),
                                      extents=bind_inputs(fusion, inputs).extents)
    executor = EmulatingExecutor()
    outcomes = [executor.run_segment(segment, env, ctx) for segment in segmented.segments]
    return [env[output.value.uid] for output in fusion.outputs], outcomes, segmented, executor


def outer_kernel(kernels: list[Kernel]) -> Kernel:
    (kernel,) = [k for k in kernels if k.heuristics.startswith("outer reduction: ")
                 and "columns per thread" in k.heuristics]
    return kernel


def check(actual: torch.Tensor, expected: torch.Tensor, rows: int) -> None:
    """``actual`` against the float64 ``expected`` rounded to ``actual``'s dtype: one unit in
    the last place of that dtype (a float32 sum may round the other way), and float32's error
    over ``rows`` rows, which grows as their square root."""
    assert actual.shape == expected.shape and not actual.isnan().any()
    rounded = expected.to(actual.dtype).double()
    unit = {torch.float32: 0.0, torch.bfloat16: 2**-7, torch.float16: 2**-10}[actual.dtype]
    accumulated = 1e-6 * math.sqrt(rows) * (expected.abs() + math.sqrt(rows))
    error = (actual.double() - rounded).abs()
    assert (error <= unit * expected.abs() + accumulated).all(), f"largest error {error.max()}"


def sample(shape, dtype: torch.dtype, op: str, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator, dtype=torch.float64)
    if op == "prod":  # near 1, so that a product of a thousand stays finite
        x = 1 + x / 64
    return x.to(dtype)


def reference(op: str, x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    x = x.double()
    if op in ("max", "min"):
        return x.amax(dims) if op == "max" else x.amin(dims)
    if op == "prod":
        for dim in sorted(dims, reverse=True):
            x = x.prod(dim)
        return x
    return x.sum(dims)


SHAPES = [(1000, 37), (8, 16), (3, 5), (515, 130), (2, 4096), (4100, 24), (33, 1, 40)]


@needs_gxx
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_outer_reductions_match_eager_torch(op, dtype, shape) -> None:
    x = sample(shape, dtype, op)
    (out,), kernels = run([x], lambda fd, t: [getattr(fd.ops, op)(t, dims=[0])])
    assert outer_kernel(kernels)
    check(out, reference(op, x, [0]), shape[0])


@needs_gxx
@pytest.mark.parametrize(("shape", "dims"), [
    ((6, 7, 40), [0, 1]),
    ((4, 5, 3, 8), [0, 1, 2]),
    ((50, 6, 8), [0]),  # two kept dims: vectors along the innermost only
    ((17, 3, 6, 10), [0, 1]),  # 10 columns of 5 vectors: neither a vector nor a tile multiple
])
def test_several_leading_dims_reduce_and_several_kept_dims_stay(shape, dims) -> None:
    x = sample(shape, torch.float32, "sum", seed=1)
    (out,), kernels = run([x], lambda fd, t: [fd.ops.sum(t, dims=dims)])
    assert outer_kernel(kernels)
    check(out, reference("sum", x, dims), math.prod(shape[d] for d in dims))


@needs_gxx
def test_a_single_reduced_row_is_copied() -> None:
    x = sample((1, 3, 64), torch.float32, "sum")  # the size-1 dim, then a real one of 3
    (out,), kernels = run([x], lambda fd, t: [fd.ops.sum(t, dims=[0, 1])])
    kernel = outer_kernel(kernels)
    check(out, reference("sum", x, [0, 1]), 3)
    y = sample((1, 64), torch.float32, "max")
    (out,), kernels = run([y], lambda fd, t: [fd.ops.max(t, dims=[0])])
    assert torch.equal(out, y[0])  # a squeeze: no reduction kernel runs it
    assert kernel.grid[1] == 1


@needs_gxx
@pytest.mark.parametrize("shape", [(1000, 37), (4096, 64), (9, 24)])
@pytest.mark.parametrize("correction", [0, 1])
def test_var_mean_accumulates_welford_and_combines_partials_by_chans_rule(shape, correction):
    x = sample(shape, torch.float32, "sum", seed=2) * 3 + 5  # a mean away from zero

    def body(fd, t):
        return list(fd.ops.var_mean(t, dims=[0], correction=correction))

    (var, mean), kernels = run([x], body)
    kernel = outer_kernel(kernels)
    expected_var, expected_mean = torch.var_mean(x.double(), 0, correction=correction)
    check(mean, expected_mean, shape[0])
    check(var, expected_var, shape[0])
    assert (kernel.grid[1] > 1) == (shape[0] >= 1000)


@needs_gxx
def test_welford_and_a_bfloat16_variance() -> None:
    x = sample((2000, 48), torch.bfloat16, "sum", seed=3)

    def body(fd, t):
        f = fd.ops.cast(t, DataType.Float)
        avg, m2, n = fd.ops.welford(f, dims=[0])
        var = fd.ops.var(f, dims=[0], correction=1)
        return [avg, m2, fd.ops.cast(var, DataType.BFloat16)]

    (avg, m2, var), kernels = run([x], body)
    assert outer_kernel(kernels).grid[1] > 1
    xd = x.double()
    check(avg, xd.mean(0), 2000)
    check(m2, ((xd - xd.mean(0)) ** 2).sum(0), 2000)
    check(var, xd.var(0, correction=1), 2000)


@needs_gxx
def test_the_epilogue_casts_scales_and_stores_every_output() -> None:
    """Pointwise ops before the reduction, several reductions, ops on the reduced values,
    a keepdim broadcast, and a whole-loop output that needs no reduction."""
    x = sample((1500, 72), torch.bfloat16, "sum", seed=4)
    w = sample((72,), torch.bfloat16, "sum", seed=5)

    def body(fd, t, v):
        f = fd.ops.mul(fd.ops.cast(t, DataType.Float),
                       fd.ops.broadcast_in_dim(fd.ops.cast(v, DataType.Float),
                                               shape=[1500, 72], broadcast_dims=[1]))
        total = fd.ops.sum(f, dims=[0])
        largest = fd.ops.max(f, dims=[0])
        scaled = fd.ops.mul(fd.ops.sum(f, dims=[0], keepdim=True), fd.define_scalar(0.5))
        return [fd.ops.cast(total, DataType.BFloat16), fd.ops.sub(largest, total), scaled,
                fd.ops.cast(f, DataType.BFloat16)]

    (total, gap, scaled, product), kernels = run([x, w], body)
    assert outer_kernel(kernels).grid[1] > 1
    f = x.double() * w.double()
    check(total, f.sum(0), 1500)
    check(gap, f.amax(0) - f.sum(0), 1500)
    check(scaled, f.sum(0, keepdim=True) * 0.5, 1500)
    check(product, f, 1)


@needs_gxx
@pytest.mark.parametrize("layout", ["transposed", "sliced", "offset"])
def test_inputs_of_any_layout_are_read_right(layout) -> None:
    """Strided or misaligned inputs load element by element: slower, not wrong."""
    base = sample((130, 400), torch.float32, "sum", seed=8)
    x = {"transposed": base.t(), "sliced": base[:, 1:397], "offset": base[1:]}[layout]
    (out,), kernels = run([x], lambda fd, t: [fd.ops.sum(t, dims=[0])])
    assert outer_kernel(kernels)
    check(out, x.double().sum(0), x.shape[0])


@needs_gxx
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_integer_reductions_are_exact(op) -> None:
    x = torch.randint(-100, 100, (999, 33), dtype=torch.int32)
    (out,), kernels = run([x], lambda fd, t: [getattr(fd.ops, op)(t, dims=[0])])
    assert outer_kernel(kernels).grid[1] > 1
    expected = {"sum": x.long().sum(0), "max": x.amax(0), "min": x.amin(0)}[op]
    assert torch.equal(out.long(), expected.long())


def kernel_for(shape, dtype=torch.float32, op: str = "sum") -> Kernel:
    x = torch.empty(shape, dtype=dtype, device="meta")  # sizes and strides, no memory
    fusion = fusion_of([x], lambda fd, t: [getattr(fd.ops, op)(t, dims=[0])])
    segmented = segment_fusion(fusion, [x])
    (segment,) = segmented.segments
    kernel = generate(segment, RuntimeInfo(segmented.fusion, [x]), [x])
    assert isinstance(kernel, Kernel)
    return kernel


def test_a_large_reduction_is_split_over_blocks_with_a_workspace() -> None:
    kernel = kernel_for((65536, 4096))
    assert kernel.block == (32, 8, 1)  # 32 vectors of 4 floats by 8 row groups
    assert kernel.grid[0] == 4096 // 4 // 32 and kernel.grid[1] > 1
    assert kernel.grid[0] * kernel.grid[1] >= 3 * 132 * 8  # the H200 holds 132 x 8 at once
    partials, arrivals = [p for p in kernel.args if p.kind is ArgKind.WORKSPACE]
    assert not partials.zeroed and partials.nbytes == kernel.grid[1] * 4096 * 4
    assert arrivals.zeroed and arrivals.nbytes == 4 * kernel.grid[0]
    assert "16-byte accesses: T0" in kernel.heuristics
    assert "Vec<float, 4>" in kernel.source and "atomicAdd" in kernel.source


def test_a_small_reduction_has_no_split_and_no_workspace() -> None:
    for shape in [(8, 16), (64, 4096), (100, 256)]:
        kernel = kernel_for(shape)
        assert kernel.grid[1] == 1, shape
        assert all(p.kind is not ArgKind.WORKSPACE for p in kernel.args)
        assert "no grid split" in kernel.heuristics and "atomicAdd" not in kernel.source


def test_bfloat16_moves_8_columns_per_thread() -> None:
    kernel = kernel_for((65536, 4096), torch.bfloat16)
    assert kernel.block == (32, 8, 1) and kernel.grid[0] == 4096 // 8 // 32
    assert "Vec<bfloat16, 8>" in kernel.source


@needs_gxx
@pytest.mark.parametrize(("shape", "dims", "dtype"), [
    ((4, 8, 16), [1], torch.float32),
    ((6, 300, 40), [1], torch.float32),  # rows split over blocks, 10 column vectors per batch
    ((3, 50, 7, 8), [1, 2], torch.bfloat16),
    ((2, 3, 64, 5, 24), [1, 2], torch.float16),  # kept dims before and after the reduced ones
    ((5, 1, 40, 8), [2], torch.float32),
])
def test_middle_reductions_take_the_tiled_kernel_batched_over_the_leading_dims(shape, dims,
                                                                               dtype) -> None:
    """[A, R, C] reduced over R: A outer reductions side by side, each thread's columns (a, c)
    one batch's, not a thread per column walking R (a few thousand threads for 100 MB)."""
    x = sample(shape, dtype, "sum", seed=2)
    (out,), kernels = run([x], lambda fd, t: [fd.ops.sum(t, dims=dims)])
    assert outer_kernel(kernels)
    check(out, reference("sum", x, dims), math.prod(shape[d] for d in dims))


@needs_gxx
def test_a_middle_var_mean_combines_by_chans_rule() -> None:
    x = sample((6, 500, 24), torch.float32, "sum", seed=3)
    (var, mean), kernels = run([x], lambda fd, t: list(fd.ops.var_mean(t, dims=[1],
                                                                      correction=1)))
    assert outer_kernel(kernels)
    torch.testing.assert_close(mean.double(), x.double().mean(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(var.double(), x.double().var(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("shape", "dims", "why"), [
    ((4, 8, 16), [0, 2], "the innermost dim reduced"),
])
def test_other_outer_reductions_keep_the_thread_per_row_kernel(shape, dims, why) -> None:
    x = torch.empty(shape, device="meta")
    fusion = fusion_of([x], lambda fd, t: [fd.ops.sum(t, dims=dims)])
    segmented = segment_fusion(fusion, [x])
    (segment,) = segmented.segments
    kernel = generate(segment, RuntimeInfo(segmented.fusion, [x]), [x])
    assert "a thread per row walking it" in kernel.heuristics, why


@needs_gxx
def test_a_softmax_over_dim_0_keeps_the_thread_per_row_kernel() -> None:
    x = sample((300, 20), torch.float32, "sum", seed=6)

    def body(fd, t):
        e = fd.ops.exp(fd.ops.sub(t, fd.ops.broadcast_in_dim(
            fd.ops.max(t, dims=[0]), shape=[300, 20], broadcast_dims=[1])))
        return [fd.ops.div(e, fd.ops.broadcast_in_dim(fd.ops.sum(e, dims=[0]), shape=[300, 20],
                                                      broadcast_dims=[1]))]

    (out,), kernels = run([x], body)
    assert kernels and not any("columns per thread" in k.heuristics for k in kernels)
    check(out, torch.softmax(x.double(), 0), 1)


def launched_three_times(x: torch.Tensor, body) -> tuple[Kernel, list[torch.Tensor]]:
    """The kernel of the fusion ``body`` makes over ``x``, and its output after each of three
    emulated launches sharing one planned launch's zeroed workspace (whose counters are
    checked back at zero after each)."""
    fusion = fusion_of([x], body)
    segmented = segment_fusion(fusion, [x])
    (segment,) = segmented.segments
    kernel = generate(segment, RuntimeInfo(segmented.fusion, [x]), [x])
    ctx = ExecutionContext.for_fusion(segmented.fusion, device="cpu", faults=frozenset(),
                                      extents=bind_inputs(segmented.fusion, [x]).extents)
    kept: dict[str, torch.Tensor] = {}
    results = []
    for _ in range(3):
        values, outputs = kernel_arguments(kernel, {segment.inputs[0].uid: x}, ctx, CPU,
                                           poison=True)
        values = [workspace(p, CPU, kept) if p.kind is ArgKind.WORKSPACE and p.zeroed else v
                  for p, v in zip(kernel.args, values)]
        emulate.emulate(kernel, values)
        results.append(outputs[segment.outputs[0].uid])
        assert not kept["arrivals"].any()
    return kernel, results


@needs_gxx
def test_results_are_the_same_every_run_and_the_counters_end_at_zero() -> None:
    """The last block of each tile resets its counter: the launch's zeroed workspace, made
    once, serves every later launch; and the fixed combining order gives the same bits."""
    x = sample((3000, 40), torch.float32, "sum", seed=7)
    kernel, results = launched_three_times(x, lambda fd, t: [fd.ops.sum(t, dims=[0])])
    assert kernel.grid[1] > 1
    assert torch.equal(results[0], results[1]) and torch.equal(results[0], results[2])
    check(results[0], x.double().sum(0), 3000)


@needs_nvrtc
@pytest.mark.parametrize(("shape", "dtype", "op"), [
    ((65536, 4096), torch.float32, "sum"),
    ((65536, 4096), torch.bfloat16, "max"),
    ((1000, 37), torch.float16, "prod"),
    ((8, 16), torch.float32, "min"),
])
def test_outer_reduction_kernels_compile_for_sm_90(shape, dtype, op) -> None:
    kernel = kernel_for(shape, dtype, op)
    assert nvrtc.compile_source(kernel.source, kernel.name, "sm_90").cubin


@needs_nvrtc
def test_a_split_var_mean_compiles_for_sm_90() -> None:
    x = torch.empty(65536, 1024, device="meta")
    fusion = fusion_of([x], lambda fd, t: list(fd.ops.var_mean(t, dims=[0], correction=1)))
    segmented = segment_fusion(fusion, [x])
    (segment,) = segmented.segments
    kernel = generate(segment, RuntimeInfo(segmented.fusion, [x]), [x])
    assert kernel.grid[1] > 1 and "shared_count" in kernel.source
    assert nvrtc.compile_source(kernel.source, kernel.name, "sm_90").cubin
