"""nvFuser's printing of reductions, Welford, scans and sorts."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpType
from fusecli.ir.printer_layout import _one_line, _output_tuple, _python_bool, _two_lines

if TYPE_CHECKING:
    from fusecli.ir.printer import ValuePrinter


_REDUCTION_OPS = {OpType.sum: "add", OpType.prod: "mul", OpType.max: "fmax", OpType.min: "fmin"}


def _extreme(dtype: DataType, highest: bool) -> bool | int | float:
    """The lowest or highest value of ``dtype``: where max and min reductions start."""
    if dtype is DataType.Bool:
        return highest
    if dt.is_integral(dtype):
        bits = dt.info(dtype).bits
        if dtype is DataType.UInt64:
            return 2**bits - 1 if highest else 0
        return 2 ** (bits - 1) - 1 if highest else -(2 ** (bits - 1))
    return math.inf if highest else -math.inf


def _reduction_init(op: OpType, dtype: DataType) -> bool | int | float:
    if op is OpType.sum:
        return 0
    if op is OpType.prod:
        return 1
    return _extreme(dtype, highest=op is OpType.min)


def _reduction(expr: Expr, values: ValuePrinter) -> str:
    arg = expr.inputs[0]
    init = values.constant(_reduction_init(expr.op, arg.dtype), arg.dtype)
    return _two_lines(
        expr, values,
        f"reduction( {values.value(arg)}, op = {_REDUCTION_OPS[expr.op]}, "
        f"initial value = {init}, allreduce = false )",
    )


def _welford(expr: Expr, values: ValuePrinter) -> str:
    avg, var_sum, count = (values.value(v) for v in expr.outputs)
    return (
        f"{avg}(Avg),\n{var_sum}(Var),\n{count}(Count)\n"
        f" = Welford ( {values.value(expr.inputs[0])}(Avg), \n  allreduce = false )\n"
    )


# A scan's binary op and its identity, as nvFuser's ScanOp prints them.
_SCANS = {"cumsum": ("add", 0), "cumprod": ("mul", 1), "cummin": ("min", float("inf")),
          "cummax": ("max", float("-inf"))}


def _cumsum(expr: Expr, values: ValuePrinter) -> str:
    arg = expr.inputs[0]
    op_type, init = _SCANS[expr.op.value]
    return (
        f"{values.value(expr.output)}\n"
        f"   = scan({values.value(arg)},\n"
        f"          dim={expr.attr('dim')},\n"
        f"          op_type={op_type},\n"
        f"          init={values.constant(init, arg.dtype)})\n"
    )


def _argsort(expr: Expr, values: ValuePrinter) -> str:
    return _one_line(
        expr, values,
        f"argsort( {values.value(expr.inputs[0])}, dim = {expr.attr('dim')}, "
        f"descending = {_python_bool(expr.attr('descending'))}, "
        f"stable = {_python_bool(expr.attr('stable'))} )",
    )


def _topk(expr: Expr, values: ValuePrinter) -> str:
    arg, k = (values.value(v) for v in expr.inputs)
    return (
        f"{_output_tuple(expr, values)} = topk( {arg}, {k}, dim = {expr.attr('dim')}, "
        f"largest = {_python_bool(expr.attr('largest'))}, "
        f"sorted = {_python_bool(expr.attr('sorted'))} )\n"
    )
