"""Tolerances from error analysis: an executor's output against the float64 reference.

The ``loose`` tolerances (``fusecli.compare.tolerance``) judge an executor against eager torch
with a blanket rtol that grows with ``1 + log2(n)``: a bfloat16 output of a 512-element reduction
gets rtol 0.16, so a systematic error under 16% is invisible. The ``analytic`` tolerance judges
the executor against the float64 reference instead, with a bound on the error the executor can
actually make. Write ``u(T) = eps(T) / 2`` for the unit roundoff of dtype ``T`` (bfloat16 2^-8,
float16 2^-11, float32 2^-24, float64 2^-53). For output element ``i`` with float64 value
``r_i``, the executor's ``a_i`` matches when

    |a_i - r_i| <= rtol * |r_i| + atol,   where

    rtol = max(u(out), B)                 (B: the rounding budget, below)
    atol = (B - u(out) + G(n)) * S + tiny(out)
                                          (S = max |r| over the output, tiny = smallest normal)

- ``u(out)``: the output is rounded once, at the end, to its dtype: at most half an ulp at the
  value. Inputs are the same bits on both sides, so they carry no error.
- ``B`` = sum, over the exprs the output depends on, of each one's rounding
  (``fusecli.compare.budget``): ``K * u(f32)`` for a float32 op, ``u(T)`` for a cast to ``T``
  (a cast to bfloat16 in the middle of a fusion costs ``u(bf16)``), ``u(T)`` more for an op
  whose result is held in a narrower ``T``, nothing for data movement. The final rounding to
  the output's dtype is one of them. To first order relative errors add through products,
  quotients and well-conditioned functions: the forward error of a chain is the sum of its
  roundings.
  ``K = 4`` allows for float32 math functions that are within 2 ulp (CUDA's ``expf``, ``tanhf``,
  ``rsqrtf`` with fast-math off; libm on the CPU is within 1), for a fused multiply-add rounding
  once where the reference's formula rounds twice (or the reverse), and for a scalar constant
  rounded to float32.
- ``G(n)`` for a reduction (or matmul) of ``n`` elements: a tree (pairwise) sum of ``n`` terms,
  what GPU kernels and torch's cascade sum do, errs by at most ``ceil(log2 n) * u * sum |x|``
  (one rounding per level). ``sum |x|`` is not known after the fact; for terms of either sign it
  is about ``sqrt(n)`` times the result's scale (a random walk), so ``G(n) = K * ceil(log2 n) *
  sqrt(n) * u(f32)``, applied normwise (times ``S``) because a cancelling sum's error is absolute.
- ``S * (B - u(out))``: sums and differences of rounded values (``x - mean``) err absolutely, by the
  rounding of their largest operand, not relatively to a small result: the normwise term.

For a bfloat16 output ``rtol`` is about 2^-8 = 0.39% plus a few 1e-6 for float32 compute, so
a 1% systematic error in any op that reaches the output is caught; float32 outputs are caught
far below 1%. Integer and boolean outputs stay exact (against eager torch). ``--rtol`` and
``--atol`` replace the computed bounds, as for the loose tolerances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from fusecli.compare.tolerance import Tolerance, dtype_name

ULPS_PER_OP = 4  # K above: 2-ulp math functions, FMA contraction, float32 scalar constants


def unit_roundoff(dtype: torch.dtype) -> float:
    """Half an ulp relative to the value, ``eps / 2``; 0 for exact (integer, bool) dtypes."""
    if dtype.is_complex:
        dtype = torch.empty(0, dtype=dtype).real.dtype
    if not dtype.is_floating_point:
        return 0.0
    return torch.finfo(dtype).eps / 2


@dataclass(frozen=True, slots=True)
class ErrorBudget:
    """What an output's value went through: the summed roundings and the largest reduction."""

    roundings: float = 0.0  # B: the summed roundings of the exprs it depends on
    reduction_size: int = 1  # the largest reduction (or matmul K) feeding it


def reduction_growth(reduction_size: int, accumulator: torch.dtype = torch.float32) -> float:
    """``G(n)``: the tree-sum error of ``n`` terms, relative to the result's scale."""
    if reduction_size <= 1:
        return 0.0
    levels = math.ceil(math.log2(reduction_size))
    return ULPS_PER_OP * levels * math.sqrt(reduction_size) * unit_roundoff(accumulator)


def analytic_tolerance(
    dtype: torch.dtype,
    budget: ErrorBudget,
    scale: float,
    *,
    rtol: float | None = None,
    atol: float | None = None,
) -> Tolerance:
    """The bound for an output of ``dtype`` against the float64 reference (module docstring).

    ``scale`` is ``S``, the largest finite magnitude of the float64 reference's output.
    """
    output_roundoff = unit_roundoff(dtype)
    if output_roundoff == 0.0:
        return Tolerance(0.0, 0.0, f"{dtype_name(dtype)}: compared exactly")
    # The budget already holds the output's own rounding (its last expr rounds to ``dtype``):
    # that one is relative to the value; the rest may also err normwise.
    computed_rtol = max(output_roundoff, budget.roundings)
    normwise = max(budget.roundings - output_roundoff, 0.0)
    # Reductions accumulate in float32, or in float64 for a float64 output.
    accumulator = torch.float64 if output_roundoff < unit_roundoff(torch.float32) else torch.float32
    growth = reduction_growth(budget.reduction_size, accumulator)
    computed_atol = (normwise + growth) * scale + torch.finfo(dtype).smallest_normal
    parts = [
        f"{dtype_name(dtype)} vs float64: u(out)={output_roundoff:.2g}",
        f"summed roundings B={budget.roundings:.2g}",
    ]
    if budget.reduction_size > 1:
        parts.append(f"reduction of {budget.reduction_size}: G(n)={growth:.2g}")
    parts.append(f"normwise scale {scale:.3g}")
    if rtol is not None:
        computed_rtol = float(rtol)
        parts.append("rtol set by the user")
    if atol is not None:
        computed_atol = float(atol)
        parts.append("atol set by the user")
    return Tolerance(computed_rtol, computed_atol, "; ".join(parts))


def output_scale(reference: torch.Tensor) -> float:
    """``S``: the largest finite magnitude of a float64 reference output (0 when none)."""
    values = reference.detach().to("cpu")
    if values.is_complex():
        values = values.abs()
    if not values.is_floating_point() or values.numel() == 0:
        return 0.0
    finite = values.to(torch.float64).abs()
    finite = finite[torch.isfinite(finite)]
    return float(finite.max()) if finite.numel() else 0.0
