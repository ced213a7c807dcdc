"""Reference rules for everything that is not elementwise.

Reductions, normalizations, scans and sorts; shape ops (broadcast, expand, reshape, permute,
squeeze, slice, pad, cat); indexing; creation and random numbers; matmul and linear; shape
queries (attention and grouped_mm: ``attention``). As for the elementwise rules, each is the
eager-torch call a user would write, kept independent of the executors' tables. A rule receives
tensors, Python numbers for scalars and lists of ints for vectors; the interpreter converts its
results to the IR dtypes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from fusecli.ir import dtype as dt
from fusecli.ir.attrs import (
    embedding_options,
    pad_widths,
    random_seed,
    slice_bounds,
)
from fusecli.ir.optype import OpType
from fusecli.ir.rng import random_tensor
from fusecli.reference.context import OpContext

Tensor = torch.Tensor

# -- reductions and friends --------------------------------------------------------------------


def _reduction_dims(ctx: OpContext, x: Tensor) -> tuple[Tensor, tuple[int, ...]]:
    """The operand and the dims to reduce, never empty.

    torch reads ``dim=()`` as "every dim", while a reduction over no dims is a copy; reducing
    over a new leading size-1 dim is that copy, in the reduction's own code path.
    """
    dims = tuple(ctx.attr("dims"))
    if not dims:
        return x.unsqueeze(0), (0,)
    return x, dims


def _over_dims(reduce: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The rule ``reduce(x, dim=dims)`` over the expr's ``dims``."""

    def rule(ctx: OpContext, x: Tensor) -> Tensor:
        x, dims = _reduction_dims(ctx, x)
        return reduce(x, dim=dims)

    return rule


def _product(x: Tensor, dim: tuple[int, ...]) -> Tensor:
    # torch.prod takes one dim at a time; innermost first keeps the others' numbers valid.
    for axis in sorted(dim, reverse=True):
        x = torch.prod(x, dim=axis)
    return x


def _var(ctx: OpContext, x: Tensor) -> Tensor:
    x, dims = _reduction_dims(ctx, x)
    return torch.var(x, dim=dims, correction=ctx.attr("correction"))


def _var_mean(ctx: OpContext, x: Tensor) -> tuple[Tensor, Tensor]:
    x, dims = _reduction_dims(ctx, x)
    return torch.var_mean(x, dim=dims, correction=ctx.attr("correction"))


