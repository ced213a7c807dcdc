"""var_mean and welford in the inner-reduction kernels (fusecli.codegen.reduction): each thread's
exact (count, mean, m2) over the elements it holds, then one block-wide combination of those
triples by Chan's rule (the prelude's ``block_welford``), not a block sum for the mean and a
second one for the squared deviations.

Kernels run on the CPU emulator through the CuPy executor's flow (outputs poisoned first) and
are checked against eager torch in float64 and against fusecli's reference at the project's
tolerances (``check_on_emulator``); ``block_welford`` itself runs on hand-made partials.
"""

from __future__ import annotations

import pytest
import torch
from test_codegen import check_on_emulator, kernels_of
from test_outer_reduction import run

import fusecli.segment.heuristics as heuristics
from fusecli.codegen import ArgKind, Kernel, emulate, nvrtc, reduction_ops
from fusecli.codegen.kernel import KernelArg
from fusecli.codegen.prelude import prelude_for
from fusecli.frontend import FusionDefinition
from fusecli.ir.dtype import DataType

needs_gxx = pytest.mark.skipif(not emulate.available(), reason="g++ is not installed")
needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC is not installed")


@pytest.fixture(autouse=True)
def combined_variance(monkeypatch):
    """The one-round combination is off by default (slower on the H200, see
    ``reduction_ops.COMBINED_VARIANCE``); these tests check it where it is asked for."""
    monkeypatch.setattr(reduction_ops, "COMBINED_VARIANCE", True)


def test_by_default_a_layer_norm_takes_two_block_sums(monkeypatch) -> None:
    monkeypatch.setattr(reduction_ops, "COMBINED_VARIANCE", False)
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        var, mean = fd.ops.var_mean(x, dims=[1], correction=0)
        fd.add_output(var)
        fd.add_output(mean)
    ((_, kernel),) = kernels_of(fd.fusion, [torch.randn(64, 1024)])
    assert kernel.source.count("block_reduce<") == 2 and "block_welford<" not in kernel.source
    assert check_on_emulator(fd.fusion, [torch.randn(64, 1024) + 1000]) == 1


def sample(shape, dtype: torch.dtype, offset: float = 0.0, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (offset + torch.randn(shape, generator=generator, dtype=torch.float64)).to(dtype)


def layer_norm_body(x: torch.Tensor, correction: int):
    """var_mean over the last dim, the mean and variance as outputs, and x normalized (cast
    back to the input's dtype), as LayerNorm without its affine part computes it."""
    wide = x.dtype == torch.bfloat16

    def body(fd, t):
        f = fd.ops.cast(t, DataType.Float) if wide else t
        var, mean = fd.ops.var_mean(f, dims=[1], correction=correction)
        full = list(x.shape)
        rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5, dtype=DataType.Double)))
        y = fd.ops.mul(fd.ops.sub(f, fd.ops.broadcast_in_dim(mean, shape=full,
                                                             broadcast_dims=[0])),
                       fd.ops.broadcast_in_dim(rstd, shape=full, broadcast_dims=[0]))
        return [mean, var, fd.ops.cast(y, DataType.BFloat16) if wide else y]
    return body


EPS = 2.0**-24  # float32's unit roundoff: every kernel here accumulates in float32


def check_var_mean(mean, var, x: torch.Tensor, correction: int) -> None:
    """``mean`` and ``var`` against float64 torch: the mean to a few roundings of the row's
    magnitude, the variance to a few of itself plus the float32 rounding of the threads' means
    (|mean| x std: Chan's rule weighs the differences between them)."""
    expected_var, expected_mean = torch.var_mean(x.double(), 1, correction=correction)
    magnitude = x.double().abs().mean(1)
    assert not mean.isnan().any() and not var.isnan().any()
    mean_error = (mean.double() - expected_mean).abs()
    assert (mean_error <= 8 * EPS * magnitude).all(), f"mean: {mean_error.max()}"
    bound = EPS * (16 * expected_var + expected_mean.abs() * expected_var.sqrt())
    var_error = (var.double() - expected_var).abs()
    assert (var_error <= bound).all(), f"var: {(var_error / bound).max()} of the bound"


