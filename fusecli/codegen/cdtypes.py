"""How each DataType lives in generated CUDA C: in memory, in registers, and as a literal.

Half and bfloat16 are stored as 16-bit structs (``float16``, ``bfloat16``, defined in the
prelude) and computed in ``float``, as nvFuser does: a load converts to float, a store rounds to
nearest even. An op whose result is a half or bfloat16 value rounds it right away, so that a
chain of such ops rounds where eager torch does. Types without an entry (float8, complex) fail
loudly, naming the dtype.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from fusecli.codegen.kernel import UnsupportedError
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import TensorView

# dtype -> (type in memory, type in registers)
_TYPES: dict[DataType, tuple[str, str]] = {
    DataType.Double: ("double", "double"),
    DataType.Float: ("float", "float"),
    DataType.Half: ("float16", "float"),
    DataType.BFloat16: ("bfloat16", "float"),
    DataType.Int: ("long long", "long long"),
    DataType.Int32: ("int", "int"),
    DataType.UInt64: ("unsigned long long", "unsigned long long"),
    DataType.Bool: ("bool", "bool"),
}

# Reduced floats: their load, store and rounding helpers (prelude functions).
_REDUCED: dict[DataType, tuple[str, str, str]] = {
    DataType.Half: ("float16_to_float", "float_to_float16", "round_to_float16"),
    DataType.BFloat16: ("bfloat16_to_float", "float_to_bfloat16", "round_to_bfloat16"),
}


def _types(dtype: DataType) -> tuple[str, str]:
    found = _TYPES.get(dtype)
    if found is None:
        raise UnsupportedError(f"the CUDA renderer has no type for {dtype.name}")
    return found


def require(tensors: Iterable[TensorView]) -> None:
    """Fail, naming the dtype, unless the renderer has a type for every one of ``tensors``."""
    for tensor in tensors:
        _types(tensor.dtype)


def storage_type(dtype: DataType) -> str:
    return _types(dtype)[0]


def register_type(dtype: DataType) -> str:
    return _types(dtype)[1]


def itemsize(dtype: DataType) -> int:
    _types(dtype)
    return max(1, dt.info(dtype).bits // 8)


def itemsize_of_register(dtype: DataType) -> int:
    """Bytes of ``dtype``'s register type (a float for half and bfloat16)."""
    return 4 if dtype in _REDUCED else itemsize(dtype)


def is_reduced(dtype: DataType) -> bool:
    return dtype in _REDUCED


def load(dtype: DataType, element: str) -> str:
    """The register value of ``element``, an lvalue of the storage type."""
    return f"{_REDUCED[dtype][0]}({element})" if dtype in _REDUCED else element


def store(dtype: DataType, value: str) -> str:
    """``value`` (a register value) converted for storing."""
    return f"{_REDUCED[dtype][1]}({value})" if dtype in _REDUCED else value


def rounded(dtype: DataType, value: str) -> str:
    """``value`` rounded to the precision of ``dtype`` (a no-op for full-precision types)."""
    return f"{_REDUCED[dtype][2]}({value})" if dtype in _REDUCED else value


def unrounded(dtype: DataType, expression: str) -> str | None:
    """The argument of ``expression`` if it is ``rounded(dtype, argument)``, else None."""
    if dtype not in _REDUCED:
        return None
    prefix = _REDUCED[dtype][2] + "("
    if not (expression.startswith(prefix) and expression.endswith(")")):
        return None
    inner, depth = expression[len(prefix):-1], 0
    for character in inner:  # one call around the whole: its parentheses balance inside
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth < 0:
            return None
    return inner if depth == 0 else None


def literal(value: object, dtype: DataType) -> str:
    """``value`` as a C literal of ``dtype``'s register type, exact for that type."""
    _types(dtype)
    if dtype is DataType.Bool:
        return "true" if value else "false"
    if dt.is_integral(dtype):
        number = int(value)
        if dtype is DataType.Int32:
            number = int(np.int64(number).astype(np.int32))
            return str(number) if number != -(2**31) else "(-2147483647 - 1)"
        if dtype is DataType.UInt64:
            return f"{number % 2**64}ULL"
        number = int(np.uint64(number % 2**64).astype(np.int64))
        return f"{number}LL" if number != -(2**63) else "(-9223372036854775807LL - 1)"
    number = float(value)
    single = dtype is not DataType.Double
    if math.isnan(number):
        return "__int_as_float(0x7fc00000) /* nan */" if single else (
            "__longlong_as_double(0x7ff8000000000000LL) /* nan */"
        )
    if math.isinf(number):
        sign = "-" if number < 0 else ""
        return f"{sign}__int_as_float(0x7f800000) /* {sign}inf */" if single else (
            f"{sign}__longlong_as_double(0x7ff0000000000000LL) /* {sign}inf */"
        )
    if dtype in _REDUCED:  # the value the reference holds: rounded to the type first
        import torch

        number = torch.tensor(number, dtype=dt.to_torch(dtype)).item()
    if single:  # numpy prints the shortest text that parses back to the same float32
        return _with_point(str(np.float32(number))) + "f"
    return _with_point(repr(number))


def _with_point(text: str) -> str:
    return text if any(c in text for c in ".en") else text + ".0"
