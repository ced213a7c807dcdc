"""ATen execution of indexing, creation, random numbers, matmul / linear, triu and shape
queries (attention and grouped_mm: ``aten_attention``).

Creation ops with no tensor operand (full, iota, uniform, normal) allocate on ``ctx.device``.
Random values come from ``fusecli.ir.rng.random_tensor``, the stream the reference shares.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from fusecli.ir import dtype as dt
from fusecli.ir.attrs import embedding_options, random_seed
from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpType
from fusecli.ir.rng import random_tensor
from fusecli.runtime.aten_elementwise import AtenFn
from fusecli.runtime.context import ExecutionContext

Tensor = torch.Tensor

# -- indexing ---------------------------------------------------------------------------------


def _long(index: Tensor) -> Tensor:
    return index if index.dtype is torch.int64 else index.long()


def _index_select(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    tensor, index = args
    return (torch.index_select(tensor, expr.attr("dim"), index),)


def _select(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    tensor, index = args
    return (tensor.select(expr.attr("dim"), int(index)),)


def _gather(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    tensor, index = args
    return (torch.gather(tensor, expr.attr("dim"), _long(index)),)


def _take_along_axis(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    tensor, index = args
    return (torch.take_along_dim(tensor, _long(index), dim=expr.attr("dim")),)


def _scatter(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    """Out of place; a scalar ``src`` fills the indexed positions."""
    tensor, index, src = args
    return (torch.scatter(tensor, expr.attr("dim"), _long(index), src),)


def _index_put_accumulate(
    expr: Expr, args: list[Any], ctx: ExecutionContext
) -> tuple[Any, ...]:
    acc, index, value = args
    return (torch.index_put(acc, (_long(index),), value, accumulate=True),)


_EMBEDDING_OPTIONS = ("padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")


def _embedding_fwd(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    indices, weight = args[:2]
    options = embedding_options(expr, args)
    if options.get("max_norm") is not None:
        weight = weight.clone()  # F.embedding renormalizes the rows it reads in place
    kwargs = {name: options[name] for name in _EMBEDDING_OPTIONS if name in options}
    if "padding_idx" in kwargs:
        kwargs["padding_idx"] = int(kwargs["padding_idx"])
    return (F.embedding(indices, weight, **kwargs),)


# -- creation and random numbers ----------------------------------------------------------------


def _full(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    shape, fill = args
    dtype = dt.to_torch(expr.attr("dtype"))
    return (torch.full([int(s) for s in shape], fill, dtype=dtype, device=ctx.device),)


def _iota(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    """``start + step * arange(length)``, computed in the output dtype."""
    length, start, step = args
    dtype = dt.to_torch(expr.attr("dtype"))
    steps = torch.arange(int(length), dtype=dtype, device=ctx.device)
    return (steps * step + start,)


def _seed_and_offset(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[int, int]:
    given = random_seed(expr, args)
    if given is None:
        return ctx.seed, ctx.random_offsets[expr.uid]
    seed, offset = given
    return int(seed), int(offset)


def _random(kind: str) -> AtenFn:
    def run(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
        first, second, shape = args[:3]
        seed, offset = _seed_and_offset(expr, args, ctx)
        values = random_tensor(
            kind, tuple(int(s) for s in shape), dt.to_torch(expr.attr("dtype")),
            float(first), float(second), seed, offset, ctx.device,
        )
        return (values,)

    return run


def _random_like(kind: str, first: float, second: float) -> AtenFn:
    def run(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
        tensor = args[0]
        seed, offset = _seed_and_offset(expr, args, ctx)
        values = random_tensor(
            kind, tuple(tensor.shape), tensor.dtype, first, second, seed, offset, tensor.device
        )
        return (values,)

    return run


# -- matmul and linear -------------------------------------------------------------------------


def _matmul(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    return (torch.matmul(*args),)


def _linear(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    return (F.linear(*args),)


def _mma(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    """nvfuser-2024's lowering: operands broadcast to the output's domain, multiplied, summed
    over ``reduction_axis`` (default: the output's reduction domains) in the output dtype."""
    a, b = args
    out = expr.output
    axis = expr.attr("reduction_axis")
    reduced = (axis,) if axis is not None else tuple(
        position for position, domain in enumerate(out.domain) if domain.is_reduction
    )
    dtype = dt.to_torch(out.dtype)
    return (torch.sum(a.to(dtype) * b.to(dtype), dim=reduced),)


def _triu(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    tensor, *diagonal = args
    return (torch.triu(tensor, int(diagonal[0]) if diagonal else 0),)


# -- shape queries ------------------------------------------------------------------------------


def _size(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    return (int(args[0].shape[expr.attr("dim")]),)


def _shape(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    return (tuple(int(size) for size in args[0].shape),)


def _at(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    vector, *index = args
    return (vector[int(index[0]) if index else expr.attr("index")],)


OTHER_OPS: dict[OpType, AtenFn] = {
    OpType.index_select: _index_select,
    OpType.select: _select,
    OpType.gather: _gather,
    OpType.take_along_axis: _take_along_axis,
    OpType.scatter: _scatter,
    OpType.index_put_accumulate: _index_put_accumulate,
    OpType.embedding_fwd: _embedding_fwd,
    OpType.full: _full,
    OpType.iota: _iota,
    OpType.uniform: _random("uniform"),
    OpType.normal: _random("normal"),
    OpType.rand_like: _random_like("uniform", 0.0, 1.0),
    OpType.randn_like: _random_like("normal", 0.0, 1.0),
    OpType.matmul: _matmul,
    OpType.linear: _linear,
    OpType.mma: _mma,
    OpType.triu: _triu,
    OpType.size: _size,
    OpType.shape: _shape,
    OpType.at: _at,
}