def inner_kernel(kernels: list[Kernel]) -> Kernel:
    (kernel,) = [k for k in kernels if k.heuristics.startswith("inner reduction")]
    return kernel


# -- LayerNorm-like fusions against float64 torch ----------------------------------------------

# (rows, hidden, dtype, looping): rows in registers (16 rows at least: fewer rows of 8192 are
# too few blocks for inner_persistent), guarded tails, several rows per block; and rows looped
# over from memory (at most 4 elements per thread in registers)
CASES = [
    (16, 8192, torch.float32, False), (16, 8192, torch.bfloat16, False),
    (5, 1000, torch.float32, False), (4, 4100, torch.float32, False),
    (4, 4100, torch.bfloat16, False), (9, 100, torch.float32, False),
    (33, 24, torch.bfloat16, False), (4, 4100, torch.float32, True),
    (9, 100, torch.float32, True),
]
IDS = [f"{r}x{h}-{str(d)[6:]}{'-looping' * loop}" for r, h, d, loop in CASES]


@needs_gxx
@pytest.mark.parametrize(("rows", "hidden", "dtype", "looping"), CASES, ids=IDS)
@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("offset", [0.0, 1000.0], ids=["centred", "mean1000"])
def test_layer_norm_var_mean_matches_float64(rows, hidden, dtype, looping, correction, offset,
                                             monkeypatch) -> None:
    if looping:
        monkeypatch.setattr(heuristics, "MAX_PERSISTENT_ELEMENTS", 4)
    x = sample((rows, hidden), dtype, offset, seed=hidden + correction)
    (mean, var, y), kernels = run([x], layer_norm_body(x, correction))
    kernel = inner_kernel(kernels)
    assert len(kernels) == 1 and kernel.source.count("block_welford<") == 1
    assert "block_reduce<" not in kernel.source
    assert ("looping" in kernel.heuristics) == looping
    check_var_mean(mean, var, x, correction)
    var64, mean64 = torch.var_mean(x.double(), 1, correction=correction, keepdim=True)
    expected = (x.double() - mean64) * (var64 + 1e-5).rsqrt()
    rounding = 2**-8 if dtype == torch.bfloat16 else 16 * EPS  # y's own, and its store's
    bound = rounding * expected.abs() + 16 * EPS * (1 + mean64.abs() / var64.sqrt())
    error = (y.double() - expected).abs()
    assert (error <= bound).all(), f"y: {(error / bound).max()} of the bound"


@needs_gxx
@pytest.mark.parametrize(("rows", "hidden", "dtype", "looping"), CASES, ids=IDS)
def test_layer_norm_matches_the_reference_at_the_project_tolerances(rows, hidden, dtype,
                                                                    looping, monkeypatch):
    if looping:
        monkeypatch.setattr(heuristics, "MAX_PERSISTENT_ELEMENTS", 4)
    x = sample((rows, hidden), dtype, 1000.0 if rows % 2 else 0.0, seed=rows)
    with FusionDefinition() as fd:
        t = fd.define_tensor(sizes=list(x.shape), strides=list(x.stride()),
                             dtype=DataType.Float if dtype == torch.float32 else
                             DataType.BFloat16)
        for out in layer_norm_body(x, 1)(fd, t):
            fd.add_output(out)
    assert check_on_emulator(fd.fusion, [x]) == 1


