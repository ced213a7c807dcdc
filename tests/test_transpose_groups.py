"""The tiled (transpose) kernel stores both groups of outputs coalesced.

An input transposed relative to the loop is read a tile at a time with consecutive threads
along its contiguous dim (``across``) and read back from shared memory along the loop's
innermost dim. As nvFuser's transpose scheduler (csrc/scheduler/transpose.cpp: one group of
tensors with the reference's inner dim, one with the other), an output laid out like that input
is computed and stored in the read phase, with consecutive threads along its own contiguous dim;
the other outputs are stored after the tile is read back. Each case runs as ``fd.execute`` does
with the CPU emulator standing in for the GPU (outputs poisoned first), against eager torch;
the kernel's source shows which thread stores what.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from test_codegen import EmulatingExecutor, check_on_emulator, define, fusion_of, needs_gxx

from fusecli.codegen import ArgKind, Kernel
from fusecli.frontend import DataType
from fusecli.runtime import registry
from fusecli.runtime.segmented import SegmentRunner
from fusecli.segment.candidate import FusionGraph
from fusecli.segment.segmenter import segment_fusion

pytestmark = needs_gxx


@pytest.fixture(autouse=True)
def _emulated_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FUSECLI_INJECT_FAULT", raising=False)
    monkeypatch.setattr(registry, "_made", {"cupy": EmulatingExecutor(poison=True)})


def _run(fd, inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[Kernel]]:
    """The outputs as ``fd.execute`` returns them with ``--executor cupy``, and the kernels."""
    segmented = segment_fusion(fd.fusion, inputs)
    runner = SegmentRunner(segmented, [x.clone() for x in inputs], executor="cupy")
    kernels = []
    for segment in segmented.segments:
        if runner.run(segment).executor == "cupy":
            kernels.append(registry._made["cupy"].last_kernel)
    return runner.outputs(), kernels


def _store_terms(kernel: Kernel, shape: tuple[int, ...]) -> list[list[str]]:
    """The terms of the index of each store to the output buffer of ``shape``."""
    (name,) = [arg.name for arg in kernel.args
               if arg.kind is ArgKind.OUTPUT and tuple(arg.shape) == shape]
    stores = re.findall(rf"(?<![\w]){name}\[([^\]]*)\] = ", kernel.source)
    assert stores, kernel.source
    return [index.split(" + ") for index in stores]


def _assert_coalesced(kernel: Kernel, shape: tuple[int, ...]) -> None:
    """Consecutive threads (``column``) store consecutive elements of the buffer."""
    for terms in _store_terms(kernel, shape):
        assert "column" in terms, f"{terms}\n{kernel.source}"


# Per dtype: the permuted output's value and the input-layout output's value, in the fusion
# (fd, x) and in eager torch (x).
OPS: dict[torch.dtype, tuple[Callable, Callable, Callable, Callable]] = {
    torch.int64: (  # as p29: |x| - x, and -x < |x| - x
        lambda fd, x: fd.ops.sub(fd.ops.abs(x), x),
        lambda fd, x: fd.ops.lt(fd.ops.neg(x), fd.ops.sub(fd.ops.abs(x), x)),
        lambda x: x.abs() - x,
        lambda x: -x < x.abs() - x,
    ),
    torch.float32: (
        lambda fd, x: fd.ops.exp(x),
        lambda fd, x: fd.ops.mul(fd.ops.tanh(x), fd.define_scalar(3.0)),
        torch.exp,
        lambda x: torch.tanh(x) * 3.0,
    ),
    torch.bool: (
        lambda fd, x: fd.ops.logical_not(x),
        lambda fd, x: fd.ops.logical_not(x),
        torch.logical_not,
        torch.logical_not,
    ),
    torch.bfloat16: (
        lambda fd, x: fd.ops.cast(fd.ops.tanh(fd.ops.cast(x, DataType.Float)),
                                  DataType.BFloat16),
        lambda fd, x: fd.ops.cast(fd.ops.exp(fd.ops.cast(x, DataType.Float)),
                                  DataType.BFloat16),
        lambda x: torch.tanh(x.float()).bfloat16(),
        lambda x: torch.exp(x.float()).bfloat16(),
    ),
}


def _input(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    generator = torch.Generator().manual_seed(sum(shape))
    if dtype is torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    if dtype is torch.int64:
        return torch.randint(-9, 9, shape, generator=generator)
    return torch.randn(shape, generator=generator).to(dtype)


def _check(fd, inputs: list[torch.Tensor], expected: list[torch.Tensor]) -> list[Kernel]:
    outputs, kernels = _run(fd, inputs)
    for got, want in zip(outputs, expected, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        if want.dtype.is_floating_point:
            torch.testing.assert_close(got, want)
        else:
            assert torch.equal(got, want)
    assert check_on_emulator(fd.fusion, inputs) == len(kernels) == 1
    return kernels


# (input shape, permutation, the tile edge or None where no tile divides the transposed dims)
LAYOUTS = [
    ((64, 128), [1, 0], 64),
    ((96, 160), [1, 0], 32),
    ((40, 72), [1, 0], None),
    ((2, 64, 96), [2, 0, 1], 32),  # as p29
    ((3, 128, 64), [2, 0, 1], 64),
    ((2, 20, 48), [2, 0, 1], None),
]


@pytest.fixture
def row_major_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fusion outputs laid out row-major (no ``output_orders``), as a transpose segment's are:
    nvFuser's AllocationDomainPass gives a permuted view's function the input's order, and a
    pointwise segment then loops in it with no tile at all
    (``test_an_ordered_output_is_written_by_a_loop_in_its_order``)."""
    monkeypatch.setattr(FusionGraph, "output_orders", property(lambda self: {}))


