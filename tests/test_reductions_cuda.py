"""On a GPU, through ``fd.execute`` (a full run, then the warm replay): middle-dim reductions on
the tiled outer kernel, half-precision norms with 16-byte lanes beside float per-row tensors,
a norm backward's two sums per row in one ``block_reduce2``, and segments run as parts
(``runtime.parts``), against eager torch in float64. The emulator checks the same kernels'
indexing without a GPU (tests/test_outer_reduction.py, tests/test_inner_outer.py,
tests/test_parts.py); this checks them where they run.
"""

from __future__ import annotations

import pytest
import torch

from fusecli.frontend import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.runtime.cupy_executor import cupy_available

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(cupy_available() is not None, reason=f"{cupy_available()}"),
]


def define(fd: FusionDefinition, x: torch.Tensor):
    return fd.define_tensor(sizes=list(x.shape), strides=list(x.stride()),
                            dtype=dt.from_torch(x.dtype))


def twice(fd: FusionDefinition, inputs: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    """The outputs of the first call (the full run) and of the second (the warm replay), each
    call's its own."""
    return [fd.execute(inputs) for _ in range(2)]


def close(actual: torch.Tensor, expected: torch.Tensor, rtol: float) -> None:
    torch.testing.assert_close(actual.double(), expected, rtol=rtol,
                               atol=rtol * max(1.0, expected.abs().max().item()))


@pytest.mark.parametrize(("shape", "dims", "dtype"), [
    ((8, 1024, 512), [1], torch.float32),  # rows split over blocks
    ((512, 64, 256), [1], torch.bfloat16),  # short rows, no split
    ((4, 96, 7, 40), [1, 2], torch.float16),
    ((3, 5, 3000, 24), [2], torch.float32),  # two leading kept dims, ragged column tiles
])
def test_middle_reductions_match_eager_torch(shape, dims, dtype) -> None:
    x = torch.randn(shape, device="cuda").to(dtype)
    with FusionDefinition() as fd:
        t = fd.ops.cast(define(fd, x), DataType.Float)
        fd.add_output(fd.ops.sum(t, dims=dims))
        var, mean = fd.ops.var_mean(t, dims=dims, correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    expected = x.double()
    for total, var, mean in twice(fd, [x]):
        close(total, expected.sum(dims), 1e-5)
        close(mean, expected.mean(dims), 1e-5)
        close(var, expected.var(dims), 1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_half_layer_norm_backward_with_float_statistics_matches_eager_torch(dtype) -> None:
    """dx, dw and db of [2048, 4096] rows (the float mean and rstd per row): the two row sums
    combined in one block_reduce2, dw and db summed over the blocks' partials 16 bytes of
    columns at a time."""
    rows, hidden = 2048, 4096
    grad, x = (torch.randn(rows, hidden, device="cuda").to(dtype) for _ in range(2))
    mean = torch.randn(rows, device="cuda") / 4
    rstd = torch.rand(rows, device="cuda") + 0.5
    weight = torch.randn(hidden, device="cuda").to(dtype)
    with FusionDefinition() as fd:
        g, xt, m, r, w = (define(fd, t) for t in (grad, x, mean, rstd, weight))
        g32, x32 = fd.ops.cast(g, DataType.Float), fd.ops.cast(xt, DataType.Float)
        full = [rows, hidden]
        x_hat = fd.ops.mul(fd.ops.sub(x32, fd.ops.broadcast_in_dim(m, full, [0])),
                           fd.ops.broadcast_in_dim(r, full, [0]))
        gw = fd.ops.mul(g32, fd.ops.broadcast_in_dim(fd.ops.cast(w, DataType.Float), full, [1]))
        s1 = fd.ops.broadcast_in_dim(fd.ops.sum(gw, dims=[1]), full, [0])
        s2 = fd.ops.broadcast_in_dim(fd.ops.sum(fd.ops.mul(gw, x_hat), dims=[1]), full, [0])
        dx = fd.ops.mul(fd.ops.broadcast_in_dim(r, full, [0]), fd.ops.sub(
            fd.ops.sub(gw, fd.ops.div(s1, fd.define_scalar(float(hidden)))),
            fd.ops.mul(x_hat, fd.ops.div(s2, fd.define_scalar(float(hidden))))))
        fd.add_output(fd.ops.cast(dx, dt.from_torch(dtype)))
        fd.add_output(fd.ops.sum(fd.ops.mul(g32, x_hat), dims=[0]))
        fd.add_output(fd.ops.sum(g32, dims=[0]))
    g64, x64, w64 = grad.double(), x.double(), weight.double()
    xh = (x64 - mean.double()[:, None]) * rstd.double()[:, None]
    gw64 = g64 * w64
    dx64 = rstd.double()[:, None] * (gw64 - gw64.mean(1, keepdim=True)
                                     - xh * (gw64 * xh).mean(1, keepdim=True))
    for dx_out, dw_out, db_out in twice(fd, [grad, x, mean, rstd, weight]):
        close(dx_out, dx64, 2e-2)  # stored in half: a few units in its last place
        close(dw_out, (g64 * xh).sum(0), 1e-4)
        close(db_out, g64.sum(0), 1e-4)


def test_a_half_rms_norm_returning_its_float_inverse_matches_eager_torch() -> None:
    """8 lanes of half beside an expanded float output written once per row."""
    x = torch.randn(4096, 2048, device="cuda").half()
    with FusionDefinition() as fd:
        xf = fd.ops.cast(define(fd, x), DataType.Float)
        total = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1])
        inv = fd.ops.rsqrt(fd.ops.add(fd.ops.broadcast_in_dim(
            fd.ops.div(total, fd.define_scalar(2048.0)), [4096, 2048], [0]),
            fd.define_scalar(1e-6)))
        fd.add_output(fd.ops.cast(fd.ops.mul(xf, inv), DataType.Half))
        fd.add_output(inv)
    x64 = x.double()
    inv64 = torch.rsqrt(x64.pow(2).mean(1, keepdim=True) + 1e-6).expand(4096, 2048)
    for out, inv_out in twice(fd, [x]):
        assert inv_out.shape == (4096, 2048) and inv_out.stride(1) == 0
        close(inv_out, inv64, 1e-5)
        close(out, x64 * inv64, 2e-3)


def _slice_sum_and_scale(fd: FusionDefinition, x) -> None:
    part = fd.ops.cast(fd.ops.slice(x, [0, 0, 0], [1, 2048, 4096]), DataType.Float)
    total = fd.ops.sum(fd.ops.mul(part, part), dims=[2])
    fd.add_output(fd.ops.rsqrt(fd.ops.add(fd.ops.div(total, 4096.0), 1e-5)))
    fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.cast(x, DataType.Float), 0.5),
                              DataType.BFloat16))


