"""``pow`` by a constant exponent is lowered to products and roots (``codegen.powers``).

nvFuser writes ``x ** 1, 2, 3`` as products (``genPowerWithMul``, csrc/codegen.cpp); eager
torch computes 0, 1, 2, 3, -1, -2, 0.5 and -0.5 with those very forms (ATen's
``pow_tensor_scalar``), and fusecli lowers 4 too, within the op's error bound. The kernel's
source must not call ``powf``; NVRTC compiles it; on the emulator it matches the float64
reference within the analytic bound on ordinary values, and eager torch bit for bit on special
values (NaN, ±inf, ±0, subnormals, ±max, negatives) wherever torch's result is special, and
within ``ULPS`` elsewhere, as ``tests/test_special_values.py`` checks ``pow`` by a tensor.
"""

from __future__ import annotations

import math

import pytest
import torch
from test_codegen import (
    EmulatingExecutor,
    check_on_emulator,
    fusion_of,
    kernels_of,
    needs_gxx,
    needs_nvrtc,
)
from test_special_values import run_kernels, special_values, wrong_elements

from fusecli.codegen import Kernel, nvrtc
from fusecli.codegen.powers import LOWERED_POWERS, lowered_power
from fusecli.frontend import FusionDefinition
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.reference import run_reference
from fusecli.runtime.cupy_executor import CupyExecutor, cupy_available

EXPONENTS = sorted(LOWERED_POWERS)
FLOAT_DTYPES = (DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16)


def _powers(dtype: DataType, exponents, scalar_dtype: DataType = DataType.Double):
    def body(fd: FusionDefinition) -> None:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
        for exponent in exponents:
            fd.add_output(fd.ops.pow(x, fd.define_scalar(exponent, dtype=scalar_dtype)))

    return fusion_of(body)


def _source(fd: FusionDefinition, inputs: list[torch.Tensor]) -> str:
    kernels = [kernel for _, kernel in kernels_of(fd.fusion, inputs)]
    assert kernels and all(isinstance(k, Kernel) for k in kernels), kernels
    return "\n".join(kernel.source for kernel in kernels)


def tanh_gelu(fd: FusionDefinition) -> None:
    """GELU's tanh approximation as Thunder writes it: 0.5 x (1 + tanh(c (x + 0.044715 x^3)))."""
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    xf = fd.ops.cast(x, DataType.Float)
    cube = fd.ops.pow(xf, fd.define_scalar(3.0, dtype=DataType.Double))
    inner = fd.ops.add(xf, fd.ops.mul(cube, fd.define_scalar(0.044715, dtype=DataType.Double)))
    scaled = fd.ops.mul(inner, fd.define_scalar(math.sqrt(2 / math.pi), dtype=DataType.Double))
    half = fd.ops.mul(xf, fd.define_scalar(0.5, dtype=DataType.Double))
    one = fd.define_scalar(1.0, dtype=DataType.Double)
    fd.add_output(fd.ops.cast(fd.ops.mul(half, fd.ops.add(fd.ops.tanh(scaled), one)),
                              DataType.BFloat16))


# -- the source ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double])
def test_lowered_exponents_leave_no_pow_call_in_the_kernel(dtype: DataType) -> None:
    source = _source(_powers(dtype, EXPONENTS), [torch.randn(256, dtype=dt.to_torch(dtype))])
    assert "pow(" not in source and "powf(" not in source, source
    f = "f" if dtype is DataType.Float else ""
    assert f"sqrt{f}(" in source and f"rsqrt{f}(" in source


def test_an_integer_exponent_scalar_is_lowered_too() -> None:
    source = _source(_powers(DataType.Float, [2, 3], DataType.Int), [torch.randn(256)])
    assert "powf(" not in source


def test_other_exponents_and_run_time_exponents_keep_pow() -> None:
    source = _source(_powers(DataType.Float, [2.5, 1.5, -3.0]), [torch.randn(256)])
    pow_lines = [line for line in source.splitlines() if line.endswith("// pow")]
    assert pow_lines and all("powf(" in line for line in pow_lines)

    def scalar_input(fd: FusionDefinition) -> None:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.pow(x, fd.define_scalar(dtype=DataType.Double)))

    assert "powf(" in _source(fusion_of(scalar_input), [torch.randn(256), 3.0])


