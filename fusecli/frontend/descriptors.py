"""Parsing define_tensor and define_scalar arguments, and nvFuser's tensor descriptors.

``define_tensor`` has three overloads (canonical shape/contiguity/stride_order, bool contiguity,
and sizes/strides) plus the 2023 spellings; they all normalize to one spec here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fusecli.frontend.binding import incompatible, is_int64
from fusecli.ir import dtype as dt
from fusecli.ir.builder import DefinitionError
from fusecli.ir.dtype import DataType


def is_torch_size(value: object) -> bool:
    return type(value).__name__ == "Size"


def parse_define_tensor(args: tuple, kwargs: dict) -> dict[str, Any]:
    """Normalize the three overloads into shape, contiguity, dtype, stride_order, is_cpu."""
    kwargs = dict(kwargs)
    # 2023 spellings
    if "symbolic_sizes" in kwargs:
        kwargs["shape"] = kwargs.pop("symbolic_sizes")
    if "contiguous" in kwargs:
        kwargs["contiguity"] = kwargs.pop("contiguous")
    if "sizes" in kwargs or "strides" in kwargs or (
        len(args) >= 2 and not isinstance(args[1], bool) and len(args[1]) > 0
        and all(isinstance(x, int) and not isinstance(x, bool) for x in args[1])
    ):
        names = ["sizes", "strides", "dtype", "static_sizes", "is_cpu"]
        bound = dict(zip(names, args))
        bound.update(kwargs)
        sizes, strides = list(bound["sizes"]), list(bound["strides"])
        shape, contiguity, stride_order = tensor_descriptor(sizes, strides)
        if bound.get("static_sizes", False):
            shape = sizes
        else:
            shape = [1 if s == 1 else -1 for s in sizes]
        return {
            "shape": shape, "contiguity": contiguity,
            "dtype": bound.get("dtype", DataType.Float),
            "stride_order": stride_order, "is_cpu": bool(bound.get("is_cpu", False)),
        }
    names = ["shape", "contiguity", "dtype", "is_cpu", "stride_order"]
    bound = dict(zip(names, args))
    duplicate = set(bound) & set(kwargs)
    if duplicate:
        raise incompatible("define_tensor", f"got multiple values for {sorted(duplicate)}")
    bound.update(kwargs)
    unknown = set(bound) - set(names)
    if unknown:
        raise incompatible("define_tensor", f"unexpected arguments {sorted(unknown)}")
    shape = list(bound["shape"])
    for entry in shape:
        if not is_int64(entry):
            raise incompatible(
                "define_tensor", f"shape entries must be ints (int64), got {entry!r}"
            )
    contiguity_given = bound.get("contiguity", False)
    if not isinstance(contiguity_given, bool) and any(
        c is not None and not isinstance(c, bool) for c in contiguity_given
    ):
        raise incompatible(
            "define_tensor", f"contiguity entries must be True, False or None: {contiguity_given}"
        )
    contiguity = bound.get("contiguity", False)
    stride_order = list(bound.get("stride_order") or [])
    if isinstance(contiguity, bool):
        contiguity = expand_contiguity(shape, stride_order, contiguity)
    dtype = bound.get("dtype", DataType.Float)
    if not isinstance(dtype, DataType):
        raise incompatible("define_tensor", f"dtype must be a DataType, got {dtype!r}")
    return {
        "shape": shape,
        "contiguity": list(contiguity),
        "dtype": dtype,
        "stride_order": stride_order,
        "is_cpu": bool(bound.get("is_cpu", False)),
    }


def expand_contiguity(
    shape: Sequence[int], stride_order: Sequence[int], contiguous: bool
) -> list[bool | None]:
    """A bool contiguity as nvFuser expands it (``getContiguityVec``): one entry per dim in
    allocation order, None for a size-1 dim. Dim ``i`` sits at allocation position
    ``rank - 1 - stride_order[i]`` (position ``i`` without a stride order)."""
    rank = len(shape)
    contiguity: list[bool | None] = [None] * rank
    for index, size in enumerate(shape):
        position = index
        if len(stride_order) == rank:  # a wrong stride order is the builder's to report
            position = rank - 1 - stride_order[index] % rank
        contiguity[position] = None if size == 1 else contiguous
    return contiguity


def parse_define_scalar(args: tuple, kwargs: dict) -> tuple[Any, DataType, bool]:
    kwargs = dict(kwargs)
    if args and isinstance(args[0], DataType):
        return None, args[0], True
    value = args[0] if args else kwargs.pop("value", None)
    dtype = args[1] if len(args) > 1 else kwargs.pop("dtype", None)
    if kwargs:
        raise incompatible("define_scalar", f"unexpected arguments {sorted(kwargs)}")
    if value is None and not args:
        return None, dtype or DataType.Double, True
    if value is None:
        return None, dtype or DataType.Double, True
    if hasattr(value, "item") and callable(value.item):  # numpy and 0-dim torch numbers
        value = value.item()
    if dtype is None:
        dtype = dt.from_python_value(value)
    return _cast_python_value(value, dtype), dtype, False


def _cast_python_value(value: Any, dtype: DataType) -> Any:
    if dt.is_boolean(dtype):
        return bool(value)
    if dt.is_integral(dtype):
        if isinstance(value, float) and not value.is_integer():
            raise DefinitionError("define_scalar", f"{value} is not an integer ({dtype})")
        return int(value)
    if dt.is_floating(dtype):
        return float(value)
    if dt.is_complex(dtype):
        return complex(value)
    raise DefinitionError("define_scalar", f"unsupported scalar dtype {dtype}")


def compute_contiguity(sizes: Sequence[int], strides: Sequence[int]) -> list[bool | None]:
    """Contiguity in logical order (nvFuser's compute_contiguity)."""
    contiguity: list[bool | None] = []
    expected = 1
    for size, stride in reversed(list(zip(sizes, strides))):
        if size == 1 or stride == 0:
            contiguity.append(None)
            continue
        contiguity.append(stride == expected)
        expected = stride * size
    return list(reversed(contiguity))


def compute_tensor_descriptor(
    sizes: Sequence[int], strides: Sequence[int]
) -> tuple[list[bool | None], list[int]]:
    """nvFuser's ``compute_tensor_descriptor``: (contiguity, stride_order) of a tensor layout."""
    _, contiguity, stride_order = tensor_descriptor(sizes, strides)
    return contiguity, stride_order


def tensor_descriptor(
    sizes: Sequence[int], strides: Sequence[int]
) -> tuple[list[int], list[bool | None], list[int]]:
    """(shape, contiguity in allocation order, stride_order), as nvFuser computes them.

    Dims with non-zero stride are stable-sorted by stride, descending; stride-0 dims keep their
    logical positions; contiguity skips broadcast dims (stride 0 or size 1).
    """
    rank = len(sizes)
    if len(strides) != rank:
        raise DefinitionError("define_tensor", "sizes and strides differ in length")
    nonzero = sorted(
        (axis for axis in range(rank) if strides[axis] != 0),
        key=lambda axis: -strides[axis],
    )
    order: list[int] = []
    remaining = iter(nonzero)
    for axis in range(rank):
        order.append(axis if strides[axis] == 0 else -1)
    order = [axis if axis >= 0 else next(remaining) for axis in order]
    stride_order = [0] * rank
    for position, axis in enumerate(order):
        stride_order[axis] = rank - 1 - position
    contiguity: list[bool | None] = [None] * rank
    previous: int | None = None  # allocation position of the next inner non-broadcast dim
    for position in reversed(range(rank)):
        axis = order[position]
        if strides[axis] == 0 or sizes[axis] == 1:
            continue
        if previous is None:
            contiguity[position] = strides[axis] == 1
        else:
            inner = order[previous]
            contiguity[position] = strides[axis] == strides[inner] * sizes[inner]
        previous = position
    return list(sizes), contiguity, stride_order