def _batch_norm(fd: FusionDefinition, x) -> None:
    xf = fd.ops.cast(x, DataType.Float)
    var, mean = fd.ops.var_mean(xf, dims=[0, 2, 3], correction=0)
    rstd = fd.ops.rsqrt(fd.ops.add(var, 1e-5))
    shape = [16, 64, 64, 64]
    y = fd.ops.mul(fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape, [1])),
                   fd.ops.broadcast_in_dim(rstd, shape, [1]))
    fd.add_output(fd.ops.cast(y, DataType.BFloat16))
    fd.add_output(mean)
    fd.add_output(rstd)


@pytest.mark.parametrize("case", ["slice_sum_and_scale", "batch_norm"])
def test_segments_without_a_kernel_of_their_own_run_as_parts(case) -> None:
    """An output off the reduction's loop; NCHW statistics of 64 channels of 65,536 with the
    normalization: no single kernel, so a reduction kernel and a pointwise one
    (``runtime.parts``), in the full run and in the warm replay."""
    from fusecli.runtime.segmented import execute_segmented
    from fusecli.segment.segmenter import segment_fusion

    shape = [1, 2048, 6144] if case == "slice_sum_and_scale" else [16, 64, 64, 64]
    x = torch.randn(shape, device="cuda").to(torch.bfloat16)
    with FusionDefinition() as fd:
        (_slice_sum_and_scale if case == "slice_sum_and_scale" else _batch_norm)(fd, define(fd, x))
    run = execute_segmented(segment_fusion(fd.fusion, [x]), [x], executor="cupy")
    assert [(s.executor, s.fallback) for s in run.segments] == [("cupy", None)]
    expected = x.double()
    for outputs in [run.outputs, *twice(fd, [x])]:
        if case == "slice_sum_and_scale":
            rstd, scaled = outputs
            part = expected[..., :4096]
            close(rstd, torch.rsqrt((part * part).sum(2) / 4096 + 1e-5), 1e-5)
            assert torch.equal(scaled, (x.float() * 0.5).to(torch.bfloat16))
        else:
            y, mean, rstd = outputs
            m = expected.mean((0, 2, 3))
            r = torch.rsqrt(expected.var((0, 2, 3), correction=0) + 1e-5)
            close(mean, m, 1e-5)
            close(rstd, r, 1e-4)
            close(y, (expected - m.view(1, -1, 1, 1)) * r.view(1, -1, 1, 1), 1e-2)