def test_integer_pow_keeps_torchs_integer_power() -> None:
    assert lowered_power("x", 2.0, DataType.Int) is None
    assert lowered_power("x", 2.0, DataType.Float) == "(x * x)"
    assert lowered_power("x", 2.0, DataType.Double) == "(x * x)"
    assert "sqrtf(x) + 0.0f" in lowered_power("x", 0.5, DataType.Float)
    assert lowered_power("x", None, DataType.Float) is None  # known at run time only
    assert lowered_power("x", True, DataType.Float) is None


def test_tanh_gelu_has_no_powf_and_compiles() -> None:
    fd = fusion_of(tanh_gelu)
    x = torch.randn(512, 1024, dtype=torch.bfloat16)
    source = _source(fd, [x])
    assert "powf(" not in source
    pow_lines = [line for line in source.splitlines() if line.endswith("// pow")]
    assert pow_lines and all(line.count(" * ") == 2 for line in pow_lines)  # x * x * x
    if nvrtc.available():
        for _, kernel in kernels_of(fd.fusion, [x]):
            nvrtc.compile_source(kernel.source, kernel.name)


@needs_nvrtc
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=[d.name for d in FLOAT_DTYPES])
def test_lowered_powers_compile_with_nvrtc(dtype: DataType) -> None:
    fd = _powers(dtype, EXPONENTS)
    for _, kernel in kernels_of(fd.fusion, [torch.randn(1024).to(dt.to_torch(dtype))]):
        nvrtc.compile_source(kernel.source, kernel.name)


# -- the values ---------------------------------------------------------------------------------


@needs_gxx
def test_tanh_gelu_matches_the_float64_reference_within_its_bound() -> None:
    x = torch.randn(256, 512, dtype=torch.bfloat16) * 3
    assert check_on_emulator(fusion_of(tanh_gelu).fusion, [x]) == 1


@needs_gxx
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=[d.name for d in FLOAT_DTYPES])
def test_lowered_powers_match_the_float64_reference_within_their_bound(dtype) -> None:
    x = (torch.randn(4096) * 4).to(dt.to_torch(dtype))
    x[::7] = x[::7].abs()  # roots of positives as well as NaNs of negatives
    assert check_on_emulator(_powers(dtype, EXPONENTS).fusion, [x]) >= 1


def _special_disagreements(dtype: DataType, device: str, executor) -> list[str]:
    x = special_values(dtype)
    x = torch.cat([x, -x[1:], torch.tensor([-2.0, 3.0, -0.5, 0.25]).to(x.dtype)])
    fd = _powers(dtype, EXPONENTS)
    inputs = [x.to(device)]
    actual = run_kernels(fd.fusion, inputs, executor)
    expected = run_reference(fd.fusion, [x.clone().to(device)]).outputs
    found = []
    for exponent, got, want in zip(EXPONENTS, actual, expected, strict=True):
        assert got.dtype == want.dtype, (exponent, got.dtype, want.dtype)
        # pow is inexact (test_special_values.INEXACT): bit for bit where torch's result is
        # special, elsewhere within ULPS (glibc's pow(max, 0.5) is not sqrt's, correctly
        # rounded, say)
        wrong = wrong_elements(got.cpu(), want.cpu(), inexact=True)
        for row in torch.nonzero(wrong).flatten()[:4].tolist():
            found.append(f"pow({x[row].item()}, {exponent}) on {dtype.name}: kernel "
                         f"{got[row].item()}, torch {want[row].item()}")
    return found


@needs_gxx
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=[d.name for d in FLOAT_DTYPES])
def test_lowered_powers_of_special_values_are_eager_torchs_on_the_emulator(dtype) -> None:
    found = _special_disagreements(dtype, "cpu", EmulatingExecutor(poison=True))
    assert not found, "\n".join(found)


@pytest.mark.cuda
@pytest.mark.skipif(cupy_available() is not None, reason=f"{cupy_available()}")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=[d.name for d in FLOAT_DTYPES])
def test_lowered_powers_of_special_values_are_eager_torchs_on_the_gpu(dtype) -> None:
    found = _special_disagreements(dtype, "cuda", CupyExecutor(poison=True, synchronize=True))
    assert not found, "\n".join(found)
