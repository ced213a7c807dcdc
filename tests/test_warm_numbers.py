"""Numbers a warm run computes each call from scalar inputs read anew (``runtime.warm_numbers``):
written as Python arithmetic where that computes what the ATen entry does, checked against the
full run for values that stress it (signed zeros, infinities, NaN, float32 rounding, large
ints)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.runtime.segmented import execute, run_fusion


def _arithmetic() -> FusionDefinition:
    with FusionDefinition() as fd:
        a, b = fd.define_scalar(dtype=DataType.Double), fd.define_scalar(dtype=DataType.Double)
        i = fd.define_scalar(dtype=DataType.Int)
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        numbers = [fd.ops.mul(a, b), fd.ops.add(a, b), fd.ops.sub(a, b), fd.ops.neg(a),
                   fd.ops.cast(a, DataType.Float), fd.ops.cast(i, DataType.Double),
                   fd.ops.add(fd.ops.mul(i, i), i), fd.ops.div(a, b)]
        for number in numbers:
            fd.add_output(fd.ops.mul(x, number))
        fd.add_output(fd.ops.full(shape=[2], fill_value=fd.ops.mul(a, b),
                                  dtype=DataType.Double))
    return fd


VALUES = [0.5, -0.0, 3.0, 1e300, float("inf"), float("nan"), 1.0000001, 16777217.0]


@pytest.mark.parametrize("i", [3, -7, 2**31 + 5, 2**40 + 3, -(2**62)])
def test_numbers_of_each_calls_scalars_are_what_the_full_run_computes(i: int) -> None:
    fd = _arithmetic()
    x = torch.tensor([1.0, -2.0, 0.0])
    execute(fd.fusion, [0.5, 0.25, 1, x])  # compiles the replay
    for a, b in itertools.islice(itertools.product(VALUES, VALUES), 0, None, 3):
        got = execute(fd.fusion, [a, b, i, x])
        _, full = run_fusion(fd.fusion, [a, b, i, x])
        for number, (mine, theirs) in enumerate(zip(got, full.outputs, strict=True)):
            same = (mine == theirs) | (mine.isnan() & theirs.isnan())
            assert same.all(), (number, a, b, i, mine, theirs)
    (run,) = [r for r in fd.fusion.memo["warm"].values() if r is not None]
    assert "FLOAT32(" in run.source and " * " in run.source  # Python's own arithmetic
    assert math.isfinite(float(got[5][0])) or i == 0


def test_a_number_cast_to_float32_rounds_as_torch_does() -> None:
    from fusecli.runtime.warm_numbers import to_float32

    edge = [0.1, -0.0, 1e-46, 1.4e-45, 2.0**-149 * 1.5, 3.4028234663852886e38,
            3.4028235677973366e38, 3.4028235677973362e38, 1e39, -1e39, math.inf, -math.inf,
            math.nan, 16777217.0, 2**60 + 1]
    drawn = torch.randn(2000, dtype=torch.float64) * torch.logspace(-45, 38, 2000,
                                                                     dtype=torch.float64)
    for value in edge + drawn.tolist():
        expected = torch.tensor(value, dtype=torch.float64).to(torch.float32).item()
        got = to_float32(value)
        assert (math.isnan(got) and math.isnan(expected)) or (
            got == expected and math.copysign(1, got) == math.copysign(1, expected)), value
