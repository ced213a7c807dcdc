"""Fusion inputs as data: how each one is made, made into values, and written as Python source.

A tensor input is described through its *storage span*: the ``N = 1 + sum((size - 1) * stride)``
elements from its first element (0 when a size is 0), made as a 1-D tensor and viewed with
``as_strided(shape, strides)``. That reproduces every strided layout exactly, gaps and stride-0
(expanded) dimensions included, as nvFuser's repro printer does. The span is either listed
(``values``) or drawn from a distribution (``load.distributions``) with a seed, then moved to
the device.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fusecli.errors import InputError
from fusecli.frontend.repro import input_expression
from fusecli.load.distributions import (
    DISTRIBUTIONS,
    TENSOR_DTYPES,
    DistributionSpec,
    generation_dtype,
    observed_distribution,
    python_number,
    values_storable,
)

MAX_STORED_ELEMENTS = 4096
_PYTHON_SCALAR_DTYPES = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


# --- specs ----------------------------------------------------------------------------------


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


# --- making inputs --------------------------------------------------------------------------


def host_memory_bytes() -> int | None:
    """The machine's physical memory, where the platform says (POSIX)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def make_input(spec: InputSpec, device: str) -> Any:
    """The value ``spec`` describes; tensors on ``device`` unless they are CPU scalar tensors.

    Raises ValueError or RuntimeError (from torch) when the spec cannot be made, and
    ValueError before allocating anything when its storage would not fit in the machine's
    memory (inputs are made on the host first): a refusal, not an OOM kill.
    """
    if isinstance(spec, ScalarSpec):
        return spec.value
    torch_dtype = TENSOR_DTYPES[spec.dtype]
    needed = spec.span * torch_dtype.itemsize
    memory = host_memory_bytes()
    if memory is not None and needed > memory // 2:
        raise ValueError(
            f"its storage ({spec.span:,} elements, {needed / 2**30:,.1f} GiB) would take more "
            f"than half of this machine's memory ({memory / 2**30:,.1f} GiB)"
        )
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
    # The span is taken where the tensor lives: moving a gapped view first (.cpu() of a CUDA
    # tensor) makes a dense copy whose storage is too small for the view's strides
    flat = tensor.detach().as_strided((span,), (1,)).cpu()
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
    """Describe an input a script passed: its values when few, else its layout and range."""
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
    distribution = observed_distribution(value)
    reason = (
        f"{span} elements are more than {MAX_STORED_ELEMENTS}"
        if values_storable(dtype_name) else f"{dtype_name} values cannot be listed"
    )
    drawn = "over the same range" if distribution.params else f"as {distribution.kind.value}"
    return TensorSpec(
        dtype_name, shape, strides, distribution=distribution, seed=index, on_cpu=on_cpu,
        note=f"values not stored ({reason}); drawn {drawn}",
    )


# --- Python source ----------------------------------------------------------------------------


def input_source(spec: InputSpec, device: str = "cuda:0") -> str:
    """A Python expression that makes the input ``spec`` describes, exactly."""
    if isinstance(spec, ScalarSpec):
        if isinstance(spec.value, complex):
            return python_number(spec.value)
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
        generator = f"torch.Generator().manual_seed({spec.seed or 0})"
        storage = rule.render(dict(spec.distribution.params), spec.span, gen_dtype, generator)
        if gen_dtype != TENSOR_DTYPES[spec.dtype]:
            storage += f".to({dtype_source})"
    if not spec.on_cpu:
        storage += f".to({device!r})"
    return f"{storage}.as_strided({spec.shape!r}, {spec.strides!r})"


def _py_list(values: Sequence[Any], width: int = 96) -> str:
    """A list literal, wrapped to ``width`` columns with continuation lines indented."""
    items = [python_number(v) for v in values]
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
