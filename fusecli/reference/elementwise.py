"""Reference rules for elementwise exprs: unary, binary, ternary, casts and copies.

Each entry is the expression a user would write for the op: Python's operators where the op has
one, ``torch.special``'s name for the special functions, and the textbook identity where torch
has no function of that name (``erfcinv`` through the normal quantile). This table is the
independent answer the executors are checked against, so it is written without looking at
theirs. Promotion has already happened in the IR (operands arrive cast to the compute dtype), so
a rule only computes; the interpreter converts the result to the output's IR dtype afterwards.
Scalar operands arrive as 0-dim tensors of their own dtype.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

import torch
import torch.nn.functional as F

from fusecli.ir.optype import OpType
from fusecli.reference.context import OpContext, with_stride_order

Tensor = torch.Tensor


def _inverse_erfc(x: Tensor) -> Tensor:
    """erfc(y) = 2 Φ(-y √2), so erfc⁻¹(x) = -Φ⁻¹(x / 2) / √2 with Φ the standard normal CDF.

    In double, so that x / 2 of a float subnormal stays nonzero; NaN below 0 (a negative
    subnormal halves to -0, whose quantile is -inf); adding +0 makes erfc⁻¹(1) CUDA's +0.
    """
    wide = x.double()
    inverse = -torch.special.ndtri(wide / 2) * math.sqrt(0.5) + 0.0
    return torch.where(wide < 0, math.nan, inverse).to(x.dtype)


UNARY: dict[OpType, Callable[[Tensor], Tensor]] = {
    # arithmetic
    OpType.neg: operator.neg,
    OpType.abs: operator.abs,  # |z| for complex z
    OpType.sign: torch.sign,
    OpType.reciprocal: torch.reciprocal,
    OpType.bitwise_not: operator.invert,  # ~ is logical not on bool
    # rounding to an integral value
    OpType.ceil: torch.ceil,
    OpType.floor: torch.floor,
    OpType.trunc: torch.fix,  # round toward zero
    OpType.round: torch.special.round,  # half to even, as nvFuser's nearbyint
    OpType.frac: torch.frac,  # x - trunc(x): +0 for -0 and negative integers
    # powers, exponentials and logarithms
    OpType.sqrt: torch.sqrt,
    OpType.rsqrt: torch.rsqrt,
    OpType.exp: torch.exp,
    OpType.exp2: torch.special.exp2,
    OpType.expm1: torch.special.expm1,
    OpType.log: torch.log,
    OpType.log2: torch.log2,
    OpType.log10: torch.log10,
    OpType.log1p: torch.special.log1p,
    # trigonometric and hyperbolic functions, and their inverses
    OpType.sin: torch.sin,
    OpType.cos: torch.cos,
    OpType.tan: torch.tan,
    OpType.asin: torch.arcsin,
    OpType.acos: torch.arccos,
    OpType.atan: torch.arctan,
    OpType.sinh: torch.sinh,
    OpType.cosh: torch.cosh,
    OpType.tanh: torch.tanh,
    OpType.asinh: torch.arcsinh,
    OpType.acosh: torch.arccosh,
    OpType.atanh: torch.arctanh,
    # special functions
    OpType.erf: torch.special.erf,
    OpType.erfc: torch.special.erfc,
    OpType.erfinv: torch.special.erfinv,
    OpType.erfcinv: _inverse_erfc,
    OpType.lgamma: torch.special.gammaln,
    OpType.sigmoid: torch.special.expit,
    # activations
    OpType.relu: F.relu,
    OpType.silu: F.silu,
    # parts of a complex number
    OpType.real: torch.real,
    OpType.imag: torch.imag,
    OpType.isreal: torch.isreal,  # the imaginary part is zero (always, for real dtypes)
    # classes of floating-point values
    OpType.isnan: torch.isnan,
    OpType.isinf: torch.isinf,
    OpType.isposinf: torch.isposinf,
    OpType.isneginf: torch.isneginf,
    OpType.isfinite: torch.isfinite,
    OpType.signbit: torch.signbit,  # set for -0.0 too
    # truth values
    OpType.logical_not: torch.logical_not,
}


def _c_division(a: Tensor, b: Tensor) -> Tensor:
    """C's ``/``: the quotient rounded toward zero for integers, the true quotient otherwise."""
    exact = a.is_floating_point() or a.is_complex()
    return torch.div(a, b, rounding_mode=None if exact else "trunc")


def _cuda_when_dividing_by_zero(
    function: Callable[[Tensor, Tensor], Tensor],
) -> Callable[[Tensor, Tensor], Tensor]:
    """``function`` on integers, with nvFuser's kernels' answer where the divisor is 0 (C leaves
    it undefined; torch's CPU raises): the quotient or remainder CUDA's integer division gives,
    -1 (all ones) or, for a non-negative int64 dividend, 0xFFFFFFFF."""

    def divide(a: Tensor, b: Tensor) -> Tensor:
        exact = a.is_floating_point() or a.is_complex() or a.dtype == torch.bool
        if exact or not bool((b == 0).any()):
            return function(a, b)
        result = function(a, b.masked_fill(b == 0, 1))
        all_ones = torch.full_like(a, -1) if a.is_signed() else torch.full_like(
            a, torch.iinfo(a.dtype).max)
        if a.dtype == torch.int64:
            all_ones = all_ones.masked_fill(a >= 0, 0xFFFFFFFF)
        return torch.where(b == 0, all_ones, result)

    return divide