@pytest.mark.usefixtures("row_major_outputs")
@pytest.mark.parametrize("dtype", list(OPS), ids=str)
@pytest.mark.parametrize("shape, dims, tile", LAYOUTS, ids=str)
def test_an_output_in_the_inputs_layout_is_stored_as_read(shape, dims, tile, dtype) -> None:
    permuted, same, eager_permuted, eager_same = OPS[dtype]
    x = _input(shape, dtype)

    def body(fd):
        a = define(fd, x)
        fd.add_output(permuted(fd, fd.ops.permute(a, dims)))  # first: the loop's reference
        fd.add_output(same(fd, a))

    expected = [eager_permuted(x.permute(dims)), eager_same(x)]
    (kernel,) = _check(fusion_of(body), [x], expected)
    if tile is None:
        assert "tile" not in kernel.source
        return
    tile = 32 if dtype is torch.int64 else tile  # 64 x 65 int64s would pass 32 KiB
    assert f"tiles of {tile}x{tile}" in kernel.heuristics
    _assert_coalesced(kernel, tuple(expected[0].shape))
    _assert_coalesced(kernel, tuple(x.shape))
    assert "stored as read" in kernel.heuristics


@pytest.mark.parametrize("dtype", list(OPS), ids=str)
@pytest.mark.parametrize("shape, dims, tile", LAYOUTS, ids=str)
def test_an_ordered_output_is_written_by_a_loop_in_its_order(shape, dims, tile, dtype) -> None:
    """The same fusions as nvFuser lays them out: the function of the permuted view is an
    output in the input's order, so the pointwise loop runs in that order (population member
    fuzz_436829705: a column-major input and output, read and written along the rows): every
    store and load coalesced, no tile."""
    permuted, same, eager_permuted, eager_same = OPS[dtype]
    x = _input(shape, dtype)

    def body(fd):
        a = define(fd, x)
        fd.add_output(permuted(fd, fd.ops.permute(a, dims)))
        fd.add_output(same(fd, a))

    expected = [eager_permuted(x.permute(dims)), eager_same(x)]
    (kernel,) = _check(fusion_of(body), [x], expected)
    assert "tile" not in kernel.source and kernel.heuristics.startswith("pointwise: loop "
                                                                       f"{list(shape)} ")
    if "groups of 1;" not in kernel.heuristics:  # both outputs and the input move in vectors
        accesses = kernel.heuristics.rsplit("16-byte accesses: ", 1)[1].split(", ")
        assert len(accesses) == 3, kernel.heuristics


@pytest.mark.usefixtures("row_major_outputs")
def test_a_tensor_broadcast_along_both_tile_dims_and_a_scalar_are_read_as_read() -> None:
    x, scale = _input((2, 64, 96), torch.float32), _input((2, 1, 1), torch.float32)

    def body(fd):
        a, s = define(fd, x), define(fd, scale)
        fd.add_output(fd.ops.exp(fd.ops.permute(a, [2, 0, 1])))
        fd.add_output(fd.ops.add(fd.ops.mul(a, s), fd.define_scalar(0.5)))

    (kernel,) = _check(fusion_of(body), [x, scale],
                       [x.exp().permute(2, 0, 1), x * scale + 0.5])
    _assert_coalesced(kernel, (2, 64, 96))
    assert "stored as read" in kernel.heuristics


