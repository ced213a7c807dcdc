"""Integer division and remainder by zero, as a script meets them (nvFuser's test_integer_division
divides random integers, zeros among them): no crash, torch's answers wherever the divisor is not
0, and where it is, what nvFuser's CUDA kernels give (C leaves it undefined; PyTorch's CUDA tests
record the hardware's answer): every bit set, but 2**32 - 1 for an int64 dividend at least 0."""

from __future__ import annotations

import pytest
import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.reference import run_reference

TORCH_REFERENCE = {
    "div": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "mod": torch.fmod,
    "fmod": torch.fmod,
    "remainder": torch.remainder,
}
DTYPES = [(torch.int64, DataType.Int), (torch.int32, DataType.Int32)]


def _by_zero(dividend: torch.Tensor) -> torch.Tensor:
    if dividend.dtype == torch.int64:
        return torch.where(dividend >= 0, 4294967295, -1)
    return torch.full_like(dividend, -1)


@pytest.mark.parametrize(("torch_dtype", "dtype"), DTYPES)
@pytest.mark.parametrize("op", sorted(TORCH_REFERENCE))
def test_integer_division_by_zero_gives_cudas_answer_and_torchs_elsewhere(
    op, torch_dtype, dtype
):
    dividend = torch.tensor([7, -7, 0, 9, -9, 5, 2**20], dtype=torch_dtype)
    divisor = torch.tensor([0, 0, 0, 4, 4, -3, 0], dtype=torch_dtype)
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=dtype)
        b = fd.define_tensor(shape=[-1], dtype=dtype)
        fd.add_output(getattr(fd.ops, op)(a, b))
    (executed,) = fd.execute([dividend, divisor])
    (again,) = fd.execute([dividend, divisor])  # the warm path: the traced first run
    assert torch.equal(again, executed)
    (reference,) = run_reference(fd.fusion, [dividend, divisor]).outputs
    nonzero = divisor != 0
    expected = TORCH_REFERENCE[op](dividend[nonzero], divisor[nonzero])
    for result in (executed, reference):
        assert result.dtype == torch_dtype
        assert torch.equal(result[nonzero], expected)
        assert torch.equal(result[~nonzero], _by_zero(dividend[~nonzero]).to(torch_dtype))


def test_nvfusers_integer_division_test_runs_and_truediv_is_torchs():
    generator = torch.Generator().manual_seed(0)
    dividend = torch.randint(-9, 10, (1024,), generator=generator)
    divisor = torch.randint(-9, 10, (1024,), generator=generator)
    assert bool((divisor == 0).any())
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        t1 = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        fd.add_output(fd.ops.div(t0, t1))
        fd.add_output(fd.ops.truediv(t0, t1))
    quotient, true_quotient = fd.execute([dividend, divisor])
    nonzero = divisor != 0
    expected = torch.div(dividend[nonzero], divisor[nonzero], rounding_mode="trunc")
    assert torch.equal(quotient[nonzero], expected)
    torch.testing.assert_close(  # 0 / 0 is NaN on both sides
        true_quotient, torch.true_divide(dividend, divisor), rtol=0, atol=0, equal_nan=True
    )


def test_a_scalar_divisor_of_zero_divides_every_element_by_zero():
    dividend = torch.tensor([3, -3], dtype=torch.int64)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        fd.add_output(fd.ops.div(t0, fd.define_scalar(0, dtype=DataType.Int)))
    (result,) = fd.execute([dividend])
    assert result.tolist() == [4294967295, -1]
