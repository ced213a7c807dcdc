"""Kernel outputs with expanded broadcast dims: a buffer of size 1 along them, each value once.

nvFuser allocates such an output with stride 0 along its expanded dims and writes each distinct
value once; so do fusecli's kernels: the output's buffer (``KernelArg.shape``) is 1 along
them, only the threads whose loop index along each is 0 store it, and the runtime hands out
the buffer expanded to the logical shape. Every kernel family is run here on the CPU emulator
(``EmulatingExecutor``, outputs poisoned so that an element no thread stores shows), against
eager torch for the values and the ATen executor for the layout ``fd.execute`` returns.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from test_codegen import EmulatingExecutor, define, fusion_of, needs_gxx

from fusecli.codegen import ArgKind, Kernel, KernelArg
from fusecli.frontend import DataType
from fusecli.runtime import registry
from fusecli.runtime.segmented import SegmentRunner
from fusecli.segment.segmenter import segment_fusion


@pytest.fixture(autouse=True)
def _emulated_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FUSECLI_INJECT_FAULT", raising=False)
    monkeypatch.setattr(registry, "_made", {"cupy": EmulatingExecutor(poison=True)})


def _run(fd, inputs: list[torch.Tensor], executor: str):
    """The outputs as ``fd.execute`` returns them, each segment's scheduler, and the kernels."""
    segmented = segment_fusion(fd.fusion, inputs)
    runner = SegmentRunner(segmented, [x.clone() for x in inputs], executor=executor)
    schedulers, kernels = [], []
    for segment in segmented.segments:
        run = runner.run(segment)
        schedulers.append(segment.scheduler)
        if run.executor == "cupy":
            kernels.append(registry._made["cupy"].last_kernel)
    return runner.outputs(), schedulers, kernels


def _expanded_args(kernels: list[Kernel]) -> list[tuple[Kernel, KernelArg]]:
    return [(kernel, arg) for kernel in kernels for arg in kernel.args
            if arg.kind is ArgKind.OUTPUT and arg.logical_shape]


def _stores(kernel: Kernel, name: str) -> list[str]:
    """The source lines that write ``name``."""
    written = re.compile(rf"(^|[^\w]){name}\[[^\]]*\]\) = |(^|[ )]){name}\[[^\]]*\] = ")
    return [line.strip() for line in kernel.source.splitlines() if written.search(line)]


def _loops_over_buffer(kernel: Kernel, arg: KernelArg) -> bool:
    """Whether a loop of the kernel's runs over ``arg``'s buffer shape and stores it."""
    return any(shape == str(list(arg.shape)) and arg.name in names.split(", ")
               for shape, names in re.findall(r"loop (\[[^\]]*\]) \(([^)]*)\)",
                                              kernel.heuristics))


def _check(fd, inputs: list[torch.Tensor], eager: Callable, scheduler: str,
           exact: bool = True) -> list[tuple[Kernel, KernelArg]]:
    """Run on the emulated kernels: values as eager torch's, outputs laid out as the ATen
    executor gives them (expanded dims stride 0); every expanded output's buffer is small
    and each of its stores is guarded. Returns the kernels' expanded outputs."""
    outputs, schedulers, kernels = _run(fd, inputs, "cupy")
    assert scheduler in schedulers, schedulers
    expected_layouts, _, _ = _run(fd, inputs, "aten")
    for got, want, layout in zip(outputs, eager(*inputs), expected_layouts, strict=True):
        assert (got.shape, got.dtype, got.stride()) == (
            layout.shape, layout.dtype, layout.stride())
        if exact:
            assert torch.equal(got, want)
        elif got.dtype == torch.float32:  # sums of hundreds of values, in the kernel's order
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)
        else:
            torch.testing.assert_close(got, want)
    found = _expanded_args(kernels)
    assert found, "no kernel writes an expanded output"
    for kernel, arg in found:
        logical, buffer = arg.logical_shape, arg.shape
        assert len(logical) == len(buffer) and buffer != logical
        assert all(b in (1, size) for b, size in zip(buffer, logical))
        stores = _stores(kernel, arg.name)
        assert stores, kernel.source
        # each stored once: guarded to index 0 along the expanded dims, or in a loop over
        # the buffer itself
        assert (all(line.startswith("if (") for line in stores)
                or _loops_over_buffer(kernel, arg)), stores
    for got in outputs:
        expanded = [d for d, (size, stride) in enumerate(zip(got.shape, got.stride()))
                    if size > 1 and stride == 0]
        if expanded:
            assert got.untyped_storage().nbytes() < got.numel() * got.element_size()
    return found


