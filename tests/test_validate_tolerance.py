"""``fd.validate`` grants what nvFuser's grants: tolerances grow with the values each output
element accumulates over, compounded through the fusion as nvFuser's ``ReductionSizeMapper``
counts them, and are never tighter than nvFuser's ``getTolerance``."""

import pytest
import torch

from fusecli.compare.reductions import nvfuser_tolerance, reduction_sizes
from fusecli.frontend import DataType as D
from fusecli.frontend import FusionDefinition


def _rmsnorm_linear(features: int, out_features: int):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, features], contiguity=[True, True], dtype=D.BFloat16)
        w = fd.define_tensor(shape=[out_features, features], contiguity=[True, True],
                             dtype=D.BFloat16)
        xf = fd.ops.cast(x, dtype=D.Float)
        ms = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=True)
        normed = fd.ops.mul(xf, fd.ops.rsqrt(fd.ops.div(ms, float(features))))
        fd.add_output(fd.ops.linear(fd.ops.cast(normed, dtype=D.BFloat16), w))
    return fd


def test_an_rmsnorm_feeding_a_linear_counts_both_reductions_as_nvfuser_does():
    fd = _rmsnorm_linear(256, 64)
    inputs = [torch.randn(8, 256, dtype=torch.bfloat16), torch.randn(64, 256, dtype=torch.bfloat16)]
    assert reduction_sizes(fd.fusion, inputs) == {0: 256}  # fusecli's: the largest one
    assert reduction_sizes(fd.fusion, inputs, compound=True) == {0: 256 * 256}


def test_validate_accepts_a_linear_of_a_differently_rounded_norm_as_nvfuser_does():
    """On a GPU the norm is computed by a kernel, its bfloat16 rounding differs from eager
    torch's at a few elements, and the linear over them moves some outputs by several ulps:
    nvFuser's validate accepts that (its tolerance for 65536 compounded values), so must
    fusecli's. A difference beyond nvFuser's tolerance still fails."""
    fd = _rmsnorm_linear(256, 64)
    torch.manual_seed(0)
    inputs = [torch.randn(8, 256, dtype=torch.bfloat16), torch.randn(64, 256, dtype=torch.bfloat16)]
    (exact,) = fd.execute(inputs)
    moved = exact.clone()
    moved[0, :4] += 1.0  # 16 ulps near 16.0; far outside bfloat16's torch.testing rtol
    fd.validate(inputs, reference_outputs=[moved])
    tolerance = nvfuser_tolerance(torch.bfloat16, 256 * 256)
    wrong = exact.clone()
    wrong[0, 0] += 3 * tolerance.atol
    with pytest.raises(AssertionError, match="output 0"):
        fd.validate(inputs, reference_outputs=[wrong])


def test_validate_stays_strict_on_elementwise_float32():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=D.Float)
        fd.add_output(fd.ops.exp(x))
    x = torch.linspace(-2, 2, 64)
    (out,) = fd.execute([x])
    fd.validate([x], reference_outputs=[out * (1 + 2e-7)])  # a rounding
    with pytest.raises(AssertionError, match="output 0"):
        fd.validate([x], reference_outputs=[out * (1 + 1e-4)])


@pytest.mark.parametrize("dtype, size, atol, rtol", [
    (torch.float32, 1, 1.68222e-06, 2.23704e-06),  # nvFuser's first two entries
    (torch.float32, 4096, 0.00012207, 1.2207e-06),  # the entry above 4096, rtol 1% of it
    (torch.float16, 5000, 0.250049, 0.00250049),  # 8192 is the first entry at least 5000
    (torch.bfloat16, 5000, 2.50049, 0.0250049),  # the half table, ten times
    (torch.bfloat16, 2**24, 3.99073 * 2 * 10, 3.99073 * 2 * 0.1),  # past the table: twice its end
    (torch.int32, 4096, 0.0, 0.0),
])
def test_nvfusers_lookup(dtype, size, atol, rtol):
    tolerance = nvfuser_tolerance(dtype, size)
    assert tolerance.atol == pytest.approx(atol) and tolerance.rtol == pytest.approx(rtol)
