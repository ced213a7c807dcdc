"""fusecli.codegen.inner_outer: normalization backward (the inner_outer_persistent scheduler's
segments) in one kernel: row reductions, per-element grad input, and grad weight / grad bias
summed over the rows per thread, then combined in a workspace in two levels (groups of
blocks, then the groups).

Kernels run on the CPU emulator against fusecli's reference (``check_on_emulator``: outputs
poisoned first, the project's tolerances); NVRTC compiles them for sm_90 (skipped without it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_codegen import check_on_emulator, define, fusion_of, kernels_of, needs_gxx

import fusecli.segment.heuristics as heuristics
from fusecli.codegen import ArgKind, Kernel, Unsupported, emulate, generate, nvrtc
from fusecli.load import load_path
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.cupy_executor import kernel_arguments
from fusecli.runtime.launch import workspace
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.segmenter import segment_fusion

CORPUS = Path(__file__).parent / "nvfuser_corpus"
needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC is not installed")
CPU = torch.device("cpu")


def layer_norm_backward(rows: int, hidden: int, dtype: torch.dtype = torch.float32,
                        lead: tuple[int, ...] = ()):
    """As tests/nvfuser_corpus/gpt2_layernorm_bwd.py, for [*lead, rows, hidden]: grad input,
    grad weight (sum over the rows of grad * x_hat) and grad bias (sum of grad)."""
    shape = (*lead, rows, hidden)
    generator = torch.Generator().manual_seed(rows * 7 + hidden)
    grad = torch.randn(shape, generator=generator).to(dtype)
    x = torch.randn(shape, generator=generator).to(dtype)
    mean = torch.randn((*lead, rows, 1), generator=generator) / 4
    rstd = torch.rand((*lead, rows, 1), generator=generator) + 0.5
    weight = torch.randn(hidden, generator=generator).to(dtype)
    inputs = [grad, x, mean, rstd, weight]
    row_dims = list(range(len(shape) - 1))

    def body(fd):
        g, xt, m, r, w = (define(fd, t) for t in inputs)
        x32, g32 = fd.ops.cast(xt, dtype=_dt(torch.float32)), fd.ops.cast(g, _dt(torch.float32))
        full = list(shape)
        every = list(range(len(shape)))
        m_b = fd.ops.broadcast_in_dim(m, shape=full, broadcast_dims=every)
        r_b = fd.ops.broadcast_in_dim(r, shape=full, broadcast_dims=every)
        x_hat = fd.ops.mul(fd.ops.sub(x32, m_b), r_b)
        grad_bias = fd.ops.sum(g32, dims=row_dims)
        grad_weight = fd.ops.sum(fd.ops.mul(g32, x_hat), dims=row_dims)
        w_b = fd.ops.cast(fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[len(shape) - 1]),
                          _dt(torch.float32))
        gw = fd.ops.mul(g32, w_b)
        s1 = fd.ops.broadcast_in_dim(fd.ops.sum(gw, dims=[len(shape) - 1]), shape=full,
                                     broadcast_dims=row_dims)
        s2 = fd.ops.broadcast_in_dim(fd.ops.sum(fd.ops.mul(gw, x_hat), dims=[len(shape) - 1]),
                                     shape=full, broadcast_dims=row_dims)
        n = fd.define_scalar(float(hidden))
        inner = fd.ops.sub(fd.ops.sub(fd.ops.mul(gw, n), s1), fd.ops.mul(x_hat, s2))
        grad_input = fd.ops.mul(fd.ops.div(r_b, n), inner)
        fd.add_output(fd.ops.cast(grad_input, _dt(dtype)))
        fd.add_output(fd.ops.cast(grad_weight, _dt(dtype)))
        fd.add_output(fd.ops.cast(grad_bias, _dt(dtype)))

    return fusion_of(body).fusion, inputs


def rms_norm_backward(rows: int, hidden: int, dtype: torch.dtype = torch.bfloat16):
    """RMSNorm backward over [rows, hidden]: grad input and grad weight, one row sum."""
    generator = torch.Generator().manual_seed(rows + hidden)
    grad = torch.randn(rows, hidden, generator=generator).to(dtype)
    x = torch.randn(rows, hidden, generator=generator).to(dtype)
    rstd = torch.rand(rows, 1, generator=generator) + 0.5
    weight = torch.randn(hidden, generator=generator).to(dtype)
    inputs = [grad, x, rstd, weight]

    def body(fd):
        g, xt, r, w = (define(fd, t) for t in inputs)
        f32 = _dt(torch.float32)
        x32, g32 = fd.ops.cast(xt, f32), fd.ops.cast(g, f32)
        r_b = fd.ops.broadcast_in_dim(r, shape=[rows, hidden], broadcast_dims=[0, 1])
        grad_weight = fd.ops.sum(fd.ops.mul(g32, fd.ops.mul(x32, r_b)), dims=[0])
        w32 = fd.ops.cast(fd.ops.broadcast_in_dim(w, shape=[rows, hidden], broadcast_dims=[1]),
                          f32)
        gw = fd.ops.mul(g32, w32)
        s = fd.ops.sum(fd.ops.mul(gw, x32), dims=[1])
        cube = fd.ops.pow(r, fd.define_scalar(3.0))
        scale = fd.ops.div(fd.ops.mul(fd.ops.broadcast_in_dim(s, shape=[rows, 1],
                                                              broadcast_dims=[0]), cube),
                           fd.define_scalar(float(-hidden)))
        scale_b = fd.ops.broadcast_in_dim(scale, shape=[rows, hidden], broadcast_dims=[0, 1])
        grad_input = fd.ops.add(fd.ops.mul(gw, r_b), fd.ops.mul(scale_b, x32))
        fd.add_output(fd.ops.cast(grad_input, _dt(dtype)))
        fd.add_output(fd.ops.cast(grad_weight, _dt(dtype)))

    return fusion_of(body).fusion, inputs


def _dt(dtype: torch.dtype):
    from fusecli.ir import dtype as dt

    return dt.from_torch(dtype)


def inner_outer_kernels(fusion, inputs) -> list[Kernel | Unsupported]:
    return [k for s, k in kernels_of(fusion, inputs) if s.scheduler == "inner_outer_persistent"]


def corpus(name: str):
    (loaded,) = load_path(CORPUS / name, device="cpu")
    return loaded.fusion, loaded.inputs


# -- which segments get the kernel ------------------------------------------------------------


def test_gpt2_layer_norm_backward_gets_one_inner_outer_kernel() -> None:
    fusion, inputs = corpus("gpt2_layernorm_bwd.py")
    (kernel,) = inner_outer_kernels(fusion, inputs)
    assert isinstance(kernel, Kernel), kernel
    assert kernel.grid[0] <= heuristics.MAX_PARTIALS
    assert "partials" in {p.name for p in kernel.args}
    assert kernel.params.startswith("inner_outer_persistent(")
    assert "reduced_dims=(2,)" in kernel.params
    assert kernel.heuristics.startswith("inner-outer persistent: 2048 rows of 768")


def test_llama_rms_norm_backward_has_no_inner_outer_segment_and_keeps_its_kernels() -> None:
    """Its [1, 2048, 4096] squeeze makes the combined layout check fail (as in nvFuser): it
    segments into a reduction and an inner persistent kernel, both generated."""
    fusion, inputs = corpus("llama_rmsnorm_bwd.py")
    kernels = kernels_of(fusion, inputs)
    assert [s.scheduler for s, _ in kernels] == ["reduction", "inner_persistent"]
    assert all(isinstance(k, Kernel) for _, k in kernels)


@pytest.mark.parametrize("make", [layer_norm_backward, rms_norm_backward])
def test_handmade_norm_backwards_segment_as_inner_outer(make) -> None:
    fusion, inputs = make(64, 256)
    segmented = segment_fusion(fusion, inputs)
    schedulers = [s.scheduler for s in segmented.segments]
    assert schedulers.count("inner_outer_persistent") == 1, schedulers
    (kernel,) = inner_outer_kernels(fusion, inputs)
    assert isinstance(kernel, Kernel), kernel


def test_rows_too_long_for_registers_stay_on_aten(monkeypatch) -> None:
    """The scheduler's bound (a register file per row) is below the kernel's today: lower
    the kernel's (elements per thread) to see the refusal."""
    monkeypatch.setattr(heuristics, "MAX_PERSISTENT_ELEMENTS", 4)
    fusion, inputs = rms_norm_backward(4, 4100, torch.float32)
    (kernel,) = inner_outer_kernels(fusion, inputs)
    assert isinstance(kernel, Unsupported) and "too long to keep in registers" in kernel.reason


