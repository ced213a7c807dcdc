"""Records of a definition, one per frontend call, and how nvFuser prints them.

A record keeps the call in its canonical form (the keyword spelling nvFuser's printed repros use)
so that ``repr(fd)`` is a runnable repro in nvFuser's format.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fusecli.frontend.state import State
from fusecli.ir.dtype import DataType


@dataclass(slots=True)
class Record:
    call: str  # "fd.ops.add", "fd.define_tensor", "fd.add_output", ...
    outputs: list[State] = field(default_factory=list)
    args: list[tuple[str | None, object]] = field(default_factory=list)
    trailing_comma: bool = False  # nvFuser prints "S1, S2, = fd.ops.tensor_sizes(T0)"
    unused_outputs: int = 0  # results that are None: "T5, _, _ = fd.ops.grouped_mm(...)"

    def text(self) -> str:
        rendered = ", ".join(
            format_value(value) if key is None else f"{key}={format_value(value)}"
            for key, value in self.args
        )
        call = f"{self.call}({rendered})"
        if not self.outputs:
            return call
        names = ", ".join([o.name for o in self.outputs] + ["_"] * self.unused_outputs)
        return f"{names}{',' if self.trailing_comma else ''} = {call}"


@dataclass(frozen=True, slots=True)
class Inline:
    """A list printed inline (``shape=[1, 2048, 512]``) whose elements may be handles."""

    items: tuple[object, ...]


def format_value(value: object) -> str:
    if isinstance(value, State):
        return value.name
    if isinstance(value, Inline):
        return "[" + ", ".join(format_value(v) for v in value.items) + "]"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, DataType):
        return f"DataType.{value.name}"
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, complex):
        return f"complex({format_double(value.real)}, {format_double(value.imag)})"
    return str(value)


def format_double(value: float) -> str:
    """C++ ``std::showpoint`` with 6 significant digits, as nvFuser prints doubles.

    Where six digits would change the value, all digits are printed instead, so that a printed
    repro computes exactly what the definition did.
    """
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    short = f"{value:#.6g}"
    if float(short) == value:
        return short
    return repr(value)
