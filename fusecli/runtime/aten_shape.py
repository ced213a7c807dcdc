"""ATen execution of shape exprs: broadcast, expand, reshape, permute, squeeze, slice, pad, cat.

Wherever torch can, the result is a view of the operand (unsqueeze, expand, permute, slicing,
reshape of a compatible layout): this executor is also the GPU fallback, and a view costs
nothing. Fusion outputs are collected at the end (``runtime.outputs``): a view comes back
only where nvFuser returns one.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from fusecli.ir.attrs import pad_widths, slice_bounds
from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpType
from fusecli.runtime.aten_elementwise import AtenFn
from fusecli.runtime.context import ExecutionContext


def _broadcast(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    (tensor,) = args
    for axis, is_new in enumerate(expr.attr("is_broadcast_dim")):
        if is_new:
            tensor = tensor.unsqueeze(axis)
    return (tensor,)


def _expand(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    tensor, shape = args
    return (tensor.expand([int(size) for size in shape]),)  # -1 keeps the size


def _reshape(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    tensor, shape = args
    return (tensor.reshape([int(size) for size in shape]),)  # one -1 is inferred


def _permute(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    return (args[0].permute(expr.attr("dims")),)


def _squeeze(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    """Drop ``dims``; an expanded broadcast (squeeze_expanded) keeps its one distinct value."""
    (tensor,) = args
    for axis in sorted(expr.attr("dims"), reverse=True):
        tensor = tensor.select(axis, 0)
    return (tensor,)


def _slice(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    return (args[0][slice_index(expr, args)],)


def slice_index(expr: Expr, args: list[Any]) -> tuple[slice, ...]:
    """A stride-1 slice's index into its operand ``args[0]``: torch's wrap-and-clamp, or
    indices used as given (manual_normalization)."""
    starts, ends = slice_bounds(expr, args)
    manual = expr.attr("manual_normalization", False)
    index = []
    for size, start, end in zip(args[0].shape, starts, ends):
        start, end = int(start), int(end)
        if manual:  # already normalized: no wrapping of negative values
            start, end = min(max(start, 0), size), min(max(end, 0), size)
        index.append(slice(start, end))  # Python slicing wraps, clamps and keeps stop >= start
    return tuple(index)


def _pad(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    """F.pad order: innermost dimension first, (left, right) pairs; negative widths crop."""
    tensor, value = args[:2]
    widths = [int(width) for width in pad_widths(args)]
    if tensor.dtype is torch.bool:
        value = bool(value)
    return (F.pad(tensor, widths, mode="constant", value=value),)


def _cat(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    return (torch.cat(args, dim=expr.attr("dim")),)


SHAPE_OPS: dict[OpType, AtenFn] = {
    # always views of the operand
    OpType.broadcast: _broadcast,
    OpType.expand: _expand,
    OpType.permute: _permute,
    OpType.slice: _slice,
    OpType.squeeze: _squeeze,
    # a view where the layout allows, else a copy
    OpType.reshape: _reshape,
    # always new tensors
    OpType.pad: _pad,
    OpType.cat: _cat,
}
