"""Reference rules for everything that is not elementwise.

Reductions, normalizations, scans and sorts; shape ops (broadcast, expand, reshape, permute,
squeeze, slice, pad, cat); indexing; creation and random numbers; matmul, linear and attention;
shape queries. As for the elementwise rules, each is the eager-torch call a user would write,
kept independent of the executors' tables. A rule receives tensors, Python numbers for scalars
and lists of ints for vectors; the interpreter converts its results to the IR dtypes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

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


def _sum(ctx: OpContext, x: Tensor) -> Tensor:
    x, dims = _reduction_dims(ctx, x)
    return torch.sum(x, dim=dims)


def _prod(ctx: OpContext, x: Tensor) -> Tensor:
    # torch.prod takes one dim at a time; innermost first keeps the others' numbers valid.
    x, dims = _reduction_dims(ctx, x)
    for dim in sorted(dims, reverse=True):
        x = torch.prod(x, dim=dim)
    return x


def _max(ctx: OpContext, x: Tensor) -> Tensor:
    x, dims = _reduction_dims(ctx, x)
    return torch.amax(x, dim=dims)


def _min(ctx: OpContext, x: Tensor) -> Tensor:
    x, dims = _reduction_dims(ctx, x)
    return torch.amin(x, dim=dims)


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


def _cumsum(ctx: OpContext, x: Tensor) -> Tensor:
    return torch.cumsum(x, dim=ctx.attr("dim"))


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


def _expand(ctx: OpContext, x: Tensor, shape: list[int]) -> Tensor:
    return x.expand(shape)  # -1 keeps the size, as in the IR


def _reshape(ctx: OpContext, x: Tensor, shape: list[int]) -> Tensor:
    return x.reshape(shape)


def _permute(ctx: OpContext, x: Tensor) -> Tensor:
    return x.permute(ctx.attr("dims"))


def _squeeze(ctx: OpContext, x: Tensor) -> Tensor:
    """Remove size-1 dims; with ``squeeze_expanded``, also expanded broadcasts (all values along
    one are equal, so element 0 stands for them)."""
    for dim in sorted(ctx.attr("dims"), reverse=True):
        if x.shape[dim] != 1 and not ctx.attr("squeeze_expanded"):
            raise ValueError(f"cannot squeeze dimension {dim} of size {x.shape[dim]}")
        x = x.select(dim, 0)
    return x


def _slice(ctx: OpContext, x: Tensor, *bounds: int) -> Tensor:
    """Python slicing is torch's semantics: negative indices wrap, then clamp to [0, size]."""
    starts, ends = bounds[: x.dim()], bounds[x.dim() :]
    if ctx.attr("manual_normalization"):
        for dim, (start, end) in enumerate(zip(starts, ends)):
            if not 0 <= start <= end <= x.shape[dim]:
                raise ValueError(
                    f"manual_normalization needs 0 <= start <= stop <= {x.shape[dim]} in "
                    f"dimension {dim}, got {start}:{end}"
                )
    return x[tuple(slice(int(start), int(end)) for start, end in zip(starts, ends))]


def _pad(ctx: OpContext, x: Tensor, value: object, *widths: int) -> Tensor:
    # F.pad's order is the IR's: innermost dim first; negative widths crop.
    return F.pad(x, [int(width) for width in widths], mode="constant", value=value)


def _cat(ctx: OpContext, *tensors: Tensor) -> Tensor:
    return torch.cat(tensors, dim=ctx.attr("dim"))


# -- indexing ----------------------------------------------------------------------------------


def _index_select(ctx: OpContext, x: Tensor, index: Tensor) -> Tensor:
    return torch.index_select(x, ctx.attr("dim"), index)


def _select(ctx: OpContext, x: Tensor, index: int) -> Tensor:
    return torch.select(x, ctx.attr("dim"), int(index))


def _gather(ctx: OpContext, x: Tensor, index: Tensor) -> Tensor:
    return torch.gather(x, ctx.attr("dim"), index.long())  # torch indexes with int64 only


def _take_along_axis(ctx: OpContext, x: Tensor, index: Tensor) -> Tensor:
    return torch.take_along_dim(x, index.long(), dim=ctx.attr("dim"))


def _scatter(ctx: OpContext, x: Tensor, index: Tensor, src: Tensor | float) -> Tensor:
    return torch.scatter(x, ctx.attr("dim"), index.long(), src)


def _embedding_fwd(ctx: OpContext, indices: Tensor, weight: Tensor, *options: object) -> Tensor:
    kwargs = dict(zip(ctx.attr("options"), options))
    if kwargs.get("max_norm") is not None:
        weight = weight.clone()  # F.embedding renormalizes the rows it reads in place
    return F.embedding(indices, weight, **kwargs)


# -- creation and random numbers ---------------------------------------------------------------


def _full(ctx: OpContext, shape: list[int], fill: object) -> Tensor:
    return torch.full(shape, fill, dtype=ctx.dtype(), device=ctx.device)


def _iota(ctx: OpContext, length: int, start: object, step: object) -> Tensor:
    return start + step * torch.arange(int(length), dtype=ctx.dtype(), device=ctx.device)


