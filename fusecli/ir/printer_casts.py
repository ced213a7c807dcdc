"""nvFuser's cast function names (type.cpp ``cast_func_str``), as its IR printer shows them."""

from __future__ import annotations

from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType

# Short names in nvFuser's cast functions: __to_<name>, and __<narrow>2<name> (type.cpp).
_TO_NAMES = {
    DataType.Float: "float", DataType.Double: "double", DataType.Int32: "int32",
    DataType.Int: "int64", DataType.UInt64: "uint64", DataType.Bool: "bool",
    DataType.ComplexFloat: "complex_float", DataType.ComplexDouble: "complex_double",
}
_NARROW_NAMES = {
    DataType.Half: "half", DataType.BFloat16: "bfloat", DataType.Float8_e4m3fn: "e4m3",
    DataType.Float8_e5m2: "e5m2", DataType.Float8_e8m0fnu: "e8m0", DataType.Float4_e2m1fn: "e2m1",
}
# What half and bfloat16 call the types they convert to (``__half2int``, ``__bfloat2uint``).
_FROM_HALF_NAMES = {**_TO_NAMES, DataType.Int: "int", DataType.UInt64: "uint", **_NARROW_NAMES}
_WIDE_FLOATS = {DataType.Float: "float", DataType.Double: "double"}
_FLOATS_FROM_FP8 = frozenset({DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16})


def cast_function(source: DataType, target: DataType) -> str:
    """nvFuser's ``cast_func_str``: ``__bfloat2float``, ``__to_double``, ``__int2half``..."""
    if source in (DataType.Half, DataType.BFloat16) and target in _FROM_HALF_NAMES:
        return f"__{_NARROW_NAMES[source]}2{_FROM_HALF_NAMES[target]}"
    if source in _NARROW_NAMES and target in _FLOATS_FROM_FP8:
        return f"__{_NARROW_NAMES[source]}2{_FROM_HALF_NAMES[target]}"
    if target in _NARROW_NAMES and source not in _NARROW_NAMES:
        if source in _WIDE_FLOATS:
            return f"__{_WIDE_FLOATS[source]}2{_NARROW_NAMES[target]}"
        if target in (DataType.Half, DataType.BFloat16):
            if dt.is_integral(source):
                return f"__int2{_NARROW_NAMES[target]}"
            if source is DataType.Bool:
                return f"__bool2{_NARROW_NAMES[target]}"
            if dt.is_complex(source):
                return f"__real_then_2{_NARROW_NAMES[target]}"
    if target in _TO_NAMES and source not in _NARROW_NAMES:
        if dt.is_complex(source) and not dt.is_complex(target):
            return f"__real_then_to_{_TO_NAMES[target]}"
        return f"__to_{_TO_NAMES[target]}"
    # A cast nvFuser does not support (fp8 to int...): still say where it goes.
    return f"__to_{_TO_NAMES.get(target) or _NARROW_NAMES.get(target) or dt.ir_name(target)}"
