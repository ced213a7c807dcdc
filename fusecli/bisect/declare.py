"""How a value that becomes an input of a rebuilt fusion is declared, and laid out.

An input of the original fusion keeps its declaration. An intermediate that becomes an input is
declared from its IR type (static sizes stay static, broadcast dimensions stay broadcast) and
from its example value's layout (contiguity, stride order).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from fusecli.frontend import FusionDefinition
from fusecli.frontend.descriptors import tensor_descriptor
from fusecli.frontend.state import State
from fusecli.ir.nodes import Scalar, TensorView, Val


class DeclarationError(ValueError):
    """A value that cannot be an input: a vector, or a tensor without an example tensor."""


def example_layout(tensor_view: TensorView, value: torch.Tensor) -> torch.Tensor:
    """``value`` laid out as an input declared from ``tensor_view``: dense, broadcast
    dimensions read once (stride 0 where expanded), in the stride order it had."""
    logical = tensor_view.logical
    base = value
    for axis, domain in enumerate(logical):
        if domain.is_broadcast and base.shape[axis] > 1:
            base = base.narrow(axis, 0, 1)
    strides = base.stride()
    allocation = sorted(range(base.dim()), key=lambda axis: -strides[axis])
    permuted = base.permute(allocation)
    dense = torch.empty(permuted.shape, dtype=permuted.dtype, device=permuted.device)
    dense.copy_(permuted)
    restore = sorted(range(base.dim()), key=lambda position: allocation[position])
    return dense.permute(restore).expand(value.shape)


def declare_input(
    fd: FusionDefinition,
    value: Val,
    example: object,
    extents: Mapping[int, int],
    declared: bool,
) -> State:
    """Define ``value`` as an input of ``fd``.

    ``declared``: keep the declaration ``value`` had as an input of the original fusion (its
    contiguity and stride order); otherwise contiguity and stride order are read off
    ``example``. Static sizes come from the IR (through ``extents``), broadcast dimensions
    stay broadcast, everything else is symbolic.
    """
    if isinstance(value, Scalar):
        return fd.define_scalar(None, dtype=value.dtype)
    if not isinstance(value, TensorView) or not isinstance(example, torch.Tensor):
        raise DeclarationError(f"cannot make {value!r} an input")
    shape = []
    for domain in value.logical:
        extent = domain.extent
        if domain.is_broadcast:
            shape.append(1 if domain.expanded is None else -1)
        elif isinstance(extent, int):
            shape.append(extents.get(extent, extent))
        else:
            shape.append(-1)
    if declared and value.contiguity:
        contiguity, stride_order = list(value.contiguity), list(value.stride_order)
    else:
        _, contiguity, stride_order = tensor_descriptor(
            list(example.shape), list(example.stride())
        )
    return fd.define_tensor(
        shape=shape, contiguity=contiguity, dtype=value.dtype, is_cpu=value.is_cpu,
        stride_order=stride_order,
    )