def _exp_of_broadcast(fd, tensor, shape, dims):
    return fd.ops.exp(fd.ops.broadcast_in_dim(tensor, shape=shape, broadcast_dims=dims))


@needs_gxx
def test_pointwise_an_expanded_inner_dim_is_stored_by_lane_0_of_its_first_group() -> None:
    x, v = torch.randn(16, 64), torch.randn(16)

    def body(fd):
        a, b = define(fd, x), define(fd, v)
        e = fd.ops.broadcast_in_dim(fd.ops.mul(b, fd.define_scalar(2.0)), shape=[16, 64],
                                    broadcast_dims=[0])
        doubled = fd.ops.mul(e, fd.define_scalar(3.0))
        fd.add_output(fd.ops.add(a, doubled))
        fd.add_output(doubled)

    def eager(x, v):
        doubled = (v * 2.0 * 3.0)[:, None].expand(16, 64)
        return [x + doubled, doubled]

    ((kernel, arg),) = _check(fusion_of(body), [x, v], eager, "pointwise")
    assert arg.shape == (16, 1) and arg.logical_shape == (16, 64)
    # vectorized along the expanded dim: one scalar store, by lane 0
    (line,) = _stores(kernel, arg.name)
    assert re.fullmatch(rf"if \(i1 == 0\) {arg.name}\[i0\] = t\d+;", line), line


@needs_gxx
def test_pointwise_an_expanded_outer_dim_keeps_its_vector_store_for_the_first_row() -> None:
    x, w = torch.randn(16, 64), torch.randn(64)

    def body(fd):
        a, b = define(fd, x), define(fd, w)
        e = _exp_of_broadcast(fd, b, [16, 64], [1])
        fd.add_output(fd.ops.add(a, e))
        fd.add_output(e)

    ((kernel, arg),) = _check(fusion_of(body), [x, w],
                              lambda x, w: [x + w.exp(), w.exp().expand(16, 64)],
                              "pointwise", exact=False)
    assert arg.shape == (1, 64)
    (line,) = _stores(kernel, arg.name)
    assert line.startswith("if (i0 == 0) *reinterpret_cast<Vec<float, 4>*>"), line


@needs_gxx
def test_an_expanded_output_alone_in_a_pointwise_kernel() -> None:
    w = torch.randn(64)
    body = lambda fd: fd.add_output(_exp_of_broadcast(fd, define(fd, w), [16, 64], [1]))  # noqa: E731
    _check(fusion_of(body), [w], lambda w: [w.exp().expand(16, 64)], "pointwise", exact=False)


@needs_gxx
def test_an_rms_norm_stores_its_expanded_rstd_once_per_row() -> None:
    """The RMSNorm of the issue: rsqrt(mean + eps) broadcast over the row, an output."""
    rows, hidden = 64, 1024
    x = torch.randn(rows, hidden, dtype=torch.half)
    weight = torch.randn(hidden, dtype=torch.half)

    def body(fd):
        t0, t2 = define(fd, x), define(fd, weight)
        t1 = fd.ops.cast(t0, dtype=DataType.Float)
        mean = fd.ops.div(fd.ops.sum(fd.ops.mul(t1, t1), dims=[1]),
                          fd.define_scalar(float(hidden), dtype=DataType.Double))
        rstd = fd.ops.rsqrt(fd.ops.add(
            fd.ops.broadcast_in_dim(mean, shape=[rows, hidden], broadcast_dims=[0]),
            fd.define_scalar(1e-6, dtype=DataType.Double)))
        w = fd.ops.cast(fd.ops.broadcast_in_dim(t2, shape=[rows, hidden], broadcast_dims=[1]),
                        dtype=DataType.Float)
        fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.mul(t1, rstd), w), dtype=DataType.Half))
        fd.add_output(rstd)

    def eager(x, weight):
        rstd = torch.rsqrt(x.float().pow(2).mean(1, keepdim=True) + 1e-6)
        return [(x.float() * rstd * weight.float()).half(), rstd.expand(rows, hidden)]

    ((kernel, arg),) = _check(fusion_of(body), [x, weight], eager, "inner_persistent",
                              exact=False)
    assert arg.shape == (rows, 1)
    assert _stores(kernel, arg.name) == [f"if (thread == 0) {arg.name}[r0] = t9;"]


