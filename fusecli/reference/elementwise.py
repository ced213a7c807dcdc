"""Reference rules for elementwise exprs: unary, binary, ternary, casts and copies.

Each entry is the plain eager-torch expression a user would write for the op, and nothing
cleverer: this table is the independent answer the executors are checked against, so it shares
nothing with theirs. Promotion has already happened in the IR (operands arrive cast to the
compute dtype), so a rule only computes; the interpreter converts the result to the output's IR
dtype afterwards. Scalar operands arrive as 0-dim tensors of their own dtype.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from fusecli.ir.optype import OpType
from fusecli.reference.context import OpContext, with_stride_order

Tensor = torch.Tensor


def _frac(x: Tensor) -> Tensor:
    return x - torch.trunc(x)


def _erfcinv(x: Tensor) -> Tensor:
    return torch.erfinv(1 - x)


UNARY: dict[OpType, Callable[[Tensor], Tensor]] = {
    OpType.acos: torch.acos,
    OpType.acosh: torch.acosh,
    OpType.asin: torch.asin,
    OpType.asinh: torch.asinh,
    OpType.atan: torch.atan,
    OpType.atanh: torch.atanh,
    OpType.cos: torch.cos,
    OpType.cosh: torch.cosh,
    OpType.exp: torch.exp,
    OpType.exp2: torch.exp2,
    OpType.expm1: torch.expm1,
    OpType.erf: torch.erf,
    OpType.erfc: torch.erfc,
    OpType.erfinv: torch.erfinv,
    OpType.erfcinv: _erfcinv,
    OpType.lgamma: torch.lgamma,
    OpType.log: torch.log,
    OpType.log10: torch.log10,
    OpType.log1p: torch.log1p,
    OpType.log2: torch.log2,
    OpType.reciprocal: torch.reciprocal,
    OpType.rsqrt: torch.rsqrt,
    OpType.sigmoid: torch.sigmoid,
    OpType.sin: torch.sin,
    OpType.sinh: torch.sinh,
    OpType.sqrt: torch.sqrt,
    OpType.tan: torch.tan,
    OpType.tanh: torch.tanh,
    OpType.neg: torch.neg,
    OpType.sign: torch.sign,
    OpType.abs: torch.abs,
    OpType.ceil: torch.ceil,
    OpType.floor: torch.floor,
    OpType.frac: _frac,
    OpType.relu: torch.relu,
    OpType.round: torch.round,  # half to even, as nvFuser's nearbyint
    OpType.silu: F.silu,
    OpType.trunc: torch.trunc,
    OpType.bitwise_not: torch.bitwise_not,
    OpType.real: torch.real,
    OpType.imag: torch.imag,
    OpType.logical_not: torch.logical_not,
    OpType.isfinite: torch.isfinite,
    OpType.isinf: torch.isinf,
    OpType.isnan: torch.isnan,
    OpType.isneginf: torch.isneginf,
    OpType.isposinf: torch.isposinf,
    OpType.isreal: torch.isreal,
    OpType.signbit: torch.signbit,
}


def _div(a: Tensor, b: Tensor) -> Tensor:
    """C-style division: truncating for integers, true division for floating point."""
    if a.is_floating_point() or a.is_complex():
        return torch.div(a, b)
    return torch.div(a, b, rounding_mode="trunc")


def _logical_right_shift(a: Tensor, shift: Tensor) -> Tensor:
    """Shift the bit pattern right, filling with zeros whatever the sign.

    torch's ``>>`` on a signed type copies the sign bit in, so mask those copies away: after an
    arithmetic shift by s in [1, bits), only the low ``bits - s`` bits are the shifted pattern.
    A shift by 0 is the identity (and its mask, 1 << bits, would not fit), and a shift by bits
    or more moves every bit out: 0.
    """
    if not a.is_signed():
        return torch.bitwise_right_shift(a, shift)
    if bool((shift < 0).any()):
        raise ValueError("logical_right_shift by a negative amount")
    bits = torch.iinfo(a.dtype).bits
    inner = shift.clamp(1, bits - 1)
    mask = torch.bitwise_left_shift(torch.ones_like(inner), bits - inner) - 1
    shifted = torch.bitwise_and(torch.bitwise_right_shift(a, inner), mask)
    everything_out = torch.where(shift >= bits, torch.zeros_like(shifted), shifted)
    return torch.where(shift == 0, a, everything_out)


BINARY: dict[OpType, Callable[[Tensor, Tensor], Tensor]] = {
    OpType.add: torch.add,
    OpType.sub: torch.sub,
    OpType.mul: torch.mul,
    OpType.div: _div,
    OpType.truediv: torch.true_divide,
    OpType.mod: torch.fmod,  # C fmod: the sign of the dividend
    OpType.fmod: torch.fmod,
    OpType.remainder: torch.remainder,  # Python remainder: the sign of the divisor
    OpType.pow: torch.pow,
    OpType.atan2: torch.atan2,
    OpType.nextafter: torch.nextafter,
    OpType.minimum: torch.minimum,  # NaN-propagating
    OpType.maximum: torch.maximum,
    OpType.eq: torch.eq,
    OpType.ne: torch.ne,
    OpType.lt: torch.lt,
    OpType.le: torch.le,
    OpType.gt: torch.gt,
    OpType.ge: torch.ge,
    OpType.logical_and: torch.logical_and,
    OpType.logical_or: torch.logical_or,
    OpType.bitwise_and: torch.bitwise_and,
    OpType.bitwise_or: torch.bitwise_or,
    OpType.bitwise_xor: torch.bitwise_xor,
    OpType.bitwise_left_shift: torch.bitwise_left_shift,
    OpType.bitwise_right_shift: torch.bitwise_right_shift,  # arithmetic on signed types
    OpType.logical_right_shift: _logical_right_shift,
    OpType.gcd: torch.gcd,
}


def _lerp(start: Tensor, end: Tensor, weight: Tensor) -> Tensor:
    # torch.lerp takes floating-point operands only; for the others, the textbook formula.
    if start.is_floating_point() or start.is_complex():
        return torch.lerp(start, end, weight)
    return start + weight * (end - start)


def _threshold(x: Tensor, threshold: Tensor, value: Tensor) -> Tensor:
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


RULES: dict[OpType, Callable[..., object]] = {
    **{op: _on_tensors(function) for op, function in UNARY.items()},
    **{op: _on_tensors(function) for op, function in BINARY.items()},
    **{op: _on_tensors(function) for op, function in TERNARY.items()},
    OpType.cast: _cast,
    OpType.set: _copy,
    OpType.segment_set: _copy,
    OpType.stride_order: _stride_order,
}