def _welford(ctx: OpContext, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(mean, sum of squared deviations from the mean, count): the definitions, not Welford's
    streaming update, which is how an executor may compute them."""
    x, dims = _reduction_dims(ctx, x)
    mean = torch.mean(x, dim=dims, keepdim=True)
    m2 = torch.sum((x - mean) ** 2, dim=dims)
    count = math.prod(x.shape[dim] for dim in dims)
    return mean.squeeze(dims), m2, torch.full_like(m2, count, dtype=torch.int64)


def _argsort(ctx: OpContext, x: Tensor) -> Tensor:
    return torch.argsort(
        x, dim=ctx.attr("dim"), descending=ctx.attr("descending"), stable=ctx.attr("stable")
    )


def _topk(ctx: OpContext, x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    values, indices = torch.topk(
        x, int(k), dim=ctx.attr("dim"), largest=ctx.attr("largest"), sorted=ctx.attr("sorted")
    )
    return values, indices


# -- shape ops ---------------------------------------------------------------------------------


def _broadcast(ctx: OpContext, x: Tensor) -> Tensor:
    return x[tuple(None if new else slice(None) for new in ctx.attr("is_broadcast_dim"))]


def _squeeze(ctx: OpContext, x: Tensor) -> Tensor:
    """Remove size-1 dims; with ``squeeze_expanded``, also expanded broadcasts (all values along
    one are equal, so element 0 stands for them)."""
    for dim in sorted(ctx.attr("dims"), reverse=True):
        if x.shape[dim] != 1 and not ctx.attr("squeeze_expanded"):
            raise ValueError(f"cannot squeeze dimension {dim} of size {x.shape[dim]}")
        x = x.select(dim, 0)
    return x


def _slice(ctx: OpContext, *operands: object) -> Tensor:
    """Python slicing is torch's semantics: negative indices wrap, then clamp to [0, size]."""
    x = operands[0]
    starts, ends = slice_bounds(ctx.expr, operands)
    if ctx.attr("manual_normalization"):
        for dim, (start, end) in enumerate(zip(starts, ends)):
            if not 0 <= start <= end <= x.shape[dim]:
                raise ValueError(
                    f"manual_normalization needs 0 <= start <= stop <= {x.shape[dim]} in "
                    f"dimension {dim}, got {start}:{end}"
                )
    return x[tuple(slice(int(start), int(end)) for start, end in zip(starts, ends))]


def _pad(ctx: OpContext, *operands: object) -> Tensor:
    # F.pad's order is the IR's: innermost dim first; negative widths crop.
    x, value = operands[:2]
    widths = [int(width) for width in pad_widths(operands)]
    return F.pad(x, widths, mode="constant", value=value)


# -- indexing ----------------------------------------------------------------------------------


def _embedding_fwd(ctx: OpContext, indices: Tensor, weight: Tensor, *options: object) -> Tensor:
    kwargs = embedding_options(ctx.expr, (indices, weight, *options))
    if kwargs.get("max_norm") is not None:
        weight = weight.clone()  # F.embedding renormalizes the rows it reads in place
    return F.embedding(indices, weight, **kwargs)


# -- creation and random numbers ---------------------------------------------------------------


def _iota(ctx: OpContext, length: int, start: object, step: object) -> Tensor:
    return start + step * torch.arange(int(length), dtype=ctx.dtype(), device=ctx.device)


def _seed_and_offset(ctx: OpContext, operands: tuple[object, ...]) -> tuple[int, int]:
    """The expr's own (seed, offset) when seeded; else the run's seed and the expr's position
    among the fusion's random exprs, which every executor uses too."""
    given = random_seed(ctx.expr, operands)
    return (ctx.seed, ctx.random_offset) if given is None else (int(given[0]), int(given[1]))


def _number(value: object) -> object:
    return value.item() if isinstance(value, Tensor) and value.dim() == 0 else value


def _drawn_dtype(ctx: OpContext) -> torch.dtype:
    """The output's own dtype: the stream differs by dtype (float64 mode converts after)."""
    return dt.to_torch(ctx.expr.outputs[0].dtype)


def _random(kind: str) -> Callable[..., Tensor]:
    def rule(ctx: OpContext, first: object, second: object, shape: list[int], *seeds) -> Tensor:
        seed, offset = _seed_and_offset(ctx, (first, second, shape, *seeds))
        return random_tensor(
            kind,
            tuple(shape),
            _drawn_dtype(ctx),
            _number(first),
            _number(second),
            seed,
            offset,
            ctx.device,
        )

    return rule


def _random_like(kind: str) -> Callable[..., Tensor]:
    def rule(ctx: OpContext, x: Tensor, *seeds: object) -> Tensor:
        seed, offset = _seed_and_offset(ctx, (x, *seeds))
        return random_tensor(
            kind, tuple(x.shape), _drawn_dtype(ctx), 0.0, 1.0, seed, offset, ctx.device
        )

    return rule


# -- matmul -------------------------------------------------------------------------------------


def _mma(ctx: OpContext, a: Tensor, b: Tensor) -> Tensor:
    """The 2024 lowering of matmul: broadcast operands, multiply, sum over K (in Float)."""
    dtype = ctx.dtype()
    return (a.to(dtype) * b.to(dtype)).sum(dim=ctx.expr.attr("reduction_axis"))


# -- the table ---------------------------------------------------------------------------------


def _dim(ctx: OpContext) -> int:
    return ctx.attr("dim")


# One-line rules are written in place: the table reads as the list of what each op means.
STRUCTURAL_RULES: dict[OpType, Callable[..., object]] = {
    # reductions over ``dims``
    OpType.sum: _over_dims(torch.sum),
    OpType.prod: _over_dims(_product),
    OpType.max: _over_dims(torch.amax),
    OpType.min: _over_dims(torch.amin),
    OpType.var: _var,
    OpType.var_mean: _var_mean,
    OpType.welford: _welford,
    # scans and sorts along ``dim``
    OpType.cumsum: lambda ctx, x: torch.cumsum(x, dim=_dim(ctx)),
    OpType.cumprod: lambda ctx, x: torch.cumprod(x, dim=_dim(ctx)),
    OpType.cummin: lambda ctx, x: torch.cummin(x, dim=_dim(ctx)).values,
    OpType.cummax: lambda ctx, x: torch.cummax(x, dim=_dim(ctx)).values,
    OpType.argsort: _argsort,
    OpType.topk: _topk,
    # shapes
    OpType.broadcast: _broadcast,
    OpType.expand: lambda ctx, x, shape: x.expand(shape),  # -1 keeps the size, as in the IR
    OpType.reshape: lambda ctx, x, shape: x.reshape(shape),
    OpType.permute: lambda ctx, x: x.permute(ctx.attr("dims")),
    OpType.squeeze: _squeeze,
    OpType.slice: _slice,
    OpType.pad: _pad,
    OpType.cat: lambda ctx, *tensors: torch.cat(tensors, dim=_dim(ctx)),
    # indexing; torch indexes with int64 only
    OpType.index_select: lambda ctx, x, index: torch.index_select(x, _dim(ctx), index),
    OpType.select: lambda ctx, x, index: torch.select(x, _dim(ctx), int(index)),
    OpType.gather: lambda ctx, x, index: torch.gather(x, _dim(ctx), index.long()),
    OpType.take_along_axis: lambda ctx, x, index: torch.take_along_dim(
        x, index.long(), dim=_dim(ctx)
    ),
    OpType.scatter: lambda ctx, x, index, src: torch.scatter(x, _dim(ctx), index.long(), src),
    OpType.index_put_accumulate: lambda ctx, acc, index, value: torch.index_put(
        acc, (index.long(),), value, accumulate=True
    ),
    OpType.embedding_fwd: _embedding_fwd,
    # creation and random numbers
    OpType.full: lambda ctx, shape, fill: torch.full(
        shape, fill, dtype=ctx.dtype(), device=ctx.device
    ),
    OpType.iota: _iota,
    OpType.uniform: _random("uniform"),
    OpType.normal: _random("normal"),
    OpType.rand_like: _random_like("uniform"),
    OpType.randn_like: _random_like("normal"),
    # products
    OpType.matmul: lambda ctx, a, b: a @ b,
    OpType.mma: _mma,
    OpType.linear: lambda ctx, *operands: F.linear(*operands),  # x Wᵀ (+ bias)
    OpType.triu: lambda ctx, x, diagonal=0: torch.triu(x, diagonal=int(diagonal)),
    # shape queries
    OpType.size: lambda ctx, x: x.size(_dim(ctx)),
}
