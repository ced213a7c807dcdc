"""Turning computed values into what ``fd.execute`` returns, as nvFuser does.

- Outputs come back in ``add_output`` order, except those with ``alias_input``: their value is
  copied into that input tensor in place, and they are hidden from the results.
- Every returned tensor owns its memory: a value that shares memory with an input or with an
  earlier output (a view, or an input returned as is) is copied.
- Layout: dense, in logical order, or in the ``stride_order`` that ``add_output`` or a
  ``stride_order`` expr gave; expanded broadcast dimensions stay stride 0, as nvFuser allocates
  them.
- Scalar outputs come back as 0-dim tensors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from fusecli.errors import InputError
from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Fusion, FusionOutput, TensorView
from fusecli.ir.optype import OpType
from fusecli.runtime.aten_elementwise import with_stride_order
from fusecli.runtime.bind import Bindings
from fusecli.runtime.context import ExecutionContext, value_of

Tensor = torch.Tensor


def collect_outputs(
    fusion: Fusion, env: Mapping[int, object], bindings: Bindings, ctx: ExecutionContext
) -> list[Tensor]:
    """The fusion's visible outputs, after writing aliased outputs into their inputs."""
    input_tensors = [
        bindings.values[value.uid] for value in fusion.inputs if isinstance(value, TensorView)
    ]
    owned = _Storages(input_tensors)
    results: list[Tensor] = []
    for output in fusion.outputs:
        if output.alias_input is not None:
            continue
        value = value_of(output.value, env)
        if isinstance(output.value, TensorView):
            layout = output.stride_order or _stride_order_op(fusion, output.value)
            tensor = materialize(value, output.value, layout, owned.shares(value))
        else:
            tensor = torch.full((), value, dtype=dt.to_torch(output.value.dtype), device=ctx.device)
        owned.add(tensor)
        results.append(tensor)
    _write_aliases(fusion, env, bindings, input_tensors)
    return results


def _stride_order_op(fusion: Fusion, tensor: TensorView) -> tuple[int, ...]:
    """The layout a ``stride_order`` expr gave ``tensor``, if one defined it."""
    definition = fusion.definition(tensor)
    if definition is not None and definition.op is OpType.stride_order:
        return tuple(definition.attr("stride_order"))
    return ()


def materialize(
    value: Tensor, tensor: TensorView, stride_order: Sequence[int], must_copy: bool
) -> Tensor:
    """``value`` laid out as an output of ``tensor``; a copy when ``must_copy``."""
    expanded = [
        axis for axis, domain in enumerate(tensor.logical)
        if domain.is_broadcast and domain.expanded is not None
    ]
    base = value
    for axis in expanded:  # one element along an expanded dim: all of them are equal
        base = base.narrow(axis, 0, min(1, base.shape[axis]))
    laid = with_stride_order(base, stride_order) if stride_order else base.contiguous()
    if must_copy and laid is base:
        laid = laid.clone()
    return laid.expand(value.shape) if expanded else laid


def _write_aliases(
    fusion: Fusion, env: Mapping[int, object], bindings: Bindings, input_tensors: list[Tensor]
) -> None:
    """Copy aliased outputs into their inputs: all values are read before any input is written."""
    writes: list[tuple[Tensor, Tensor]] = []
    storages = _Storages(input_tensors)
    for index, output in enumerate(fusion.outputs):
        if output.alias_input is None:
            continue
        target = bindings.values[output.alias_input.uid]
        value = value_of(output.value, env)
        _check_alias(index, output, value, target, fusion)
        if storages.shares(value):
            value = value.clone()
        writes.append((target, value))
    for target, value in writes:
        target.copy_(value)


def _check_alias(
    index: int, output: FusionOutput, value: Any, target: Tensor, fusion: Fusion
) -> None:
    input_index = fusion.inputs.index(output.alias_input)
    if not isinstance(value, Tensor):
        raise InputError(f"output {index}: only a tensor can alias input {input_index}")
    if value.shape != target.shape or value.dtype != target.dtype:
        raise InputError(
            f"output {index}: aliases input {input_index} "
            f"({str(target.dtype).removeprefix('torch.')} {list(target.shape)}) but is "
            f"{str(value.dtype).removeprefix('torch.')} {list(value.shape)}"
        )


class _Storages:
    """The memory blocks already handed out, to tell whether a value would share one."""

    def __init__(self, tensors: Sequence[Tensor]) -> None:
        self._pointers: set[tuple[str, int]] = set()
        for tensor in tensors:
            self.add(tensor)

    @staticmethod
    def _key(tensor: Tensor) -> tuple[str, int] | None:
        pointer = tensor.untyped_storage().data_ptr()
        return (str(tensor.device), pointer) if pointer else None

    def add(self, tensor: Tensor) -> None:
        key = self._key(tensor)
        if key is not None:
            self._pointers.add(key)

    def shares(self, tensor: Any) -> bool:
        return isinstance(tensor, Tensor) and self._key(tensor) in self._pointers
