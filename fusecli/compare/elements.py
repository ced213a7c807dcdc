"""Per-element errors between two tensors, by how their dtypes compare.

Values are widened to float64 (complex128 for complex values) on the CPU. NaN matches NaN and an
infinity matches the same infinity; a NaN or infinity where the other side has something else is
an unbounded error (``inf``). Integers and booleans are equal or not, exactly.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from fusecli.compare.tolerance import dtype_name

PythonScalar = bool | int | float | complex


class Kind(enum.Enum):
    """How values of a dtype are compared."""

    EXACT = "exact"  # bool and integers: equal or not
    REAL = "real"  # floating point, within a tolerance, in float64
    COMPLEX = "complex"  # within a tolerance on |difference|, in complex128
    PACKED = "packed"  # several values per byte, no arithmetic in torch: bit for bit


_KIND_BY_DTYPE: dict[torch.dtype, Kind] = {
    **dict.fromkeys(
        (
            torch.bool,
            torch.uint8,
            torch.uint16,
            torch.uint32,
            torch.uint64,
            torch.int8,
            torch.int16,
            torch.int32,
            torch.int64,
        ),
        Kind.EXACT,
    ),
    **dict.fromkeys(
        (
            torch.float64,
            torch.float32,
            torch.float16,
            torch.bfloat16,
            torch.float8_e4m3fn,
            torch.float8_e4m3fnuz,
            torch.float8_e5m2,
            torch.float8_e5m2fnuz,
            torch.float8_e8m0fnu,
        ),
        Kind.REAL,
    ),
    **dict.fromkeys((torch.complex32, torch.complex64, torch.complex128), Kind.COMPLEX),
    torch.float4_e2m1fn_x2: Kind.PACKED,
}

# Where two kinds meet (a dtype mismatch), values are compared as the wider of the two.
COMPUTE_DTYPE: dict[Kind, torch.dtype] = {
    Kind.EXACT: torch.float64,
    Kind.REAL: torch.float64,
    Kind.COMPLEX: torch.complex128,
}


def kind_of(dtype: torch.dtype) -> Kind:
    kind = _KIND_BY_DTYPE.get(dtype)
    if kind is None:
        raise ValueError(f"fusecli.compare cannot compare tensors of dtype {dtype_name(dtype)}")
    return kind


def pair_kind(first: torch.dtype, second: torch.dtype) -> Kind | None:
    """The kind two dtypes are compared as; None when they cannot be compared elementwise."""
    kinds = {kind_of(first), kind_of(second)}
    if Kind.PACKED in kinds:
        return Kind.PACKED if first == second else None
    for kind in (Kind.COMPLEX, Kind.REAL):
        if kind in kinds:
            return kind
    return Kind.EXACT


@dataclass(frozen=True, slots=True)
class ElementErrors:
    abs_err: torch.Tensor  # float64; inf where NaN-ness or an infinity disagrees
    expected_magnitude: torch.Tensor  # float64 |expected|; 0 where expected is not finite
    differs: torch.Tensor  # bool: the values are not identical
    nan_mismatch: torch.Tensor  # bool: exactly one side is NaN
    inf_mismatch: torch.Tensor  # bool: no NaN, an infinity on either side, not equal


def element_errors(actual: torch.Tensor, expected: torch.Tensor, kind: Kind) -> ElementErrors:
    if kind is Kind.PACKED:
        differs = actual.view(torch.uint8) != expected.view(torch.uint8)
        no_flags = torch.zeros_like(differs)
        # Packed values have no arithmetic: a differing element is an error of unknown size.
        abs_err = torch.where(differs, math.nan, 0.0).to(torch.float64)
        return ElementErrors(abs_err, torch.zeros_like(abs_err), differs, no_flags, no_flags)

    compute_dtype = COMPUTE_DTYPE[kind]
    actual_wide = actual.to(compute_dtype)
    expected_wide = expected.to(compute_dtype)
    actual_nan, expected_nan = torch.isnan(actual_wide), torch.isnan(expected_wide)
    actual_inf, expected_inf = torch.isinf(actual_wide), torch.isinf(expected_wide)
    either_nan = actual_nan | expected_nan
    not_finite = either_nan | actual_inf | expected_inf
    nan_mismatch = actual_nan ^ expected_nan
    inf_mismatch = ~either_nan & (actual_inf | expected_inf) & (actual_wide != expected_wide)

    finite_diff = (actual_wide - expected_wide).abs().to(torch.float64)
    abs_err = torch.where(not_finite, 0.0, finite_diff)
    abs_err = abs_err.masked_fill(nan_mismatch | inf_mismatch, math.inf)
    magnitude = torch.where(not_finite, 0.0, expected_wide.abs().to(torch.float64))
    if kind is Kind.EXACT:
        # Exact even for int64 values beyond 2**53, which float64 cannot tell apart.
        differs = actual != expected
    else:
        differs = (abs_err > 0) | nan_mismatch | inf_mismatch
    return ElementErrors(abs_err, magnitude, differs, nan_mismatch, inf_mismatch)


def unravel(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index: list[int] = []
    for size in reversed(shape):
        flat_index, position = divmod(flat_index, size)
        index.append(position)
    return tuple(reversed(index))


def element_value(tensor: torch.Tensor, index: tuple[int, ...]) -> PythonScalar:
    if kind_of(tensor.dtype) is Kind.PACKED:
        return int(tensor.view(torch.uint8)[index].item())
    return tensor[index].item()
