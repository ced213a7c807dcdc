"""How far an executor's output may stray from eager torch, by dtype and reduction size.

The approach is nvFuser's (``csrc/validator_utils.cpp``, behind ``fd.validate`` and
``getValTolerances``): a tolerance depends on the output's dtype and on how many elements were
reduced to produce each output element, because rounding error accumulates along a reduction.
nvFuser tabulates that growth empirically (a randn sum in float32 against float64 is off by about
8e-6 for 4 elements and 3e-3 for 2**20: close to ``sqrt(n)``); fusecli uses closed forms instead,
so the numbers can be explained in one line.

Base tolerances, for an elementwise result (``reduction_size == 1``):

=====================================  ==========  ==========  ===================================
dtype                                  rtol        atol        where it comes from
=====================================  ==========  ==========  ===================================
float64                                1e-7        1e-7        torch.testing defaults
float32                                1.3e-6      1e-5        torch.testing defaults
float16                                1e-3        1e-5        torch.testing defaults
bfloat16                               1.6e-2      1e-5        torch.testing defaults
float8_e4m3fn, float8_e4m3fnuz         0.125       1.6e-2,     one ulp (``finfo.eps``); atol is
                                                   7.8e-3      ``finfo.smallest_normal``
float8_e5m2, float8_e5m2fnuz           0.25, .125  6.1e-5,     as above
                                                   3.1e-5
float8_e8m0fnu                         1.0         5.9e-39     as above (powers of two only)
complex32, complex64, complex128       as float16, float32, float64 (the real part's dtype)
bool, (u)int8/16/32/64                 0           0           exact
float4_e2m1fn_x2                       0           0           packed: compared bit for bit
=====================================  ==========  ==========  ===================================

For a reduction over ``n`` elements a non-exact tolerance grows:

- ``atol * sqrt(n)``: the magnitude of a sum of ``n`` terms of unit size, and the absolute rounding
  error riding on it, grow like a random walk; this matches nvFuser's measured table to within a
  factor of three, on the loose side.
- ``rtol * (1 + log2(n))``: a tree reduction (what GPU kernels and eager torch both do) rounds once
  per level, and there are ``log2(n)`` levels.

Exact dtypes stay exact whatever ``n`` is. ``rtol`` and ``atol`` given by the user replace the
computed values (and say so in ``source``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True, slots=True)
class Tolerance:
    """``|actual - expected| <= atol + rtol * |expected|`` counts as equal (``torch.allclose``)."""

    rtol: float
    atol: float
    source: str  # why these numbers: base table entry, reduction growth, user overrides

    @property
    def exact(self) -> bool:
        return self.rtol == 0.0 and self.atol == 0.0


@dataclass(frozen=True, slots=True)
class _Base:
    rtol: float
    atol: float
    origin: str


_TORCH_TESTING = "torch.testing default"
_EXACT = _Base(0.0, 0.0, "compared exactly")


def _one_ulp(dtype: torch.dtype) -> _Base:
    info = torch.finfo(dtype)
    return _Base(info.eps, info.smallest_normal, "one ulp, atol the smallest normal")


_BASE: dict[torch.dtype, _Base] = {
    torch.float64: _Base(1e-7, 1e-7, _TORCH_TESTING),
    torch.float32: _Base(1.3e-6, 1e-5, _TORCH_TESTING),
    torch.float16: _Base(1e-3, 1e-5, _TORCH_TESTING),
    torch.bfloat16: _Base(1.6e-2, 1e-5, _TORCH_TESTING),
    torch.float8_e4m3fn: _one_ulp(torch.float8_e4m3fn),
    torch.float8_e4m3fnuz: _one_ulp(torch.float8_e4m3fnuz),
    torch.float8_e5m2: _one_ulp(torch.float8_e5m2),
    torch.float8_e5m2fnuz: _one_ulp(torch.float8_e5m2fnuz),
    torch.float8_e8m0fnu: _one_ulp(torch.float8_e8m0fnu),
    torch.float4_e2m1fn_x2: _Base(0.0, 0.0, "packed, compared bit for bit"),
    torch.bool: _EXACT,
    torch.uint8: _EXACT,
    torch.uint16: _EXACT,
    torch.uint32: _EXACT,
    torch.uint64: _EXACT,
    torch.int8: _EXACT,
    torch.int16: _EXACT,
    torch.int32: _EXACT,
    torch.int64: _EXACT,
}

# A complex value is two reals of its component dtype; its error is judged like theirs.
_COMPLEX_PART: dict[torch.dtype, torch.dtype] = {
    torch.complex32: torch.float16,
    torch.complex64: torch.float32,
    torch.complex128: torch.float64,
}


def dtype_name(dtype: torch.dtype) -> str:
    """torch's short name for a dtype: ``bfloat16``, ``float32``, ``int64``."""
    return str(dtype).removeprefix("torch.")


def _base_for(dtype: torch.dtype) -> _Base:
    part = _COMPLEX_PART.get(dtype)
    if part is not None:
        base = _BASE[part]
        return _Base(base.rtol, base.atol, f"{base.origin} for {dtype_name(part)}")
    base = _BASE.get(dtype)
    if base is None:
        raise ValueError(
            f"fusecli.compare has no tolerance for dtype {dtype_name(dtype)}: "
            "it is not a dtype nvFuser produces"
        )
    return base


def _format_number(value: float) -> str:
    return f"{value:.2g}"


def tolerance_for(
    dtype: torch.dtype,
    reduction_size: int = 1,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    why_loose: str | None = None,
) -> Tolerance:
    """The tolerance for an output of ``dtype``, each element reducing ``reduction_size`` values.

    ``rtol`` / ``atol``, when given, override the computed value of that one bound;
    ``why_loose`` says why these tolerances serve where the analytic ones were asked for.
    """
    if reduction_size < 0:
        raise ValueError(f"reduction_size must be >= 0, got {reduction_size}")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (value >= 0.0 and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number >= 0, got {value}")

    base = _base_for(dtype)
    computed_rtol, computed_atol = base.rtol, base.atol
    parts = [f"{dtype_name(dtype)}: {base.origin}"]
    if why_loose is not None:
        parts.insert(0, why_loose)
    # An empty reduction (size 0) produces the identity without rounding: treat it as elementwise.
    elements = max(reduction_size, 1)
    if elements > 1 and not (base.rtol == 0.0 and base.atol == 0.0):
        atol_factor = math.sqrt(elements)
        rtol_factor = 1.0 + math.log2(elements)
        computed_atol *= atol_factor
        computed_rtol *= rtol_factor
        parts.append(
            f"reduction of {elements} elements: atol x{_format_number(atol_factor)} (sqrt n), "
            f"rtol x{_format_number(rtol_factor)} (1 + log2 n)"
        )
    if rtol is not None:
        computed_rtol = float(rtol)
        parts.append("rtol set by the user")
    if atol is not None:
        computed_atol = float(atol)
        parts.append("atol set by the user")
    return Tolerance(rtol=computed_rtol, atol=computed_atol, source="; ".join(parts))
