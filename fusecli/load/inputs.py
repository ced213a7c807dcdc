"""Fusion inputs as data: how each one is made, made into values, and written as Python source.

A tensor input is described through its *storage span*: the ``N = 1 + sum((size - 1) * stride)``
elements from its first element (0 when a size is 0), made as a 1-D tensor and viewed with
``as_strided(shape, strides)``. That reproduces every strided layout exactly, gaps and stride-0
(expanded) dimensions included, as nvFuser's repro printer does. The span is either listed
(``values``) or generated from a distribution with a seed, on the CPU with its own
``torch.Generator`` so that the same seed gives the same values on every machine, then moved to
the device.

Each distribution is made by ``build`` and written as Python by ``render``; the two sit next to
each other in one table, and the tests check that the rendered source makes the same tensor.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fusecli.errors import InputError
from fusecli.frontend.repro import input_expression
from fusecli.ir import dtype as dt

MAX_STORED_ELEMENTS = 4096


class DTypeKind(enum.Enum):
    FLOAT = "float"  # torch generates these directly
    NARROW_FLOAT = "narrow_float"  # float8: generated in float32, then cast
    INT = "int"
    BOOL = "bool"
    COMPLEX = "complex"
    PACKED = "packed"  # float4 pairs: torch can only make zeros of them


def _dtype_kind(torch_dtype: torch.dtype) -> DTypeKind:
    if torch_dtype == torch.bool:
        return DTypeKind.BOOL
    if torch_dtype.is_complex:
        return DTypeKind.COMPLEX
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


TENSOR_DTYPES: dict[str, torch.dtype] = _tensor_dtypes()
SCALAR_DTYPES: dict[str, type] = {
    name: (
        bool if kind is DTypeKind.BOOL
        else int if kind is DTypeKind.INT
        else complex if kind is DTypeKind.COMPLEX
        else float
    )
    for name, torch_dtype in TENSOR_DTYPES.items()
    if (kind := _dtype_kind(torch_dtype)) is not DTypeKind.PACKED
}
_PYTHON_SCALAR_DTYPES = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


# --- specs ----------------------------------------------------------------------------------


class Distribution(enum.Enum):
    NORMAL = "normal"
    UNIFORM = "uniform"
    RANDINT = "randint"
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
class TensorSpec:
    """A tensor input: exactly one of ``values`` (the storage span) and ``distribution``."""

    dtype: str  # torch's short name: bfloat16, float32, int64...
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    values: tuple[Any, ...] | None = None
    distribution: DistributionSpec | None = None
    seed: int | None = None
    on_cpu: bool = False  # one of nvFuser's CPU scalar tensors (define_tensor is_cpu=True)
    note: str | None = None

    @property
    def span(self) -> int:
        return storage_span(self.shape, self.strides)


@dataclass(frozen=True, slots=True)
class ScalarSpec:
    dtype: str
    value: bool | int | float | complex


InputSpec = TensorSpec | ScalarSpec


def storage_span(shape: Sequence[int], strides: Sequence[int]) -> int:
    if any(size == 0 for size in shape):
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= max(size, 1)
    return tuple(reversed(strides))


# --- distributions ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DistributionRule:
    params: tuple[tuple[str, Any], ...]  # names and defaults
    kinds: frozenset[DTypeKind]  # dtypes it applies to
    # (params, N, generation dtype, generator) -> 1-D tensor of N elements
    build: Callable[[dict, int, torch.dtype, torch.Generator], torch.Tensor]
    # (params, N, generation dtype source, generator source) -> the same, as Python source
    render: Callable[[dict, int, str, str], str]
    random: bool = True


_ALL_KINDS = frozenset(DTypeKind)
_REAL_FLOATS = frozenset({DTypeKind.FLOAT, DTypeKind.NARROW_FLOAT})

DISTRIBUTIONS: dict[Distribution, DistributionRule] = {
    Distribution.NORMAL: DistributionRule(
        params=(("mean", 0.0), ("std", 1.0)),
        kinds=_REAL_FLOATS | {DTypeKind.COMPLEX},
        build=lambda p, n, dtype, gen: torch.normal(
            p["mean"], p["std"], (n,), generator=gen, dtype=dtype
        ),
        render=lambda p, n, dtype, gen: (
            f"torch.normal({_py(p['mean'])}, {_py(p['std'])}, ({n},), generator={gen}, "
            f"dtype={dtype})"
        ),
    ),
    Distribution.UNIFORM: DistributionRule(
        params=(("low", 0.0), ("high", 1.0)),
        kinds=_REAL_FLOATS | {DTypeKind.COMPLEX},
        build=lambda p, n, dtype, gen: torch.empty((n,), dtype=dtype).uniform_(
            p["low"], p["high"], generator=gen
        ),
        render=lambda p, n, dtype, gen: (
            f"torch.empty(({n},), dtype={dtype}).uniform_({_py(p['low'])}, {_py(p['high'])}, "
            f"generator={gen})"
        ),
    ),
    Distribution.RANDINT: DistributionRule(
        params=(("low", 0), ("high", 10)),
        kinds=_REAL_FLOATS | {DTypeKind.INT, DTypeKind.BOOL},
        build=lambda p, n, dtype, gen: torch.randint(
            p["low"], p["high"], (n,), generator=gen, dtype=dtype
        ),
        render=lambda p, n, dtype, gen: (
            f"torch.randint({p['low']}, {p['high']}, ({n},), generator={gen}, dtype={dtype})"
        ),
    ),
    Distribution.ARANGE: DistributionRule(
        params=(),
        kinds=_REAL_FLOATS | {DTypeKind.INT},
        build=lambda p, n, dtype, gen: torch.arange(n, dtype=dtype),
        render=lambda p, n, dtype, gen: f"torch.arange({n}, dtype={dtype})",
        random=False,
    ),
    Distribution.ZEROS: DistributionRule(
        params=(),
        kinds=_ALL_KINDS,
        build=lambda p, n, dtype, gen: torch.zeros((n,), dtype=dtype),
        render=lambda p, n, dtype, gen: f"torch.zeros(({n},), dtype={dtype})",
        random=False,
    ),
    Distribution.ONES: DistributionRule(
        params=(),
        kinds=_ALL_KINDS - {DTypeKind.PACKED},
        build=lambda p, n, dtype, gen: torch.ones((n,), dtype=dtype),
        render=lambda p, n, dtype, gen: f"torch.ones(({n},), dtype={dtype})",
        random=False,
    ),
    Distribution.FULL: DistributionRule(
        params=(("value", None),),
        kinds=_ALL_KINDS - {DTypeKind.PACKED},
        build=lambda p, n, dtype, gen: torch.full((n,), p["value"], dtype=dtype),
        render=lambda p, n, dtype, gen: f"torch.full(({n},), {_py(p['value'])}, dtype={dtype})",
        random=False,
    ),
}


def generation_dtype(kind: Distribution, dtype_name: str) -> torch.dtype:
    """The dtype a distribution is drawn in; the span is then cast to the input's dtype."""
    torch_dtype = TENSOR_DTYPES[dtype_name]
    if _dtype_kind(torch_dtype) is DTypeKind.NARROW_FLOAT and DISTRIBUTIONS[kind].random:
        return torch.float32
    if _dtype_kind(torch_dtype) is DTypeKind.NARROW_FLOAT and kind is Distribution.ARANGE:
        return torch.float32
    if torch_dtype == torch.uint64 and kind is Distribution.ARANGE:
        return torch.int64
    return torch_dtype


