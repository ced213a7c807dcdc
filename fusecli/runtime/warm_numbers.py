"""Numbers a compiled warm run (``runtime.warm``) computes each call: scalar exprs over the
scalar inputs read anew each call (``cache.value_free_scalars``: a scale given as two factors,
an epsilon plus one), over those the signature decides and constants.

Each is a local of the run, which a kernel's plain launch takes as a scalar read anew
(``runtime.warm_kernels``). Arithmetic of doubles and 64-bit ints is written as Python's own,
which computes what torch's float64 and int64 ops give (ints wrapped to int64), and a cast to
float as float32's rounding; any other op goes through its ATen entry, as the full run computes
it (0-dim tensors: several us a scalar on the GPU machine).
"""

from __future__ import annotations

import math
import struct
from typing import Any

from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, Scalar
from fusecli.ir.optype import OpType

_BINARY = {OpType.add: "+", OpType.sub: "-", OpType.mul: "*"}
_EXACT = (DataType.Double, DataType.Int)  # Python's float and int compute as these do


def numbers(steps: list[tuple], fixed: set[int], dynamic: set[int]) -> set[int]:
    """The uids of the scalars each call computes from its own scalars (``dynamic``), those
    the signature decides (``fixed``) and constants, one scalar expr at a time."""
    found: set[int] = set()
    for step in steps:
        expr = step[0] == "aten" and step[1]
        if (expr and len(expr.outputs) == 1 and isinstance(expr.outputs[0], Scalar)
                and expr.op in step[2].ops and all(
                    isinstance(v, Scalar) and (v.uid in fixed or v.uid in dynamic
                                               or v.uid in found or v.is_constant)
                    for v in expr.inputs)):
            found.add(expr.outputs[0].uid)
    return found


def arithmetic(expr: Expr, operands: list[str]) -> str | None:
    """``expr`` over ``operands`` (Python expressions) as Python arithmetic computing what its
    ATen entry does, or None where Python's own would not."""
    out, kinds = expr.outputs[0].dtype, [v.dtype for v in expr.inputs]
    wrap = "INT64" if out is DataType.Int else ""  # int64's wraparound, as torch's
    if expr.op in _BINARY and len(operands) == 2 and kinds == [out, out] and out in _EXACT:
        return f"{wrap}({operands[0]} {_BINARY[expr.op]} {operands[1]})"
    if expr.op is OpType.neg and kinds == [out] and out in _EXACT:
        return f"{wrap}(-{operands[0]})"
    if expr.op is OpType.cast and len(operands) == 1:
        given = kinds[0]
        if out is DataType.Double and given in (DataType.Double, DataType.Float, DataType.Int):
            return f"float({operands[0]})"
        if out is DataType.Float and given in (DataType.Double, DataType.Float, DataType.Int):
            return f"FLOAT32({operands[0]})"
    return None


def to_int64(value: int) -> int:
    """An int wrapped to int64's range, as torch's int64 arithmetic wraps."""
    return (value + 2**63) % 2**64 - 2**63


_FLOAT32 = struct.Struct("f")


def to_float32(value: Any) -> float:
    """A number rounded to float32, as a Python float (torch's ``.to(torch.float32)``: to
    nearest even, infinity past the largest finite value): struct's float32 packing rounds so
    (a quarter of numpy's time) and refuses only what rounds to infinity."""
    value = float(value)
    try:
        return _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
