"""Elementwise ops: unary, binary, ternary, cast, and their dtype rules.

The promotion rule of every elementwise op is the ``promotion`` of its record in
``fusecli.ir.opdefs``, transcribed from nvFuser's ``csrc/ops/arith.cpp`` (default_op_config,
float_op_config, ...). Operands are cast to the compute dtype by explicit ``cast`` exprs, as
nvFuser's promoteValues does, so that executors never need to know the promotion rules: bf16 +
bf16 becomes ``cast(a, Float) + cast(b, Float)`` with a Float output.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusecli.ir import dtype as dt
from fusecli.ir.builder import DefinitionError, FusionBuilder, broadcast_domains, describe
from fusecli.ir.dtype import DataType, Operand, Promotion
from fusecli.ir.nodes import Scalar, TensorView, Val
from fusecli.ir.optype import OpType

# The dtype rule of every elementwise op, from its record (nvFuser's op configs).
PROMOTION: dict[OpType, Promotion] = {
    op: op.definition.promotion for op in OpType if op.definition.promotion is not None
}


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
    if not op.definition.integer_only:
        return
    for value in values:
        if not (dt.is_integral(value.dtype) or dt.is_boolean(value.dtype)):
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
    definition = op.definition
    rule = PROMOTION[op]
    compute, output = dt.promote([_operand(v) for v in operands], rule)
    if rule is Promotion.FLOAT_ONLY and compute not in (DataType.Float, DataType.Double):
        raise DefinitionError(op.value, f"needs Float or Double operands, got {compute}")
    if definition.real_output:
        output = dt.complex_to_real(operands[0].dtype)
    if definition.operand_dtype is not None:
        cast_operands = [cast(b, v, definition.operand_dtype) for v in operands]
    elif definition.casts_operands:
        cast_operands = [cast(b, v, compute) for v in operands]
    else:
        cast_operands = list(operands)
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
        raise DefinitionError(
            "where", f"Condition should be of DataType Bool, not {dt.ir_name(condition.dtype)}"
        )
    compute, output = dt.promote([_operand(if_true), _operand(if_false)], PROMOTION[OpType.where])
    if_true, if_false = cast(b, if_true, compute), cast(b, if_false, compute)
    try:
        out = _like(condition, output, [condition, if_true, if_false])
    except DefinitionError as error:
        raise DefinitionError("where", error.detail) from None
    b.emit(OpType.where, [condition, if_true, if_false], [out])
    return out