# -- values on the emulator -------------------------------------------------------------------


@needs_gxx
def test_gpt2_layer_norm_backward_matches_the_reference() -> None:
    assert check_on_emulator(*corpus("gpt2_layernorm_bwd.py")) == 1


CASES = [
    (layer_norm_backward, 300, 1000, torch.float32),  # rows not a multiple of the 132 blocks
    (layer_norm_backward, 37, 4100, torch.bfloat16),  # 4 lanes, 1024 threads, a guarded slot
    (layer_norm_backward, 133, 24, torch.float32),  # 4 threads a row, 32 rows per block
    (layer_norm_backward, 1000, 7, torch.bfloat16),  # odd width: a lane a slot
    (layer_norm_backward, 4000, 512, torch.float32),  # 250 blocks: groups of 16, the last 10
    (rms_norm_backward, 300, 1000, torch.bfloat16),
    (rms_norm_backward, 45, 4100, torch.float32),
    (rms_norm_backward, 2000, 64, torch.float32),
]


@needs_gxx
@pytest.mark.parametrize(("make", "rows", "hidden", "dtype"), CASES,
                         ids=[f"{m.__name__}-{r}x{h}-{str(d)[6:]}" for m, r, h, d in CASES])
def test_norm_backwards_match_the_reference(make, rows, hidden, dtype) -> None:
    fusion, inputs = make(rows, hidden, dtype)
    (kernel,) = inner_outer_kernels(fusion, inputs)
    assert isinstance(kernel, Kernel), kernel
    assert check_on_emulator(fusion, inputs) == 1