def test_an_output_reading_a_tensor_along_the_inner_dim_stays_after_the_tile() -> None:
    """Read where the staged input is, ``y`` (contiguous along the loop's inner dim) would be
    transposed itself: the output keeps the second phase."""
    x, y = _input((64, 96), torch.float32), _input((96, 64), torch.float32)

    def body(fd):
        a, b = define(fd, x), define(fd, y)
        fd.add_output(fd.ops.add(fd.ops.permute(a, [1, 0]), b))
        fd.add_output(fd.ops.mul(a, fd.ops.permute(b, [1, 0])))

    (kernel,) = _check(fusion_of(body), [x, y], [x.t() + y, x * y.t()])
    assert "tile" in kernel.source and "stored as read" not in kernel.heuristics
    assert all("column" not in terms for terms in _store_terms(kernel, (64, 96)))
    _assert_coalesced(kernel, (96, 64))


def test_a_function_of_a_permuted_view_is_laid_out_as_the_input() -> None:
    """As v22: a permuted view of the input and a function of it. nvFuser's
    AllocationDomainPass gives the computed output the input's order (the view is the input's
    memory): its kernel writes it as it reads the input, with no tile, and fd.execute returns
    it with the input's strides."""
    x = _input((64, 128), torch.bfloat16)

    def body(fd):
        t = fd.ops.permute(define(fd, x), [1, 0])
        fd.add_output(t)
        fd.add_output(fd.ops.cast(fd.ops.tanh(fd.ops.cast(t, DataType.Float)),
                                  DataType.BFloat16))

    (kernel,) = _check(fusion_of(body), [x], [x.t(), torch.tanh(x.t().float()).bfloat16()])
    assert "tile_" not in kernel.source
    (out,) = [arg for arg in kernel.args if arg.kind is ArgKind.OUTPUT]
    assert out.shape == (128, 64) and out.strides == (1, 128)
    outputs, _ = _run(fusion_of(body), [x])
    assert outputs[1].stride() == (1, 128) == outputs[0].stride()


@pytest.mark.parametrize("executor", ["cupy", "aten"])
def test_a_permuted_output_computed_from_an_input_has_the_inputs_order(executor) -> None:
    """As population member fuzz_512423803: ``cast(permute(|x| - x))`` next to an output in
    the input's layout. Its buffer takes the input's order (AllocationDomainPass): written as
    the input is read, returned with those strides, on generated kernels and on ATen alike."""
    x = _input((2, 64, 96), torch.int64)

    def body(fd):
        a = define(fd, x)
        t = fd.ops.sub(fd.ops.abs(a), a)
        fd.add_output(fd.ops.lt(fd.ops.neg(a), t))
        fd.add_output(fd.ops.cast(fd.ops.permute(t, [2, 0, 1]), DataType.Float))

    fd = fusion_of(body)
    segmented = segment_fusion(fd.fusion, [x])
    runner = SegmentRunner(segmented, [x.clone()], executor=executor)
    for segment in segmented.segments:
        runner.run(segment)
    less, permuted = runner.outputs()
    assert torch.equal(less, -x < x.abs() - x)
    assert torch.equal(permuted, (x.abs() - x).permute(2, 0, 1).float())
    assert permuted.shape == (96, 2, 64) and permuted.stride() == (1, 64 * 96, 96)


def test_a_reduction_writes_an_ordered_output_row_major() -> None:
    """As population member fuzz_967576896: a reduction segment that also outputs a function
    of an input in a permuted layout. Its loop is laid out for the reduction, so the output is
    written row-major there (``KernelContext.output_order``: only pointwise and resize kernels
    store in the input's order), with the same values."""
    x = _input((64, 96), torch.float32).t()  # [96, 64], dim 0 innermost

    def body(fd):
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float,
                             stride_order=[0, 1])
        fd.add_output(fd.ops.neg(a))
        fd.add_output(fd.ops.sum(a, dims=[1]))

    fd = fusion_of(body)
    assert fd.fusion.outputs[0].value.uid in segment_fusion(fd.fusion, [x]).segments[
        0].candidate.graph.output_orders  # nvFuser's order: the input's
    (kernel,) = _check(fd, [x], [-x, x.sum(1)])
    assert kernel.name.startswith("fusecli_reduction")
    assert all(arg.strides == () for arg in kernel.args if arg.kind is ArgKind.OUTPUT)
    outputs, _ = _run(fd, [x])
    assert outputs[0].is_contiguous()


