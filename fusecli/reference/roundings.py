"""An expr's own roundings in the error analysis (``fusecli.reference.bounds``): the unit
roundoff, the magnitude a sum's rounding is relative to, a variance's second-order term, the
inner rounding of a narrow matmul or attention, and the absolute allowance near underflow."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpKind, OpType

ULPS_PER_OP = 4  # K in bounds' docstring


def unit_roundoff(dtype: torch.dtype) -> float:
    """Half an ulp relative to the value, ``eps / 2``; 0 for exact (integer, bool) dtypes."""
    if not dtype.is_floating_point:
        return 0.0
    return torch.finfo(dtype).eps / 2


def half_ulp(value: float, dtype: torch.dtype) -> float:
    """The most round-to-nearest moves ``value`` into ``dtype``: half the spacing of ``dtype``
    at ``|value|`` (its subnormals' spacing below the smallest normal), 0 for 0."""
    if value == 0:
        return 0.0
    info = torch.finfo(dtype)
    return max(2.0 ** math.floor(math.log2(abs(value))), info.smallest_normal) * info.eps / 2


def real_float(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


# Sums of terms, by the magnitude of each term: their rounding is relative to the terms, not to
# a result that cancels (``a + v b c`` near 0 is computed with fused or separate roundings).
_TERMS: dict[OpType, Callable[..., object]] = {
    OpType.add: lambda a, b: a + b,
    OpType.sub: lambda a, b: a + b,
    OpType.add_alpha: lambda a, b, alpha: a + alpha * b,
    OpType.sub_alpha: lambda a, b, alpha: a + alpha * b,
    OpType.addcmul: lambda a, b, c, value: a + value * b * c,
    OpType.lerp: lambda start, end, weight: start + weight * (start + end),
}


def term_magnitude(op: OpType, operands: Sequence[object]) -> object | None:
    """The sum of the magnitudes of a sum's terms (``_TERMS``); None for other ops."""
    terms = _TERMS.get(op)
    if terms is None or len(operands) != terms.__code__.co_argcount:
        return None
    if not all(isinstance(o, torch.Tensor | int | float) for o in operands):
        return None
    return terms(*(abs(o) for o in operands))


def mean_error_squared(expr, ctx, operands, result, moved) -> torch.Tensor | float:
    """A variance's second-order term: the deviations are taken from a mean that errs by
    ``d``, which adds ``n d^2`` to their sum of squares (first order sees nothing, as the
    derivative by the mean is 0; a variance of nearly equal values is all this term)."""
    x = operands[0]
    if not real_float(x) or x.numel() == 0 or result.numel() == 0:
        return 0.0
    dims = tuple(d % x.dim() for d in ctx.attr("dims")) if x.dim() else ()
    count = x.numel() // result.numel()
    if count <= 1:
        return 0.0
    factor = ULPS_PER_OP * unit_roundoff(torch.float32) * (
        math.ceil(math.log2(count)) + math.sqrt(count)
    )
    deviation = factor * x.abs().mean(dim=dims) if dims else factor * x.abs()
    if 0 in moved:
        carried = moved[0].hard.expand(x.shape)
        deviation = deviation + (carried.mean(dim=dims) if dims else carried)
    deviation = deviation.reshape(result.shape)
    correction = 0 if expr.op is OpType.welford else int(ctx.attr("correction"))
    return deviation**2 * count / max(count - correction, 1)


def inner_rounding(expr: Expr, operands: Sequence[object], result: torch.Tensor):
    """A value a narrow matmul or attention may round to its dtype on the way: the product
    before a linear's bias is added (eager torch on the CPU rounds it, then the sum), the
    probabilities before they weight the values (flash attention)."""
    if expr.op is OpType.linear and len(operands) == 3 and real_float(operands[2]):
        return (result - operands[2]).abs()
    if expr.op.kind is OpKind.ATTENTION:
        value = operands[2]
        return value.abs().amax() if real_float(value) and value.numel() else 0.0
    return 0.0


def underflow(dtype: torch.dtype) -> float:
    """The absolute error allowed near the bottom of ``dtype``'s range: ``K`` smallest normals
    over ``eps`` (4e-31 for float32). A result near underflow may be flushed to 0 or lose its
    bits as a subnormal, and a formula may pass through an overflow on the way (``x / (1 +
    exp(-x))`` is -0.0 for x below -88.7, where silu is -2e-37)."""
    info = torch.finfo(dtype)
    return ULPS_PER_OP * info.smallest_normal / info.eps