@needs_gxx
def test_welford_outputs_and_a_sum_of_the_same_row() -> None:
    x = sample((6, 4100), torch.float32, 50.0, seed=4)

    def body(fd, t):
        avg, m2, n = fd.ops.welford(t, dims=[1])
        total = fd.ops.sum(t, dims=[1])
        return [avg, m2, n, total, fd.ops.var(t, dims=[1], correction=1)]

    (avg, m2, n, total, var), kernels = run([x], body)
    source = inner_kernel(kernels).source
    assert source.count("block_welford<") == 2 and source.count("block_reduce<") == 1
    check_var_mean(avg, m2 / 4100, x, 0)
    check_var_mean(avg, var, x, 1)
    assert n.tolist() == [4100] * 6
    assert ((total.double() - x.double().sum(1)).abs() <= 64 * EPS * 50 * 4100).all()


@needs_gxx
def test_a_norm_of_a_norm_takes_two_passes_not_four() -> None:
    x = sample((4, 2048), torch.float32, 3.0, seed=5)

    def body(fd, t):
        var, mean = fd.ops.var_mean(t, dims=[1], correction=0)
        centred = fd.ops.sub(t, fd.ops.broadcast_in_dim(mean, shape=[4, 2048],
                                                        broadcast_dims=[0]))
        squared = fd.ops.mul(centred, centred)
        return [var, mean, fd.ops.var(squared, dims=[1], correction=1)]

    (var, mean, var2), kernels = run([x], body)
    source = inner_kernel(kernels).source
    assert "// pass 2: count, mean and squared deviations of" in source
    assert "// pass 3" not in source
    squared = (x.double() - x.double().mean(1, keepdim=True)) ** 2
    check_var_mean(mean, var, x, 0)
    var2_expected = squared.var(1, correction=1)
    assert ((var2.double() - var2_expected).abs() <= 1e-5 * var2_expected).all()


# -- the generated source: one block-wide combination per row ----------------------------------


