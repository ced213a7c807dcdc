"""ATen execution of reductions (sum, prod, max, min), var / var_mean / welford, scans, sorts.

The IR has already decided each output dtype (integer sums accumulate in Int through an explicit
cast) and turned ``keepdim`` into a broadcast after the reduction, so each entry reduces over
``dims`` and nothing else. An empty ``dims`` reduces nothing: torch would read ``dim=()`` as
"every dimension", so those are handled before calling it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpType
from fusecli.runtime.aten_elementwise import AtenFn
from fusecli.runtime.context import ExecutionContext

Tensor = torch.Tensor


def _dims(expr: Expr) -> tuple[int, ...]:
    return tuple(expr.attr("dims"))


def _reduce(function: Callable[..., Tensor]) -> AtenFn:
    """The entry ``function(tensor, dim=dims)``; over no dims, the operand unchanged."""

    def run(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
        (tensor,) = args
        dims = _dims(expr)
        return (function(tensor, dim=dims) if dims else tensor,)

    return run


def _prod(tensor: Tensor, dim: tuple[int, ...]) -> Tensor:
    """torch.prod takes one dim: move the reduced dims last and flatten them into one (sized
    explicitly: a -1 cannot be inferred when a kept dim is zero-size)."""
    kept = [size for axis, size in enumerate(tensor.shape) if axis not in dim]
    reduced = math.prod(tensor.shape[axis] for axis in dim)
    moved = tensor.movedim(dim, tuple(range(-len(dim), 0)))
    return torch.prod(moved.reshape(*kept, reduced), dim=-1)


def _var(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    (tensor,) = args
    return (torch.var(tensor, dim=_dims(expr), correction=expr.attr("correction")),)


def _var_mean(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    (tensor,) = args
    return tuple(torch.var_mean(tensor, dim=_dims(expr), correction=expr.attr("correction")))


def _welford(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    """(mean, M2 = sum of squared deviations, count as Int with the reduced shape)."""
    (tensor,) = args
    dims = _dims(expr)
    count = 1
    for axis in dims:
        count *= tensor.shape[axis]
    var, mean = torch.var_mean(tensor, dim=dims, correction=0)
    n = torch.full(mean.shape, count, dtype=torch.int64, device=mean.device)
    return (mean, var * count, n)


def _scan(function):
    def run(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
        (tensor,) = args
        result = function(tensor, dim=expr.attr("dim"))
        return (result[0] if isinstance(result, tuple) else result,)  # cummin: (values, indices)

    return run


def _argsort(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    (tensor,) = args
    indices = torch.argsort(
        tensor, dim=expr.attr("dim"), descending=expr.attr("descending"),
        stable=expr.attr("stable"),
    )
    return (indices,)


def _topk(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    tensor, k = args
    values, indices = torch.topk(
        tensor, int(k), dim=expr.attr("dim"), largest=expr.attr("largest"),
        sorted=expr.attr("sorted"),
    )
    return (values, indices)


REDUCTION_OPS: dict[OpType, AtenFn] = {
    OpType.sum: _reduce(torch.sum),
    OpType.prod: _reduce(_prod),
    OpType.max: _reduce(torch.amax),
    OpType.min: _reduce(torch.amin),
    OpType.var: _var,
    OpType.var_mean: _var_mean,
    OpType.welford: _welford,
    OpType.cumsum: _scan(torch.cumsum),
    OpType.cumprod: _scan(torch.cumprod),
    OpType.cummin: _scan(torch.cummin),
    OpType.cummax: _scan(torch.cummax),
    OpType.argsort: _argsort,
    OpType.topk: _topk,
}
