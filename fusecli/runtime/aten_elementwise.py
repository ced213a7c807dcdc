"""ATen execution of elementwise exprs: unary, binary, ternary, cast and copies.

Promotion is explicit in the IR (operands already cast to the compute dtype), so each entry only
says which torch computation an op is. Entries take tensors: scalar operands arrive as 0-dim
tensors of their IR dtype (see ``tensor_operands``), which torch never lets widen a dimensioned
tensor's dtype. Exprs over scalars alone (shape arithmetic) run the same functions on 0-dim CPU
tensors and return Python numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Expr, Scalar
from fusecli.ir.optype import OpType
from fusecli.runtime.context import ExecutionContext, python_scalar

Tensor = torch.Tensor
AtenFn = Callable[[Expr, list[Any], ExecutionContext], tuple[Any, ...]]


# ---------------------------------------------------------------------------------------------
# Operands
# ---------------------------------------------------------------------------------------------


def tensor_operands(expr: Expr, args: Sequence[Any]) -> tuple[list[Tensor], bool]:
    """``args`` as tensors on one device, and whether the expr is scalar arithmetic.

    Python numbers become 0-dim tensors of their IR dtype on the device of the tensor operands
    (the first dimensioned one: a 0-dim CPU scalar tensor goes along with CUDA tensors).
    """
    device = operand_device(args)
    place = device if device is not None else torch.device("cpu")
    operands = []
    for value, arg in zip(expr.inputs, args):
        if isinstance(arg, Tensor):
            operands.append(arg)
        else:
            operands.append(torch.full((), arg, dtype=dt.to_torch(value.dtype), device=place))
    return operands, device is None


def operand_device(args: Sequence[Any]) -> torch.device | None:
    """Where an elementwise expr's scalar operands go: the first dimensioned tensor's device (a
    0-dim CPU scalar goes along with CUDA tensors), else the first tensor's; None without."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    dimensioned = [t for t in tensors if t.dim() > 0]
    return (dimensioned or tensors)[0].device if tensors else None