def default_distribution(dtype_name: str) -> DistributionSpec:
    """What nvFuser's repro printer draws for a dtype: randn for floats, randint for integers."""
    kind = _dtype_kind(TENSOR_DTYPES[dtype_name])
    if kind is DTypeKind.BOOL:
        return DistributionSpec(Distribution.RANDINT, (("low", 0), ("high", 2)))
    if kind is DTypeKind.INT:
        return DistributionSpec(Distribution.RANDINT, (("low", 0), ("high", 10)))
    if kind is DTypeKind.PACKED:
        return DistributionSpec(Distribution.ZEROS)
    return DistributionSpec(Distribution.NORMAL, (("mean", 0.0), ("std", 1.0)))


def distribution_applies(kind: Distribution, dtype_name: str) -> bool:
    return _dtype_kind(TENSOR_DTYPES[dtype_name]) in DISTRIBUTIONS[kind].kinds


def values_storable(dtype_name: str) -> bool:
    return _dtype_kind(TENSOR_DTYPES[dtype_name]) is not DTypeKind.PACKED


# --- making inputs --------------------------------------------------------------------------


def make_input(spec: InputSpec, device: str) -> Any:
    """The value ``spec`` describes; tensors on ``device`` unless they are CPU scalar tensors.

    Raises ValueError or RuntimeError (from torch) when the spec cannot be made.
    """
    if isinstance(spec, ScalarSpec):
        return spec.value
    torch_dtype = TENSOR_DTYPES[spec.dtype]
    if spec.values is not None:
        storage = values_to_tensor(spec.values, torch_dtype)
    else:
        assert spec.distribution is not None
        rule = DISTRIBUTIONS[spec.distribution.kind]
        gen_dtype = generation_dtype(spec.distribution.kind, spec.dtype)
        generator = torch.Generator().manual_seed(spec.seed or 0)
        storage = rule.build(dict(spec.distribution.params), spec.span, gen_dtype, generator)
        if gen_dtype != torch_dtype:
            storage = storage.to(torch_dtype)
    if not spec.on_cpu and device != "cpu":
        storage = storage.to(device)
    return storage.as_strided(spec.shape, spec.strides)


def values_to_tensor(values: Sequence[Any], torch_dtype: torch.dtype) -> torch.Tensor:
    if torch_dtype.is_complex:
        values = [complex(*pair) for pair in values]
    if torch_dtype == torch.uint64:
        # torch builds uint64 tensors from Python ints through int64; go through the bits.
        signed = [v - (1 << 64) if v >= (1 << 63) else v for v in values]
        return torch.tensor(signed, dtype=torch.int64).view(torch.uint64)
    return torch.tensor(list(values), dtype=torch_dtype)


