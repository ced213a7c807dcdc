"""How a tensor input's values are drawn: named distributions over its storage span.

Each distribution is made by ``build`` and written as Python by ``render``; the two sit next to
each other in one table, and the tests check, for every distribution and dtype, that the
rendered source makes the very same tensor. Values are drawn on the CPU with a
``torch.Generator`` of their own, so that a seed gives the same values on every machine.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from fusecli.ir import dtype as dt


class DTypeKind(enum.Enum):
    FLOAT = "float"  # torch draws these directly
    NARROW_FLOAT = "narrow_float"  # float8: drawn in float32, then cast
    INT = "int"
    UNSIGNED = "unsigned"  # uint64: torch has few kernels for it
    BOOL = "bool"
    COMPLEX = "complex"
    PACKED = "packed"  # float4 pairs: torch can only make zeros of them


def dtype_kind(torch_dtype: torch.dtype) -> DTypeKind:
    if torch_dtype == torch.bool:
        return DTypeKind.BOOL
    if torch_dtype.is_complex:
        return DTypeKind.COMPLEX
    if torch_dtype == torch.uint64:
        return DTypeKind.UNSIGNED
    if not torch_dtype.is_floating_point:
        return DTypeKind.INT
    if torch_dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        return DTypeKind.FLOAT
    if torch_dtype.itemsize == 1 and "float4" in str(torch_dtype):
        return DTypeKind.PACKED
    return DTypeKind.NARROW_FLOAT


def _tensor_dtypes() -> dict[str, torch.dtype]:
    """torch's short names of the dtypes nvFuser's frontend takes, that this torch has."""
    found = {}
    for data_type in dt.DataType:
        name = dt.info(data_type).torch_name
        if name is not None and hasattr(torch, name):
            found[name] = getattr(torch, name)
    return found


_PYTHON_TYPES = {
    DTypeKind.BOOL: bool, DTypeKind.INT: int, DTypeKind.UNSIGNED: int,
    DTypeKind.COMPLEX: complex, DTypeKind.FLOAT: float, DTypeKind.NARROW_FLOAT: float,
}
TENSOR_DTYPES: dict[str, torch.dtype] = _tensor_dtypes()
# The Python type of one element (and of a scalar input) of each dtype that has one.
SCALAR_DTYPES: dict[str, type] = {
    name: _PYTHON_TYPES[dtype_kind(torch_dtype)]
    for name, torch_dtype in TENSOR_DTYPES.items()
    if dtype_kind(torch_dtype) in _PYTHON_TYPES
}


def kind_of(dtype_name: str) -> DTypeKind:
    return dtype_kind(TENSOR_DTYPES[dtype_name])


class Distribution(enum.Enum):
    NORMAL = "normal"
    UNIFORM = "uniform"
    RANDINT = "randint"
    RANGE = "range"
    ARANGE = "arange"
    ZEROS = "zeros"
    ONES = "ones"
    FULL = "full"


@dataclass(frozen=True, slots=True)
class DistributionSpec:
    kind: Distribution
    params: tuple[tuple[str, Any], ...] = ()  # in the rule's order, defaults filled in

    def param(self, name: str) -> Any:
        return dict(self.params)[name]


@dataclass(frozen=True, slots=True)
class DistributionRule:
    params: tuple[tuple[str, Any], ...]  # names and defaults (None: required)
    kinds: frozenset[DTypeKind]  # the dtypes it applies to
    # (params, N, generation dtype, generator) -> a 1-D tensor of N elements
    build: Callable[[dict, int, torch.dtype, torch.Generator], torch.Tensor]
    # (params, N, generation dtype, generator source) -> the same, as Python source
    render: Callable[[dict, int, torch.dtype, str], str]
    random: bool = True
    typed_params: bool = False  # parameters are values of the input's dtype


def _source(torch_dtype: torch.dtype) -> str:
    return f"torch.{str(torch_dtype).removeprefix('torch.')}"


def _build_range(p: dict, n: int, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    low, high = p["low"], p["high"]
    if dtype.is_floating_point:
        storage = torch.empty((n,), dtype=dtype).uniform_(low, high, generator=gen)
    else:
        storage = torch.randint(int(low), int(high) + 1, (n,), generator=gen, dtype=dtype)
    if n:
        ends = torch.tensor([low, high], dtype=dtype)
        storage.index_copy_(0, torch.tensor([0, n - 1]), ends)
    return storage


def _render_range(p: dict, n: int, dtype: torch.dtype, gen: str) -> str:
    low, high = p["low"], p["high"]
    if dtype.is_floating_point:
        source = (
            f"torch.empty(({n},), dtype={_source(dtype)}).uniform_({python_number(low)}, "
            f"{python_number(high)}, generator={gen})"
        )
    else:
        source = (
            f"torch.randint({int(low)}, {int(high) + 1}, ({n},), generator={gen}, "
            f"dtype={_source(dtype)})"
        )
    if n:
        ends = f"[{python_number(low)}, {python_number(high)}]"
        source += (
            f".index_copy_(0, torch.tensor([0, {n - 1}]), "
            f"torch.tensor({ends}, dtype={_source(dtype)}))"
        )
    return source


_REAL_FLOATS = frozenset({DTypeKind.FLOAT, DTypeKind.NARROW_FLOAT})
_INTEGERS = frozenset({DTypeKind.INT, DTypeKind.UNSIGNED})

DISTRIBUTIONS: dict[Distribution, DistributionRule] = {
    Distribution.NORMAL: DistributionRule(
        params=(("mean", 0.0), ("std", 1.0)),
        kinds=_REAL_FLOATS | {DTypeKind.COMPLEX},
        build=lambda p, n, dtype, gen: torch.normal(
            p["mean"], p["std"], (n,), generator=gen, dtype=dtype
        ),
        render=lambda p, n, dtype, gen: (
            f"torch.normal({python_number(p['mean'])}, {python_number(p['std'])}, ({n},), "
            f"generator={gen}, dtype={_source(dtype)})"
        ),
    ),
    Distribution.UNIFORM: DistributionRule(
        params=(("low", 0.0), ("high", 1.0)),
        kinds=_REAL_FLOATS | {DTypeKind.COMPLEX},
        build=lambda p, n, dtype, gen: torch.empty((n,), dtype=dtype).uniform_(
            p["low"], p["high"], generator=gen
        ),
        render=lambda p, n, dtype, gen: (
            f"torch.empty(({n},), dtype={_source(dtype)}).uniform_({python_number(p['low'])}, "
            f"{python_number(p['high'])}, generator={gen})"
        ),
    ),
    Distribution.RANDINT: DistributionRule(
        params=(("low", 0), ("high", 10)),
        kinds=_REAL_FLOATS | _INTEGERS | {DTypeKind.BOOL},
        build=lambda p, n, dtype, gen: torch.randint(
            p["low"], p["high"], (n,), generator=gen, dtype=dtype
        ),
        render=lambda p, n, dtype, gen: (
            f"torch.randint({p['low']}, {p['high']}, ({n},), generator={gen}, "
            f"dtype={_source(dtype)})"
        ),
    ),
    Distribution.RANGE: DistributionRule(
        params=(("low", None), ("high", None)),
        kinds=_REAL_FLOATS | {DTypeKind.INT, DTypeKind.BOOL},
        build=_build_range,
        render=_render_range,
        typed_params=True,
    ),
    Distribution.ARANGE: DistributionRule(
        params=(),
        kinds=_REAL_FLOATS | _INTEGERS,
        build=lambda p, n, dtype, gen: torch.arange(n, dtype=dtype),
        render=lambda p, n, dtype, gen: f"torch.arange({n}, dtype={_source(dtype)})",
        random=False,
    ),
    Distribution.ZEROS: DistributionRule(
        params=(),
        kinds=frozenset(DTypeKind),
        build=lambda p, n, dtype, gen: torch.zeros((n,), dtype=dtype),
        render=lambda p, n, dtype, gen: f"torch.zeros(({n},), dtype={_source(dtype)})",
        random=False,
    ),
    Distribution.ONES: DistributionRule(
        params=(),
        kinds=frozenset(DTypeKind) - {DTypeKind.PACKED},
        build=lambda p, n, dtype, gen: torch.ones((n,), dtype=dtype),
        render=lambda p, n, dtype, gen: f"torch.ones(({n},), dtype={_source(dtype)})",
        random=False,
    ),
    Distribution.FULL: DistributionRule(
        params=(("value", None),),
        kinds=frozenset(DTypeKind) - {DTypeKind.PACKED},
        build=lambda p, n, dtype, gen: torch.full((n,), p["value"], dtype=dtype),
        render=lambda p, n, dtype, gen: (
            f"torch.full(({n},), {python_number(p['value'])}, dtype={_source(dtype)})"
        ),
        random=False,
        typed_params=True,
    ),
}


def generation_dtype(kind: Distribution, dtype_name: str) -> torch.dtype:
    """The dtype a distribution is drawn in; the span is then cast to the input's dtype.

    float8 has no random kernels (float32 instead); ``range`` draws floats in float64 so that
    ``high - low`` cannot overflow and the cast keeps every value within [low, high].
    """
    torch_dtype = TENSOR_DTYPES[dtype_name]
    kind_of_dtype = dtype_kind(torch_dtype)
    if kind is Distribution.RANGE and kind_of_dtype in _REAL_FLOATS:
        return torch.float64
    if kind_of_dtype is DTypeKind.NARROW_FLOAT and (
        DISTRIBUTIONS[kind].random or kind is Distribution.ARANGE
    ):
        return torch.float32
    if kind_of_dtype is DTypeKind.UNSIGNED and kind is Distribution.ARANGE:
        return torch.int64
    return torch_dtype


def distribution_applies(kind: Distribution, dtype_name: str) -> bool:
    return kind_of(dtype_name) in DISTRIBUTIONS[kind].kinds


def values_storable(dtype_name: str) -> bool:
    return kind_of(dtype_name) is not DTypeKind.PACKED


def default_distribution(dtype_name: str) -> DistributionSpec:
    """What nvFuser's repro printer draws: randn for floats, randint 0..10 (0..2 for bool)."""
    kind = kind_of(dtype_name)
    if kind is DTypeKind.BOOL:
        return DistributionSpec(Distribution.RANDINT, (("low", 0), ("high", 2)))
    if kind in _INTEGERS:
        return DistributionSpec(Distribution.RANDINT, (("low", 0), ("high", 10)))
    if kind is DTypeKind.PACKED:
        return DistributionSpec(Distribution.ZEROS)
    return DistributionSpec(Distribution.NORMAL, (("mean", 0.0), ("std", 1.0)))


