"""ATen execution of indexing, creation, random numbers, matmul / linear / attention, triu and
shape queries.

Creation ops with no tensor operand (full, iota, uniform, normal) allocate on ``ctx.device``.
Random values come from ``fusecli.ir.rng.random_tensor``, the stream the reference shares.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from fusecli.ir import dtype as dt
from fusecli.ir.attrs import embedding_options, random_seed, sdpfa_options
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


# -- matmul, linear, attention ------------------------------------------------------------------


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


def _sdpfa_fwd(expr: Expr, args: list[Any], ctx: ExecutionContext) -> tuple[Any, ...]:
    """(out, logsumexp [N, H, L] in Float, philox seed, philox offset).

    Without dropout, torch's flash kernels compute out and logsumexp together where they apply
    (the CPU kernel; on CUDA half and bfloat16). Otherwise the math: softmax(q kᵀ · scale) v in
    Float, with a dropout mask drawn from fusecli's random stream at this expr's offset. The
    philox outputs report that (seed, offset), or zeros without dropout.
    """
    query, key, value = args[:3]
    options = sdpfa_options(expr, args)
    dropout_p = float(options.get("dropout_p") or 0.0)
    is_causal = bool(options.get("is_causal") or False)
    scale = options.get("scale")
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    device = query.device
    seed, offset = (ctx.seed, ctx.random_offsets.get(expr.uid, 0)) if dropout_p else (0, 0)
    if dropout_p == 0.0 and _flash_applies(query, key, value):
        out, logsumexp = _flash(query, key, value, is_causal, scale)
    else:
        out, logsumexp = _attention_math(
            query, key, value, dropout_p, is_causal, scale, seed, offset
        )
    philox_seed = torch.full((), seed, dtype=torch.int64, device=device)
    philox_offset = torch.full((), offset, dtype=torch.int64, device=device)
    return (out, logsumexp.float(), philox_seed, philox_offset)


def _flash_applies(query: Tensor, key: Tensor, value: Tensor) -> bool:
    """Whether torch's flash kernel takes these operands (one head size; on CUDA, half types
    and head sizes that are multiples of 8 up to 256)."""
    head_size = query.shape[-1]
    if key.shape[-1] != head_size or value.shape[-1] != head_size:
        return False
    if query.device.type == "cpu":
        return True
    return query.dtype in (torch.float16, torch.bfloat16) and head_size % 8 == 0 and (
        head_size <= 256
    )


def _flash(query, key, value, is_causal: bool, scale: float) -> tuple[Tensor, Tensor]:
    if query.device.type == "cpu":
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, 0.0, is_causal, scale=scale
        )
    results = torch.ops.aten._scaled_dot_product_flash_attention(
        query, key, value, 0.0, is_causal, False, scale=scale
    )
    return results[0], results[1]


def _attention_math(
    query, key, value, dropout_p: float, is_causal: bool, scale: float, seed: int, offset: int
) -> tuple[Tensor, Tensor]:
    scores = torch.matmul(query.float(), key.float().transpose(-2, -1)) * scale
    if is_causal:
        length, source_length = scores.shape[-2:]
        keep = torch.ones(length, source_length, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    logsumexp = torch.logsumexp(scores, dim=-1)
    weights = torch.exp(scores - logsumexp.unsqueeze(-1))
    if dropout_p:
        draws = random_tensor(
            "uniform", tuple(weights.shape), torch.float32, 0.0, 1.0, seed, offset, weights.device
        )
        weights = torch.where(draws >= dropout_p, weights / (1 - dropout_p), 0.0)
    out = torch.matmul(weights, value.float()).to(query.dtype)
    return out, logsumexp


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
    OpType.sdpfa_fwd: _sdpfa_fwd,
    OpType.triu: _triu,
    OpType.size: _size,
    OpType.shape: _shape,
    OpType.at: _at,
}
