"""nvFuser's data types and its type-promotion rules.

The enum members carry nvFuser's Python names (``DataType.BFloat16``); the tables below give each
one its IR spelling (``__bfloat``), its torch dtype and its promotion category. torch is imported
lazily so that ``fusecli --help`` stays fast.

Promotion follows ``csrc/type_promotion.cpp``: a PyTorch-style result type over categories
bool < int < float < complex where tensors with dimensions dominate scalars, except that nvFuser
uses a scalar's own dtype (an Int tensor times a Double scalar gives Double), and that half,
bfloat16 and the 8/4-bit floats compute and return Float.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class DataType(enum.Enum):
    Double = "Double"
    Float = "Float"
    Half = "Half"
    Int = "Int"
    Int32 = "Int32"
    UInt64 = "UInt64"
    Bool = "Bool"
    BFloat16 = "BFloat16"
    Float8_e4m3fn = "Float8_e4m3fn"
    Float8_e5m2 = "Float8_e5m2"
    Float8_e8m0fnu = "Float8_e8m0fnu"
    Float4_e2m1fn = "Float4_e2m1fn"
    Float4_e2m1fn_x2 = "Float4_e2m1fn_x2"
    ComplexFloat = "ComplexFloat"
    ComplexDouble = "ComplexDouble"
    Null = "Null"

    def __repr__(self) -> str:
        return f"DataType.{self.name}"

    __str__ = __repr__


class Category(enum.IntEnum):
    """Promotion categories, ordered as in nvFuser's ``combineCategories``."""

    BOOL = 0
    INT = 1
    FLOAT = 2
    COMPLEX = 3


@dataclass(frozen=True, slots=True)
class DTypeInfo:
    ir_name: str  # as nvFuser's IR printer spells it (csrc/type.cpp)
    torch_name: str | None  # attribute of the torch module
    category: Category | None
    bits: int
    scalar_prefix: str  # nvFuser's typePrefix for scalar names: i0, d3, f2, b1, c4


_INFO: dict[DataType, DTypeInfo] = {
    DataType.Double: DTypeInfo("double", "float64", Category.FLOAT, 64, "d"),
    DataType.Float: DTypeInfo("float", "float32", Category.FLOAT, 32, "f"),
    DataType.Half: DTypeInfo("__half", "float16", Category.FLOAT, 16, "f"),
    DataType.BFloat16: DTypeInfo("__bfloat", "bfloat16", Category.FLOAT, 16, "f"),
    DataType.Float8_e4m3fn: DTypeInfo("__e4m3", "float8_e4m3fn", Category.FLOAT, 8, "f"),
    DataType.Float8_e5m2: DTypeInfo("__e5m2", "float8_e5m2", Category.FLOAT, 8, "f"),
    DataType.Float8_e8m0fnu: DTypeInfo("__e8m0", "float8_e8m0fnu", Category.FLOAT, 8, "f"),
    DataType.Float4_e2m1fn: DTypeInfo("__e2m1", None, Category.FLOAT, 4, "f"),
    DataType.Float4_e2m1fn_x2: DTypeInfo("__e2m1_x2", "float4_e2m1fn_x2", Category.FLOAT, 8, "f"),
    DataType.Int: DTypeInfo("int64_t", "int64", Category.INT, 64, "i"),
    DataType.Int32: DTypeInfo("int", "int32", Category.INT, 32, "i"),
    DataType.UInt64: DTypeInfo("uint64_t", "uint64", Category.INT, 64, "i"),
    DataType.Bool: DTypeInfo("bool", "bool", Category.BOOL, 8, "b"),
    DataType.ComplexFloat: DTypeInfo("std::complex<float>", "complex64", Category.COMPLEX, 64, "c"),
    DataType.ComplexDouble: DTypeInfo(
        "std::complex<double>", "complex128", Category.COMPLEX, 128, "c"
    ),
    DataType.Null: DTypeInfo("null", None, None, 0, "?"),
}

# Types that nvFuser computes in Float (cast_half_to_float = true in computeTypes).
_REDUCED_FLOATS = frozenset(
    {
        DataType.Half,
        DataType.BFloat16,
        DataType.Float8_e4m3fn,
        DataType.Float8_e5m2,
        DataType.Float8_e8m0fnu,
        DataType.Float4_e2m1fn,
        DataType.Float4_e2m1fn_x2,
    }
)


def info(dtype: DataType) -> DTypeInfo:
    return _INFO[dtype]


def ir_name(dtype: DataType) -> str:
    return _INFO[dtype].ir_name


def category(dtype: DataType) -> Category:
    found = _INFO[dtype].category
    if found is None:
        raise ValueError(f"{dtype} has no promotion category")
    return found


def is_floating(dtype: DataType) -> bool:
    return _INFO[dtype].category is Category.FLOAT


def is_integral(dtype: DataType) -> bool:
    return _INFO[dtype].category is Category.INT


def is_complex(dtype: DataType) -> bool:
    return _INFO[dtype].category is Category.COMPLEX


def is_boolean(dtype: DataType) -> bool:
    return dtype is DataType.Bool


def is_reduced_float(dtype: DataType) -> bool:
    return dtype in _REDUCED_FLOATS


def to_torch(dtype: DataType):
    """The torch dtype for ``dtype``; raises for types torch lacks here."""
    import torch

    name = _INFO[dtype].torch_name
    if name is None or not hasattr(torch, name):
        raise ValueError(f"{dtype} has no torch equivalent in torch {torch.__version__}")
    return getattr(torch, name)