def _logical_right_shift(a: Tensor, shift: Tensor) -> Tensor:
    """Shift the bit pattern right, filling with zeros whatever the sign.

    torch's ``>>`` on a signed type copies the sign bit in, so mask those copies away: after an
    arithmetic shift by s in [1, bits), only the low ``bits - s`` bits are the shifted pattern.
    A shift by 0 is the identity (and its mask, 1 << bits, would not fit), and a shift by bits
    or more moves every bit out: 0.
    """
    if not a.is_signed():
        return operator.rshift(a, shift)
    if bool((shift < 0).any()):
        raise ValueError("logical_right_shift by a negative amount")
    bits = torch.iinfo(a.dtype).bits
    inner = shift.clamp(1, bits - 1)
    low_bits = operator.lshift(torch.ones_like(inner), bits - inner) - 1
    shifted = operator.and_(operator.rshift(a, inner), low_bits)
    everything_out = torch.where(shift >= bits, torch.zeros_like(shifted), shifted)
    return torch.where(shift == 0, a, everything_out)


BINARY: dict[OpType, Callable[[Tensor, Tensor], Tensor]] = {
    # arithmetic, as Python writes it
    OpType.add: operator.add,
    OpType.sub: operator.sub,
    OpType.mul: operator.mul,
    OpType.truediv: operator.truediv,
    OpType.div: _cuda_when_dividing_by_zero(_c_division),
    OpType.pow: operator.pow,
    OpType.remainder: _cuda_when_dividing_by_zero(operator.mod),  # the sign of the divisor
    OpType.mod: _cuda_when_dividing_by_zero(torch.fmod),  # C's %: the sign of the dividend
    OpType.fmod: _cuda_when_dividing_by_zero(torch.fmod),
    OpType.gcd: torch.gcd,
    # comparisons
    OpType.eq: operator.eq,
    OpType.ne: operator.ne,
    OpType.lt: operator.lt,
    OpType.le: operator.le,
    OpType.gt: operator.gt,
    OpType.ge: operator.ge,
    OpType.minimum: torch.minimum,  # NaN-propagating
    OpType.maximum: torch.maximum,
    # bits and truth values
    OpType.bitwise_and: operator.and_,
    OpType.bitwise_or: operator.or_,
    OpType.bitwise_xor: operator.xor,
    OpType.bitwise_left_shift: operator.lshift,
    OpType.bitwise_right_shift: operator.rshift,  # arithmetic on signed types
    OpType.logical_right_shift: _logical_right_shift,
    OpType.logical_and: torch.logical_and,
    OpType.logical_or: torch.logical_or,
    # floating-point functions of two arguments
    OpType.atan2: torch.arctan2,
    OpType.nextafter: torch.nextafter,
}


def _lerp(start: Tensor, end: Tensor, weight: Tensor) -> Tensor:
    # torch.lerp takes floating-point operands only; integers take the definition.
    if not (start.is_floating_point() or start.is_complex()):
        return start + weight * (end - start)
    return torch.lerp(start, end, weight)


def _threshold(x: Tensor, threshold: Tensor, value: Tensor) -> Tensor:
    """``value`` where x is at or below the threshold, else x: torch's kernel
    (``x <= threshold ? value : x``), so a NaN x or a NaN threshold keeps x."""
    return torch.where(x <= threshold, value, x)


def _addcmul(a: Tensor, b: Tensor, c: Tensor, value: Tensor) -> Tensor:
    # torch.addcmul wants ``value`` as a number; a tensor value takes the written-out form.
    if value.dim() == 0:
        return torch.addcmul(a, b, c, value=value.item())
    return a + value * b * c


def _add_alpha(a: Tensor, b: Tensor, alpha: Tensor) -> Tensor:
    if alpha.dim() == 0:
        return torch.add(a, b, alpha=alpha.item())
    return a + alpha * b


def _sub_alpha(a: Tensor, b: Tensor, alpha: Tensor) -> Tensor:
    if alpha.dim() == 0:
        return torch.sub(a, b, alpha=alpha.item())
    return a - alpha * b


TERNARY: dict[OpType, Callable[..., Tensor]] = {
    OpType.where: torch.where,
    OpType.lerp: _lerp,
    OpType.clamp: torch.clamp,
    OpType.threshold: _threshold,
    OpType.addcmul: _addcmul,
    OpType.add_alpha: _add_alpha,
    OpType.sub_alpha: _sub_alpha,
}


def _on_tensors(function: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """A rule applying ``function`` to the operands, scalars made 0-dim tensors first."""

    def rule(ctx: OpContext, *operands: object) -> Tensor:
        return function(*ctx.tensors(operands))

    return rule


def _cast(ctx: OpContext, value: object) -> Tensor:
    # In float64 mode a cast to any floating dtype is a cast to float64 (ctx.dtype says so),
    # and a cast from floating point to an integer casts the float64 value.
    return ctx.tensor(value, 0).to(ctx.dtype())


def _copy(ctx: OpContext, value: Tensor) -> Tensor:
    # set and segment_set only mark where nvFuser may cut or copy; the values are the input's.
    return value


def _stride_order(ctx: OpContext, value: Tensor) -> Tensor:
    return with_stride_order(value, ctx.attr("stride_order"))


ELEMENTWISE_RULES: dict[OpType, Callable[..., object]] = {
    **{op: _on_tensors(function) for op, function in UNARY.items()},
    **{op: _on_tensors(function) for op, function in BINARY.items()},
    **{op: _on_tensors(function) for op, function in TERNARY.items()},
    OpType.cast: _cast,
    OpType.set: _copy,
    OpType.segment_set: _copy,
    OpType.stride_order: _stride_order,
}