def _elementwise(compute: Callable[..., Tensor]) -> AtenFn:
    """An entry computing ``compute(*operands)``; a Python number out for scalar arithmetic."""

    def run(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
        operands, scalar_only = tensor_operands(expr, args)
        result = compute(*operands)
        out = expr.output
        if scalar_only and isinstance(out, Scalar):
            return (python_scalar(result.to(dt.to_torch(out.dtype)), out.dtype),)
        return (result,)

    return run


# ---------------------------------------------------------------------------------------------
# Computations that are not one torch call
# ---------------------------------------------------------------------------------------------


def _is_integer(tensor: Tensor) -> bool:
    return not (tensor.is_floating_point() or tensor.is_complex() or tensor.dtype is torch.bool)


def _div(a: Tensor, b: Tensor) -> Tensor:
    """C-style division: truncating for integers, true division for floats."""
    if _is_integer(a):
        return torch.div(a, b, rounding_mode="trunc")
    return torch.div(a, b)


def _by_zero_as_cuda(divide: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
    """``divide`` (div, mod, fmod, remainder) where an integer divisor of 0 gives what nvFuser's
    kernels give: C's ``/`` and ``%`` are undefined there and CUDA's answer is every bit set,
    except for an int64 dividend at least 0: 2**32 - 1 (as PyTorch's CUDA tests record). Torch
    on the CPU raises instead."""

    def guarded(a: Tensor, b: Tensor) -> Tensor:
        if not _is_integer(a):
            return divide(a, b)
        by_zero = b == 0
        if not bool(by_zero.any()):
            return divide(a, b)
        quotient = divide(a, torch.where(by_zero, torch.ones_like(b), b))
        every_bit = torch.bitwise_not(torch.zeros_like(a))
        if a.dtype is torch.int64:
            every_bit = torch.where(a >= 0, torch.full_like(a, 2**32 - 1), every_bit)
        return torch.where(by_zero, every_bit, quotient)

    return guarded


def _sub(a: Tensor, b: Tensor) -> Tensor:
    if a.dtype is torch.bool:  # C++: bool(int(a) - int(b)), which torch.sub refuses
        return torch.ne(a, b)
    return torch.sub(a, b)


def _logical_right_shift(a: Tensor, shift: Tensor) -> Tensor:
    """Shift the bit pattern right, filling with zeros (an unsigned shift of a signed type).

    The arithmetic shift fills with sign bits; masking keeps the low ``width - shift`` bits.
    torch defines shifts by the width or more (left: 0), which keeps the mask right at the edges.
    """
    if a.dtype is torch.bool:
        return torch.where(shift > 0, torch.zeros_like(a), a)
    width = torch.iinfo(a.dtype).bits
    shift = shift.to(a.dtype)
    mask = torch.bitwise_not(torch.bitwise_left_shift(torch.full_like(shift, -1), width - shift))
    shifted = torch.bitwise_and(torch.bitwise_right_shift(a, shift), mask)
    return torch.where(shift >= width, torch.zeros_like(shifted), shifted)


def _lerp(start: Tensor, end: Tensor, weight: Tensor) -> Tensor:
    if start.is_floating_point() or start.is_complex():
        return torch.lerp(start, end, weight.to(start.dtype))
    return start + weight * (end - start)


def _frac(x: Tensor) -> Tensor:
    return x - torch.trunc(x)


def _erfcinv(x: Tensor) -> Tensor:
    # 1 - x is exact from 0.5 up; below, it loses x's digits (erfcinv(1e-38) is 9.19, not
    # erfinv(1) = inf): there the normal quantile, -ndtri(x / 2) / sqrt(2), in double.
    tail = (torch.special.ndtri(x.double() / 2) * -(0.5**0.5)).to(x.dtype)
    return torch.where(x >= 0.5, torch.erfinv(1 - x), tail)


def _silu(x: Tensor) -> Tensor:
    return F.silu(x)


def _threshold(x: Tensor, threshold: Tensor, value: Tensor) -> Tensor:
    return torch.where(x <= threshold, value, x)


def _clamp(x: Tensor, low: Tensor, high: Tensor) -> Tensor:
    return torch.clamp(x, low, high)


def _addcmul(a: Tensor, b: Tensor, c: Tensor, value: Tensor) -> Tensor:
    return a + value * (b * c)  # nvFuser's order: add(a, mul(value, mul(b, c)))


def _add_alpha(a: Tensor, b: Tensor, alpha: Tensor) -> Tensor:
    return a + alpha * b


def _sub_alpha(a: Tensor, b: Tensor, alpha: Tensor) -> Tensor:
    return a - alpha * b


# ---------------------------------------------------------------------------------------------
# Cast and copies
# ---------------------------------------------------------------------------------------------


def aten_cast(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    target = expr.attr("dtype")
    (value,) = args
    if isinstance(value, Tensor):
        return (value.to(dt.to_torch(target)),)
    source = torch.full((), value, dtype=dt.to_torch(expr.inputs[0].dtype))
    return (python_scalar(source.to(dt.to_torch(target)), target),)


def _set(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    """``set`` and ``segment_set``: values are immutable here, so the copy can share memory.

    ``runtime.outputs`` copies a fusion output that shares memory where nvFuser's does not.
    """
    return (args[0],)


def _stride_order(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    return (with_stride_order(args[0], expr.attr("stride_order")),)


def with_stride_order(tensor: Tensor, stride_order: Sequence[int]) -> Tensor:
    """A copy of ``tensor`` laid out so that dim i has stride rank ``stride_order[i]``.

    Returns ``tensor`` itself when it already has that layout.
    """
    rank = tensor.dim()
    outer_to_inner = sorted(range(rank), key=lambda axis: -stride_order[axis])
    permuted = tensor.permute(outer_to_inner)
    if permuted.is_contiguous():
        return tensor
    inverse = sorted(range(rank), key=lambda axis: outer_to_inner[axis])
    return permuted.contiguous().permute(inverse)


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

# Each elementwise op's torch computation on tensor operands (the warm path calls it directly).
ELEMENTWISE_COMPUTE: dict[OpType, Callable[..., Tensor]] = {
    # unary
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
    OpType.silu: _silu,
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
    # binary
    OpType.add: torch.add,
    OpType.sub: _sub,
    OpType.mul: torch.mul,
    OpType.div: _by_zero_as_cuda(_div),
    OpType.truediv: torch.true_divide,
    OpType.mod: _by_zero_as_cuda(torch.fmod),  # C fmod: the sign of the dividend
    OpType.fmod: _by_zero_as_cuda(torch.fmod),
    OpType.remainder: _by_zero_as_cuda(torch.remainder),  # Python's: the sign of the divisor
    OpType.pow: torch.pow,
    OpType.atan2: torch.atan2,
    OpType.nextafter: torch.nextafter,
    OpType.minimum: torch.minimum,  # NaN-propagating, as nvFuser's fmin/fmax are not
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
    OpType.bitwise_right_shift: torch.bitwise_right_shift,  # arithmetic for signed types
    OpType.logical_right_shift: _logical_right_shift,
    OpType.gcd: torch.gcd,
    # ternary
    OpType.where: torch.where,
    OpType.lerp: _lerp,
    OpType.clamp: _clamp,
    OpType.threshold: _threshold,
    OpType.addcmul: _addcmul,
    OpType.add_alpha: _add_alpha,
    OpType.sub_alpha: _sub_alpha,
}

ELEMENTWISE_OPS: dict[OpType, AtenFn] = {
    **{op: _elementwise(compute) for op, compute in ELEMENTWISE_COMPUTE.items()},
    OpType.cast: aten_cast,
    OpType.set: _set,
    OpType.segment_set: _set,
    OpType.stride_order: _stride_order,
}

__all__ = [
    "ELEMENTWISE_COMPUTE", "ELEMENTWISE_OPS", "AtenFn", "operand_device", "tensor_operands",
    "with_stride_order",
]