def observed_distribution(tensor: torch.Tensor) -> DistributionSpec:
    """A ``range`` over the values of ``tensor`` (finite ones), where it has one.

    Keeping the range keeps what ops need of their inputs (indices in bounds, divisors non-zero,
    logarithms of positive numbers), and since ``range`` attains both ends, describing the drawn
    values again gives the same distribution.
    """
    dtype_name = str(tensor.dtype).removeprefix("torch.")
    if not distribution_applies(Distribution.RANGE, dtype_name) or tensor.numel() == 0:
        return default_distribution(dtype_name)
    values = tensor.detach()
    if values.is_floating_point():
        values = values[torch.isfinite(values)]
        if values.numel() == 0:
            return default_distribution(dtype_name)
    low, high = values.min().item(), values.max().item()
    if isinstance(low, float) and not math.isfinite(high - low):
        return default_distribution(dtype_name)  # uniform_ cannot span it
    if isinstance(low, int) and high + 1 > torch.iinfo(torch.int64).max:
        return default_distribution(dtype_name)  # randint's exclusive end would overflow
    return DistributionSpec(Distribution.RANGE, (("low", low), ("high", high)))


def python_number(value: Any) -> str:
    """Python source for a number, exactly (non-finite floats as float("inf") and so on)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(value)
    if isinstance(value, complex):
        return f"complex({python_number(value.real)}, {python_number(value.imag)})"
    return repr(value)