def test_an_output_expanded_along_the_inner_dim_loops_over_its_buffer() -> None:
    """The only output is expanded along the loop's inner dim: the loop is its buffer's,
    [512, 1], each element computed once and stored in turn; no tile (it was a tiled loop over
    [512, 1024] whose stores were guarded to the first column)."""
    v = _input((512,), torch.float32)

    def body(fd):
        e = fd.ops.expand(fd.ops.broadcast(define(fd, v), [False, True]), [512, 1024])
        fd.add_output(fd.ops.exp(e))

    (kernel,) = _check(fusion_of(body), [v], [v.exp()[:, None].expand(512, 1024)])
    assert "loop [512, 1] (" in kernel.heuristics and "tile" not in kernel.heuristics
    assert "__shared__" not in kernel.source and "__syncthreads" not in kernel.source
    # consecutive threads take consecutive groups, each stores its own element, unguarded
    assert re.search(r"^ *T\d+\[i0\] = ", kernel.source, re.MULTILINE), kernel.source


@pytest.mark.parametrize("packed", [2, 4])
def test_a_small_contiguous_dim_is_read_with_the_next(packed: int) -> None:
    """An input laid out [packed, 64, 96] with strides (1, packed, 64 * packed) (population
    member fuzz_469102188's layout): no tile divides its contiguous dim, so the next one,
    packed right after it, takes the tile, and the tiles walk the small dim first, so that
    the blocks reading one stretch of memory run side by side. It was an untiled loop."""
    x = _input((96, 64, packed), torch.float32).permute(2, 1, 0)
    assert x.stride() == (1, packed, 64 * packed)
    y = _input((packed, 64, 96), torch.float32)  # row-major: the output is too

    def body(fd):
        t = define(fd, x)
        fd.add_output(fd.ops.add(fd.ops.mul(t, fd.ops.abs(t)), define(fd, y)))

    (kernel,) = _check(fusion_of(body), [x, y], [x * x.abs() + y])
    assert "tiles of 32x32 over dims 1 and 2" in kernel.heuristics, kernel.heuristics
    assert "__shared__" in kernel.source
    _assert_coalesced(kernel, (packed, 64, 96))
    # the tile's first dim-0 coordinate varies fastest with the tile number
    assert re.search(r"i0 = \(?tile % " + str(packed), kernel.source), kernel.source


def test_a_larger_contiguous_dim_is_not_packed() -> None:
    """A contiguous dim of 8 elements is no small one: no tile divides it, and the kernel is
    the untiled loop."""
    x = _input((96, 64, 8), torch.float32).permute(2, 1, 0)

    y = _input((8, 64, 96), torch.float32)

    def body(fd):
        t = define(fd, x)
        fd.add_output(fd.ops.sub(define(fd, y), t))

    (kernel,) = _check(fusion_of(body), [x, y], [y - x])
    assert "tile" not in kernel.heuristics


def test_per_channel_inputs_are_not_staged_and_do_not_halve_the_lanes() -> None:
    """A batch norm's normalizing pass over bf16 [N, C, H, W] reads float [C] mean and inverse
    deviation and bf16 [C] weight and bias: each constant along the contiguous W, a warp reads
    one address of them. They take no tile (the corpus's x_batchnorm_fwd_outer_persistent was
    tiled 32x32 for them alone) and the float ones leave the loop its 8 bf16 lanes, 16 bytes an
    access, as nvFuser vectorizes only the tensors with the reference's inner dim."""
    x = _input((4, 32, 8, 64), torch.bfloat16)
    mean, invstd = _input((32,), torch.float32), _input((32,), torch.float32).abs()
    weight, bias = _input((32,), torch.bfloat16), _input((33,), torch.bfloat16)[1:]

    def body(fd):
        t, m, s = define(fd, x), define(fd, mean), define(fd, invstd)
        w, b = define(fd, weight), define(fd, bias)

        def channel(v):
            return fd.ops.broadcast_in_dim(v, shape=list(x.shape), broadcast_dims=[1])

        normed = fd.ops.mul(fd.ops.sub(fd.ops.cast(t, DataType.Float), channel(m)), channel(s))
        scaled = fd.ops.add(fd.ops.mul(normed, fd.ops.cast(channel(w), DataType.Float)),
                            fd.ops.cast(channel(b), DataType.Float))
        fd.add_output(fd.ops.cast(scaled, DataType.BFloat16))

    def per_channel(v):
        return v.float()[None, :, None, None]

    want = ((x.float() - per_channel(mean)) * per_channel(invstd) * per_channel(weight)
            + per_channel(bias)).to(torch.bfloat16)
    (kernel,) = _check(fusion_of(body), [x, mean, invstd, weight, bias], [want])
    assert "tile" not in kernel.heuristics and "__shared__" not in kernel.source
    assert "groups of 8" in kernel.heuristics, kernel.heuristics