def _seed_and_offset(ctx: OpContext, given: tuple[object, ...]) -> tuple[int, int]:
    """The expr's own (seed, offset) when seeded; else the run's seed and the expr's position
    among the fusion's random exprs, which every executor uses too."""
    if ctx.attr("seeded"):
        seed, offset = given
        return int(seed), int(offset)
    return ctx.seed, ctx.random_offset


def _number(value: object) -> object:
    return value.item() if isinstance(value, Tensor) and value.dim() == 0 else value


def _random(kind: str) -> Callable[..., Tensor]:
    def rule(ctx: OpContext, first: object, second: object, shape: list[int], *seeds) -> Tensor:
        seed, offset = _seed_and_offset(ctx, seeds)
        return random_tensor(
            kind,
            tuple(shape),
            ctx.dtype(),
            _number(first),
            _number(second),
            seed,
            offset,
            ctx.device,
        )

    return rule


def _random_like(kind: str) -> Callable[..., Tensor]:
    def rule(ctx: OpContext, x: Tensor, *seeds: object) -> Tensor:
        seed, offset = _seed_and_offset(ctx, seeds)
        return random_tensor(kind, tuple(x.shape), ctx.dtype(), 0.0, 1.0, seed, offset, ctx.device)

    return rule


# -- matmul and attention ----------------------------------------------------------------------


def _matmul(ctx: OpContext, a: Tensor, b: Tensor) -> Tensor:
    return torch.matmul(a, b)


def _mma(ctx: OpContext, a: Tensor, b: Tensor) -> Tensor:
    """The 2024 lowering of matmul: broadcast operands, multiply, sum over K (in Float)."""
    dtype = ctx.dtype()
    return (a.to(dtype) * b.to(dtype)).sum(dim=ctx.expr.attr("reduction_axis"))


def _linear(ctx: OpContext, a: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    return F.linear(a, weight, bias)


def _sdpfa_fwd(ctx: OpContext, query: Tensor, key: Tensor, value: Tensor, *given: object):
    """softmax(q k^T * scale) v, written out, in float32 at least (float64 for Double inputs
    and in float64 mode); the logsumexp of the same scaled, masked scores; zero philox state.
    """
    names = [name for name in ("dropout_p", "is_causal", "scale") if ctx.attr(f"has_{name}")]
    options = dict(zip(names, given))
    dropout_p = float(options.get("dropout_p") or 0.0)
    if dropout_p > 0:
        raise ValueError(
            f"dropout_p={dropout_p} cannot be reproduced: dropout draws from nvFuser's philox "
            "stream; compare with dropout_p=0.0"
        )
    scale = options.get("scale")
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    math_dtype = torch.promote_types(query.dtype, torch.float32)
    q, k, v = (t.to(math_dtype) for t in (query, key, value))
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    if options.get("is_causal"):
        length, source_length = scores.shape[-2:]
        keep = torch.ones(length, source_length, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    out = torch.matmul(torch.softmax(scores, dim=-1), v)
    logsumexp = torch.logsumexp(scores, dim=-1)
    philox_seed = torch.zeros((), dtype=torch.int64, device=ctx.device)
    philox_offset = torch.zeros((), dtype=torch.int64, device=ctx.device)
    return out, logsumexp, philox_seed, philox_offset


def _triu(ctx: OpContext, x: Tensor, diagonal: int = 0) -> Tensor:
    return torch.triu(x, diagonal=int(diagonal))


# -- shape queries -----------------------------------------------------------------------------


def _size(ctx: OpContext, x: Tensor) -> int:
    return x.size(ctx.attr("dim"))


RULES: dict[OpType, Callable[..., object]] = {
    OpType.sum: _sum,
    OpType.prod: _prod,
    OpType.max: _max,
    OpType.min: _min,
    OpType.var: _var,
    OpType.var_mean: _var_mean,
    OpType.welford: _welford,
    OpType.cumsum: _cumsum,
    OpType.argsort: _argsort,
    OpType.topk: _topk,
    OpType.broadcast: _broadcast,
    OpType.expand: _expand,
    OpType.reshape: _reshape,
    OpType.permute: _permute,
    OpType.squeeze: _squeeze,
    OpType.slice: _slice,
    OpType.pad: _pad,
    OpType.cat: _cat,
    OpType.index_select: _index_select,
    OpType.select: _select,
    OpType.gather: _gather,
    OpType.take_along_axis: _take_along_axis,
    OpType.scatter: _scatter,
    OpType.embedding_fwd: _embedding_fwd,
    OpType.full: _full,
    OpType.iota: _iota,
    OpType.uniform: _random("uniform"),
    OpType.normal: _random("normal"),
    OpType.rand_like: _random_like("uniform"),
    OpType.randn_like: _random_like("normal"),
    OpType.matmul: _matmul,
    OpType.mma: _mma,
    OpType.linear: _linear,
    OpType.sdpfa_fwd: _sdpfa_fwd,
    OpType.triu: _triu,
    OpType.size: _size,
}