@needs_gxx
@pytest.mark.parametrize("keepdim", [True, False])
def test_a_reduction_s_broadcast_result_is_stored_once_per_row(keepdim: bool) -> None:
    x = torch.randn(16, 256)

    def body(fd):
        a = define(fd, x)
        if keepdim:
            summed = fd.ops.expand(fd.ops.sum(a, dims=[1], keepdim=True), [16, 256])
        else:
            summed = fd.ops.broadcast_in_dim(fd.ops.sum(a, dims=[1]), shape=[16, 256],
                                             broadcast_dims=[0])
        fd.add_output(fd.ops.mul(summed, fd.define_scalar(0.5)))

    ((_, arg),) = _check(fusion_of(body), [x],
                         lambda x: [(x.sum(1, keepdim=True) * 0.5).expand(16, 256)],
                         "reduction", exact=False)
    assert arg.shape == (16, 1)


@needs_gxx
def test_a_split_reduction_stores_an_expanded_whole_loop_output_once() -> None:
    """Batch norm's sums over N, H and W: few long rows, each split over many blocks; the
    per-channel scale it multiplies by is an output too, expanded over N, H and W."""
    shape = [8, 3, 33, 65]
    x, w = torch.randn(shape), torch.randn(3)

    def body(fd):
        a, b = define(fd, x), define(fd, w)
        scale = _exp_of_broadcast(fd, b, shape, [1])
        fd.add_output(fd.ops.sum(fd.ops.mul(a, scale), dims=[0, 2, 3]))
        fd.add_output(scale)

    def eager(x, w):
        scale = w.exp()[None, :, None, None].expand(shape)
        return [(x * scale).sum((0, 2, 3)), scale]

    ((kernel, arg),) = _check(fusion_of(body), [x, w], eager, "reduction", exact=False)
    assert arg.shape == (1, 3, 1, 1)
    assert kernel.heuristics.startswith("split-row reduction: ")


@needs_gxx
def test_an_outer_normalization_stores_its_column_sums_once() -> None:
    x = torch.randn(256, 32)

    def body(fd):
        a = define(fd, x)
        e = _exp_of_broadcast(fd, fd.ops.mul(fd.ops.sum(a, dims=[0]), fd.define_scalar(0.1)),
                              [256, 32], [1])
        fd.add_output(fd.ops.sub(a, e))
        fd.add_output(e)

    def eager(x):
        e = (x.sum(0) * 0.1).exp().expand(256, 32)
        return [x - e, e]

    ((_, arg),) = _check(fusion_of(body), [x], eager, "outer_persistent", exact=False)
    assert arg.shape == (1, 32)


@needs_gxx
def test_a_tiled_kernel_stores_an_expanded_output_from_its_first_tile_row() -> None:
    """An input transposed in memory: a tiled kernel. The segment is nvFuser's transpose
    one (its reference, chosen by nLogicalDims, is an add's output, not the expanded one)."""
    a0, b0, v = torch.randn(1024, 512).t(), torch.randn(512, 1024), torch.randn(1024)

    def body(fd):
        a, b, c = define(fd, a0), define(fd, b0), define(fd, v)
        e = _exp_of_broadcast(fd, c, [512, 1024], [1])
        fd.add_output(fd.ops.add(fd.ops.add(a, b), e))
        fd.add_output(e)

    ((kernel, arg),) = _check(fusion_of(body), [a0, b0, v],
                              lambda a, b, v: [a + b + v.exp(), v.exp().expand(512, 1024)],
                              "transpose", exact=False)
    assert "tile" in kernel.source and arg.shape == (1, 1024)
    assert all("row == 0" in line for line in _stores(kernel, arg.name))