def storage_values(tensor: torch.Tensor) -> tuple[Any, ...]:
    """The storage span of ``tensor`` as Python numbers (complex numbers as [real, imag])."""
    span = storage_span(tuple(tensor.shape), tuple(tensor.stride()))
    flat = tensor.detach().cpu().as_strided((span,), (1,))
    if tensor.dtype == torch.uint64:
        return tuple(v + (1 << 64) if v < 0 else v for v in flat.view(torch.int64).tolist())
    if tensor.dtype.is_complex:
        return tuple([z.real, z.imag] for z in flat.tolist())
    return tuple(flat.tolist())


def clone_exact(value: Any) -> Any:
    """A copy of an input that keeps its strides exactly (``clone()`` densifies gapped views)."""
    if isinstance(value, torch.Tensor):
        span = storage_span(tuple(value.shape), tuple(value.stride()))
        storage = value.detach().as_strided((span,), (1,)).clone()
        return storage.as_strided(tuple(value.shape), tuple(value.stride()))
    if isinstance(value, list | tuple):
        return type(value)(clone_exact(v) for v in value)
    return value


# --- specs of existing values -----------------------------------------------------------------


def spec_for_value(value: Any, index: int, on_cpu: bool, where: str) -> InputSpec:
    """Describe an input a script passed: its values when small, else dtype and layout only."""
    if isinstance(value, bool | int | float | complex):
        return ScalarSpec(_PYTHON_SCALAR_DTYPES[type(value)], value)
    if not isinstance(value, torch.Tensor):
        raise InputError(
            f"input {index}: a {type(value).__name__} cannot be written as a fusion input; "
            "expected a tensor or a Python number",
            where,
        )
    dtype_name = str(value.dtype).removeprefix("torch.")
    if dtype_name not in TENSOR_DTYPES:
        raise InputError(f"input {index}: nvFuser takes no {value.dtype} tensors", where)
    shape, strides = tuple(value.shape), tuple(value.stride())
    span = storage_span(shape, strides)
    if span <= MAX_STORED_ELEMENTS and values_storable(dtype_name):
        return TensorSpec(
            dtype_name, shape, strides, values=storage_values(value), on_cpu=on_cpu
        )
    distribution = default_distribution(dtype_name)
    reason = (
        f"{span} elements are more than {MAX_STORED_ELEMENTS}"
        if values_storable(dtype_name) else f"{dtype_name} values cannot be listed"
    )
    return TensorSpec(
        dtype_name, shape, strides, distribution=distribution, seed=index, on_cpu=on_cpu,
        note=f"values not stored ({reason}): drawn from {distribution.kind.value}",
    )


# --- Python source ----------------------------------------------------------------------------


def input_source(spec: InputSpec, device: str = "cuda:0") -> str:
    """A Python expression that makes the input ``spec`` describes, exactly."""
    if isinstance(spec, ScalarSpec):
        if isinstance(spec.value, complex):
            return _py(spec.value)
        return input_expression(spec.value)  # nvFuser's spelling: 0.500000, float("inf")
    dtype_source = f"torch.{spec.dtype}"
    if spec.values is not None:
        values = spec.values
        if TENSOR_DTYPES[spec.dtype].is_complex:
            values = tuple(complex(*pair) for pair in values)
        if spec.dtype == "uint64":
            signed = [v - (1 << 64) if v >= (1 << 63) else v for v in values]
            storage = f"torch.tensor({_py_list(signed)}, dtype=torch.int64).view(torch.uint64)"
        else:
            storage = f"torch.tensor({_py_list(values)}, dtype={dtype_source})"
    else:
        assert spec.distribution is not None
        rule = DISTRIBUTIONS[spec.distribution.kind]
        gen_dtype = generation_dtype(spec.distribution.kind, spec.dtype)
        gen_source = f"torch.{str(gen_dtype).removeprefix('torch.')}"
        generator = f"torch.Generator().manual_seed({spec.seed or 0})"
        storage = rule.render(dict(spec.distribution.params), spec.span, gen_source, generator)
        if gen_source != dtype_source:
            storage += f".to({dtype_source})"
    if not spec.on_cpu:
        storage += f".to({device!r})"
    return f"{storage}.as_strided({spec.shape!r}, {spec.strides!r})"


def _py(value: Any) -> str:
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
        return f"complex({_py(value.real)}, {_py(value.imag)})"
    return repr(value)


def _py_list(values: Sequence[Any], width: int = 96) -> str:
    """A list literal, wrapped to ``width`` columns with continuation lines indented."""
    items = [_py(v) for v in values]
    lines, current = [], ""
    for item in items:
        piece = item + ", "
        if current and len(current) + len(piece) > width:
            lines.append(current.rstrip())
            current = ""
        current += piece
    lines.append(current.rstrip().removesuffix(","))
    if len(lines) == 1:
        return f"[{lines[0]}]"
    return "[\n" + "".join(f"        {line}\n" for line in lines) + "    ]"
