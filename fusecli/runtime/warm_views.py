"""A shape expr of a compiled warm run (``runtime.warm``) as one method call on its tensor.

A set or segment_set is its operand itself (the ATen entry returns it). A reshape, permute,
expand, broadcast, squeeze or slice whose other operands the input
signature decides (sizes, bounds) runs in the replay as the torch method that makes the same
view: ``v.reshape(K)``, ``v.permute(K)``, ``v.expand(K)``, or ``v[K]`` with an index of
slices, ``None`` (a new broadcast dim) and ``0`` (a squeezed dim), its arguments computed once.
The ATen executor's entry (``runtime.aten_shape``) takes the expr, a list of operands and the
context, and converts the sizes each call: about 1 us of host time more per step on this
project's CPU, on the path of a warm call. The call is checked once, on the first call's
tensors: it must give what the entry gave (the same dtype, shape, strides and storage offset,
and a view of the operand exactly where the entry's result was one); where it does not, the
step keeps the entry. Methods and indices are relative to the operand, so a later call's
tensor of the same signature (another storage offset) gets the same view of itself.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpType
from fusecli.runtime.aten_elementwise import ELEMENTWISE_OPS
from fusecli.runtime.aten_shape import SHAPE_OPS, slice_index

_SET = ELEMENTWISE_OPS.get(OpType.set)

_SIZED = {OpType.reshape: "reshape", OpType.expand: "expand"}


def direct_view(expr: Expr, operands: list[Any], result: Any) -> tuple[str, Any] | None:
    """``(method, argument)`` making ``result`` from ``operands[0]`` as ``expr``'s entry did
    (``"index"``: ``tensor[argument]``), or None where no such call is known or it differs."""
    tensor = operands[0]
    if not isinstance(tensor, Tensor) or not isinstance(result, Tensor):
        return None
    try:
        call = _call(expr, operands, tensor)
    except (TypeError, ValueError):  # an operand not a number (a tensor's value, say)
        return None
    if call is None:
        return None
    made = apply(call, tensor)
    same = (made.dtype == result.dtype and made.shape == result.shape
            and made.stride() == result.stride()
            and made.storage_offset() == result.storage_offset()
            and _shares(made, tensor) == _shares(result, tensor))
    return call if same else None


def apply(call: tuple[str, Any], tensor: Tensor) -> Tensor:
    method, argument = call
    if method == "same":
        return tensor
    return tensor[argument] if method == "index" else getattr(tensor, method)(argument)


def entry_of(op: OpType) -> Any:
    """The ATen executor's entry whose results ``direct_view`` knows how to make, or None."""
    return _SET if op in (OpType.set, OpType.segment_set) else SHAPE_OPS.get(op)


def _call(expr: Expr, operands: list[Any], tensor: Tensor) -> tuple[str, Any] | None:
    op = expr.op
    if op in (OpType.set, OpType.segment_set):  # the operand itself (aten_elementwise._set)
        return "same", None
    if op in _SIZED and len(operands) == 2:
        return _SIZED[op], tuple(int(size) for size in operands[1])
    if op is OpType.permute:
        return "permute", tuple(expr.attr("dims"))
    if op is OpType.broadcast:
        return "index", tuple(None if new else slice(None)
                              for new in expr.attr("is_broadcast_dim"))
    if op is OpType.squeeze:
        dims = {axis % tensor.ndim for axis in expr.attr("dims")}
        return "index", tuple(0 if axis in dims else slice(None) for axis in range(tensor.ndim))
    if op is OpType.slice:
        return "index", slice_index(expr, operands)
    return None


def _shares(made: Tensor, tensor: Tensor) -> bool:
    return made.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