@needs_gxx
def test_a_resize_kernel_stores_an_expanded_output_once() -> None:
    x, w = torch.randn(16, 64), torch.randn(68)

    def body(fd):
        a, b = define(fd, x), define(fd, w)
        e = _exp_of_broadcast(fd, b, [16, 68], [1])
        fd.add_output(fd.ops.add(fd.ops.pad(fd.ops.exp(a), [2, 2]), e))
        fd.add_output(e)

    def eager(x, w):
        e = w.exp().expand(16, 68)
        return [torch.nn.functional.pad(x.exp(), [2, 2]) + e, e]

    ((_, arg),) = _check(fusion_of(body), [x, w], eager, "resize", exact=False)
    assert arg.shape == (1, 68)


@needs_gxx
def test_a_norm_backward_stores_its_expanded_row_term_once_per_row() -> None:
    """inner_outer_persistent: a row sum broadcast over the row (an output), and a column sum."""
    rows, hidden = 256, 512
    inputs = [torch.randn(rows, hidden), torch.randn(rows, hidden), torch.rand(rows, 1) + 0.5,
              torch.randn(hidden)]

    def body(fd):
        g, x, r, w = (define(fd, t) for t in inputs)
        full = [rows, hidden]
        r_b = fd.ops.broadcast_in_dim(r, shape=full, broadcast_dims=[0, 1])
        x_hat = fd.ops.mul(x, r_b)
        gw = fd.ops.mul(g, fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1]))
        row_sum = fd.ops.broadcast_in_dim(fd.ops.sum(fd.ops.mul(gw, x_hat), dims=[1]),
                                          shape=full, broadcast_dims=[0])
        scaled = fd.ops.mul(row_sum, fd.define_scalar(1.0 / hidden))
        fd.add_output(fd.ops.mul(r_b, fd.ops.sub(gw, fd.ops.mul(x_hat, scaled))))
        fd.add_output(fd.ops.sum(fd.ops.mul(g, x_hat), dims=[0]))
        fd.add_output(scaled)

    def eager(g, x, r, w):
        x_hat, gw = x * r, g * w
        scaled = ((gw * x_hat).sum(1, keepdim=True) * (1.0 / hidden)).expand(rows, hidden)
        return [r * (gw - x_hat * scaled), (g * x_hat).sum(0), scaled]

    ((kernel, arg),) = _check(fusion_of(body), inputs, eager, "inner_outer_persistent",
                              exact=False)
    assert arg.shape == (rows, 1)
    assert _stores(kernel, arg.name) == [f"if (thread == 0) {arg.name}[r0] = t13;"]


@needs_gxx
def test_an_output_expanded_to_more_heads_is_computed_once_per_buffer_element() -> None:
    """As population member fuzz_469102188 under a profile without MarkAliasesPrepare (2024's:
    no segment_set cuts the expand off): a function of an input broadcast to 3 heads beside
    an output of the input's shape, in one kernel. One loop over the input's shape computes
    both; the expanded output's buffer is written where it is computed, not in a loop over the
    3 heads that stores one of them (and read the input 3 times)."""
    x = torch.randint(-3, 3, (2, 64, 128))

    def body(fd):
        a = define(fd, x)
        fd.add_output(fd.ops.broadcast_in_dim(fd.ops.logical_not(a), shape=[2, 3, 64, 128],
                                              broadcast_dims=[0, 2, 3]))
        fd.add_output(fd.ops.neg(a))

    fd = fusion_of(body)
    segmented = segment_fusion(fd.fusion, [x], profile="nvfuser-2024")
    assert [s.scheduler for s in segmented.segments] == ["pointwise"]
    runner = SegmentRunner(segmented, [x.clone()], executor="cupy")
    runner.run(segmented.segments[0])
    expanded, negated = runner.outputs()
    assert torch.equal(expanded, (x == 0)[:, None].expand(2, 3, 64, 128))
    assert torch.equal(negated, -x)
    ((kernel, arg),) = _expanded_args([registry._made["cupy"].last_kernel])
    assert arg.shape == (2, 1, 64, 128) and arg.logical_shape == (2, 3, 64, 128)
    loops = re.findall(r"loop (\[[^\]]*\])", kernel.heuristics)
    assert loops == ["[2, 1, 64, 128]"], kernel.heuristics  # not [2, 3, 64, 128]
    assert all(not line.startswith("if (") for line in _stores(kernel, arg.name))
