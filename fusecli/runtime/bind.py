"""Binding the user's inputs to a fusion's inputs, with the checks nvFuser makes at execute.

``bind_inputs`` flattens nested lists and tuples (nvFuser does, for ``define_vector(n)``
inputs), then checks each input against its definition: count, tensor or scalar, dtype, rank,
static and broadcast sizes, and strides against the declared contiguity and stride order. A
mismatch raises ``InputError`` with one line naming the input by its position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fusecli.errors import InputError
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import (  # flatten_inputs: re-exported, bind's first step
    Fusion,
    IterDomain,
    Scalar,
    SymbolicExtent,
    TensorView,
    Val,
    flatten_inputs,
)
from fusecli.runtime.concretize import bind_slice_lengths, check_concrete_sizes


@dataclass(slots=True)
class Bindings:
    """Runtime values of a fusion's inputs: ``values`` by uid (tensors, Python numbers),
    ``extents`` the size of each symbolic extent, ``device`` where the input tensors live
    (None without tensor inputs)."""

    values: dict[int, object] = field(default_factory=dict)
    extents: dict[SymbolicExtent, int] = field(default_factory=dict)
    device: Any = None


def bind_inputs(fusion: Fusion, inputs: Sequence[Any]) -> Bindings:
    """Validate ``inputs`` against ``fusion.inputs`` and bind them; InputError on a mismatch."""
    flat = flatten_inputs(inputs)
    if len(flat) != len(fusion.inputs):
        expected = ", ".join(
            f"input {index}: {describe_input(value)}" for index, value in enumerate(fusion.inputs)
        )
        raise InputError(
            f"fusion expects {len(fusion.inputs)} inputs ({expected}), got {len(flat)}"
        )
    bindings = Bindings()
    for index, (definition, value) in enumerate(zip(fusion.inputs, flat)):
        if isinstance(definition, TensorView):
            _bind_tensor(index, definition, value, bindings)
        else:
            bindings.values[definition.uid] = bind_scalar(index, definition, value)
    bindings.device = _common_device(fusion, bindings)
    bind_slice_lengths(fusion, bindings.extents, bindings.values)
    check_concrete_sizes(fusion, bindings.values, bindings.extents)
    return bindings


def describe_input(value: Val) -> str:
    """``bfloat16 tensor of rank 3``, ``int64 scalar``: dtypes as torch names them."""
    if isinstance(value, TensorView):
        return f"{dtype_name(value.dtype)} tensor of rank {value.ndim}"
    return f"{dtype_name(value.dtype)} scalar"


def dtype_name(dtype: DataType) -> str:
    return dt.info(dtype).torch_name or dt.ir_name(dtype)


# ---------------------------------------------------------------------------------------------
# Tensors
# ---------------------------------------------------------------------------------------------


def _bind_tensor(index: int, definition: TensorView, value: Any, bindings: Bindings) -> None:
    import torch

    where = f"input {index}"
    if not isinstance(value, torch.Tensor):
        raise InputError(
            f"{where}: expected {_a(describe_input(definition))}, got {_describe_value(value)}"
        )
    try:
        expected_dtype = dt.to_torch(definition.dtype)
    except ValueError as error:  # a dtype this torch lacks (Float4_e2m1fn)
        raise InputError(f"{where}: {error}") from None
    if value.dtype != expected_dtype:
        raise InputError(
            f"{where}: expected {dtype_name(definition.dtype)}, "
            f"got {str(value.dtype).removeprefix('torch.')}"
        )
    if value.dim() != definition.ndim:
        raise InputError(
            f"{where}: expected a tensor of rank {definition.ndim}, got rank {value.dim()} "
            f"(shape {list(value.shape)})"
        )
    local: dict[SymbolicExtent, tuple[int, int]] = {}  # extent -> (dim, size) in this input
    for axis, (domain, size) in enumerate(zip(definition.logical, value.shape)):
        _check_size(where, axis, domain, int(size), local)
    for extent, (_, size) in local.items():
        bindings.extents.setdefault(extent, size)
    _check_strides(where, definition, list(value.shape), list(value.stride()))
    bindings.values[definition.uid] = value


def _check_size(
    where: str,
    axis: int,
    domain: IterDomain,
    size: int,
    local: dict[SymbolicExtent, tuple[int, int]],
) -> None:
    extent = domain.logical_extent
    if isinstance(extent, SymbolicExtent):
        if extent in local and local[extent][1] != size:
            first_axis, first_size = local[extent]
            raise InputError(
                f"{where}: dimensions {first_axis} and {axis} share one symbolic size but have "
                f"sizes {first_size} and {size}"
            )
        local.setdefault(extent, (axis, size))
        return
    if domain.is_broadcast and domain.expanded is None and size != 1:
        raise InputError(
            f"{where}: dimension {axis} is a broadcast dimension (shape entry 1) "
            f"but has size {size}"
        )
    if isinstance(extent, int) and extent != size:
        raise InputError(
            f"{where}: dimension {axis} has static size {extent} in the definition, got {size}"
        )


def _check_strides(
    where: str, definition: TensorView, sizes: list[int], strides: list[int]
) -> None:
    """nvFuser's check of strides against contiguity, walking the allocation order inside out.

    A dimension marked contiguous (True) needs the stride ``stride * size`` of the next inner
    dimension that is not broadcast (1 for the innermost); False accepts any stride; None (a
    broadcast) needs size 1 or stride 0. Size-1 dimensions are skipped: their stride is
    meaningless, and torch gives them arbitrary ones (``x.t()`` of a row vector).
    """
    rank = len(sizes)
    if not definition.contiguity or rank == 0 or 0 in sizes:
        return
    stride_order = definition.stride_order or tuple(range(rank - 1, -1, -1))
    # Allocation position p (0 outermost) holds the dim whose stride rank is rank-1-p.
    allocation = sorted(range(rank), key=lambda axis: -stride_order[axis])
    expected = 1
    for position in reversed(range(rank)):
        axis = allocation[position]
        contiguous = definition.contiguity[position]
        size, stride = sizes[axis], strides[axis]
        if contiguous is None:
            if size != 1 and stride != 0:
                raise InputError(
                    f"{where}: Stride mismatch with contiguity info: dimension {axis} is a "
                    f"broadcast dimension (contiguity None) and needs size 1 or stride 0, got "
                    f"size {size} and stride {stride} (shape {sizes}, strides {strides})"
                )
            continue
        if size == 1:
            continue
        if contiguous and stride != expected:
            raise InputError(
                f"{where}: Stride mismatch with contiguity info: dimension {axis} is marked "
                f"contiguous and needs stride {expected}, got stride {stride} "
                f"(shape {sizes}, strides {strides}, contiguity {list(definition.contiguity)})"
            )
        expected = stride * size


def _common_device(fusion: Fusion, bindings: Bindings) -> Any:
    """The device of the tensor inputs; CPU scalars (0-dim tensors) go along with any device."""
    device = None
    device_index = None
    for index, definition in enumerate(fusion.inputs):
        if not isinstance(definition, TensorView):
            continue
        tensor = bindings.values[definition.uid]
        if tensor.dim() == 0 and tensor.device.type == "cpu":
            continue
        if device is None:
            device, device_index = tensor.device, index
        elif tensor.device != device:
            raise InputError(
                f"input {index}: is on {tensor.device} but input {device_index} is on {device}; "
                "all tensor inputs must be on one device (0-dim CPU scalars excepted)"
            )
    if device is None:
        for definition in fusion.inputs:
            if isinstance(definition, TensorView):
                return bindings.values[definition.uid].device
    return device


# ---------------------------------------------------------------------------------------------
# Scalars
# ---------------------------------------------------------------------------------------------


def bind_scalar(index: int, definition: Scalar, value: Any) -> bool | int | float | complex:
    """A Python number of the scalar's dtype; 0-dim tensors and numpy numbers are unwrapped."""
    raw = value
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 0) == 0:
        value = value.item()
    dtype = definition.dtype
    if isinstance(value, bool):
        if dt.is_boolean(dtype) or dt.is_integral(dtype):
            return int(value) if dt.is_integral(dtype) else value
        if dt.is_floating(dtype) or dt.is_complex(dtype):
            return float(value) if dt.is_floating(dtype) else complex(value)
    elif isinstance(value, int):
        if dt.is_boolean(dtype) and value in (0, 1):
            return bool(value)
        if dt.is_integral(dtype):
            return value
        if dt.is_floating(dtype):
            return float(value)
        if dt.is_complex(dtype):
            return complex(value)
    elif isinstance(value, float):
        if dt.is_floating(dtype):
            return value
        if dt.is_complex(dtype):
            return complex(value)
    elif isinstance(value, complex) and dt.is_complex(dtype):
        return value
    raise InputError(f"input {index}: expected {_a(describe_input(definition))}, "
                     f"got {_describe_value(raw)}")


def unchanged_type(dtype: DataType) -> str | None:
    """The name of the Python type whose values ``bind_scalar`` returns as they are for a
    scalar of ``dtype`` (an int for an integral one, not a bool): a compiled warm run
    (``runtime.warm``) binds a value of that type without the call."""
    for test, name in ((dt.is_boolean, "bool"), (dt.is_integral, "int"),
                       (dt.is_floating, "float"), (dt.is_complex, "complex")):
        if test(dtype):
            return name
    return None


def _a(noun: str) -> str:
    return f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"


def _describe_value(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"a {dtype} tensor of shape {list(value.shape)}"
    if isinstance(value, bool | int | float | complex):
        return f"{type(value).__name__} {value!r}"
    return f"a {type(value).__name__}"
