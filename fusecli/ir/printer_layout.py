"""The shared layouts of nvFuser's expr printing: two-line tensor ops, calls, attributes.

Used by ``printer_exprs``' per-op printers; names of values come from a ``ValuePrinter``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, TensorView

if TYPE_CHECKING:
    from fusecli.ir.printer import ValuePrinter

ExprPrinter = Callable[[Expr, "ValuePrinter"], str]

# ---------------------------------------------------------------------------------------------
# Layouts
# ---------------------------------------------------------------------------------------------


def _is_tensor_op(expr: Expr) -> bool:
    return any(isinstance(out, TensorView) for out in expr.outputs)


def _two_lines(expr: Expr, values: ValuePrinter, rhs: str) -> str:
    """``T1...`` then ``   = rhs`` on the next line: how nvFuser prints most tensor ops."""
    return f"{values.value(expr.output)}\n   = {rhs}\n"


def _one_line(expr: Expr, values: ValuePrinter, rhs: str) -> str:
    return f"{values.value(expr.output)} = {rhs}\n"


def _assign(expr: Expr, values: ValuePrinter, rhs: str) -> str:
    return (_two_lines if _is_tensor_op(expr) else _one_line)(expr, values, rhs)


def _call(name: str, args: Sequence[str], tensor_op: bool) -> str:
    """``name(a, b)``; a tensor op starts each further argument on a new line (``\\n  , b``)."""
    separator = "\n  , " if tensor_op else ", "
    return f"{name}({separator.join(args)})"


def _output_tuple(expr: Expr, values: ValuePrinter) -> str:
    return "( " + ", ".join(values.value(v) for v in expr.outputs) + " )"


def _bool(flag: object) -> str:
    return "true" if flag else "false"


def _python_bool(flag: object) -> str:
    # argsort and topk print their flags as Python spells them.
    return "True" if flag else "False"


def _flags(flags: Sequence[bool]) -> str:
    return "{" + ", ".join(_bool(f) for f in flags) + "}"


def _attr_str(value: object) -> str:
    if isinstance(value, bool):
        return _bool(value)
    if isinstance(value, DataType):
        return dt.ir_name(value)
    if isinstance(value, tuple | list):
        return "{" + ", ".join(_attr_str(v) for v in value) + "}"
    return str(value)


def _generic(expr: Expr, values: ValuePrinter) -> str:
    """``= op( inputs..., attr = value )`` for ops nvFuser has no single expr for."""
    args = [values.value(v) for v in expr.inputs]
    args += [f"{name} = {_attr_str(value)}" for name, value in expr.attrs.items()]
    call = f"{expr.op.value}( {', '.join(args)} )"
    if len(expr.outputs) > 1:
        return f"{_output_tuple(expr, values)} = {call}\n"
    return _assign(expr, values, call)
