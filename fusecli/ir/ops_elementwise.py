"""Elementwise ops: unary, binary, ternary, cast, and their dtype rules.

The promotion rule of every elementwise op is one table, ``PROMOTION``, transcribed from
nvFuser's ``csrc/ops/arith.cpp`` (default_op_config, float_op_config, ...). Operands are cast
to the compute dtype by explicit ``cast`` exprs, as nvFuser's promoteValues does, so that
executors never need to know the promotion rules: bf16 + bf16 becomes
``cast(a, Float) + cast(b, Float)`` with a Float output.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusecli.ir import dtype as dt
from fusecli.ir.builder import DefinitionError, FusionBuilder, broadcast_domains, describe
from fusecli.ir.dtype import DataType, Operand, Promotion
from fusecli.ir.nodes import Scalar, TensorView, Val
from fusecli.ir.optype import OpType

P = Promotion

PROMOTION: dict[OpType, Promotion] = {
    **{
        op: P.FLOAT
        for op in (
            OpType.acos, OpType.acosh, OpType.asin, OpType.asinh, OpType.atan, OpType.atanh,
            OpType.cos, OpType.cosh, OpType.exp, OpType.exp2, OpType.expm1, OpType.erf,
            OpType.erfc, OpType.erfinv, OpType.erfcinv, OpType.lgamma, OpType.log,
            OpType.log10, OpType.log1p, OpType.log2, OpType.reciprocal, OpType.rsqrt,
            OpType.sigmoid, OpType.sin, OpType.sinh, OpType.sqrt, OpType.tan, OpType.tanh,
            OpType.truediv, OpType.atan2,
        )
    },
    **{
        op: P.DEFAULT
        for op in (
            OpType.neg, OpType.sign, OpType.add, OpType.sub, OpType.mul, OpType.div,
            OpType.mod, OpType.fmod, OpType.remainder, OpType.pow, OpType.minimum,
            OpType.maximum, OpType.bitwise_and, OpType.bitwise_or, OpType.bitwise_xor,
            OpType.bitwise_left_shift, OpType.bitwise_right_shift,
            OpType.logical_right_shift, OpType.gcd, OpType.lerp, OpType.addcmul,
            OpType.add_alpha, OpType.sub_alpha, OpType.clamp, OpType.threshold,
        )
    },
    **{
        op: P.SAME
        for op in (
            OpType.abs, OpType.ceil, OpType.floor, OpType.frac, OpType.relu, OpType.round,
            OpType.silu, OpType.trunc, OpType.bitwise_not, OpType.real, OpType.imag,
        )
    },
    **{
        op: P.BOOL
        for op in (
            OpType.eq, OpType.ne, OpType.lt, OpType.le, OpType.gt, OpType.ge,
            OpType.logical_and, OpType.logical_or, OpType.logical_not, OpType.isfinite,
            OpType.isinf, OpType.isnan, OpType.isneginf, OpType.isposinf, OpType.isreal,
            OpType.signbit,
        )
    },
    OpType.nextafter: P.FLOAT_ONLY,
    OpType.where: P.NO_HALF_TO_FLOAT,
}

# Ops whose operands must be integers or booleans.
_INTEGER_ONLY = frozenset(
    {
        OpType.bitwise_and, OpType.bitwise_or, OpType.bitwise_xor, OpType.bitwise_not,
        OpType.bitwise_left_shift, OpType.bitwise_right_shift, OpType.logical_right_shift,
        OpType.gcd,
    }
)

# Predicates that test a value without promoting it first: the operand keeps its dtype.
_NO_OPERAND_CAST = frozenset(
    {
        OpType.isfinite, OpType.isinf, OpType.isnan, OpType.isneginf, OpType.isposinf,
        OpType.isreal, OpType.signbit, OpType.logical_not,
    }
)


def _operand(value: Val) -> Operand:
    if isinstance(value, TensorView):
        return Operand(value.dtype, is_tensor=True, ndim=value.ndim)
    if isinstance(value, Scalar):
        return Operand(value.dtype, is_tensor=False)
    raise TypeError(f"expected a Tensor or Scalar, got {value!r}")


def cast(b: FusionBuilder, value: Val, dtype: DataType) -> Val:
    """``value`` as ``dtype``; no expr if it already is."""
    if dtype is DataType.Null:
        raise DefinitionError("cast", "cannot cast to DataType.Null")
    if value.dtype is dtype:
        return value
    out = _like(value, dtype)
    b.emit(OpType.cast, [value], [out], dtype=dtype)
    return out


def _like(value: Val, dtype: DataType, domain_from: Sequence[Val] | None = None) -> Val:
    tensors = [v for v in (domain_from or [value]) if isinstance(v, TensorView)]
    if not tensors:
        return Scalar(dtype=dtype)
    domain = broadcast_domains("elementwise", tensors)
    return TensorView(dtype=dtype, domain=domain)


def _check_integer(op: OpType, values: Sequence[Val]) -> None:
    for value in values:
        if op in _INTEGER_ONLY and not (dt.is_integral(value.dtype) or dt.is_boolean(value.dtype)):
            raise DefinitionError(
                op.value, f"needs integer or boolean operands, got a {describe(value)}"
            )


def elementwise(b: FusionBuilder, op: OpType, operands: Sequence[Val], **attrs: object) -> Val:
    """Any unary, binary or ternary op (except ``where``): promote, cast, emit."""
    _check_integer(op, operands)
    for value in operands:
        if not isinstance(value, TensorView | Scalar):
            raise TypeError(
                f"fd.ops.{op.value}: expected Tensor or Scalar operands, got {value!r}; "
                "Python numbers must be defined with fd.define_scalar"
            )
    rule = PROMOTION[op]
    compute, output = dt.promote([_operand(v) for v in operands], rule)
    if rule is Promotion.FLOAT_ONLY and compute not in (DataType.Float, DataType.Double):
        raise DefinitionError(op.value, f"needs Float or Double operands, got {compute}")
    if op in (OpType.real, OpType.imag):
        output = dt.complex_to_real(operands[0].dtype)
    if op is OpType.abs:
        output = dt.complex_to_real(operands[0].dtype)
    if op in _NO_OPERAND_CAST:
        cast_operands = list(operands)
    else:
        cast_operands = [cast(b, v, compute) for v in operands]
    if op in (OpType.logical_and, OpType.logical_or):
        cast_operands = [cast(b, v, DataType.Bool) for v in operands]
    if op is OpType.gcd and not all(dt.is_integral(v.dtype) for v in cast_operands):
        raise DefinitionError(op.value, "needs integer operands")
    try:
        out = _like(cast_operands[0], output, cast_operands)
    except DefinitionError as error:
        raise DefinitionError(op.value, error.detail) from None
    b.emit(op, cast_operands, [out], **attrs)
    return out


def where(b: FusionBuilder, condition: Val, if_true: Val, if_false: Val) -> Val:
    """``where(cond, a, b)``: cond is Bool; a and b promote without the Float upcast."""
    if condition.dtype is not DataType.Bool:
        condition = cast(b, condition, DataType.Bool)
    compute, output = dt.promote([_operand(if_true), _operand(if_false)], P.NO_HALF_TO_FLOAT)
    if_true, if_false = cast(b, if_true, compute), cast(b, if_false, compute)
    try:
        out = _like(condition, output, [condition, if_true, if_false])
    except DefinitionError as error:
        raise DefinitionError("where", error.detail) from None
    b.emit(OpType.where, [condition, if_true, if_false], [out])
    return out
