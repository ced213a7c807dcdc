"""The reference's own dtype rules for elementwise ops, written from nvFuser's type promotion
(``csrc/type_promotion.cpp``, ``csrc/ops/arith.cpp``; ``shared/reference/nvfuser-frontend.md``
section 2.3), in torch dtypes, without the IR's promotion code.

An output dtype follows from the operands' dtypes and kinds: the common dtype is torch's
``promote_types`` within a priority group (dimensioned tensors, then 0-dim tensors, then
scalars), and a lower-priority operand of a higher category (bool < int < float < complex)
sets the result to its own dtype (``Int tensor * Double scalar`` is Double, not Float). Then
the op's config: ``default`` computes half, bfloat16, fp8 and fp4 as float32 and returns it;
``float`` also lifts bool and int to float32; ``bool`` returns bool; ``same`` keeps the first
operand's dtype; ``where`` takes the common dtype of its values without the float32 upcast.
``tests/test_reference.py`` checks this table against the IR's, op by op and dtype by dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

_FLOAT_OPS = (
    "acos acosh asin asinh atan atanh cos cosh exp exp2 expm1 erf erfc erfinv erfcinv lgamma "
    "log log10 log1p log2 reciprocal rsqrt sigmoid sin sinh sqrt tan tanh truediv atan2"
)
_DEFAULT_OPS = (
    "neg add sub mul div mod fmod remainder pow minimum maximum bitwise_and bitwise_or "
    "bitwise_xor bitwise_left_shift bitwise_right_shift logical_right_shift gcd lerp addcmul "
    "add_alpha sub_alpha"
)
# clamp and threshold: newValLike(in, in->getDataType()), bounds cast to it (ops/arith.cpp);
# sign: a where of constants cast back to the input's dtype (ops/composite.cpp)
_SAME_OPS = "ceil floor frac relu round silu trunc bitwise_not clamp threshold sign"
_BOOL_OPS = (
    "eq ne lt le gt ge logical_and logical_or logical_not isfinite isinf isnan isneginf "
    "isposinf isreal signbit"
)

# op name (as in fd.ops) -> config
CONFIG: dict[str, str] = {
    **dict.fromkeys(_FLOAT_OPS.split(), "float"),
    **dict.fromkeys(_DEFAULT_OPS.split(), "default"),
    **dict.fromkeys(_SAME_OPS.split(), "same"),
    **dict.fromkeys(_BOOL_OPS.split(), "bool"),
    "where": "where",
    "nextafter": "float",  # float_only_op_config: the IR then rejects all but Float and Double
}

_NARROW_FLOATS = frozenset(
    getattr(torch, name)
    for name in ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu",
                 "float4_e2m1fn_x2")
    if hasattr(torch, name)
)


def _category(dtype: torch.dtype) -> int:
    if dtype == torch.bool:
        return 0
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point or dtype in _NARROW_FLOATS:
        return 2
    return 1


@dataclass(frozen=True, slots=True)
class Arg:
    """One operand as promotion sees it: its dtype and whether it is a tensor, of what rank."""

    dtype: torch.dtype
    is_tensor: bool
    ndim: int = 0


def _widen(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    if a == b:
        return a
    try:
        return torch.promote_types(a, b)
    except RuntimeError:  # torch does not promote fp8 with others; nvFuser computes float32
        return torch.float32


def common_dtype(args: Sequence[Arg]) -> torch.dtype:
    groups: list[list[torch.dtype]] = [[], [], []]
    for arg in args:
        groups[0 if arg.is_tensor and arg.ndim > 0 else 1 if arg.is_tensor else 2].append(
            arg.dtype
        )
    result: torch.dtype | None = None
    for group in groups:
        if not group:
            continue
        group_dtype = group[0]
        for dtype in group[1:]:
            group_dtype = _widen(group_dtype, dtype)
        if result is None:
            result = group_dtype
        elif _category(group_dtype) > _category(result):
            # Double with a complex scalar is complex128: the real part keeps its precision.
            result = torch.complex128 if result == torch.float64 and group_dtype.is_complex \
                else group_dtype
    if result is None:
        raise ValueError("type promotion needs at least one operand")
    return result


def output_dtype(op: str, args: Sequence[Arg]) -> torch.dtype | None:
    """The dtype ``op`` produces from ``args``; None for an op this table does not cover."""
    config = CONFIG.get(op)
    if config is None:
        return None
    if config == "same":
        return args[0].dtype
    if config == "where":
        return common_dtype(args[1:])
    common = common_dtype(args)
    if config == "bool":
        return torch.bool
    if config == "float" and _category(common) <= 1:
        return torch.float32
    if common in _NARROW_FLOATS:
        return torch.float32
    return common
