"""Random draws at nvFuser's test sizes (test_uniform_range: 2**29 values a run) are whole-tensor
torch work, pass after pass, and still nvFuser's values element for element: across pass
boundaries, and where a fused multiply-add's float64 sum lands on a float32 tie."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fusecli.ir import rng
from fusecli.ir.rng import random_tensor


class _CountingTorchCalls(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("kind", ["uniform", "normal"])
def test_a_draw_is_whole_tensor_work_not_python_work_per_element(kind, dtype):
    # A pass of 2**15 elements is a fixed couple of hundred torch calls (a Philox round is
    # a dozen), so a million draws make a few thousand calls, each over thousands of elements.
    with _CountingTorchCalls() as counter:
        values = random_tensor(kind, (1 << 20,), dtype, -1.5, 3.7, 7, 3)
    assert values.shape == (1 << 20,) and values.dtype == dtype
    assert counter.calls < (1 << 20) // 100


def _f32(value: float) -> float:
    return float(np.float32(value))


def _uniform_float(seed: int, offset: int, index: int, low: float, high: float) -> float:
    """Element ``index`` of a Float uniform draw, from its Philox word, with one rounding."""
    word = int(rng.philox(seed, torch.tensor([index // 4]), offset)[0, index % 4])
    u = _f32(_f32(word) * _f32(2.0**-32) + _f32(2.0**-33))
    u = 0.0 if u == 1.0 else u
    exact = Fraction(_f32(_f32(high) - _f32(low))) * Fraction(u) + Fraction(_f32(low))
    return _f32(float(exact))  # exact + round once: what fmaf gives (no tie at float32 here)


def test_elements_at_pass_boundaries_are_nvfusers():
    seed, offset, low, high = 2**40 + 9, 11, -1.5, 2.25
    per_pass = rng._PASS["cpu"]  # Float: four elements a Philox call
    numel = 2 * per_pass + 5
    values = random_tensor("uniform", (numel,), torch.float32, low, high, seed, offset)
    for index in (0, per_pass - 1, per_pass, per_pass + 1, 2 * per_pass, numel - 1):
        assert values[index].item() == _uniform_float(seed, offset, index, low, high), index


def test_a_float64_sum_on_a_float32_tie_still_rounds_once():
    # (2**23 + 1) 2**-11 * (2**24 - 2) = 2**36 - 2**-10, just below half a float32 ulp of c:
    # the float64 sum rounds up onto the tie, and ties-to-even would then round up again.
    a = torch.tensor([(2**23 + 1) * 2.0**-11])
    b = torch.tensor([2.0**24 - 2])
    c = torch.tensor([2.0**60 + 2.0**37])
    exact = Fraction(a.item()) * Fraction(b.item()) + Fraction(c.item())
    assert exact < Fraction(c.item()) + 2**36  # below the tie: rounds down to c
    assert (a.double() * b.double() + c.double()).float().item() != c.item()
    assert rng.fma_float(a, b, c).item() == c.item()