def layer_norm_kernel(rows: int, hidden: int, dtype: torch.dtype) -> Kernel:
    """The kernel of benchmarks/vs_nvfuser.py's ``layer_norm`` at these sizes and dtype."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[rows, hidden], contiguity=[True, True],
                             dtype=DataType.BFloat16 if dtype == torch.bfloat16 else
                             DataType.Float)
        w = fd.define_tensor(shape=[hidden], contiguity=[True], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[hidden], contiguity=[True], dtype=DataType.BFloat16)
        xf = fd.ops.cast(x, dtype=DataType.Float)
        var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
        full = [rows, hidden]
        centred = fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape=full, broadcast_dims=[0]))
        rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5, dtype=DataType.Double)))
        y = fd.ops.mul(centred, fd.ops.broadcast_in_dim(rstd, shape=full, broadcast_dims=[0]))
        wf = fd.ops.cast(fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1]),
                         dtype=DataType.Float)
        bf = fd.ops.cast(fd.ops.broadcast_in_dim(b, shape=full, broadcast_dims=[1]),
                         dtype=DataType.Float)
        fd.add_output(fd.ops.cast(fd.ops.add(fd.ops.mul(y, wf), bf), dtype=DataType.BFloat16))
    inputs = [torch.empty(rows, hidden, dtype=dtype), torch.empty(hidden, dtype=torch.bfloat16),
              torch.empty(hidden, dtype=torch.bfloat16)]
    ((_, kernel),) = kernels_of(fd.fusion, inputs)
    assert isinstance(kernel, Kernel), kernel
    return kernel


@pytest.mark.parametrize(("dtype", "threads"), [(torch.bfloat16, 512), (torch.float32, 1024)])
def test_layer_norm_16384_x_8192_combines_once_per_row(dtype, threads) -> None:
    kernel = layer_norm_kernel(16384, 8192, dtype)
    source = kernel.source
    assert "inner reduction (persistent)" in kernel.heuristics
    assert kernel.block == (threads, 1, 1)
    assert source.count(f"block_welford<{threads}>(") == 1  # one block-wide reduction per row
    assert "block_reduce<" not in source and source.count("__syncthreads();") == 2
    assert f"const int thread_count = {8192 // threads};" in source  # no tail: never 0
    assert "__shared__ float scratch_float[64];" in source
    assert "__shared__ int scratch_count[32];" in source


@needs_nvrtc
@pytest.mark.parametrize(("rows", "hidden", "dtype"), [
    (16384, 8192, torch.bfloat16), (16384, 8192, torch.float32), (64, 4100, torch.float32),
    (64, 100, torch.float64),
])
def test_the_kernels_compile_for_sm_90(rows, hidden, dtype) -> None:
    if dtype == torch.float64:  # a double variance: block_welford<T = double>
        x = torch.empty(rows, hidden, dtype=dtype)
        with FusionDefinition() as fd:
            t = fd.define_tensor(sizes=[rows, hidden], strides=[hidden, 1],
                                 dtype=DataType.Double)
            for out in fd.ops.welford(t, dims=[1]):
                fd.add_output(out)
        ((_, kernel),) = kernels_of(fd.fusion, [x])
    else:
        kernel = layer_norm_kernel(rows, hidden, dtype)
    assert "block_welford<" in kernel.source
    nvrtc.compile_source(kernel.source, kernel.name, "sm_90")


# -- block_welford on hand-made partials --------------------------------------------------------

WELFORD_TEST = """
extern "C" __global__ void welford_rows(const float* means, const float* m2s,
                                        const int* counts, float* out) {
  __shared__ float scratch[64];
  __shared__ int scratch_count[32];
  float mean = means[threadIdx.x], m2 = m2s[threadIdx.x];
  block_welford<THREADS>(mean, m2, counts[threadIdx.x], scratch, scratch_count);
  out[2 * threadIdx.x] = mean;
  out[2 * threadIdx.x + 1] = m2;
}
"""


def welford_kernel(threads: int, block: int) -> Kernel:
    body = WELFORD_TEST.replace("THREADS", str(threads))
    args = tuple(KernelArg(kind, name, ctype, dtype, None) for kind, name, ctype, dtype in [
        (ArgKind.INPUT, "means", "const float*", DataType.Float),
        (ArgKind.INPUT, "m2s", "const float*", DataType.Float),
        (ArgKind.INPUT, "counts", "const int*", DataType.Int32),
        (ArgKind.OUTPUT, "out", "float*", DataType.Float),
    ])
    return Kernel("welford_rows", prelude_for(body) + body, (1, 1, 1), (block, 1, 1), 0, args,
                  "block_welford test")


@needs_gxx
@pytest.mark.parametrize(("threads", "block"), [(4, 32), (8, 64), (32, 32), (64, 64),
                                                (512, 512)])
def test_block_welford_combines_partials_by_chans_rule(threads: int, block: int) -> None:
    generator = torch.Generator().manual_seed(threads)
    counts = torch.randint(0, 6, (block,), generator=generator, dtype=torch.int32)
    counts[:threads] = 0  # the first row: one thread holds everything, the rest nothing
    counts[threads - 1] = 7
    if block > threads:
        counts[threads:2 * threads] = 0  # the second row holds nothing at all
    values = [1000 + torch.randn(int(n), generator=generator, dtype=torch.float64)
              for n in counts]
    means = torch.tensor([v.mean().item() if len(v) else 0.0 for v in values])
    m2s = torch.tensor([((v - v.mean()) ** 2).sum().item() if len(v) else 0.0 for v in values])
    out = torch.full((block, 2), float("nan"))
    emulate.emulate(welford_kernel(threads, block), [means, m2s, counts, out])
    for row in range(block // threads):
        got = out[row * threads:(row + 1) * threads]
        assert (got == got[0]).all(), "every thread of a row gets the same bits"
        elements = torch.cat(values[row * threads:(row + 1) * threads])
        if not len(elements):
            assert got[0].tolist() == [0.0, 0.0]
            continue
        mean, m2 = elements.mean(), ((elements - elements.mean()) ** 2).sum()
        assert abs(got[0, 0].item() - mean) <= 1e-6 * mean
        assert abs(got[0, 1].item() - m2) <= 1e-4 * m2 + 1e-3