@needs_gxx
def test_several_leading_row_dims_match_the_reference() -> None:
    fusion, inputs = layer_norm_backward(50, 96, torch.float32, lead=(3,))
    (kernel,) = inner_outer_kernels(fusion, inputs)
    assert isinstance(kernel, Kernel), kernel
    assert check_on_emulator(fusion, inputs) == 1


@needs_gxx
def test_a_var_mean_per_row_and_a_sum_and_max_over_the_rows() -> None:
    """The inner reduction a var_mean (mean and squared deviations combined in one pass), a row
    output (the mean) and two outer reductions of other kinds."""
    x = torch.randn(150, 1000, generator=torch.Generator().manual_seed(3))

    def body(fd):
        t = define(fd, x)
        var, mean = fd.ops.var_mean(t, dims=[1], correction=0)
        var_b = fd.ops.broadcast_in_dim(var, shape=[150, 1000], broadcast_dims=[0])
        mean_b = fd.ops.broadcast_in_dim(mean, shape=[150, 1000], broadcast_dims=[0])
        eps = fd.define_scalar(1e-5)
        y = fd.ops.mul(fd.ops.sub(t, mean_b), fd.ops.rsqrt(fd.ops.add(var_b, eps)))
        fd.add_output(y)
        fd.add_output(fd.ops.sum(fd.ops.mul(y, t), dims=[0]))
        fd.add_output(fd.ops.max(t, dims=[0]))
        fd.add_output(mean)

    fusion = fusion_of(body).fusion
    (kernel,) = inner_outer_kernels(fusion, [x])
    assert isinstance(kernel, Kernel), kernel
    assert check_on_emulator(fusion, [x]) == 1


@needs_gxx
def test_results_are_the_same_every_run_and_the_counter_ends_at_zero() -> None:
    fusion, inputs = layer_norm_backward(500, 200, torch.float32)
    segmented = segment_fusion(fusion, inputs)
    (segment,) = [s for s in segmented.segments if s.scheduler == "inner_outer_persistent"]
    known = {v.uid: x for v, x in zip(segmented.fusion.inputs, inputs)}
    kernel = generate(segment, RuntimeInfo(segmented.fusion, inputs),
                      [known[v.uid] for v in segment.inputs])
    assert isinstance(kernel, Kernel) and kernel.grid[0] > 1
    ctx = ExecutionContext.for_fusion(segmented.fusion, device="cpu", faults=frozenset(),
                                      extents=bind_inputs(segmented.fusion, inputs).extents)
    kept: dict[str, torch.Tensor] = {}
    results = []
    for _ in range(3):
        values, outputs = kernel_arguments(kernel, known, ctx, CPU, poison=True)
        values = [workspace(p, CPU, kept) if p.kind is ArgKind.WORKSPACE and p.zeroed else v
                  for p, v in zip(kernel.args, values)]
        emulate.emulate(kernel, values)
        results.append([outputs[out.uid] for out in segment.outputs])
        assert not kept["arrivals"].any()
    for first, *others in zip(*results):
        assert all(torch.equal(first, other) for other in others)


# -- NVRTC --------------------------------------------------------------------------------------


@needs_nvrtc
@pytest.mark.parametrize(("make", "rows", "hidden", "dtype"), [
    (layer_norm_backward, 16384, 1024, torch.bfloat16),
    (rms_norm_backward, 8192, 4096, torch.bfloat16),
    (layer_norm_backward, 133, 24, torch.float32),
    (rms_norm_backward, 45, 4100, torch.float32),
])
def test_inner_outer_kernels_compile_for_sm_90(make, rows, hidden, dtype) -> None:
    fusion, inputs = make(rows, hidden, dtype)
    (kernel,) = inner_outer_kernels(fusion, inputs)
    assert isinstance(kernel, Kernel), kernel
    assert nvrtc.compile_source(kernel.source, kernel.name, "sm_90").cubin


@needs_nvrtc
def test_gpt2_layer_norm_backward_compiles_for_sm_90() -> None:
    (kernel,) = inner_outer_kernels(*corpus("gpt2_layernorm_bwd.py"))
    assert nvrtc.compile_source(kernel.source, kernel.name, "sm_90").cubin
