"""Elementwise ``fd.ops``: unary, binary and ternary ops, cast, where, copies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fusecli.frontend.binding import (
    OpsBase,
    bind_op,
    dtype_arg,
    incompatible,
    int_arg,
    tensor_arg,
)
from fusecli.frontend.state import State, Tensor
from fusecli.ir import ops_elementwise as ew
from fusecli.ir import ops_shape as shp
from fusecli.ir.optype import OpType


class ElementwiseOps(OpsBase):
    """Elementwise ops; the plain unary/binary/ternary methods are generated below."""

    def _elementwise(self, op: OpType, *operands: object) -> State:
        self._start(op.value)
        states = [self._operand(op.value, v) for v in operands]
        if op is OpType.where:
            result = ew.where(self._b, *(s.val for s in states))
        else:
            result = ew.elementwise(self._b, op, [s.val for s in states])
        return self._finish(op.value, [result], [(None, s) for s in states])

    def cast(self, *args: Any, **kwargs: Any) -> State:
        bound = bind_op(OpType.cast, args, kwargs)
        self._start("cast")
        arg = self._operand("cast", bound["arg"])
        result = ew.cast(self._b, arg.val, dtype_arg("cast", bound["dtype"]))
        if result is arg.val:  # nvFuser still makes a new value: a set
            result = shp.set_op(self._b, OpType.set, arg.val) if isinstance(arg, Tensor) else (
                result
            )
        return self._finish("cast", [result], [(None, arg), ("dtype", bound["dtype"])])

    def where(self, *args: Any, **kwargs: Any) -> State:
        bound = bind_op(OpType.where, args, kwargs)
        return self._elementwise(OpType.where, bound["pred"], bound["arg1"], bound["arg2"])

    def set(self, arg: Tensor) -> Tensor:
        return self._copy(OpType.set, arg)

    def segment_set(self, arg: Tensor) -> Tensor:
        return self._copy(OpType.segment_set, arg)

    def _copy(self, op: OpType, arg: Tensor) -> Tensor:
        self._start(op.value)
        result = shp.set_op(self._b, op, tensor_arg(op.value, arg).val)
        return self._finish(op.value, [result], [(None, arg)])

    def stride_order(self, *args: Any, **kwargs: Any) -> Tensor:
        bound = bind_op(OpType.stride_order, args, kwargs)
        self._start("stride_order")
        arg = tensor_arg("stride_order", bound["arg"])
        order = [int_arg("stride_order", v, "stride_order") for v in bound["stride_order"]]
        result = shp.set_op(self._b, OpType.stride_order, arg.val, stride_order=order)
        return self._finish("stride_order", [result], [(None, arg), ("stride_order", order)])


# Keyword spellings accepted for the operands of any plain elementwise op, after the names in
# its record: nvFuser binds them positionally, but repros write ``fd.ops.add(input=, other=)``.
_OPERAND_ALIASES = ("arg", "arg1", "arg2", "arg3", "other", "input")


def _make_elementwise(op: OpType) -> Callable[..., State]:
    definition = op.definition
    arity = definition.arity
    names = tuple(dict.fromkeys(definition.params + _OPERAND_ALIASES))

    def method(self: ElementwiseOps, *args: Any, **kwargs: Any) -> State:
        if kwargs:
            args = args + tuple(kwargs.pop(n) for n in names if n in kwargs)
            if kwargs:
                raise incompatible(op.value, f"got unexpected arguments {sorted(kwargs)}")
        if len(args) != arity:
            raise incompatible(op.value, f"takes {arity} arguments, got {len(args)}")
        return self._elementwise(op, *args)

    method.__name__ = op.value
    method.__doc__ = f"nvFuser's fd.ops.{op.value}({', '.join(definition.params)})."
    if definition.doc:
        method.__doc__ += f" {definition.doc[0].upper()}{definition.doc[1:]}."
    return method


# One method per elementwise record without a hand-written binding above (``where``).
for _op in OpType:
    if _op.definition.is_elementwise and _op.value not in ElementwiseOps.__dict__:
        setattr(ElementwiseOps, _op.value, _make_elementwise(_op))
del _op