def from_torch(torch_dtype) -> DataType:
    """nvFuser's DataType for a torch dtype (pytorch_utils.torch_dtype_to_nvfuser_dtype)."""
    name = str(torch_dtype).removeprefix("torch.")
    for dtype, dtype_info in _INFO.items():
        if dtype_info.torch_name == name:
            return dtype
    raise ValueError(f"torch dtype {torch_dtype} is not supported by nvFuser's frontend")


def from_python_value(value: object) -> DataType:
    """The DataType nvFuser gives a Python scalar: bool, int, float or complex."""
    if isinstance(value, bool):
        return DataType.Bool
    if isinstance(value, int):
        return DataType.Int
    if isinstance(value, float):
        return DataType.Double
    if isinstance(value, complex):
        return DataType.ComplexDouble
    raise TypeError(f"cannot infer a DataType for {value!r} of type {type(value).__name__}")


def complex_to_real(dtype: DataType) -> DataType:
    return {DataType.ComplexFloat: DataType.Float, DataType.ComplexDouble: DataType.Double}.get(
        dtype, dtype
    )


def real_to_complex(dtype: DataType) -> DataType:
    return {DataType.Float: DataType.ComplexFloat, DataType.Double: DataType.ComplexDouble}.get(
        dtype, DataType.ComplexFloat
    )


# ---------------------------------------------------------------------------------------------
# Promotion
# ---------------------------------------------------------------------------------------------


class Promotion(enum.Enum):
    """nvFuser's TypePromotionConfig presets (csrc/type_promotion.h)."""

    DEFAULT = "default"  # result type, half/bf16 computed as Float
    FLOAT = "float"  # like DEFAULT, but bool and int operands promote to Float
    FLOAT_ONLY = "float_only"  # result must be Float or Double (nextafter)
    BOOL = "bool"  # comparisons and predicates: output Bool
    SAME = "same"  # output keeps the input dtype (relu, abs, floor, ...)
    NO_HALF_TO_FLOAT = "no_half_to_float"  # where(): result type, without the Float upcast


@dataclass(frozen=True, slots=True)
class Operand:
    """What promotion needs to know about one operand."""

    dtype: DataType
    is_tensor: bool  # tensors with dimensions dominate scalars
    ndim: int = 0


def _higher_within_category(a: DataType, b: DataType) -> DataType:
    """Combine two dtypes of one category, as torch's promoteTypes does."""
    if a is b:
        return a
    cat = category(a)
    if cat is Category.FLOAT:
        if {a, b} == {DataType.Half, DataType.BFloat16}:
            return DataType.Float
        return a if _INFO[a].bits >= _INFO[b].bits else b
    if cat is Category.INT:
        return a if _INFO[a].bits >= _INFO[b].bits else b
    if cat is Category.COMPLEX:
        return DataType.ComplexDouble
    return a


def result_type(operands: list[Operand]) -> DataType:
    """The common dtype of ``operands`` (computeCommonDtype): tensors first, then scalars.

    Dimensioned tensors dominate zero-dimensional ones, which dominate scalars, unless the
    lower-priority operand is of a higher category; then its own dtype sets the result.
    """
    priority_groups: list[list[DataType]] = [[], [], []]
    for operand in operands:
        if operand.is_tensor and operand.ndim > 0:
            priority_groups[0].append(operand.dtype)
        elif operand.is_tensor:
            priority_groups[1].append(operand.dtype)
        else:
            priority_groups[2].append(operand.dtype)
    result: DataType | None = None
    for group in priority_groups:
        group_type: DataType | None = None
        for dtype in group:
            group_type = dtype if group_type is None else _combine(group_type, dtype)
        if group_type is None:
            continue
        if result is None:
            result = group_type
        elif category(group_type) > category(result):
            result = _lift(result, group_type)
    if result is None:
        raise ValueError("type promotion needs at least one operand")
    return result


def _combine(a: DataType, b: DataType) -> DataType:
    if category(a) == category(b):
        return _higher_within_category(a, b)
    higher, lower = (a, b) if category(a) > category(b) else (b, a)
    if category(higher) is Category.COMPLEX and category(lower) is Category.FLOAT:
        if lower is DataType.Double:
            return DataType.ComplexDouble
    return higher


def _lift(current: DataType, higher: DataType) -> DataType:
    """A lower-priority operand of a higher category: nvFuser takes its dtype."""
    if category(higher) is Category.COMPLEX and current is DataType.Double:
        return DataType.ComplexDouble
    return higher


def promote(operands: list[Operand], rule: Promotion) -> tuple[DataType, DataType]:
    """Return ``(compute dtype, output dtype)`` for an op under ``rule``.

    The compute dtype is what operands are cast to; the output is what the op produces.
    """
    if rule is Promotion.SAME:
        dtype = operands[0].dtype
        return dtype, dtype
    common = result_type(operands)
    if rule is Promotion.NO_HALF_TO_FLOAT:
        return common, common
    if rule in (Promotion.FLOAT, Promotion.FLOAT_ONLY) and category(common) <= Category.INT:
        common = DataType.Float
    if is_reduced_float(common):
        common = DataType.Float
    if rule is Promotion.BOOL:
        return common, DataType.Bool
    return common, common
