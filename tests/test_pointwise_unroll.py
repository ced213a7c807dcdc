"""Pointwise kernels that take several vector groups per thread per step (large tensors)."""

from __future__ import annotations

import pytest
import torch
from test_codegen import (
    check_on_emulator,
    define,
    fusion_of,
    kernels_of,
    needs_gxx,
    random_pointwise,
)

import fusecli.segment.heuristics as heuristics
from fusecli.codegen import Kernel


@pytest.fixture
def unrolled(monkeypatch):
    """Every pointwise segment unrolls, however small (the rule's threshold is 2**22)."""
    monkeypatch.setattr(heuristics, "UNROLL_FROM_GROUPS", 1)


def _dropout(x: torch.Tensor, residual: torch.Tensor):
    def body(fd):
        a, r = define(fd, x), define(fd, residual)
        keep = fd.ops.lt(fd.ops.rand_like(a), fd.define_scalar(0.9))
        dropped = fd.ops.where(keep, a, fd.define_scalar(0.0))
        fd.add_output(fd.ops.add(fd.ops.mul(dropped, fd.define_scalar(1 / 0.9)), r))
    return fusion_of(body)


def test_large_tensors_unroll_and_small_ones_do_not() -> None:
    small = [torch.randn(64, 32)]
    (_, kernel), = kernels_of(fusion_of(lambda fd: fd.add_output(
        fd.ops.exp(define(fd, small[0])))).fusion, small)
    assert isinstance(kernel, Kernel) and kernel.params.endswith("unroll=1)")
    assert "#pragma unroll" not in kernel.source


@needs_gxx
def test_an_unrolled_kernel_covers_every_element_once(unrolled) -> None:
    for shape in ([3, 1000], [7, 33], [1, 8], [2048]):  # tails past the last full step
        x = torch.randn(shape)
        fd = fusion_of(lambda fd: fd.add_output(fd.ops.sigmoid(define(fd, x))))  # noqa: B023
        (_, kernel), = kernels_of(fd.fusion, [x])
        assert "#pragma unroll" in kernel.source and kernel.block == (128, 1, 1)
        assert check_on_emulator(fd.fusion, [x]) == 1


@needs_gxx
def test_an_unrolled_dropout_draws_the_same_numbers(unrolled) -> None:
    x, residual = torch.randn(40, 72).bfloat16(), torch.randn(40, 72).bfloat16()
    fd = _dropout(x, residual)
    (_, kernel), = kernels_of(fd.fusion, [x, residual])
    assert "for (int group_u = 0; group_u < 4; ++group_u)" in kernel.source  # 4 with Philox
    assert check_on_emulator(fd.fusion, [x, residual]) == 1


@needs_gxx
@pytest.mark.parametrize("seed", range(6))
def test_random_unrolled_pointwise_fusions_match_the_reference(unrolled, seed: int) -> None:
    fd, inputs = random_pointwise(seed)
    check_on_emulator(fd.fusion, inputs)


@needs_gxx
def test_one_byte_types_move_sixteen_lanes_per_access() -> None:
    """Bool kernels take 16 lanes (128 bits) per access, as nvFuser vectorizes 1-byte types
    (128 bits over the widest type), or fewer where the row does not divide; values as
    eager torch's."""
    for shape, lanes in (([24, 80], 16), ([3, 40], 8)):
        a, b = torch.rand(shape) > 0.5, torch.rand(shape) > 0.3
        fd = fusion_of(lambda fd: fd.add_output(fd.ops.logical_and(  # noqa: B023
            fd.ops.logical_not(define(fd, a)), define(fd, b))))  # noqa: B023
        (_, kernel), = kernels_of(fd.fusion, [a, b])
        assert f"vectorize={lanes}," in kernel.params
        assert f"Vec<bool, {lanes}>" in kernel.source
        assert check_on_emulator(fd.fusion, [a, b]) == 1
