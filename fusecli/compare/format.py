"""How numbers, shapes and indices read in summaries, notes and JSON."""

from __future__ import annotations

import math
from typing import Any

from fusecli.compare.elements import PythonScalar


def format_float(value: float) -> str:
    """``3.2e-02``, ``1e-05``, ``0``, ``inf``: short scientific notation for errors and bounds."""
    if value == 0 or not math.isfinite(value):
        return str(value).removesuffix(".0")
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa.removesuffix('.0')}e{exponent}"


def format_value(value: PythonScalar | None) -> str:
    if isinstance(value, bool | int) or value is None:
        return str(value)
    return f"{value:.4g}"


def format_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(size) for size in shape) + ")"


def json_number(value: PythonScalar | None) -> Any:
    """A JSON-safe rendering: non-finite floats as strings, complex numbers as [real, imag]."""
    if isinstance(value, complex):
        return [json_number(value.real), json_number(value.imag)]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
